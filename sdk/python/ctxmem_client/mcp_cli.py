"""``ctxmem-mcp`` (and ``ctxmem mcp``): run the MCP server over stdio or streamable HTTP.

Everything comes from flags or the environment — the ctxmem URL, the API key, the one user the server acts for
and its default session — never from the model. This module imports ``mcp`` only when the server starts, so
``--help`` works without the extra.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

MISSING_EXTRA = "error: the MCP server needs the mcp extra: pip install 'ctxmem-client[mcp]'"


def build_parser(prog: str = "ctxmem-mcp") -> argparse.ArgumentParser:
    env = os.environ.get
    parser = argparse.ArgumentParser(
        prog=prog, description="The MCP server of ctxmem: memory tools for one user, over stdio or streamable HTTP."
    )
    parser.add_argument("--url", default=env("CTXMEM_URL"), help="ctxmem's base URL (CTXMEM_URL, default local)")
    parser.add_argument("--api-key", default=env("CTXMEM_API_KEY"), help="an agent key (CTXMEM_API_KEY)")
    parser.add_argument(
        "--user", default=env("CTXMEM_MCP_USER"), help="the user this server acts for (CTXMEM_MCP_USER; required)"
    )
    parser.add_argument(
        "--session",
        default=env("CTXMEM_MCP_SESSION") or None,
        help="default session of remember, observe, window, confirm, reject (CTXMEM_MCP_SESSION)",
    )
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); the endpoint is /mcp")
    return parser


async def serve(args: argparse.Namespace) -> None:
    from ctxmem_client.async_client import AsyncClient
    from ctxmem_client.mcp_server import build_server

    async with AsyncClient(args.url, args.api_key) as client:
        server = build_server(client.user(args.user), session_id=args.session)
        if args.transport == "stdio":
            await server.run_stdio_async()
        else:
            await server.run_streamable_http_async(host=args.host, port=args.port)


def main(argv: Sequence[str] | None = None, *, prog: str = "ctxmem-mcp") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if not args.user:
        parser.error("--user (or CTXMEM_MCP_USER) is required: the one user this server acts for")
    try:
        import mcp  # noqa: F401
    except ImportError:
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
