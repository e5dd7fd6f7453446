"""``GET …/export``: everything stored about a user, as one document (not described by the OpenAPI schema:
the server streams it; its sections hold the same shapes as the other routes answer)."""

from __future__ import annotations

from datetime import datetime

from ctxmem_client.models.base import Model
from ctxmem_client.models.conversations import StoredMessage
from ctxmem_client.models.events import Event
from ctxmem_client.models.items import Item
from ctxmem_client.models.profiles import Observation, ProfileEntry


class Export(Model):
    tenant_id: str
    user_id: str
    exported_at: datetime
    items: list[Item]
    profile_entries: list[ProfileEntry]
    observations: list[Observation]
    events: list[Event]
    conversation_messages: list[StoredMessage]
