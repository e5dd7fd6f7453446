"""What a request's service call needs besides its own input: one transaction, the caller, the settings,
the tokenizer, the time and the vector index (``None`` when vector recall is off or not at hand: the
window then ranks by PostgreSQL alone and says ``degraded``). Built by the endpoint from its dependencies
(or by a job or the CLI)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession

from service.auth.principal import Principal
from service.caches import ProcessCaches
from service.settings import Settings
from service.tokenizer import Tokenizer

if TYPE_CHECKING:
    from service.vectors.recall import VectorRecall


@dataclass(frozen=True)
class RequestContext:
    session: AsyncSession
    principal: Principal
    settings: Settings
    tokenizer: Tokenizer
    now: datetime
    vectors: VectorRecall | None = None
    # The process's caches (service/caches.py); a context built without them (a job, the CLI) gets its own,
    # which keep nothing beyond it.
    caches: ProcessCaches = field(default_factory=ProcessCaches)
