"""Each API operation as a plain description of one HTTP call, shared by the sync and the async client
(which only differ in how they send it and wait between retries)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from ctxmem_client.errors import error_for
from ctxmem_client.models.base import dump_request
from ctxmem_client.models.conversations import (
    MESSAGES_APPEND,
    MessagePage,
    MessagePopped,
    MessagesAppended,
    SessionEnded,
)
from ctxmem_client.models.events import (
    EraseResult,
    EventPage,
    Health,
    JobName,
    JobRun,
    JobRunPage,
    Readiness,
)
from ctxmem_client.models.export import Export
from ctxmem_client.models.extraction import EXTRACT_REQUEST, SESSION_EXTRACT_REQUEST, ExtractionResult
from ctxmem_client.models.items import ITEM_BATCH, ITEM_CREATE, Item, ItemBatch, ItemCreate, ItemPage
from ctxmem_client.models.profiles import (
    CONFIRM_BODY,
    OBSERVATION_BATCH,
    OBSERVATION_CREATE,
    ConfirmBody,
    EntryEvidence,
    ObservationCreate,
    Profile,
    ProfileEntry,
    ProfileEntryBatch,
)
from ctxmem_client.models.search import SEARCH_REQUEST, SearchRequest, SearchResults
from ctxmem_client.models.windows import WINDOW_REQUEST, Window, WindowRequest

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
_JOB_BODY: TypeAdapter[dict[str, datetime]] = TypeAdapter(dict[str, datetime])


@dataclass(frozen=True)
class Call(Generic[T]):
    """``write``: the call changes data, so it carries an ``Idempotency-Key`` (one per call, the same on each
    retry). ``resend``: safe to send again after a connection failure whose request may have arrived (reads,
    and writes the server deduplicates by their key). ``answers``: statuses outside 2xx that are an answer
    rather than an error (readiness's 503)."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    write: bool = False
    resend: bool = True
    answers: frozenset[int] = field(default_factory=frozenset)

    def result(self, response: httpx.Response, *, retry_after: float | None) -> T:
        if response.is_success or response.status_code in self.answers:
            return self.parse(response.json())
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        raise error_for(response.status_code, body, retry_after=retry_after, reason=response.reason_phrase)


def _model(cls: type[M]) -> Callable[[Any], M]:
    return cls.model_validate


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def query(values: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Query parameters: None left out, lists repeated, booleans as true/false."""
    out: list[tuple[str, str]] = []
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, list | tuple):
            out.extend((name, _param(v)) for v in value)
        else:
            out.append((name, _param(value)))
    return tuple(out)


def user_path(user_id: str) -> str:
    if not user_id:
        raise ValueError("user_id must not be empty")
    return f"/v1/users/{quote(user_id, safe='')}"


def _id(value: uuid.UUID | str) -> str:
    return quote(str(value), safe="")


# Health and jobs ------------------------------------------------------------------------------------------


def health() -> Call[Health]:
    return Call("GET", "/healthz", _model(Health))


def ready() -> Call[Readiness]:
    return Call("GET", "/readyz", _model(Readiness), answers=frozenset({503}))


def run_job(name: JobName, *, now: datetime | None) -> Call[JobRun]:
    body = _JOB_BODY.dump_json({"now": now}) if now is not None else None
    # The jobs route takes no Idempotency-Key: a run whose answer was lost is not sent again (429 and 503,
    # answered before anything ran, still are).
    return Call("POST", f"/v1/jobs/{_id(name)}/run", _model(JobRun), body=body, resend=False)


def job_runs(*, name: JobName | None, limit: int | None) -> Call[JobRunPage]:
    return Call("GET", "/v1/jobs/runs", _model(JobRunPage), params=query({"name": name, "limit": limit}))


# Items ----------------------------------------------------------------------------------------------------


def add_item(user: str, item: ItemCreate) -> Call[Item]:
    return Call("POST", f"{user}/items", _model(Item), body=dump_request(ITEM_CREATE, item), write=True)


def add_items(user: str, items: Sequence[ItemCreate]) -> Call[ItemBatch]:
    body = dump_request(ITEM_BATCH, {"items": list(items)})
    return Call("POST", f"{user}/items/batch", _model(ItemBatch), body=body, write=True)


def list_items(user: str, filters: Mapping[str, Any], cursor: str | None) -> Call[ItemPage]:
    return Call("GET", f"{user}/items", _model(ItemPage), params=query({**filters, "cursor": cursor}))


def get_item(user: str, item_id: uuid.UUID | str, *, level: int | None) -> Call[Item]:
    return Call("GET", f"{user}/items/{_id(item_id)}", _model(Item), params=query({"level": level}))


def delete_item(user: str, item_id: uuid.UUID | str) -> Call[Item]:
    return Call("DELETE", f"{user}/items/{_id(item_id)}", _model(Item), write=True)


# Observations and profile ---------------------------------------------------------------------------------


def observe(user: str, observation: ObservationCreate) -> Call[ProfileEntry]:
    body = dump_request(OBSERVATION_CREATE, observation)
    return Call("POST", f"{user}/observations", _model(ProfileEntry), body=body, write=True)


def observe_batch(user: str, observations: Sequence[ObservationCreate]) -> Call[ProfileEntryBatch]:
    body = dump_request(OBSERVATION_BATCH, {"observations": list(observations)})
    return Call("POST", f"{user}/observations/batch", _model(ProfileEntryBatch), body=body, write=True)


def profile(
    user: str, *, domains: Sequence[str] | None, session_id: str | None, tiers: Sequence[str] | None
) -> Call[Profile]:
    params = query({"domain": list(domains or []), "session_id": session_id, "tier": list(tiers or [])})
    return Call("GET", f"{user}/profile", _model(Profile), params=params)


def profile_entry(user: str, entry_id: uuid.UUID | str) -> Call[EntryEvidence]:
    return Call("GET", f"{user}/profile/{_id(entry_id)}", _model(EntryEvidence))


def verdict(user: str, entry_id: uuid.UUID | str, body: ConfirmBody, *, confirm: bool) -> Call[ProfileEntry]:
    path = f"{user}/profile/{_id(entry_id)}/{'confirm' if confirm else 'reject'}"
    data = dump_request(CONFIRM_BODY, body) if body else None
    return Call("POST", path, _model(ProfileEntry), body=data, write=True)


# Window and search ----------------------------------------------------------------------------------------


def window(user: str, request: WindowRequest) -> Call[Window]:
    body = dump_request(WINDOW_REQUEST, request)
    text = request["input"]

    def parse(data: Any) -> Window:
        return Window.model_validate(data).with_input(text)

    # A window is a read, unless it archives the history that did not fit (then it writes an item).
    return Call("POST", f"{user}/window", parse, body=body, write=bool(request.get("archive_dropped")))


def search(user: str, request: SearchRequest) -> Call[SearchResults]:
    return Call("POST", f"{user}/search", _model(SearchResults), body=dump_request(SEARCH_REQUEST, request))


# Conversations --------------------------------------------------------------------------------------------


def _session(user: str, session_id: str) -> str:
    if not session_id:
        raise ValueError("session_id must not be empty")
    return f"{user}/sessions/{quote(session_id, safe='')}"


def append_messages(user: str, session_id: str, messages: Sequence[Mapping[str, Any]]) -> Call[MessagesAppended]:
    body = dump_request(MESSAGES_APPEND, {"messages": [dict(m) for m in messages]})
    path = f"{_session(user, session_id)}/messages"
    return Call("POST", path, _model(MessagesAppended), body=body, write=True)


def list_messages(user: str, session_id: str, *, limit: int | None, cursor: str | None) -> Call[MessagePage]:
    params = query({"limit": limit, "cursor": cursor})
    return Call("GET", f"{_session(user, session_id)}/messages", _model(MessagePage), params=params)


def pop_message(user: str, session_id: str) -> Call[MessagePopped]:
    return Call("DELETE", f"{_session(user, session_id)}/messages/last", _model(MessagePopped), write=True)


def end_session(user: str, session_id: str) -> Call[SessionEnded]:
    return Call("DELETE", _session(user, session_id), _model(SessionEnded), write=True)


# Extraction -----------------------------------------------------------------------------------------------


def extract(
    user: str, messages: Sequence[Mapping[str, Any]], *, session_id: str | None, dry_run: bool
) -> Call[ExtractionResult]:
    request: dict[str, Any] = {"messages": [dict(m) for m in messages]}
    if session_id is not None:
        request["session_id"] = session_id
    if dry_run:
        request["dry_run"] = True
    body = dump_request(EXTRACT_REQUEST, request)
    # A dry run writes nothing, but it carries a key too: a resend after a lost answer is then replayed, not
    # extracted (and, with a language-model extractor, paid for) again.
    return Call("POST", f"{user}/extract", _model(ExtractionResult), body=body, write=True)


def extract_session(user: str, session_id: str, *, reextract: bool) -> Call[ExtractionResult]:
    body = dump_request(SESSION_EXTRACT_REQUEST, {"reextract": True}) if reextract else None
    path = f"{_session(user, session_id)}/extract"
    return Call("POST", path, _model(ExtractionResult), body=body, write=True)


# The user as a whole --------------------------------------------------------------------------------------


def events(
    user: str, *, kinds: Sequence[str] | None, order: str | None, limit: int | None, cursor: str | None
) -> Call[EventPage]:
    params = query({"kind": list(kinds or []), "order": order, "limit": limit, "cursor": cursor})
    return Call("GET", f"{user}/events", _model(EventPage), params=params)


def export(user: str) -> Call[Export]:
    return Call("GET", f"{user}/export", _model(Export))


def erase(user: str) -> Call[EraseResult]:
    return Call("DELETE", user, _model(EraseResult), write=True)
