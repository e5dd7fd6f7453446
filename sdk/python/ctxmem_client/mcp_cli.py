"""``ctxmem-mcp`` (and ``ctxmem mcp``): run the MCP server over stdio or streamable HTTP.

Everything comes from flags or the environment — the ctxmem URL, the API key, the one user the server acts for
and its default session — never from the model. This module imports ``mcp`` only when the server starts, so
``--help`` works without the extra.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import sys
from collections.abc import Sequence
from typing import Any

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
        help="default session of remember, observe, window, confirm, reject, extract, extract_session "
        "(CTXMEM_MCP_SESSION)",
    )
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); the endpoint is /mcp")
    parser.add_argument(
        "--http-token",
        default=env("CTXMEM_MCP_HTTP_TOKEN") or None,
        help="HTTP: every request must send Authorization: Bearer <token> (CTXMEM_MCP_HTTP_TOKEN); "
        "required to bind anything but loopback",
    )
    return parser


# Whoever reaches the HTTP endpoint acts as the configured user with the configured key: off loopback, only
# with a token.
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


class BearerToken:
    """A pure ASGI guard: an HTTP request without ``Authorization: Bearer <token>`` is a 401 (compared in
    constant time); lifespan and other scopes pass through."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <the server\'s --http-token>"}'
                headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
                await send({"type": "http.response.start", "status": 401, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def serve(args: argparse.Namespace) -> None:
    from ctxmem_client.async_client import AsyncClient
    from ctxmem_client.mcp_server import build_server

    async with AsyncClient(args.url, args.api_key) as client:
        server = build_server(client.user(args.user), session_id=args.session)
        if args.transport == "stdio":
            await server.run_stdio_async()
            return
        import uvicorn

        app: Any = server.streamable_http_app(host=args.host)
        if args.http_token:
            app = BearerToken(app, args.http_token)
        await uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")).serve()


def main(argv: Sequence[str] | None = None, *, prog: str = "ctxmem-mcp") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if not args.user:
        parser.error("--user (or CTXMEM_MCP_USER) is required: the one user this server acts for")
    for flag, value in (("--user", args.user), ("--session", args.session)):
        if value in (".", ".."):  # the same refusal as build_server's, as a usage error rather than a traceback
            parser.error(
                f"{flag} {value!r} is a URL dot-segment, which ctxmem refuses for writes (clients and proxies that "
                "normalise paths cannot reach it): choose another id"
            )
    if args.transport == "http" and args.host not in LOOPBACK and not args.http_token:
        parser.error(
            f"--host {args.host} serves MCP beyond this machine: set --http-token (or CTXMEM_MCP_HTTP_TOKEN), "
            "which every client must send as Authorization: Bearer <token>"
        )
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
