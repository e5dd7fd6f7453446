"""Erase a user (admin): what will be erased, per table, then the erasure itself behind a typed confirmation —
the operator types the user id exactly. The erasure is the service call behind ``DELETE /v1/users/{u}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Form, Request
from fastapi.responses import HTMLResponse

from service.console.rendering import console_router, render
from service.console.session import CheckedOperator, Operator, context
from service.deps import UserIdPath
from service.idempotency import Idempotency
from service.users import service as users

router = console_router()


@router.get("/users/{user_id}/erase", response_class=HTMLResponse)
async def erase_page(request: Request, user_id: UserIdPath, operator: Operator) -> HTMLResponse:
    counts = await users.erasure_counts(context(request, operator), user_id=user_id)
    return render(request, "erase.html", operator=operator, user_id=user_id, counts=counts, typed="", mismatch=False)


@router.post("/users/{user_id}/erase", response_class=HTMLResponse)
async def erase(
    request: Request,
    user_id: UserIdPath,
    operator: CheckedOperator,
    confirm_user_id: Annotated[str, Form(max_length=256)] = "",
) -> HTMLResponse:
    ctx = context(request, operator)
    # Who may erase and whether the user exists come first: a refused key learns nothing from the form.
    counts = await users.erasure_counts(ctx, user_id=user_id)
    if confirm_user_id != user_id:
        return render(
            request,
            "erase.html",
            operator=operator,
            status_code=422,
            user_id=user_id,
            counts=counts,
            typed=confirm_user_id,
            mismatch=True,
        )
    idem = Idempotency(ctx.session, ctx.principal.tenant_id, None)
    result = await users.erase_user(ctx, user_id=user_id, idem=idem)
    return render(request, "erase_done.html", operator=operator, result=result)
