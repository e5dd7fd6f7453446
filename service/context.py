"""What a request's service call needs besides its own input: one transaction, the caller, the settings,
the tokenizer and the time. Built by the endpoint from its dependencies (or by a job or the CLI)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from service.auth.service import Principal
from service.settings import Settings
from service.tokenizer import Tokenizer


@dataclass(frozen=True)
class RequestContext:
    session: AsyncSession
    principal: Principal
    settings: Settings
    tokenizer: Tokenizer
    now: datetime
