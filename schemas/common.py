"""Field types shared by every schema: identifiers, safe text, checked JSON values."""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    WithJsonSchema,
)
from pydantic import BaseModel as _PydanticBase

# PostgreSQL text cannot hold NUL, and lone surrogates cannot be encoded as UTF-8: both would fail deep
# in the driver, so they are rejected at the edge with a clear message.
_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
MAX_JSON_DEPTH = 32

ID_PATTERN = r"^[A-Za-z0-9._:@-]+$"
# What an id accepts on the routes that add data: not the URL dot-segments `.` and `..` (service/deps.py).
NEW_ID_PATTERN = r"^(?!\.\.?$)[A-Za-z0-9._:@-]+$"
DOT_SEGMENTS = frozenset({".", ".."})
KEY_PATTERN = r"^[A-Za-z0-9._:/@-]+$"


def check_text(value: str) -> str:
    match = _BAD_CHARS.search(value)
    if match:
        what = "NUL bytes" if match.group() == "\x00" else "unpaired surrogate code points"
        raise ValueError(f"text must not contain {what}")
    return value


def to_nfc(value: str) -> str:
    """Unicode NFC: the one form text is compared and keyed in (what most keyboards and systems send)."""
    return unicodedata.normalize("NFC", value)


def check_nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain non-whitespace text")
    return value


def check_json(value: Any, _depth: int = 0) -> Any:
    """A JSON value PostgreSQL's jsonb can store: finite numbers, no NUL, bounded nesting."""
    if _depth > MAX_JSON_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("JSON numbers must be finite (no NaN or Infinity)")
    if isinstance(value, str):
        check_text(value)
    elif isinstance(value, list):
        for v in value:
            check_json(v, _depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            check_text(str(k))
            check_json(v, _depth + 1)
    return value


# RFC 3339 date-times only: pydantic would also read a number (or a string of digits) as seconds since
# 1970, so `{"now": 0}` would run a job as of 1970 instead of being refused.
_RFC3339_START = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]")


def check_rfc3339(value: Any) -> Any:
    if isinstance(value, datetime) or (isinstance(value, str) and _RFC3339_START.match(value)):
        return value
    raise ValueError("must be an RFC 3339 date-time string with a time zone, e.g. 2026-09-01T12:00:00Z")


# What PostgreSQL, asyncpg and Python all hold as a date-time, with room for the arithmetic done on it
# (lifetimes, decay periods): asyncpg writes datetime.min / datetime.max as -infinity / infinity, and
# 0001-01-01T00:00:00+14:00 is before datetime.min once in UTC (OverflowError).
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def check_datetime_range(value: datetime) -> datetime:
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        raise ValueError("must lie between 1900-01-01T00:00:00Z and 9999-01-01T00:00:00Z")
    return value


def check_not_dot_segment(value: str) -> str:
    if value in DOT_SEGMENTS:
        raise ValueError(
            f"{value!r} is a URL dot-segment, which clients and proxies that normalise paths cannot reach as a "
            "path segment; choose another id"
        )
    return value


class _PublishedPattern:
    """Adds a ``pattern`` to a type's JSON schema only: the validator beside it refuses with a clearer message
    than a pattern mismatch would."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema["pattern"] = self.pattern
        return schema


# check_text's NUL rule as a pattern. Lone surrogates are refused too but left out of the pattern: they are
# not Unicode scalar values, so regex engines that work on them (Rust's, Go's) cannot compile a class
# naming them, and schema tools drop such a pattern altogether (docs/api.md lists the rule).
SafeText = Annotated[str, AfterValidator(check_text), _PublishedPattern("^[^\\u0000]*$")]
DateTime = Annotated[AwareDatetime, BeforeValidator(check_rfc3339), AfterValidator(check_datetime_range)]
# The published pattern leaves out `.` and `..`; the validator refuses them with a message that says why.
Identifier = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128, pattern=ID_PATTERN),
    AfterValidator(check_not_dot_segment),
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 128, "pattern": NEW_ID_PATTERN}),
]
SlotKey = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=KEY_PATTERN)]
Domain = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=ID_PATTERN)]
JsonValue = Annotated[Any, AfterValidator(check_json)]
# Strict: a JSON number only (true/false or "0.5" is a mistake to report, not a value to coerce).
# A request's true/false: a JSON boolean only (1, 0 or "yes" is a mistake to report, not a value to coerce).
Flag = Annotated[bool, Strict()]


def integral(value: Any) -> Any:
    """A JSON number with no fractional part is an integer in JSON Schema (``255.0`` is valid for
    ``type: integer``), and some encoders write integers that way: read it as the integer it is."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# A request's count: a JSON integer (255 or 255.0) only; true, 2.5 or "100" is a mistake to report, not a
# value to coerce.
Count = Annotated[int, BeforeValidator(integral), Strict()]
# A request's fraction: a JSON number only.
Number = Annotated[float, Strict()]
Confidence = Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class StrictModel(_PydanticBase):
    """Request bodies: unknown fields are an error (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid")


class ReadModel(_PydanticBase):
    model_config = ConfigDict(from_attributes=True)


class Problem(_PydanticBase):
    """RFC 9457 problem details, as every error is returned."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    model_config = ConfigDict(extra="allow")
