"""Validation messages that say what was wrong and how to fix it.

pydantic's messages are written for Python programmers ("Input should be a valid dictionary or object
to extract fields from"). A request that fails validation gets, for each error, a message naming the
field, what was sent and what is accepted: an unknown field with the closest known one ("did you mean
…"), a body that is not a JSON object with the Content-Type to send, a tool call's ``arguments`` sent as an
object with the encoding OpenAI uses, a text that is too long with its length and the limit.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, unions, lists and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    if typing.get_origin(annotation) is not None or isinstance(annotation, types.UnionType):
        for arg in typing.get_args(annotation):
            out.extend(_models_in(arg))
    return out


def fields_at(model: type[BaseModel] | None, path: Sequence[Any]) -> list[str]:
    """The field names of the object at ``path`` (keys and list indexes) inside a body of ``model``."""
    models = [model] if model is not None else []
    for step in path:
        if isinstance(step, int):
            continue  # a list element: the same models
        nxt: list[type[BaseModel]] = []
        for m in models:
            field = m.model_fields.get(str(step))
            if field is not None:
                nxt.extend(_models_in(field.annotation))
        models = nxt
    names: list[str] = []
    for m in models:
        names.extend(n for n in m.model_fields if n not in names)
    return names


# pydantic names the branch of a union a value failed in its location, by the branch's type
# ("list[ContentPart]", "function-after[check_text(), str]", "str"): not a place a client can find in its body.
_UNION_BRANCH = re.compile(r"[\[\]()<>, ]|^(str|int|float|bool|none|list|dict)$")


def location(loc: Sequence[Any]) -> list[str]:
    """An error's location as the client wrote it: the union branches pydantic tried left out."""
    return [str(p) for p in loc if isinstance(p, int) or not _UNION_BRANCH.search(str(p))]


def relevant(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errors worth reporting: a value that fails a union fails every branch, and the branches of
    another JSON type only say so ("Input should be a valid list" for a string with a NUL in it). Where a
    branch has a real error at the value or inside it, the other branches' type mismatches are left out."""
    real: list[tuple[str, ...]] = []
    mismatch = []
    for err in errors:
        loc = tuple(location(err.get("loc", ())))
        branch = len(loc) < len(err.get("loc", ()))
        is_type = str(err.get("type", "")).endswith("_type") or err.get("type") == "none_required"
        mismatch.append(branch and is_type)
        if not (branch and is_type):
            real.append(loc)

    def explained(err: dict[str, Any]) -> bool:
        loc = tuple(location(err["loc"]))
        return any(other[: len(loc)] == loc for other in real)

    return [err for err, off in zip(errors, mismatch, strict=True) if not (off and explained(err))]


def _where(loc: Sequence[Any]) -> str:
    loc = location(loc)
    parts = loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out


def explain(err: dict[str, Any], *, body_model: type[BaseModel] | None, content_type: str | None) -> str:
    """One pydantic error as a message for the client."""
    loc = list(err.get("loc", ()))
    kind = err.get("type", "")
    msg = str(err.get("msg", ""))
    ctx = err.get("ctx") or {}
    where = _where(loc)
    if loc == ["body"] and kind in ("model_attributes_type", "dict_type", "model_type"):
        if content_type is not None and "json" not in content_type.lower():
            return (
                f"the body must be a JSON object sent with Content-Type: application/json (got {content_type}; "
                "with curl: -H 'Content-Type: application/json')"
            )
        return 'the body must be a JSON object, e.g. {"type": "fact", "content": "..."}'
    if kind == "extra_forbidden" and loc:
        name = str(loc[-1])
        known = fields_at(body_model, loc[1:-1]) if loc[0] == "body" else []
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else (f"; known fields: {', '.join(known)}" if known else "")
        return f"unknown field {where or name!r}{hint}"
    if kind == "missing":
        return f"{where} is required"
    if loc and loc[-1] == "arguments" and kind == "string_type":
        return (
            f"{where} must be a JSON-encoded string, as OpenAI sends tool calls: "
            '\'{"city": "Lisbon"}\' (json.dumps of the object), not the object itself'
        )
    if kind == "string_too_long" and "max_length" in ctx:
        value = err.get("input")
        got = f" has {len(value):,} characters;" if isinstance(value, str) else ""
        return f"{where}{got} at most {ctx['max_length']:,} characters are accepted"
    if kind == "too_long" and "max_length" in ctx:
        # A string under an Annotated validator (SafeText) is length-checked as a sequence: "too_long".
        value = err.get("input")
        if isinstance(value, str):
            return f"{where} has {len(value):,} characters; at most {ctx['max_length']:,} characters are accepted"
        got = f" has {len(value):,} elements;" if isinstance(value, list | dict) else ""
        return f"{where}{got} at most {ctx['max_length']:,} are accepted"
    if kind == "too_short" and "min_length" in ctx and isinstance(err.get("input"), str):
        # The same for the lower bound: an empty SafeText says "Value should have at least 1 item".
        n = ctx["min_length"]
        return f"{where} must have at least {n:,} character{'s' if n != 1 else ''}"
    if kind in ("literal_error", "enum") and "expected" in ctx:
        return f"{where}: {err.get('input')!r} is not one of {ctx['expected']}"
    if kind == "value_error" and msg.startswith("Value error, "):
        msg = msg.removeprefix("Value error, ")
    elif kind == "assertion_error" and msg.startswith("Assertion failed, "):
        msg = msg.removeprefix("Assertion failed, ")
    return f"{where}: {msg}" if where else msg
