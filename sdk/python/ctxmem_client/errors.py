"""Every failure the server answers with, as a typed exception: the problem+json ``type`` picks the class.

The server's problem types are ``urn:ctxmem:problem:<slug>`` (docs/errors.md lists every slug). A slug this
version does not know falls back to the class of its HTTP status, so catching ``NotFound`` or
``ValidationError`` keeps working when the server adds a finer type.
"""

from __future__ import annotations

from typing import Any

TYPE_PREFIX = "urn:ctxmem:problem:"


class CtxmemError(Exception):
    """The base of every error this client raises. ``status`` is the HTTP status (0 when no response came);
    ``type``, ``title`` and ``detail`` are the problem document's; ``index`` names the bad element of a batch;
    ``body`` is the whole problem document (``errors``, ``required``, ``budget``… live there)."""

    def __init__(
        self,
        status: int,
        type: str,
        title: str,
        detail: str,
        *,
        index: int | None = None,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {type}: {detail}" if status else f"{type}: {detail}")
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.index = index
        self.body = body if body is not None else {}
        self.retry_after = retry_after

    @property
    def slug(self) -> str:
        """The type without its ``urn:ctxmem:problem:`` prefix, e.g. ``item-not-found``."""
        return self.type.removeprefix(TYPE_PREFIX)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Validation problems: ``{"loc": [...], "msg": ..., "type": ...}`` each (empty for other errors)."""
        found = self.body.get("errors")
        return list(found) if isinstance(found, list) else []


class ConnectionFailed(CtxmemError):
    """No response: the connection failed or timed out on every attempt. The cause is the last httpx error."""


class BadRequest(CtxmemError):
    """400: the request was not valid HTTP."""


class Unauthorized(CtxmemError):
    """401: the API key is missing, malformed, unknown or revoked."""


class Forbidden(CtxmemError):
    """403: the key's role does not allow this (or a system item needs an admin key)."""


class NotFound(CtxmemError):
    """404: no such route, item, profile entry or user."""


class ItemNotFound(NotFound):
    pass


class EntryNotFound(NotFound):
    pass


class UserNotFound(NotFound):
    pass


class MethodNotAllowed(CtxmemError):
    """405."""


class Conflict(CtxmemError):
    """409: the request conflicts with the current state."""


class AmbiguousHandle(Conflict):
    """409: a handle ends several of the user's item ids; ``problem["candidates"]`` lists them."""


class CorrectionRefused(Conflict):
    pass


class JobRunning(Conflict):
    pass


class IdempotencyInProgress(Conflict):
    """A request with the same Idempotency-Key is still running (retried automatically)."""


class ExtractionOff(Conflict):
    """409 on ``extract`` and ``extract_session``: the service's extractor is off (``CTXMEM_EXTRACTOR=off``);
    nothing changed and stored messages wait. Not retried: an operator has to turn it on."""


class PayloadTooLarge(CtxmemError):
    """413: the body, or the batch, is too large."""


class BatchTooLarge(PayloadTooLarge):
    pass


class UnsupportedMediaType(CtxmemError):
    """415."""


class ValidationError(CtxmemError):
    """422: the request is not valid; ``errors`` says where, ``index`` which batch element."""


class BatchItemInvalid(ValidationError):
    pass


class HistoryInvalid(ValidationError):
    pass


class IdempotencyKeyReused(CtxmemError):
    """422: the Idempotency-Key was first used for a different request."""


class BudgetTooSmall(CtxmemError):
    """422: the pinned content alone does not fit the window's budget (``required`` and ``budget`` in body)."""

    @property
    def required(self) -> int | None:
        value = self.body.get("required")
        return value if isinstance(value, int) else None

    @property
    def budget(self) -> int | None:
        value = self.body.get("budget")
        return value if isinstance(value, int) else None


class RateLimited(CtxmemError):
    """429: too many requests; ``retry_after`` in seconds (raised once the retries are spent)."""


class ExtractionCapReached(RateLimited):
    """429 on ``extract`` and ``extract_session``: the tenant spent its daily token cap on the ``llm``
    extractor. ``retry_after`` is the seconds until 00:00 UTC, longer than the retry policy waits (but in the
    last minute of the day), so it is raised at once; the messages wait and the server's ``extract`` job takes
    them up after the reset."""


class ServerError(CtxmemError):
    """500 and other 5xx without a type of their own."""


class Unavailable(CtxmemError):
    """503: the service cannot reach its database (raised once the retries are spent)."""


class ExtractorUnavailable(Unavailable):
    """503 on ``extract`` and ``extract_session``: the ``llm`` extractor could not answer (its endpoint down
    or timing out); ``detail`` quotes the cause. Retried after ``retry_after`` like any 503 (the call's
    Idempotency-Key makes that safe), raised once the retries are spent; nothing was extracted and the
    messages wait."""


# The server's slugs (service/errors.py, service/rate_limit.py, the HTTP server's own answers).
SLUG_CLASSES: dict[str, type[CtxmemError]] = {
    "bad-request": BadRequest,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not-found": NotFound,
    "item-not-found": ItemNotFound,
    "entry-not-found": EntryNotFound,
    "user-not-found": UserNotFound,
    "method-not-allowed": MethodNotAllowed,
    "not-acceptable": CtxmemError,
    "request-timeout": CtxmemError,
    "conflict": Conflict,
    "ambiguous-handle": AmbiguousHandle,
    "correction-refused": CorrectionRefused,
    "job-running": JobRunning,
    "idempotency-in-progress": IdempotencyInProgress,
    "extraction-off": ExtractionOff,
    "payload-too-large": PayloadTooLarge,
    "batch-too-large": BatchTooLarge,
    "unsupported-media-type": UnsupportedMediaType,
    "headers-too-large": CtxmemError,
    "validation-error": ValidationError,
    "batch-item-invalid": BatchItemInvalid,
    "history-invalid": HistoryInvalid,
    "idempotency-key-reused": IdempotencyKeyReused,
    "budget-too-small": BudgetTooSmall,
    "rate-limited": RateLimited,
    "extraction-cap-reached": ExtractionCapReached,
    "internal-error": ServerError,
    "unavailable": Unavailable,
    "extractor-unavailable": ExtractorUnavailable,
    "http-error": CtxmemError,
}

STATUS_CLASSES: dict[int, type[CtxmemError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: ValidationError,
    429: RateLimited,
    503: Unavailable,
}


def error_for(status: int, body: Any, *, retry_after: float | None = None, reason: str = "") -> CtxmemError:
    """The exception for an error response: by its problem type, else by its status."""
    problem = body if isinstance(body, dict) else {}
    type_ = problem.get("type")
    type_ = type_ if isinstance(type_, str) else "about:blank"
    cls = SLUG_CLASSES.get(type_.removeprefix(TYPE_PREFIX)) if type_.startswith(TYPE_PREFIX) else None
    if cls is None or cls is CtxmemError:
        cls = STATUS_CLASSES.get(status, ServerError if status >= 500 else CtxmemError)
    title = problem.get("title")
    detail = problem.get("detail")
    index = problem.get("index")
    return cls(
        status,
        type_,
        title if isinstance(title, str) else reason,
        detail if isinstance(detail, str) else (reason or f"HTTP {status}"),
        index=index if isinstance(index, int) else None,
        body=problem,
        retry_after=retry_after,
    )
