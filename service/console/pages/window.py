"""Window preview: the window an agent would get for an input, under one budget or two side by side.

It calls the window service the API's ``POST /v1/users/{u}/window`` calls, with the operator's principal,
and ``archive=False``: a preview writes nothing (the session turns that fall out of it stay live for the
agent's own next window)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import annotated_types
from fastapi import Query, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from schemas.windows import WindowRequest
from service.console import service as console
from service.console.rendering import console_router, render
from service.console.session import Operator, context
from service.context import RequestContext
from service.deps import UserIdPath
from service.errors import BudgetTooSmallError, ServiceError
from service.validation_messages import explain
from service.windows import service as windows

router = console_router()

# What the form shows before the first preview: a roomy budget and a tight one, to compare.
DEFAULT_BUDGETS = ("2000", "400")
# The slider's reach; the number field beside it takes any budget the API takes.
SLIDER_MAX = 16_000
LEVELS = {0: "original", 1: "condensed", 2: "summary", 3: "key fields", 4: "index line"}

TextQuery = Annotated[str | None, Query(max_length=32_000)]
IdQuery = Annotated[str | None, Query(max_length=128)]
BudgetQuery = Annotated[str | None, Query(max_length=64)]


@dataclass(frozen=True)
class Panel:
    """One side of the preview: the budget as typed, and the window or why there is none."""

    label: str
    testid: str
    budget: str
    window: dict[str, Any] | None = None
    status: int = 200
    title: str | None = None
    errors: tuple[str, ...] = ()
    fix: str | None = None

    @property
    def history(self) -> list[tuple[str, str]]:
        """The history messages the window kept, as (role, what was said), oldest first."""
        return [_said(m) for m in self.window["messages"]] if self.window else []


def _said(message: dict[str, Any]) -> tuple[str, str]:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    calls = [c.get("function", {}).get("name", "?") for c in message.get("tool_calls") or []]
    text = (content or "") + (f" [calls {', '.join(calls)}]" if calls else "")
    return str(message.get("role", "?")), text.strip()


def _bounds() -> tuple[int, int]:
    """The budgets the window request takes (its ``max_tokens`` field's limits)."""
    meta = WindowRequest.model_fields["max_tokens"].metadata
    low = next(m.ge for m in meta if isinstance(m, annotated_types.Ge))
    high = next(m.le for m in meta if isinstance(m, annotated_types.Le))
    return int(low), int(high)


MIN_BUDGET, MAX_BUDGET = _bounds()


def _budget(raw: str, field: str) -> int | str:
    """The budget typed in ``field`` as tokens, or what is wrong with it and how to fix it."""
    text = raw.strip().replace(",", "").replace("_", "")
    fix = f"type a whole number of tokens from {MIN_BUDGET:,} to {MAX_BUDGET:,}, such as 2000"
    if not (text.isascii() and text.isdigit()):  # not "²" or "١٢": str.isdigit takes them, int() does not
        return f"{field}: {raw.strip()[:32]!r} is not a whole number of tokens; {fix}"
    if not MIN_BUDGET <= int(text) <= MAX_BUDGET:
        return f"{field}: {int(text):,} tokens is out of range; {fix}"
    return int(text)


def _request(fields: dict[str, str | None], budget: int) -> WindowRequest | list[str]:
    body = {k: v for k, v in fields.items() if v}
    try:
        # The preview lists every omitted item with its reason.
        return WindowRequest.model_validate({**body, "max_tokens": budget, "detail": "full"})
    except ValidationError as exc:
        return [explain(dict(e), body_model=WindowRequest, content_type=None) for e in exc.errors()]


async def _panel(
    ctx: RequestContext, *, user_id: str, fields: dict[str, str | None], label: str, testid: str, raw: str, field: str
) -> Panel:
    base = Panel(label=label, testid=testid, budget=raw)
    budget = _budget(raw, field)
    if isinstance(budget, str):
        return _failed(base, title="The budget is not valid", errors=[budget])
    req = _request(fields, budget)
    if isinstance(req, list):
        return _failed(base, title="The request is not valid", errors=req)
    try:
        window = await windows.build_window(ctx, user_id=user_id, req=req, archive=False)
    except BudgetTooSmallError as exc:
        required = exc.extra.get("required")
        fix = f"raise {label.lower()} ({field}) to at least {required:,} tokens" if isinstance(required, int) else None
        return _failed(base, title=exc.title, errors=[exc.detail], status=exc.status, fix=fix)
    except ServiceError as exc:
        return _failed(base, title=exc.title, errors=[exc.detail], status=exc.status)
    return Panel(label=label, testid=testid, budget=raw, window=window)


def _failed(base: Panel, *, title: str, errors: list[str], status: int = 422, fix: str | None = None) -> Panel:
    return Panel(
        label=base.label,
        testid=base.testid,
        budget=base.budget,
        status=status,
        title=title,
        errors=tuple(errors),
        fix=fix,
    )


@router.get("/users/{user_id}/window", response_class=HTMLResponse)
async def window_preview(
    request: Request,
    user_id: UserIdPath,
    operator: Operator,
    input: TextQuery = None,
    query: TextQuery = None,
    session_id: IdQuery = None,
    task_id: IdQuery = None,
    max_tokens: BudgetQuery = None,
    max_tokens_b: BudgetQuery = None,
) -> HTMLResponse:
    form = {
        "input": input or "",
        "query": query or "",
        "session_id": session_id or "",
        "task_id": task_id or "",
        "max_tokens": DEFAULT_BUDGETS[0] if max_tokens is None else max_tokens,
        "max_tokens_b": DEFAULT_BUDGETS[1] if max_tokens_b is None else max_tokens_b,
    }
    ctx = context(request, operator)
    await console.user_summary(ctx, user_id=user_id)  # a user this tenant never wrote is a 404, as elsewhere
    panels: list[Panel] = []
    missing = None
    if input is not None:
        if not input.strip():
            missing = "input is required: type the user's latest message, as the agent would send it"
        else:
            fields = {"input": input, "query": query, "session_id": session_id, "task_id": task_id}
            sides = [("Budget A", "window-a", form["max_tokens"], "max_tokens")]
            if form["max_tokens_b"].strip():
                sides.append(("Budget B", "window-b", form["max_tokens_b"], "max_tokens_b"))
            for label, testid, raw, field in sides:
                panels.append(
                    await _panel(ctx, user_id=user_id, fields=fields, label=label, testid=testid, raw=raw, field=field)
                )
    status = 422 if missing else max((p.status for p in panels), default=200)
    return render(
        request,
        "window.html",
        operator=operator,
        status_code=status,
        user_id=user_id,
        form=form,
        panels=panels,
        missing=missing,
        levels=LEVELS,
        slider_max=SLIDER_MAX,
        min_budget=MIN_BUDGET,
        max_budget=MAX_BUDGET,
    )
