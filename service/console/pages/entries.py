"""Entry detail: a profile entry's 4C breakdown, its evidence plotted over time, the events that changed its
tier or status, and the user's confirm / reject (the API's own use case, with the operator's key)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Form, Query, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import ValidationError

from schemas.profiles import ConfirmBody
from service.console.charts import evidence_plot, fourc_bar
from service.console.rendering import console_router, path_segment, render
from service.console.session import CheckedOperator, Operator, context, flash
from service.deps import EntryIdPath, UserIdPath
from service.errors import ValidationFailed
from service.profiles import service as profiles

router = console_router()

# The events of an entry that move its tier or status (an observation's own event is on the observation).
TIER_EVENTS = ("profile.created", "profile.changed")


def entry_url(user_id: str, entry_id: object) -> str:
    return f"/console/users/{path_segment(user_id)}/entries/{entry_id}"


@router.get("/users/{user_id}/entries/{entry_id}")
async def entry_page(
    request: Request,
    user_id: UserIdPath,
    entry_id: EntryIdPath,
    operator: Operator,
    colour: Annotated[Literal["session", "context"], Query(description="Colour the evidence by")] = "session",
) -> Response:
    ctx = context(request, operator)
    evidence = await profiles.get_evidence(ctx, user_id=user_id, entry_id=entry_id)
    weights, threshold = ctx.settings.profiles.fourc.weights(), ctx.settings.profiles.long_term_threshold
    return render(
        request,
        "entry.html",
        operator=operator,
        user_id=user_id,
        evidence=evidence,
        entry=evidence.entry,
        bar=fourc_bar(evidence.breakdown, weights=weights, threshold=threshold),
        threshold=threshold,
        plot=evidence_plot(evidence.observations, colour_by=colour),
        tier_events=[e for e in evidence.events if e.action in TIER_EVENTS],
        colour=colour,
        url=entry_url(user_id, entry_id),
    )


def _body(note: str) -> ConfirmBody | None:
    """No note: exactly the API's call without a body; a note is kept with the evidence."""
    if not note.strip():
        return None
    try:
        return ConfirmBody(note=note.strip())
    except ValidationError as exc:
        raise ValidationFailed(f"note: {exc.errors()[0]['msg']}") from None


def _verdict(path: str, *, confirm: bool) -> None:
    """Confirm and reject: one form handler each, both ``profiles.service.confirm_or_reject`` as the API."""

    async def record_verdict(
        request: Request,
        user_id: UserIdPath,
        entry_id: EntryIdPath,
        operator: CheckedOperator,
        note: Annotated[str, Form(max_length=2000)] = "",
    ) -> Response:
        ctx = context(request, operator)
        entry = await profiles.confirm_or_reject(
            ctx, user_id=user_id, entry_id=entry_id, body=_body(note), confirm=confirm
        )
        done = "Confirmed" if confirm else "Rejected"
        await flash(operator, f"{done}: the entry is now {entry.tier}, {entry.status}, score {entry.score:g}.")
        return RedirectResponse(entry_url(user_id, entry_id), status_code=303)

    router.post(path, name="confirm_entry_form" if confirm else "reject_entry_form")(record_verdict)


_verdict("/users/{user_id}/entries/{entry_id}/confirm", confirm=True)
_verdict("/users/{user_id}/entries/{entry_id}/reject", confirm=False)
