"""Table models. Every table carries ``tenant_id``; user-owned tables carry ``user_id`` too.

Column changes go through an Alembic migration in ``service/db/migrations/versions``;
``tests/db/test_migrations.py`` fails when these models and the migrated schema drift apart.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any, get_args

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlmodel import Field, SQLModel

from schemas import items as s_items
from schemas import profiles as s_profiles
from scoring.scopes import EVERYWHERE
from scoring.window import HANDLE_CHARS
from scoring.window_policy import STANDING_STATUSES, STANDING_TYPES

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SQLModel.metadata.naming_convention = NAMING_CONVENTION
metadata = SQLModel.metadata


UUID = pg.UUID(as_uuid=True)
JSON = pg.JSONB(none_as_null=True)  # Python None is SQL NULL, not the JSON null


def _col(sa_type: Any, *args: Any, nullable: bool = False, **kw: Any) -> Any:
    """A column of ``sa_type``: NOT NULL unless ``nullable`` (a nullable one defaults to None in Python).
    ``default`` and ``default_factory`` go to the model's field, everything else to ``sa.Column``."""
    field = {k: kw.pop(k) for k in ("default", "default_factory") if k in kw}
    if nullable and not field:
        field["default"] = None
    return Field(**field, sa_column=sa.Column(sa_type, *args, nullable=nullable, **kw))


def _ts(nullable: bool = False) -> Any:
    return _col(sa.DateTime(timezone=True), nullable=nullable)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


# The values the check constraints allow are the schemas' Literals: written once, there.
ITEM_TYPES: tuple[str, ...] = get_args(s_items.ItemType)
SOURCES: tuple[str, ...] = get_args(s_items.Source)
AUTHORITIES: tuple[str, ...] = get_args(s_items.Authority)
SCOPES: tuple[str, ...] = get_args(s_items.Scope)
KINDS: tuple[str, ...] = get_args(s_items.Kind)
ITEM_STATUSES: tuple[str, ...] = get_args(s_items.ItemStatus)
ROLES = ("agent", "operator", "admin")
# Statuses of an item that is in force (windows, retrieval, expiry): the one definition, in Python and,
# through active_sql, in SQL.
ACTIVE_STATUSES = ("available", "verified", "missing")


def active_sql(alias: str | None = None) -> str:
    """The SQL predicate "this item is in force" (its status; expiry is checked apart, against a time)."""
    return _in(f"{alias}.status" if alias else "status", ACTIVE_STATUSES)


# A window's standing candidates (scoring.window_policy.STANDING_TYPES / STANDING_STATUSES): the user's
# and global items that are or may be pinned, and the items of a narrower scope than the user's. Both are
# partial-index predicates, so the window's SQL repeats them word for word.
STANDING_ITEM = (
    f"{_in('status', ACTIVE_STATUSES)} AND {_in('scope', EVERYWHERE)}"
    f" AND ({_in('type', STANDING_TYPES)} OR {_in('status', STANDING_STATUSES)})"
)
SCOPED_ITEM = f"{_in('status', ACTIVE_STATUSES)} AND scope NOT IN ({', '.join(repr(s) for s in EVERYWHERE)})"
# The turns of a conversation: episodes that name their session (relevance in context, service/recall/service.py).
CONVERSATION_ITEM = "type = 'episode' AND session_id IS NOT NULL"
# The end of an item's id that a handle names: the lookup by handle (service/items/repository.py, id_end)
# repeats the expression, its length a constant, or the index does not serve it.
HANDLE_INDEX = f"right(id::text, {HANDLE_CHARS})"


class Tenant(SQLModel, table=True):
    __tablename__ = "tenant"

    id: str = _col(sa.Text, primary_key=True)
    created_at: datetime = _ts()


class ApiKey(SQLModel, table=True):
    __tablename__ = "api_key"
    __table_args__ = (sa.CheckConstraint(_in("role", ROLES), name="role"),)

    id: uuid.UUID = _col(UUID, primary_key=True)
    tenant_id: str = _col(sa.Text, sa.ForeignKey("tenant.id", ondelete="CASCADE"), index=True)
    role: str = _col(sa.Text)
    name: str | None = _col(sa.Text, nullable=True)
    # The secret is shown once; only its SHA-256 is stored (secrets are 256 random bits, so a slow hash
    # would add nothing but latency to every request).
    secret_hash: str = _col(sa.Text, unique=True)
    prefix: str = _col(sa.Text)
    created_at: datetime = _ts()
    revoked_at: datetime | None = _ts(nullable=True)


class EndUser(SQLModel, table=True):
    """A user of a tenant, created on first write. Lets reads tell "unknown user" (404) from "no items"."""

    __tablename__ = "end_user"

    tenant_id: str = _col(sa.Text, sa.ForeignKey("tenant.id", ondelete="CASCADE"), primary_key=True)
    user_id: str = _col(sa.Text, primary_key=True)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


# The ORM identifies a tenant's row by (tenant_id, id), so that the statements it writes itself (a refresh
# of an expired object, a flush) carry the tenant, as every hand-written one does: the distribution key of
# a sharded deployment (docs/citus.md). The table's primary key stays ``id``.
TENANT_IDENTITY = {"primary_key": ["tenant_id", "id"]}


class ContextItem(SQLModel, table=True):
    __tablename__ = "context_item"
    __mapper_args__ = TENANT_IDENTITY
    __table_args__ = (
        sa.ForeignKeyConstraint(
            ["tenant_id", "user_id"],
            ["end_user.tenant_id", "end_user.user_id"],
            name="fk_context_item_end_user",
        ),
        sa.CheckConstraint(_in("type", ITEM_TYPES), name="type"),
        sa.CheckConstraint(_in("source", SOURCES), name="source"),
        sa.CheckConstraint(_in("authority", AUTHORITIES), name="authority"),
        sa.CheckConstraint(_in("scope", SCOPES), name="scope"),
        sa.CheckConstraint(_in("kind", KINDS), name="kind"),
        sa.CheckConstraint(_in("status", ITEM_STATUSES), name="status"),
        sa.CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence"),
        sa.CheckConstraint("token_cost >= 0", name="token_cost"),
        # The window's read pattern: one user's live items of some scopes.
        sa.Index("ix_context_item_window", "tenant_id", "user_id", "status", "scope"),
        # Listing and cursor pagination for one user; a window's newest items.
        sa.Index("ix_context_item_user_id_order", "tenant_id", "user_id", "id"),
        # An item found by its handle, the end of its id (service/items/repository.py, find_by_handle).
        sa.Index("ix_context_item_handle", "tenant_id", "user_id", sa.text(HANDLE_INDEX)),
        # A window's standing candidates (service/windows/repository.py): the user's pinned kinds of item,
        # and the items of a session, task, stage or step.
        sa.Index("ix_context_item_standing", "tenant_id", "user_id", postgresql_where=sa.text(STANDING_ITEM)),
        sa.Index("ix_context_item_scoped", "tenant_id", "user_id", "scope_ref", postgresql_where=sa.text(SCOPED_ITEM)),
        # A relevant turn's neighbours in its conversation (service/windows/recall.py).
        sa.Index(
            "ix_context_item_conversation",
            "tenant_id",
            "user_id",
            "session_id",
            "observed_at",
            "id",
            postgresql_where=sa.text(CONVERSATION_ITEM),
        ),
        # Expiry sweeps and the retention purge (scheduled jobs).
        sa.Index(
            "ix_context_item_expiry",
            "expires_at",
            postgresql_where=sa.text(f"expires_at IS NOT NULL AND {active_sql()}"),
        ),
        sa.Index("ix_context_item_deleted", "deleted_at", postgresql_where=sa.text("status = 'deleted'")),
        # A user's learned items by extractor version (docs/design.md §3.9).
        sa.Index(
            "ix_context_item_extracted",
            "tenant_id",
            "user_id",
            "extracted_by",
            postgresql_where=sa.text("extracted_by IS NOT NULL"),
        ),
        # Conflict slots: (tenant, user, key, scope instance); history of a slot in id order.
        sa.Index(
            "ix_context_item_slot",
            "tenant_id",
            "user_id",
            "key",
            "scope",
            "scope_ref",
            "id",
            postgresql_where=sa.text("key IS NOT NULL"),
        ),
        # At most one active item per slot: the invariant conflict resolution maintains, enforced.
        sa.Index(
            "uq_context_item_active_slot",
            "tenant_id",
            "user_id",
            "key",
            "scope",
            "scope_ref",
            unique=True,
            postgresql_where=sa.text(f"key IS NOT NULL AND {active_sql()}"),
        ),
    )

    id: uuid.UUID = _col(UUID, primary_key=True)
    tenant_id: str = _col(sa.Text)
    user_id: str = _col(sa.Text)
    type: str = _col(sa.Text)
    content: str = _col(sa.Text)
    key: str | None = _col(sa.Text, nullable=True)
    value: Any = _col(JSON, nullable=True)
    domain: str | None = _col(sa.Text, nullable=True)
    source: str = _col(sa.Text)
    authority: str = _col(sa.Text)
    scope: str = _col(sa.Text)
    session_id: str | None = _col(sa.Text, nullable=True)
    task_id: str | None = _col(sa.Text, nullable=True)
    stage_id: str | None = _col(sa.Text, nullable=True)
    # The instance the scope refers to (its session/task/stage/step id; '' for user and global scope).
    scope_ref: str = _col(sa.Text, default="", server_default="")
    step_id: str | None = _col(sa.Text, nullable=True)
    hard: bool = _col(sa.Boolean)
    kind: str = _col(sa.Text)
    status: str = _col(sa.Text)
    status_reason: str | None = _col(sa.Text, nullable=True)
    confidence: float = _col(sa.Float)
    observed_at: datetime = _ts()
    created_at: datetime = _ts()
    updated_at: datetime = _ts()
    expires_at: datetime | None = _ts(nullable=True)
    valid_to: datetime | None = _ts(nullable=True)
    deleted_at: datetime | None = _ts(nullable=True)
    superseded_by: uuid.UUID | None = _col(UUID, nullable=True)
    # Writes of the same value that reinforced this item (1 = only its own).
    support_count: int = _col(sa.Integer, default=1, server_default="1")
    corrects: uuid.UUID | None = _col(UUID, nullable=True)
    token_cost: int = _col(sa.Integer)
    token_model: str = _col(sa.Text)
    variants: Any = _col(JSON, nullable=True)
    # Compression levels L1..L4 (scoring/compress.py) and their token counts, derived once at write time
    # so that the window only adds numbers. NULL on rows written before they existed (derived on read).
    level_texts: list[str] | None = _col(pg.ARRAY(sa.Text), nullable=True)
    level_tokens: list[int] | None = _col(pg.ARRAY(sa.Integer), nullable=True)
    # A client-sent embedding (dimension checked against the configured embedder); else computed by the
    # outbox worker when it indexes the item.
    embedding: list[float] | None = _col(pg.ARRAY(sa.REAL), nullable=True)
    related_ids: list[uuid.UUID] = _col(pg.ARRAY(UUID), default_factory=list, server_default=sa.text("'{}'::uuid[]"))
    # Learned from a conversation (§3.9): the extractor and its version, and the words it rests on
    # ({"message_id", "session_id", "span": [start, end], "quote"}).
    extracted_by: str | None = _col(sa.Text, nullable=True)
    evidence: Any = _col(JSON, nullable=True)


class Event(SQLModel, table=True):
    """Append-only audit log: who did what, when, why, with the state before and after.

    A trigger rejects UPDATE; rows leave only by user erasure or the retention purge.
    """

    __tablename__ = "event"
    __mapper_args__ = TENANT_IDENTITY
    __table_args__ = (
        sa.Index("ix_event_user_timeline", "tenant_id", "user_id", "id"),
        sa.Index("ix_event_entity", "tenant_id", "entity_id"),
    )

    id: uuid.UUID = _col(UUID, primary_key=True)
    tenant_id: str = _col(sa.Text)
    user_id: str | None = _col(sa.Text, nullable=True)
    actor: str = _col(sa.Text)
    actor_role: str = _col(sa.Text)
    action: str = _col(sa.Text)
    entity_type: str = _col(sa.Text)
    entity_id: str | None = _col(sa.Text, nullable=True)
    reason: str | None = _col(sa.Text, nullable=True)
    # The rule that decided a resolution (authority, recency, confidence, id, correction, reinforcement,
    # scope-override, expiry); null for plain writes.
    rule: str | None = _col(sa.Text, nullable=True)
    # The job run that made this change (scheduled jobs), else null.
    run_id: uuid.UUID | None = _col(UUID, nullable=True)
    before: Any = _col(JSON, nullable=True)
    after: Any = _col(JSON, nullable=True)
    created_at: datetime = _ts()


class IdempotencyRecord(SQLModel, table=True):
    """The first response to a request carrying ``Idempotency-Key``, replayed byte for byte."""

    __tablename__ = "idempotency_record"
    __table_args__ = (
        sa.Index("ix_idempotency_record_created_at", "created_at"),
        sa.Index("ix_idempotency_record_user", "tenant_id", "user_id"),
    )

    tenant_id: str = _col(sa.Text, primary_key=True)
    key: str = _col(sa.Text, primary_key=True)
    user_id: str | None = _col(sa.Text, nullable=True)
    method: str = _col(sa.Text)
    path: str = _col(sa.Text)
    request_hash: str = _col(sa.Text)
    status_code: int | None = _col(sa.Integer, nullable=True)
    response_body: bytes | None = _col(sa.LargeBinary, nullable=True)
    created_at: datetime = _ts()


DIMENSIONS: tuple[str, ...] = get_args(s_profiles.Dimension)
POLARITIES: tuple[str, ...] = get_args(s_profiles.Polarity)
TIERS: tuple[str, ...] = get_args(s_profiles.Tier)
ENTRY_STATUSES: tuple[str, ...] = get_args(s_profiles.EntryStatus)


class ProfileEntry(SQLModel, table=True):
    """One belief about a user: (domain | global, dimension, key, value, polarity), with its tier and 4C score."""

    __tablename__ = "profile_entry"
    __mapper_args__ = TENANT_IDENTITY
    __table_args__ = (
        sa.ForeignKeyConstraint(
            ["tenant_id", "user_id"], ["end_user.tenant_id", "end_user.user_id"], name="fk_profile_entry_end_user"
        ),
        sa.CheckConstraint(_in("dimension", DIMENSIONS), name="dimension"),
        sa.CheckConstraint(_in("polarity", POLARITIES), name="polarity"),
        sa.CheckConstraint(_in("tier", TIERS), name="tier"),
        sa.CheckConstraint(_in("status", ENTRY_STATUSES), name="status"),
        sa.CheckConstraint("score >= 0 AND score <= 100", name="score"),
        sa.UniqueConstraint(
            "tenant_id",
            "user_id",
            "domain_key",
            "dimension",
            "key",
            "value",
            "polarity",
            name="uq_profile_entry_belief",
        ),
        sa.Index("ix_profile_entry_user_tier", "tenant_id", "user_id", "tier", "status"),
    )

    id: uuid.UUID = _col(UUID, primary_key=True)
    tenant_id: str = _col(sa.Text)
    user_id: str = _col(sa.Text)
    domain: str | None = _col(sa.Text, nullable=True)
    # domain or '' for a global entry, so that the uniqueness of a belief holds for global entries too.
    domain_key: str = _col(sa.Text)
    dimension: str = _col(sa.Text)
    key: str = _col(sa.Text)
    value: str = _col(sa.Text)
    polarity: str = _col(sa.Text)
    tier: str = _col(sa.Text)
    status: str = _col(sa.Text)
    score: float = _col(sa.Float)
    breakdown: Any = _col(pg.JSONB)
    explicit: bool = _col(sa.Boolean)
    evidence_count: int = _col(sa.Integer)
    current_session_id: str | None = _col(sa.Text, nullable=True)
    confirmed_at: datetime | None = _ts(nullable=True)
    first_evidence_at: datetime = _ts()
    last_evidence_at: datetime = _ts()
    # Last *supporting* evidence: what decay measures silence from.
    last_supported_at: datetime | None = _ts(nullable=True)
    # When the decay job last took this entry one level down: the next step needs another silent period.
    decayed_at: datetime | None = _ts(nullable=True)
    expires_at: datetime | None = _ts(nullable=True)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Observation(SQLModel, table=True):
    """Append-only evidence for or against a profile entry."""

    __tablename__ = "observation"
    __mapper_args__ = TENANT_IDENTITY
    __table_args__ = (
        sa.CheckConstraint("stance IN ('supports', 'contradicts')", name="stance"),
        sa.CheckConstraint("weight > 0 AND weight <= 1", name="weight"),
        sa.Index("ix_observation_entry", "tenant_id", "entry_id", "observed_at"),
        sa.Index("ix_observation_user", "tenant_id", "user_id", "id"),
    )

    id: uuid.UUID = _col(UUID, primary_key=True)
    tenant_id: str = _col(sa.Text)
    user_id: str = _col(sa.Text)
    entry_id: uuid.UUID = _col(UUID, sa.ForeignKey("profile_entry.id", ondelete="CASCADE"))
    session_id: str = _col(sa.Text)
    context: str = _col(sa.Text)
    explicit: bool = _col(sa.Boolean)
    stance: str = _col(sa.Text)
    confirmation: bool = _col(sa.Boolean)
    observed_at: datetime = _ts()
    source: str = _col(sa.Text)
    note: str | None = _col(sa.Text, nullable=True)
    weight: float = _col(sa.Float)
    created_at: datetime = _ts()
    extracted_by: str | None = _col(sa.Text, nullable=True)
    evidence: Any = _col(JSON, nullable=True)


class ConversationMessage(SQLModel, table=True):
    """One message of a user's conversation (a session), as sent (OpenAI chat format), so that a window can
    fit the history itself. Once it falls out of a window's fitted history it is archived into an episode
    item (``archived_item_id``) and no window fits it again."""

    __tablename__ = "conversation_message"
    __mapper_args__ = TENANT_IDENTITY
    __table_args__ = (
        sa.ForeignKeyConstraint(
            ["tenant_id", "user_id"],
            ["end_user.tenant_id", "end_user.user_id"],
            name="fk_conversation_message_end_user",
        ),
        sa.UniqueConstraint("tenant_id", "user_id", "session_id", "seq"),
        sa.CheckConstraint("seq >= 1", name="seq"),
        # The messages waiting for extraction (service/extraction/), per session in order.
        sa.Index(
            "ix_conversation_message_waiting",
            "tenant_id",
            "user_id",
            "session_id",
            "seq",
            postgresql_where=sa.text("extracted_by IS NULL"),
        ),
    )

    id: uuid.UUID = _col(UUID, primary_key=True)
    tenant_id: str = _col(sa.Text)
    user_id: str = _col(sa.Text)
    session_id: str = _col(sa.Text)
    seq: int = _col(sa.BigInteger)
    message: Any = _col(JSON)
    created_at: datetime = _ts()
    archived_at: datetime | None = _ts(nullable=True)
    archived_item_id: uuid.UUID | None = _col(UUID, nullable=True)
    # The extractor version that extracted it (NULL: waiting), and when; a session ended while some of its
    # messages still waited keeps those (ended_at) until they are extracted.
    extracted_by: str | None = _col(sa.Text, nullable=True)
    extracted_at: datetime | None = _ts(nullable=True)
    ended_at: datetime | None = _ts(nullable=True)


class ExtractionUsage(SQLModel, table=True):
    """Tokens one tenant spent on the language-model extractor in one UTC day (its daily cap)."""

    __tablename__ = "extraction_usage"

    tenant_id: str = _col(sa.Text, sa.ForeignKey("tenant.id", ondelete="CASCADE"), primary_key=True)
    day: date = _col(sa.Date, primary_key=True)
    calls: int = _col(sa.Integer, default=0, server_default="0")
    prompt_tokens: int = _col(sa.BigInteger, default=0, server_default="0")
    completion_tokens: int = _col(sa.BigInteger, default=0, server_default="0")


JOB_STATUSES = ("running", "succeeded", "failed", "interrupted")


class JobRun(SQLModel, table=True):
    """One run of a scheduled job: what it did, as of when, and how it ended."""

    __tablename__ = "job_run"
    __table_args__ = (
        sa.CheckConstraint(_in("status", JOB_STATUSES), name="status"),
        sa.Index("ix_job_run_name_started", "name", "started_at"),
        # A scheduler tick runs once across replicas: the second replica's insert for the same tick conflicts.
        sa.Index("uq_job_run_tick", "name", "tick", unique=True, postgresql_where=sa.text("tick IS NOT NULL")),
    )

    id: uuid.UUID = _col(UUID, primary_key=True)
    name: str = _col(sa.Text)
    tenant_id: str | None = _col(sa.Text, nullable=True)
    trigger: str = _col(sa.Text)
    tick: datetime | None = _ts(nullable=True)
    as_of: datetime = _ts()
    started_at: datetime = _ts()
    finished_at: datetime | None = _ts(nullable=True)
    status: str = _col(sa.Text)
    rows: Any = _col(pg.JSONB)
    error: str | None = _col(sa.Text, nullable=True)


class VectorOutbox(SQLModel, table=True):
    """Changes still to apply to the vector index, written in the same transaction as the change itself.

    ``op``: ``sync`` (make the item's point match its current row: upsert if active, delete otherwise) or
    ``delete_user`` (erasure). Applied in id order, idempotently, with retry and backoff; a change that
    keeps failing alone is set aside as a dead letter (``dead_at``) rather than blocking the rest.
    """

    __tablename__ = "vector_outbox"
    __table_args__ = (
        sa.CheckConstraint("op IN ('sync', 'delete_user')", name="op"),
        sa.Index("ix_vector_outbox_due", "next_attempt_at", "id"),
        sa.Index("ix_vector_outbox_user", "tenant_id", "user_id", "id"),
        # The worker's claim, tenant by tenant (migration 0014).
        sa.Index("ix_vector_outbox_tenant", "tenant_id", "id", postgresql_where=sa.text("dead_at IS NULL")),
    )

    id: int = _col(sa.BigInteger, sa.Identity(always=False), primary_key=True)
    tenant_id: str = _col(sa.Text)
    user_id: str = _col(sa.Text)
    item_id: uuid.UUID | None = _col(UUID, nullable=True)
    op: str = _col(sa.Text)
    created_at: datetime = _ts()
    attempts: int = _col(sa.Integer, default=0, server_default="0")
    next_attempt_at: datetime = _ts()
    last_error: str | None = _col(sa.Text, nullable=True)
    # Set when this change kept failing on its own while others applied (a text the embedder rejects):
    # the worker skips it and it no longer counts as lag; the reindex job retries it.
    dead_at: datetime | None = _ts(nullable=True)


class ItemSearch(SQLModel, table=True):
    """The lexical index of active items: ``ctxmem_tsv(content)`` (English stemming plus CJK characters
    and character pairs as terms) and the item's expiry, with a GIN index. Maintained by the outbox
    worker with the vector index, off the write path; a row is removed when its item stops being active
    (and with the item itself)."""

    __tablename__ = "item_search"
    __table_args__ = (
        # The user's rows and their change numbers, read without the table (migration 0016).
        sa.Index("ix_item_search_user_seq", "tenant_id", "user_id", "seq"),
        # One user's texts holding a term, found inside the index (btree_gin: migration 0015).
        sa.Index("ix_item_search_user_tsv", "tenant_id", "user_id", "tsv", postgresql_using="gin"),
    )

    # The key is (item_id, tenant_id) (migration 0014): a sharded database's keys include tenant_id.
    item_id: uuid.UUID = _col(UUID, sa.ForeignKey("context_item.id", ondelete="CASCADE"), primary_key=True)
    tenant_id: str = _col(sa.Text, primary_key=True)
    user_id: str = _col(sa.Text)
    tsv: Any = _col(pg.TSVECTOR)
    # The item's expires_at (set when it is written, never changed): the lexical ranking leaves out expired
    # texts without reading their items (migration 0016).
    expires_at: datetime | None = _ts(nullable=True)
    # A new number each time the row is written (sequence item_search_seq): a user's count of rows and sum
    # of seq tell a process whether its copy of the user's texts is current (service/windows/lexicon.py).
    seq: int = _col(sa.BigInteger, server_default=sa.text("nextval('item_search_seq')"))


class ConsoleSession(SQLModel, table=True):
    """A signed-in operator console session (service/console/session.py): keyed by its API key and tenant,
    never by an end user, so a user's export and erasure do not touch it. Only the SHA-256 of the cookie's
    token is stored; the session ends at sign-out, when its key is revoked, or after
    ``console.idle_minutes`` without a request."""

    __tablename__ = "console_session"
    __table_args__ = (sa.Index("ix_console_session_key_id", "key_id"),)

    id: uuid.UUID = _col(UUID, primary_key=True)
    tenant_id: str = _col(sa.Text, sa.ForeignKey("tenant.id", ondelete="CASCADE"))
    key_id: uuid.UUID = _col(UUID, sa.ForeignKey("api_key.id", ondelete="CASCADE"))
    token_hash: str = _col(sa.Text, unique=True)
    csrf_token: str = _col(sa.Text)
    # A one-shot message shown on the next page the session renders (after a form's redirect).
    flash: str | None = _col(sa.Text, nullable=True)
    created_at: datetime = _ts()
    last_seen_at: datetime = _ts()
