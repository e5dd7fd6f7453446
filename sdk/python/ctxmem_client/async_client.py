"""The asynchronous client: ``AsyncClient`` and ``AsyncUser``, the same methods as ``Client`` and ``User``
(ctxmem_client.client), awaited."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx
from typing_extensions import Unpack

from ctxmem_client import _calls as calls
from ctxmem_client._base import (
    DEFAULT_TIMEOUT,
    CommitPosition,
    Config,
    attempt_headers,
    connection_failed,
    finish,
    retry_delay,
)
from ctxmem_client._calls import Call, T
from ctxmem_client._retry import RETRY_EXCEPTIONS, RetryPolicy
from ctxmem_client.models import (
    ConfirmBody,
    EntryEvidence,
    EraseResult,
    Event,
    EventKind,
    EventPage,
    Export,
    ExtractionResult,
    Health,
    Item,
    ItemBatch,
    ItemCreate,
    ItemFilters,
    ItemPage,
    JobName,
    JobRun,
    JobRunPage,
    MessagePage,
    MessagePopped,
    MessagesAppended,
    ObservationCreate,
    Profile,
    ProfileEntry,
    ProfileEntryBatch,
    Readiness,
    SearchRequest,
    SearchResults,
    SessionEnded,
    StoredMessage,
    Tier,
    Window,
    WindowRequest,
)
from ctxmem_client.models.items import Order


class AsyncClient:
    """``Client(base_url, api_key)``; both default to ``CTXMEM_URL`` and ``CTXMEM_API_KEY``. Every call is
    retried up to ``max_retries`` times on 429, 503 and connection failures (see ``RetryPolicy``); writes
    carry an ``Idempotency-Key`` so that a retried write is applied once. Use it as an async context
    manager, or call ``aclose()``."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.config = Config.resolve(base_url, api_key, timeout=timeout, max_retries=max_retries, retry=retry)
        self._sleep = sleep
        self.position = CommitPosition()
        self._http = httpx.AsyncClient(
            base_url=self.config.base_url,
            headers=self.config.headers(),
            timeout=self.config.timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def user(self, user_id: str) -> AsyncUser:
        """The handle on one user's items, profile, window, search, events, export and erasure."""
        return AsyncUser(self, user_id)

    async def health(self) -> Health:
        return await self.send(calls.health())

    async def ready(self) -> Readiness:
        """Readiness; a ``not-ready`` answer (503) is returned, not raised, and not retried."""
        return await self.send(calls.ready())

    async def run_job(self, name: JobName, *, now: datetime | None = None) -> JobRun:
        """Admin keys: run ``expire``, ``promote``, ``decay``, ``purge``, ``reindex`` or ``extract`` now (or as of
        ``now``)."""
        return await self.send(calls.run_job(name, now=now))

    async def job_runs(self, *, name: JobName | None = None, limit: int | None = None) -> JobRunPage:
        return await self.send(calls.job_runs(name=name, limit=limit))

    async def send(self, call: Call[T]) -> T:
        """One call, with its retries."""
        headers = {**attempt_headers(call), **self.position.headers()}
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, params=call.params, content=call.body, headers=headers
                )
            except RETRY_EXCEPTIONS as exc:
                delay = retry_delay(call, self.config.retry, attempt, None, exc)
                if delay is None:
                    raise connection_failed(call, exc, attempt + 1) from exc
            else:
                self.position.note(response)
                delay = retry_delay(call, self.config.retry, attempt, response)
                if delay is None:
                    return finish(call, response)
            await self._sleep(delay)
            attempt += 1


class AsyncUser:
    """One user's data. Writes (``add_item``, ``observe``, ``confirm``…) are idempotent across retries."""

    def __init__(self, client: AsyncClient, user_id: str) -> None:
        self.client = client
        self.user_id = user_id
        self._path = calls.user_path(user_id)

    # Items

    async def add_item(self, **item: Unpack[ItemCreate]) -> Item:
        """Write one item (``type`` and ``content`` required); a keyed item carries its ``resolution``."""
        return await self.client.send(calls.add_item(self._path, item))

    async def add_items(self, items: Sequence[ItemCreate]) -> ItemBatch:
        """Write up to the server's batch limit (1,000) at once, all or nothing."""
        return await self.client.send(calls.add_items(self._path, items))

    async def list_items(self, *, cursor: str | None = None, **filters: Unpack[ItemFilters]) -> ItemPage:
        return await self.client.send(calls.list_items(self._path, filters, cursor))

    async def iter_items(self, **filters: Unpack[ItemFilters]) -> AsyncIterator[Item]:
        """Every matching item, page after page (``limit`` is the page size)."""
        cursor: str | None = None
        while True:
            page = await self.list_items(cursor=cursor, **filters)
            for found in page.items:
                yield found
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def get_item(self, item_id: uuid.UUID | str, *, level: int | None = None) -> Item:
        """One item whatever its status; with ``level`` (0-4) also ``at_level``, its text at that level."""
        return await self.client.send(calls.get_item(self._path, item_id, level=level))

    async def expand(self, handle: uuid.UUID | str) -> str:
        """The whole text of the item a window names by ``handle`` (the ``[id]`` before a shortened line: the
        end of the item's id) or by its id. An ambiguous handle raises the 409 ``ambiguous-handle``."""
        item = await self.get_item(handle, level=0)
        return item.content if item.at_level is None else item.at_level.text

    async def delete_item(self, item_id: uuid.UUID | str) -> Item:
        return await self.client.send(calls.delete_item(self._path, item_id))

    # Observations and profile

    async def observe(self, **observation: Unpack[ObservationCreate]) -> ProfileEntry:
        """One piece of evidence (``dimension``, ``key``, ``value``, ``session_id``) → the entry, rescored."""
        return await self.client.send(calls.observe(self._path, observation))

    async def observe_batch(self, observations: Sequence[ObservationCreate]) -> ProfileEntryBatch:
        return await self.client.send(calls.observe_batch(self._path, observations))

    async def profile(
        self,
        *,
        domains: Sequence[str] | None = None,
        session_id: str | None = None,
        tiers: Sequence[Tier] | None = None,
    ) -> Profile:
        return await self.client.send(calls.profile(self._path, domains=domains, session_id=session_id, tiers=tiers))

    async def profile_entry(self, entry_id: uuid.UUID | str) -> EntryEvidence:
        """Operators: the entry with its 4C breakdown, observations and events."""
        return await self.client.send(calls.profile_entry(self._path, entry_id))

    async def confirm(self, entry_id: uuid.UUID | str, **body: Unpack[ConfirmBody]) -> ProfileEntry:
        return await self.client.send(calls.verdict(self._path, entry_id, body, confirm=True))

    async def reject(self, entry_id: uuid.UUID | str, **body: Unpack[ConfirmBody]) -> ProfileEntry:
        return await self.client.send(calls.verdict(self._path, entry_id, body, confirm=False))

    # Window and search

    async def window(self, **request: Unpack[WindowRequest]) -> Window:
        """The context for the next model call; ``.to_openai()`` gives the messages to send."""
        return await self.client.send(calls.window(self._path, request))

    async def search(self, **request: Unpack[SearchRequest]) -> SearchResults:
        return await self.client.send(calls.search(self._path, request))

    # Conversations

    async def append_messages(self, session_id: str, messages: Sequence[Mapping[str, Any]]) -> MessagesAppended:
        """Store messages (OpenAI format) after the session's; a window with this ``session_id`` and no
        ``messages`` then fits the stored history."""
        return await self.client.send(calls.append_messages(self._path, session_id, messages))

    async def list_messages(
        self, session_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> MessagePage:
        return await self.client.send(calls.list_messages(self._path, session_id, limit=limit, cursor=cursor))

    async def iter_messages(self, session_id: str, *, limit: int | None = None) -> AsyncIterator[StoredMessage]:
        """The session's stored messages, oldest first, page after page."""
        cursor: str | None = None
        while True:
            page = await self.list_messages(session_id, limit=limit, cursor=cursor)
            for found in page.items:
                yield found
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def pop_message(self, session_id: str) -> MessagePopped:
        """Take back the session's newest message (``removed``: it, or None if a window archived it)."""
        return await self.client.send(calls.pop_message(self._path, session_id))

    async def end_session(self, session_id: str) -> SessionEnded:
        """Archive the turns no window archived, then remove the session's messages."""
        return await self.client.send(calls.end_session(self._path, session_id))

    # Extraction: learning from the conversation

    async def extract(
        self, messages: Sequence[Mapping[str, Any]], *, session_id: str | None = None, dry_run: bool = False
    ) -> ExtractionResult:
        """Learn from ``messages`` (OpenAI format, not stored): what the user states about themselves becomes
        items and profile evidence, each quoting the user's words. ``session_id`` names the conversation they
        come from; ``dry_run=True`` writes nothing and answers with what would be written and what was
        rejected."""
        return await self.client.send(calls.extract(self._path, messages, session_id=session_id, dry_run=dry_run))

    async def extract_session(self, session_id: str, *, reextract: bool = False) -> ExtractionResult:
        """Extract what waits in a stored conversation now (the server's ``extract`` job would later);
        ``reextract=True`` also extracts what an older extractor version did, superseding its records."""
        return await self.client.send(calls.extract_session(self._path, session_id, reextract=reextract))

    # The user as a whole

    async def events(
        self,
        *,
        kinds: Sequence[EventKind] | None = None,
        order: Order | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> EventPage:
        return await self.client.send(calls.events(self._path, kinds=kinds, order=order, limit=limit, cursor=cursor))

    async def iter_events(
        self, *, kinds: Sequence[EventKind] | None = None, order: Order | None = None, limit: int | None = None
    ) -> AsyncIterator[Event]:
        cursor: str | None = None
        while True:
            page = await self.events(kinds=kinds, order=order, limit=limit, cursor=cursor)
            for found in page.items:
                yield found
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def export(self) -> Export:
        return await self.client.send(calls.export(self._path))

    async def erase(self) -> EraseResult:
        """Admin keys: erase every row of the user."""
        return await self.client.send(calls.erase(self._path))
