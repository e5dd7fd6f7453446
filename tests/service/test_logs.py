"""Request ids on every answer and in every log line written for the request; JSON log lines."""

from __future__ import annotations

import json
import logging
import logging.config
import re

import httpx
import pytest
from fastapi import FastAPI

from service.logs import REQUEST_ID, JsonFormatter, TextFormatter, log_config
from tests.conftest import TenantKeys


async def test_every_answer_names_its_request(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    ok = await client.get("/v1/users/u-logs/items", headers=tenant.agent)
    refused = await client.get("/v1/users/u-logs/items")
    ids = {ok.headers["x-request-id"], refused.headers["x-request-id"]}
    assert len(ids) == 2 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


@pytest.mark.parametrize(
    ("sent", "kept"),
    [("trace-42.a:b_c", True), ("", False), ("has space", False), ("x" * 129, False), ("ünïcode", False)],
)
async def test_a_usable_client_id_is_kept_else_replaced(client: httpx.AsyncClient, sent: str, kept: bool) -> None:
    r = await client.get("/healthz", headers={"X-Request-Id": sent.encode("utf-8")})
    assert r.status_code == 200
    assert (r.headers["x-request-id"] == sent) is kept
    assert r.headers.get_list("x-request-id") == [r.headers["x-request-id"]]


async def test_log_lines_written_during_a_request_carry_its_id(app: FastAPI, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str | None] = []

    @app.get("/_test/logs-request-id")
    async def probe() -> dict[str, str]:
        logging.getLogger("ctxmem.test").warning("inside the request")
        seen.append(REQUEST_ID.get())
        return {}

    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            r = await c.get("/_test/logs-request-id", headers={"X-Request-Id": "probe-1"})
    finally:
        app.router.routes.pop()
    assert r.status_code == 200 and seen == ["probe-1"]
    assert REQUEST_ID.get() is None  # reset once the request is done


def _record(name: str, msg: str, args: tuple[object, ...] = ()) -> logging.LogRecord:
    record = logging.LogRecord(name, logging.INFO, __file__, 1, msg, args, None)
    record.request_id = "r-1"
    return record


def test_json_lines_hold_the_fields_and_access_details() -> None:
    line = json.loads(JsonFormatter().format(_record("ctxmem.errors", "unhandled error on %s", ("GET /x",))))
    assert line["level"] == "info" and line["logger"] == "ctxmem.errors"
    assert line["message"] == "unhandled error on GET /x" and line["request_id"] == "r-1"
    access = _record("uvicorn.access", '%s - "%s %s HTTP/%s" %d', ("127.0.0.1:5", "GET", "/healthz", "1.1", 200))
    assert json.loads(JsonFormatter().format(access)) | {"ts": None} == {
        "ts": None,
        "level": "info",
        "logger": "uvicorn.access",
        "message": '127.0.0.1:5 - "GET /healthz HTTP/1.1" 200',
        "request_id": "r-1",
        "client": "127.0.0.1:5",
        "method": "GET",
        "path": "/healthz",
        "status": 200,
    }
    # A lone surrogate (a path can hold one) is escaped, never an encoding error in the log stream.
    assert "\\udcff" in JsonFormatter().format(_record("ctxmem", "path \udcff"))


def test_text_lines_show_the_id_or_a_dash() -> None:
    assert "[r-1] hello" in TextFormatter().format(_record("ctxmem", "hello"))
    bare = logging.LogRecord("ctxmem", logging.INFO, __file__, 1, "hello", (), None)
    assert "[-] hello" in TextFormatter().format(bare)


def test_the_config_routes_ctxmem_and_uvicorn_to_one_handler() -> None:
    config = log_config(level="info", fmt="json")
    logging.config.dictConfig(config)  # valid for the standard library
    for name in ("ctxmem", "uvicorn.access", "uvicorn.error"):
        assert logging.getLogger(name).handlers and not logging.getLogger(name).propagate
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False, "loggers": {
        name: {"handlers": [], "propagate": True} for name in ("ctxmem", "uvicorn", "uvicorn.error", "uvicorn.access")
    }})  # fmt: skip
