"""Opaque cursors for id-ordered pages (ids are time-ordered UUIDv7, so id order is creation order)."""

from __future__ import annotations

import base64
import binascii
import json
import uuid

from service.errors import ValidationFailed
from service.settings import Settings

_FIX = "pass the next_cursor of the previous page unchanged, or leave cursor out to start at the first page"


def page_size(limit: int | None, settings: Settings) -> int:
    """The page size a listing asked for (``CTXMEM_DEFAULT_PAGE_SIZE`` if none), at most ``CTXMEM_MAX_PAGE_SIZE``."""
    size = limit or settings.limits.default_page_size
    if size > settings.limits.max_page_size:
        raise ValidationFailed(f"limit must be at most {settings.limits.max_page_size}")
    return size


def encode_cursor(last_id: uuid.UUID, order: str) -> str:
    raw = json.dumps({"id": str(last_id), "o": order}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, order: str) -> uuid.UUID:
    """The last id of the previous page. Anything but a cursor this service issued (a forged or truncated
    one, JSON of other shapes) is the client's mistake: a 422 that says what to send instead."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("o"), str):
            raise ValueError("not a cursor object")
        last = uuid.UUID(data["id"])
        cursor_order: str = data["o"]
    except (ValueError, UnicodeError, binascii.Error) as exc:
        raise _invalid(f"cursor is not one this service issued: {_FIX}") from exc
    if cursor_order != order:
        raise _invalid(
            f"cursor was issued for order={cursor_order[:16]}, not order={order}: send the same order as the"
            " request that returned it"
        )
    return last


def _invalid(message: str) -> ValidationFailed:
    return ValidationFailed(message, errors=[{"loc": ["query", "cursor"], "msg": message, "type": "value_error"}])
