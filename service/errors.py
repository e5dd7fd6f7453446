"""Typed service errors and the handlers that render every failure as RFC 9457 problem+json.

Each error has a stable ``type`` (``urn:ctxmem:problem:<slug>``) that clients can branch on; the
``title`` is fixed per type and ``detail`` explains this occurrence.
"""

from __future__ import annotations

import logging
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from schemas.common import Problem
from service.methods import allowed_methods
from service.outage import Outage, is_outage
from service.validation_messages import explain, location, relevant

log = logging.getLogger("ctxmem.errors")

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:ctxmem:problem:"


def problem_type(slug: str) -> str:
    return TYPE_PREFIX + slug


class ServiceError(Exception):
    status: int = 400
    slug: str = "bad-request"
    title: str = "Bad request"

    def __init__(self, detail: str | None = None, **extra: Any) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.extra = extra

    def body(self, instance: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": problem_type(self.slug),
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if instance:
            out["instance"] = instance
        out.update(jsonable_encoder(self.extra))
        return out


class Unauthorized(ServiceError):
    status, slug, title = 401, "unauthorized", "Missing or invalid API key"


class Forbidden(ServiceError):
    status, slug, title = 403, "forbidden", "The API key's role does not allow this"


class NotFound(ServiceError):
    status, slug, title = 404, "not-found", "Not found"


class UserNotFound(NotFound):
    slug, title = "user-not-found", "No such user"


class ItemNotFound(NotFound):
    slug, title = "item-not-found", "No such item"


class EntryNotFound(NotFound):
    slug, title = "entry-not-found", "No such profile entry"


class ValidationFailed(ServiceError):
    status, slug, title = 422, "validation-error", "The request is not valid"


class BatchItemInvalid(ValidationFailed):
    slug, title = "batch-item-invalid", "An item of the batch is not valid; nothing was written"


class HistoryInvalid(ValidationFailed):
    slug, title = "history-invalid", "The messages are not a well-formed chat history"


class BudgetTooSmallError(ServiceError):
    status, slug, title = 422, "budget-too-small", "The pinned content alone does not fit the budget"


class IdempotencyKeyReused(ServiceError):
    status, slug, title = 422, "idempotency-key-reused", "Idempotency-Key was used with a different request"


class IdempotencyInProgress(ServiceError):
    status, slug, title = (
        409,
        "idempotency-in-progress",
        "A request with this Idempotency-Key is still running",
    )


class Conflict(ServiceError):
    status, slug, title = 409, "conflict", "The request conflicts with the current state"


class AmbiguousHandle(Conflict):
    slug, title = "ambiguous-handle", "This handle is the start of more than one item's id"


class CorrectionRefused(Conflict):
    slug, title = "correction-refused", "This item cannot be retired by this correction"


class JobBusy(Conflict):
    slug, title = "job-running", "This job is running in another process"


class PayloadTooLarge(ServiceError):
    status, slug, title = 413, "payload-too-large", "The request body is too large"


class BatchTooLarge(PayloadTooLarge):
    slug, title = "batch-too-large", "Too many items in one batch"


class Unavailable(ServiceError):
    status, slug, title = 503, "unavailable", "The service cannot reach its database right now"


class ExtractionOff(Conflict):
    slug, title = "extraction-off", "Extraction is turned off on this service"


class ExtractorUnavailableError(ServiceError):
    status, slug, title = 503, "extractor-unavailable", "The extractor cannot answer now; the messages wait"


class ExtractionCapReached(ServiceError):
    status, slug, title = 429, "extraction-cap-reached", "The tenant's daily token cap for extraction is spent"


# Every router declares these responses, so the OpenAPI document shows the problem+json body of each.
ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": Problem, "content": {PROBLEM_JSON: {}}} for code in (401, 403, 404, 409, 413, 422)
}


class ReplayedResponse(Exception):
    """Not an error: carries a stored response of an idempotent request back out of the dependency chain."""

    def __init__(self, status_code: int, body: bytes) -> None:
        self.status_code = status_code
        self.body = body


def problem_response(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


_HTTP_SLUGS = {
    400: ("bad-request", "Bad request"),
    401: ("unauthorized", "Missing or invalid API key"),
    403: ("forbidden", "Forbidden"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    406: ("not-acceptable", "Not acceptable"),
    413: ("payload-too-large", "The request body is too large"),
    415: ("unsupported-media-type", "Unsupported media type"),
}


def _body_model(request: Request) -> Any:
    """The pydantic model of the matched route's body, if it has one."""
    route = request.scope.get("route")
    field = getattr(route, "body_field", None)
    info = getattr(field, "field_info", None)
    return getattr(info, "annotation", None)


def _validation_errors(raw: list[dict[str, Any]], request: Request) -> list[dict[str, Any]]:
    model = _body_model(request)
    content_type = request.headers.get("content-type")
    out = []
    for err in raw:
        loc = location(err.get("loc", ()))
        msg = explain(err, body_model=model if isinstance(model, type) else None, content_type=content_type)
        out.append({"loc": loc, "msg": msg, "type": err.get("type", "")})
    return out


def install_error_handlers(app: FastAPI) -> None:
    async def on_service_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
        if "retry_after" in exc.extra:
            headers["Retry-After"] = str(max(1, int(exc.extra["retry_after"])))
        return problem_response(exc.status, exc.body(request.url.path), headers or None)

    async def on_replay(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ReplayedResponse)
        return Response(
            exc.body,
            status_code=exc.status_code,
            media_type="application/json",
            headers={"Idempotent-Replayed": "true"},
        )

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        raw = relevant(exc.errors())
        errors = _validation_errors(raw, request)
        detail = errors[0]["msg"] if errors else "invalid request"
        if len(errors) > 1:
            detail += f" (and {len(errors) - 1} more: see errors)"
        # A bad item in a batch body: name its index so the client can fix that one item.
        for e, shown in zip(raw, errors, strict=True):
            loc = e.get("loc", ())
            if len(loc) >= 3 and loc[0] == "body" and loc[1] in ("items", "observations") and isinstance(loc[2], int):
                batch_err = BatchItemInvalid(shown["msg"], index=loc[2], errors=errors)
                return problem_response(422, batch_err.body(request.url.path))
        err = ValidationFailed(detail, errors=errors)
        return problem_response(422, err.body(request.url.path))

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400 and exc.__cause__ is not None:
            # FastAPI turns body-decoding failures other than JSON syntax (bad UTF-8, nesting too deep
            # for the parser) into a bare 400; they are the same client mistake as a syntax error.
            reason = type(exc.__cause__).__name__
            err = ValidationFailed(f"the body is not valid UTF-8 JSON ({reason})")
            return problem_response(422, err.body(request.url.path))
        headers = dict(exc.headers) if exc.headers else {}
        if exc.status_code == 405:
            # Every method of the path, not only those of the first route that matched it.
            headers["Allow"] = ", ".join(allowed_methods(request.app.router, request.scope))
        slug, title = _HTTP_SLUGS.get(exc.status_code, ("http-error", "HTTP error"))
        body = {
            "type": problem_type(slug),
            "title": title,
            "status": exc.status_code,
            "detail": exc.detail if isinstance(exc.detail, str) else title,
            "instance": request.url.path,
        }
        return problem_response(exc.status_code, body, headers or None)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        body = {
            "type": problem_type("internal-error"),
            "title": "Internal server error",
            "status": 500,
            "detail": "An unexpected error occurred; it has been logged.",
            "instance": request.url.path,
        }
        return problem_response(500, body)

    async def on_database_error(request: Request, exc: Exception) -> Response:
        # Handled here rather than by the catch-all, which (in Starlette) re-raises for the server to log
        # again: an outage would otherwise log two tracebacks per request.
        if not is_outage(exc):
            return await on_unexpected(request, exc)
        request.app.state.outage.failed(exc)
        retry_after = request.app.state.settings.database.unavailable_retry_after_seconds
        err = Unavailable(f"the database is unreachable; nothing was changed: retry in {retry_after} s")
        return problem_response(503, err.body(request.url.path), {"Retry-After": str(retry_after)})

    async def on_integrity(request: Request, exc: Exception) -> Response:
        # The service takes the locks that keep constraints from firing; if one fires anyway (a race we
        # did not foresee), the client gets a retryable 409, not a 500, and the log has the details.
        log.warning("integrity error on %s %s: %s", request.method, request.url.path, exc)
        err = Conflict("the write collided with a concurrent change; retry it")
        return problem_response(409, err.body(request.url.path))

    app.state.outage = Outage(log, "API", meanwhile="answering 503 with Retry-After")
    for database_error in (DBAPIError, SQLAlchemyTimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        app.add_exception_handler(database_error, on_database_error)
    app.add_exception_handler(IntegrityError, on_integrity)
    app.add_exception_handler(asyncpg.IntegrityConstraintViolationError, on_integrity)
    app.add_exception_handler(ServiceError, on_service_error)
    app.add_exception_handler(ReplayedResponse, on_replay)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
