"""service/context.py: the request context a service call receives first."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from service.auth.principal import Principal
from service.context import RequestContext
from service.settings import Settings
from service.tokenizer import build_tokenizer


def test_a_context_is_frozen_and_vectors_default_to_off(settings: Settings) -> None:
    principal = Principal(tenant_id="t", key_id=uuid.uuid4(), role="agent")
    session: Any = object()  # the context only carries the session; nothing here touches it
    now = datetime(2026, 9, 1, tzinfo=UTC)
    tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
    ctx = RequestContext(session, principal, settings, tokenizer, now)
    assert ctx.vectors is None  # the window then ranks by PostgreSQL alone
    assert (ctx.principal, ctx.now, ctx.session) == (principal, now, session)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.now = datetime(2027, 1, 1, tzinfo=UTC)  # type: ignore[misc]
    later = dataclasses.replace(ctx, now=datetime(2027, 1, 1, tzinfo=UTC))
    assert later.now.year == 2027 and ctx.now.year == 2026
