"""Opaque cursors for id-ordered pages (ids are time-ordered UUIDv7, so id order is creation order)."""

from __future__ import annotations

import base64
import binascii
import json
import uuid

from service.errors import ValidationFailed


def encode_cursor(last_id: uuid.UUID, order: str) -> str:
    raw = json.dumps({"id": str(last_id), "o": order}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, order: str) -> uuid.UUID:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        last = uuid.UUID(data["id"])
        cursor_order = data["o"]
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error) as exc:
        raise ValidationFailed("cursor is not one this service issued") from exc
    if cursor_order != order:
        raise ValidationFailed(f"cursor was issued for order={cursor_order}, not order={order}")
    return last
