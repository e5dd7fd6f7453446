"""A stand-in for an OpenAI-compatible model endpoint: ``POST {prefix}/v1/chat/completions`` over real HTTP,
answered with a valid Chat Completions response whose text echoes the start of the system prompt, so a test
can see what memory reached the model. Each request body is recorded under its path prefix (one per example)."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SUFFIX = "/v1/chat/completions"


@dataclass
class ModelStub:
    base_url: str
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))

    def url(self, name: str) -> str:
        """The ``OPENAI_BASE_URL`` of one client: its requests are recorded under ``name``."""
        return f"{self.base_url}/{name}/v1"


def system_text(body: dict[str, Any]) -> str:
    parts = [m.get("content") for m in body.get("messages", []) if m.get("role") in ("system", "developer")]
    return "\n".join(p if isinstance(p, str) else json.dumps(p) for p in parts)


def completion(body: dict[str, Any]) -> dict[str, Any]:
    memory = " ".join(system_text(body).split())[:160]
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"(stub) memory I was given: {memory}"},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextmanager
def model_stub() -> Iterator[ModelStub]:
    stub: ModelStub

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if not self.path.endswith(SUFFIX):
                self.send_error(404)
                return
            stub.requests[self.path.removesuffix(SUFFIX).strip("/")].append(body)
            payload = json.dumps(completion(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub = ModelStub(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
