"""Request ids and the processes' log format (docs/operations.md, Logs).

Every HTTP response carries ``X-Request-Id``: the client's own when it sent a usable one (1-128 of
``A-Z a-z 0-9 . _ : -``), else a new one. While the request runs, the id is in ``REQUEST_ID``, so every
log line written on its behalf (ctxmem's loggers and uvicorn's access line) names it. With
``CTXMEM_LOG_FORMAT=json`` each line is one JSON object (``ts``, ``level``, ``logger``, ``message``,
``request_id``, and for access lines ``client``, ``method``, ``path``, ``status``); ``text`` (the
default) keeps the human format with the id in brackets."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-request-id"
_USABLE = re.compile(r"[A-Za-z0-9._:-]{1,128}")

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("ctxmem_request_id", default=None)


class RequestId:
    """ASGI middleware (outermost): names each HTTP request and echoes the name in the response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = next((v for k, v in scope.get("headers", ()) if k == HEADER.encode()), b"").decode("latin-1")
        rid = sent if _USABLE.fullmatch(sent) else uuid.uuid4().hex
        token = REQUEST_ID.set(rid)

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != HEADER.encode()]
                message = {**message, "headers": [*headers, (HEADER.encode(), rid.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, named)
        finally:
            REQUEST_ID.reset(token)


class _WithRequestId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
            client, method, path, _version, status = record.args
            line.update(client=client, method=method, path=path, status=status)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)  # ASCII: a lone surrogate in a path cannot break the stream


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "request_id", None) is None:
            record.request_id = "-"
        return super().format(record)


def log_config(*, level: str, fmt: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for a ctxmem process (and uvicorn's own loggers in it): everything to
    stderr at ``level`` in ``fmt`` (``text`` or ``json``), each record with its request id."""
    formatter = {"()": JsonFormatter} if fmt == "json" else {"()": TextFormatter}
    handler = {"class": "logging.StreamHandler", "formatter": "ctxmem", "filters": ["request_id"]}
    named = {"handlers": ["stderr"], "level": level.upper(), "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": _WithRequestId}},
        "formatters": {"ctxmem": formatter},
        "handlers": {"stderr": {**handler, "stream": "ext://sys.stderr"}},
        "loggers": {"ctxmem": named, "uvicorn": named, "uvicorn.error": named, "uvicorn.access": named},
        "root": {"handlers": ["stderr"], "level": "WARNING"},
    }
