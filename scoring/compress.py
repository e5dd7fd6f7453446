"""Compression levels of an item (DESIGN §3.6 step 4), derived deterministically at write time.

L0 original · L1 condensed · L2 summary · L3 key fields · L4 index line. A client's own ``variants``
(condensed, summary, index) are used when given; otherwise the texts below are derived. Each level is at
most as long as the one before (``monotone``), so raising an item's level never costs tokens.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

# Derived versions keep this share of the original's characters. L1 keeps half (enough to read the
# gist of a tool result or an episode); L2 a fifth, capped, usually the first sentence or two.
L1_SHARE = 0.5
L2_SHARE = 0.2
L2_MAX_CHARS = 400
L3_MAX_FIELDS = 8
L3_MAX_VALUE_CHARS = 40
L3_MAX_CHARS = 160
# Items this short are already as small as a derived version would be.
SHORT_CHARS = 120

_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s*")


def truncate(text: str, max_chars: int) -> str:
    """Cut at a word boundary at or before ``max_chars`` and say how much was left out."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    if space >= max_chars * 0.6:
        cut = cut[:space]
    left = len(text) - len(cut)
    return f"{cut.rstrip()} …[+{left} chars]"


def first_sentences(text: str, max_chars: int) -> str:
    """Whole leading sentences up to ``max_chars`` (at least the first one, truncated if it is longer)."""
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p]
    out = ""
    for p in parts:
        candidate = f"{out} {p}".strip() if out else p
        if len(candidate) > max_chars:
            break
        out = candidate
    if not out:
        return truncate(text, max_chars)
    left = len(text) - len(out)
    return out if left <= 0 else f"{out} …[+{left} chars]"


def key_fields(content: str, key: str | None, value: Any) -> str:
    """The fields that identify a fact: a slot's key and value, or the top-level scalar fields of a JSON
    object (a tool result), else the start of the text."""
    if key is not None and value is not None:
        return truncate(f"{key} = {json.dumps(value, ensure_ascii=False, sort_keys=True)}", L3_MAX_CHARS)
    stripped = content.strip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            fields = []
            for k, v in doc.items():
                if isinstance(v, (str, int, float, bool)) or v is None:
                    fields.append(f"{k}={truncate(str(v), L3_MAX_VALUE_CHARS)}")
                if len(fields) == L3_MAX_FIELDS:
                    break
            if fields:
                return "; ".join(fields)
    if key is not None:
        return truncate(f"{key}: {stripped}", L3_MAX_CHARS)
    return truncate(stripped, L3_MAX_CHARS // 2)


def index_line(*, item_id: str, user_id: str, item_type: str, key: str | None, content: str, token_cost: int) -> str:
    """Names the item and how to fetch it in full."""
    words = " ".join(content.split()[:6])
    label = key or f"{item_type}: {truncate(words, 40)}"
    return f"[ctx: {label}, {token_cost} tokens — GET /v1/users/{user_id}/items/{item_id}]"


def derive_levels(
    *,
    item_id: str,
    user_id: str,
    item_type: str,
    content: str,
    key: str | None,
    value: Any,
    variants: Mapping[str, str] | None,
    token_cost: int,
) -> list[str]:
    """The texts of L1..L4 for one item."""
    v = variants or {}
    short = len(content) <= SHORT_CHARS
    l1 = v.get("condensed") or (content if short else truncate(content, int(len(content) * L1_SHARE)))
    l2 = v.get("summary") or (
        l1 if short else first_sentences(content, min(L2_MAX_CHARS, max(60, int(len(content) * L2_SHARE))))
    )
    l3 = key_fields(content, key, value)
    l4 = v.get("index") or index_line(
        item_id=item_id, user_id=user_id, item_type=item_type, key=key, content=content, token_cost=token_cost
    )
    return [l1, l2, l3, l4]


def derive_row_levels(row: Mapping[str, Any], user_id: str) -> list[str]:
    """:func:`derive_levels` of an item row (its ``id``, ``type``, ``content``, ``key``, ``value``,
    ``variants`` and ``token_cost``)."""
    return derive_levels(
        item_id=str(row["id"]),
        user_id=user_id,
        item_type=row["type"],
        content=row["content"],
        key=row["key"],
        value=row["value"],
        variants=row["variants"],
        token_cost=row["token_cost"],
    )


def monotone(texts: Sequence[str], tokens: Sequence[int]) -> tuple[list[str], list[int]]:
    """Make every level at most as long (in tokens) as the one before by reusing the shorter one."""
    out_t, out_n = [texts[0]], [tokens[0]]
    for text, n in zip(texts[1:], tokens[1:], strict=True):
        if n > out_n[-1]:
            text, n = out_t[-1], out_n[-1]
        out_t.append(text)
        out_n.append(n)
    return out_t, out_n


def assemble_levels(
    content: str, token_cost: int, derived: Sequence[str], counts: Sequence[int]
) -> tuple[list[str], list[int]]:
    """L0..L4 texts and token counts from the original, its derived L1..L4 and their counts, made monotone:
    an item shorter than its own index line shows its (shortest) text at L4 too — cheaper and more useful
    than a pointer to it."""
    fixed_t, fixed_n = monotone([content, *derived], [token_cost, *counts])
    return fixed_t, fixed_n
