"""ctxmem_client: the Python client of ctxmem, the memory service for LLM agents.

from ctxmem_client import Client

with Client("http://127.0.0.1:8080", api_key="...") as client:
    alice = client.user("alice")
    alice.add_item(type="constraint", content="Never book flights landing after 22:00.", hard=True)
    window = alice.window(input="Find me a flight to Lisbon.", max_tokens=2000)
    messages = window.to_openai()
"""

from ctxmem_client._base import VERSION as __version__
from ctxmem_client._retry import RetryPolicy
from ctxmem_client.async_client import AsyncClient, AsyncUser
from ctxmem_client.client import Client, User
from ctxmem_client.errors import (
    AmbiguousHandle,
    BadRequest,
    BatchItemInvalid,
    BatchTooLarge,
    BudgetTooSmall,
    Conflict,
    ConnectionFailed,
    CorrectionRefused,
    CtxmemError,
    EntryNotFound,
    ExtractionCapReached,
    ExtractionOff,
    ExtractorUnavailable,
    Forbidden,
    HistoryInvalid,
    IdempotencyInProgress,
    IdempotencyKeyReused,
    ItemNotFound,
    JobRunning,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
    UserNotFound,
    ValidationError,
)
from ctxmem_client.models import Window

__all__ = [
    "AmbiguousHandle",
    "AsyncClient",
    "AsyncUser",
    "BadRequest",
    "BatchItemInvalid",
    "BatchTooLarge",
    "BudgetTooSmall",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "CorrectionRefused",
    "CtxmemError",
    "EntryNotFound",
    "ExtractionCapReached",
    "ExtractionOff",
    "ExtractorUnavailable",
    "Forbidden",
    "HistoryInvalid",
    "IdempotencyInProgress",
    "IdempotencyKeyReused",
    "ItemNotFound",
    "JobRunning",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "User",
    "UserNotFound",
    "ValidationError",
    "Window",
    "__version__",
]
