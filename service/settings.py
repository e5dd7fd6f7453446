"""Runtime settings: one pydantic-settings class, every variable prefixed ``CTXMEM_``.

The settings are grouped by concern (``settings.database.url``, ``settings.window.watermark``…); code reads
them that one way. Operators keep the flat names they always had: ``CTXMEM_DATABASE_URL``,
``CTXMEM_WINDOW_WATERMARK`` (``FLAT_NAMES`` maps each to its group), and the constructor and
``Settings.replace`` take the same names as keywords (``Settings(database_url=…)``). The nested spelling
(``CTXMEM_WINDOW__WATERMARK``, or a whole group as JSON in ``CTXMEM_WINDOW``) works too and wins over the
flat one. A validation error names the variable (or keyword) that was set."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from schemas.jobs import JOB_NAMES
from scoring.fourc import FourCWeights
from scoring.window_policy import SECTION_WEIGHTS, ValueModel
from service.caches import DEFAULT_MAX_BYTES

# Default lifetimes (seconds). A tool result describes the world at one moment and goes stale within
# minutes; a step/stage is over within hours; preferences, rules and facts have no built-in end.
DEFAULT_TYPE_TTL: dict[str, int] = {"tool_result": 30 * 60}
DEFAULT_SCOPE_TTL: dict[str, int] = {
    "step": 2 * 3600,
    "stage": 12 * 3600,
    "task": 30 * 86400,
    "session": 30 * 86400,
}


class _Group(BaseModel):
    """A group of settings: a misspelt field is an error, not a silently ignored value."""

    model_config = ConfigDict(extra="forbid")


# The defaults of the 4C weights and of the value model are the pure code's own (scoring/fourc.py,
# scoring/window_policy.py); settings add only the bounds an operator's value must keep.
_FOURC = FourCWeights()
_VALUE = ValueModel()


class FourCSettings(_Group):
    """Weights of the 4C score (scoring/fourc.py documents each and the calibration they hold).
    Set one with e.g. ``CTXMEM_FOURC__COUNT_POINTS=30``."""

    count_points: float = Field(_FOURC.count_points, ge=0)
    count_saturation_sessions: int = Field(_FOURC.count_saturation_sessions, ge=1)
    continuity_points: float = Field(_FOURC.continuity_points, ge=0)
    continuity_saturation_days: float = Field(_FOURC.continuity_saturation_days, gt=0)
    cross_context_points: float = Field(_FOURC.cross_context_points, ge=0)
    cross_context_saturation: int = Field(_FOURC.cross_context_saturation, ge=1)
    confirmation_points: float = Field(_FOURC.confirmation_points, ge=0)
    explicit_points: float = Field(_FOURC.explicit_points, ge=0)
    inferred_points: float = Field(_FOURC.inferred_points, ge=0)
    inferred_saturation_sessions: int = Field(_FOURC.inferred_saturation_sessions, ge=1)
    contradiction_penalty: float = Field(_FOURC.contradiction_penalty, ge=0)
    explicit_contradiction_penalty: float = Field(_FOURC.explicit_contradiction_penalty, ge=0)

    @model_validator(mode="after")
    def _max_100(self) -> FourCSettings:
        total = self.count_points + self.continuity_points + self.cross_context_points + self.confirmation_points
        if total > 100:
            raise ValueError(f"the four maxima must add up to at most 100 (got {total})")
        return self

    def weights(self) -> FourCWeights:
        return FourCWeights(**self.model_dump())


class WindowValueSettings(_Group):
    """The window's value model (scoring/window_policy.py documents each number and why it has its shape).
    Set one with e.g. ``CTXMEM_WINDOW_VALUE__RELEVANCE_FLOOR=0.2`` or
    ``CTXMEM_WINDOW_VALUE__SECTION_WEIGHTS='{"background": 0.5}'`` (named sections only; the rest keep
    their defaults)."""

    section_weights: dict[str, float] = Field(default_factory=dict)
    relevance_floor: float = Field(_VALUE.relevance_floor, gt=0, le=1)
    relevance_sharpness: float = Field(_VALUE.relevance_sharpness, ge=0, le=50)
    length_exponent: float = Field(_VALUE.length_exponent, ge=0, le=2)
    length_reference_tokens: int = Field(_VALUE.length_reference_tokens, ge=1)
    merit_base: float = Field(_VALUE.merit_base, gt=0)
    w_authority: float = Field(_VALUE.w_authority, ge=0)
    w_confidence: float = Field(_VALUE.w_confidence, ge=0)
    w_freshness: float = Field(_VALUE.w_freshness, ge=0)
    freshness_half_life_days: float = Field(_VALUE.freshness_half_life_days, gt=0)
    extractive_exponent: float = Field(_VALUE.extractive_exponent, gt=0, le=4)
    key_fields_exponent: float = Field(_VALUE.key_fields_exponent, gt=0, le=4)
    index_share: float = Field(_VALUE.index_share, gt=0, le=1)
    history_turn_value: float = Field(_VALUE.history_turn_value, gt=0)
    history_exchange_value: float = Field(_VALUE.history_exchange_value, gt=0)
    history_decay: float = Field(_VALUE.history_decay, gt=0, le=1)

    @field_validator("section_weights")
    @classmethod
    def _known_sections(cls, value: dict[str, float]) -> dict[str, float]:
        for name, weight in value.items():
            if name not in SECTION_WEIGHTS:
                raise ValueError(f"unknown window section {name!r}; known: {', '.join(SECTION_WEIGHTS)}")
            if not weight > 0:
                raise ValueError(f"the weight of section {name!r} must be > 0")
        return value

    def model(self) -> ValueModel:
        fields = self.model_dump(exclude={"section_weights"})
        return ValueModel(section_weights={**SECTION_WEIGHTS, **self.section_weights}, **fields)


class ServerSettings(_Group):
    """The process: where it listens and keeps its files, how much it logs, how slow or large a request may be."""

    host: str = "127.0.0.1"
    port: int = Field(8080, ge=1, le=65535)
    # API processes ``ctxmem serve`` runs (uvicorn workers on one socket). More than one needs a vector index
    # every process reaches: the default backend is then pgvector (docs/operations.md#workers).
    # Unset: one per core less one for the PostgreSQL beside them (``processes``): on 2 cores one process.
    workers: int | None = Field(None, ge=1, le=256)
    # Embedded PostgreSQL (postgres/), embedded vector index (vectors/), tokenizer file (tiktoken/).
    data_dir: Path = Path(".ctxmem")
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # Each log line as text (with its request id in brackets) or as one JSON object (service/logs.py).
    log_format: Literal["text", "json"] = "text"
    # How long a checked API key's principal is reused by this process (service/auth/cache.py; revocation
    # still takes effect at once through a notification). 0: read the key on every request.
    key_cache_seconds: float = Field(30.0, ge=0, le=3600)
    # Limits (docs/design.md §4).
    max_body_bytes: int = Field(1024 * 1024, ge=1024)
    # Slow or oversized requests (service/http_server.py): a request's line and headers must arrive within
    # header_timeout_seconds, its body within body_timeout_seconds of them (else 408), and the line and
    # headers hold at most max_header_bytes (else 431).
    header_timeout_seconds: float = Field(10.0, gt=0, le=600)
    body_timeout_seconds: float = Field(60.0, gt=0, le=3600)
    max_header_bytes: int = Field(64 * 1024, ge=4096, le=16 * 1024 * 1024)
    # Every cache the process keeps (service/caches.py) shares this many bytes (estimated); past it, the
    # largest cache gives up its oldest entries first. /metrics reports each cache's bytes and entries.
    process_cache_bytes: int = Field(DEFAULT_MAX_BYTES, ge=0)

    @property
    def processes(self) -> int:
        """How many API processes ``ctxmem serve`` runs: ``workers``, or, unset, one per core less one — the
        database beside them needs a core too: on 2 cores one API process and PostgreSQL already keep both
        busy, and a second worker would only move the vectors to pgvector, whose search is slower
        (the figures, from bench.window --http: docs/operations.md#workers)."""
        return self.workers or max(1, (os.cpu_count() or 1) - 1)


_POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+asyncpg://")


class DatabaseSettings(_Group):
    # Empty → start (or attach to) an embedded PostgreSQL under ``server.data_dir/postgres``.
    url: str = ""
    # Apply migrations when the service starts. On for the embedded default; production runs
    # ``ctxmem migrate`` as its own step and sets this to false.
    auto_migrate: bool = True
    pool_size: int = Field(10, ge=1, le=200)
    max_overflow: int = Field(10, ge=0, le=500)
    # A connection attempt gives up after this long (a server that does not answer at all); while the
    # database is unreachable requests are answered 503 with Retry-After: unavailable_retry_after_seconds.
    connect_timeout_seconds: float = Field(5.0, gt=0, le=120)
    unavailable_retry_after_seconds: int = Field(2, ge=1, le=3600)
    # Streaming replicas of ``url`` that windows and searches read from (service/db/replicas.py), comma-
    # separated in the environment. A replica serves a read only once it has replayed the commit the read
    # must see (the caller's X-Ctxmem-Commit-Lsn, else the user's last write through this server, any of its
    # workers), waiting up to replica_wait_seconds for it, and only while it is at most replica_max_lag_seconds
    # behind the primary;
    # otherwise, or when it fails, the primary serves the read.
    replica_urls: Annotated[list[str], NoDecode] = Field(default_factory=list)
    replica_max_lag_seconds: float = Field(1.0, ge=0, le=3600)
    replica_wait_seconds: float = Field(0.05, ge=0, le=10)

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(_POSTGRES_SCHEMES):
            raise ValueError("CTXMEM_DATABASE_URL must be a postgresql:// URL (or empty for the embedded default)")
        return value

    @field_validator("replica_urls", mode="before")
    @classmethod
    def _split_replica_urls(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            value = [u.strip() if isinstance(u, str) else u for u in value]
            value = [u for u in value if u != ""]
        return value

    @field_validator("replica_urls")
    @classmethod
    def _check_replica_urls(cls, value: list[str]) -> list[str]:
        for url in value:
            if not url.startswith(_POSTGRES_SCHEMES):
                raise ValueError(f"each replica URL must be a postgresql:// URL (got {url.split('@')[-1]!r})")
        return value

    @property
    def embedded(self) -> bool:
        return not self.url


class TokensSettings(_Group):
    tokenizer: Literal["o200k_base", "cl100k_base", "estimate"] = "o200k_base"
    # Where the offline BPE file is materialised; default ``server.data_dir/tiktoken``.
    cache_dir: Path | None = None


class LimitsSettings(_Group):
    """What one request may ask for (docs/design.md §4)."""

    max_content_chars: int = Field(32_000, ge=1)
    max_batch_items: int = Field(1_000, ge=1)
    max_page_size: int = Field(500, ge=1)
    default_page_size: int = Field(50, ge=1)

    @model_validator(mode="after")
    def _default_within_max(self) -> Self:
        if self.default_page_size > self.max_page_size:
            raise ValueError(
                f"CTXMEM_DEFAULT_PAGE_SIZE ({self.default_page_size}) must not exceed CTXMEM_MAX_PAGE_SIZE "
                f"({self.max_page_size})"
            )
        return self


class RateLimitSettings(_Group):
    # Per API key (per client address without one), per process: sustained requests a second and the burst
    # above it; over it, 429 with Retry-After before any database work. 0 turns the limit off.
    per_second: float = Field(200.0, ge=0)
    burst: int = Field(400, ge=1)


class LifetimesSettings(_Group):
    # Lifetimes applied when a client sends no ``expires_at`` (seconds; the shorter of type and scope wins).
    by_type_seconds: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_TYPE_TTL))
    by_scope_seconds: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_SCOPE_TTL))

    @field_validator("by_type_seconds", "by_scope_seconds")
    @classmethod
    def _positive_ttls(cls, value: dict[str, int]) -> dict[str, int]:
        for name, seconds in value.items():
            if seconds <= 0:
                raise ValueError(f"TTL for {name!r} must be a positive number of seconds")
        return value


class ProfilesSettings(_Group):
    """Profiles (docs/design.md §3.3-3.4): when an entry becomes a candidate, is promoted, decays."""

    fourc: FourCSettings = Field(default_factory=FourCSettings)
    # A candidate whose score reaches this is promoted to long_term by the promotion job.
    long_term_threshold: float = Field(60.0, ge=0, le=100)
    # Independent sessions needed before an entry becomes a candidate.
    candidate_min_sessions: int = Field(2, ge=2)
    # Silence (days without supporting evidence) before an entry decays one level. Overrides by domain,
    # by dimension, or both as "domain.dimension" (most specific wins).
    decay_days: int = Field(90, ge=1)
    decay_days_overrides: dict[str, int] = Field(default_factory=dict)
    # Each decay step multiplies the entry's score by this.
    decay_score_factor: float = Field(0.5, ge=0, le=1)


class JobsSettings(_Group):
    """Scheduled jobs (docs/design.md §3.5). Schedules: "interval:<seconds>" or "cron:<5-field crontab, UTC>"."""

    schedules: dict[str, str] = Field(
        default_factory=lambda: {
            "expire": "interval:300",
            "promote": "interval:3600",
            "decay": "cron:15 3 * * *",
            "purge": "cron:45 3 * * *",
            "extract": "interval:60",
        }
    )
    # Rows per transaction: a crashed run leaves whole batches behind, and a rerun picks up the rest.
    batch_size: int = Field(5_000, ge=1, le=1_000_000)
    # Retention (the purge job): tombstoned items are hard-deleted after this many days; job runs are kept
    # this long; stored responses of idempotent requests this many hours.
    purge_deleted_after_days: int = Field(30, ge=0)
    run_retention_days: int = Field(90, ge=1)
    idempotency_retention_hours: int = Field(24, ge=1)

    @field_validator("schedules")
    @classmethod
    def _schedules(cls, value: dict[str, str]) -> dict[str, str]:
        for name, spec in value.items():
            if name not in JOB_NAMES:
                raise ValueError(f"unknown job {name!r} (jobs: {', '.join(JOB_NAMES)})")
            kind, _, arg = spec.partition(":")
            if kind == "interval":
                if not arg.isdigit() or int(arg) < 1:
                    raise ValueError(f"{name}: interval needs whole seconds ≥ 1, e.g. interval:300")
            elif kind == "cron":
                if len(arg.split()) != 5:
                    raise ValueError(f"{name}: cron needs 5 fields, e.g. cron:15 3 * * *")
            elif spec != "off":
                raise ValueError(f"{name}: schedule must be interval:<s>, cron:<expr> or off")
        return value


class VectorsSettings(_Group):
    """Vector recall (docs/design.md §3.8): the index and the embedder."""

    # "edge" (Qdrant's embedded engine under data_dir/vectors, the default without qdrant_url), "qdrant" (a
    # server at qdrant_url: the default when it is set), "memory" (qdrant-client in memory: tests), "local"
    # (qdrant-client's local mode: slow, a Python scan), "off".
    # "pgvector" (a table in the service's PostgreSQL, with the pgvector extension): the default instead of
    # "edge" when server.workers > 1, since the embedded index serves one process.
    backend: Literal["edge", "qdrant", "memory", "local", "off", "pgvector"] = "edge"
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    # A distributed Qdrant cluster: each tenant's points under a shard key of their own (user-defined
    # sharding; service/vectors/qdrant_server.py), with this many shards per key and copies of each.
    qdrant_shard_by_tenant: bool = False
    qdrant_shard_number: int | None = Field(None, ge=1, le=1000)
    qdrant_replication_factor: int | None = Field(None, ge=1, le=100)
    # The embedded index (edge) builds HNSW graphs in a child process once this many points were written
    # since its last build and some user has this many points (a user's search is otherwise an exact scan
    # of their points, which grows with them); 0 never builds (service/vectors/qdrant_edge.py; the figures:
    # bench/README.md#vector-index).
    build_threshold: int = Field(20_000, ge=0)
    # A window or search stops trusting the index (and says "degraded") when the oldest of its user's own
    # pending changes is older.
    max_lag_seconds: float = Field(30.0, gt=0)
    # "hashing" (dependency-free default), "wordllama" (extra: a static word-embedding table, 256
    # dimensions), "minilm" (extra: local sentence model), "http" (an OpenAI-compatible /embeddings endpoint
    # at embedding_url).
    embedder: Literal["hashing", "wordllama", "minilm", "http"] = "hashing"
    # 384 unless set, except for "wordllama", whose table has 256 (see _dim_of_the_embedder).
    embedding_dim: int = Field(384, ge=8, le=8192)
    embedding_url: str | None = None
    embedding_model: str | None = None
    embedding_api_key: str | None = None

    @model_validator(mode="after")
    def _dim_of_the_embedder(self) -> Self:
        # The wordllama table has 256 dimensions: naming the embedder is enough (a dim set with it is kept,
        # and the embedder refuses it if it is not 256).
        if self.embedder == "wordllama" and "embedding_dim" not in self.model_fields_set:
            self.embedding_dim = 256
        return self

    @model_validator(mode="after")
    def _server_when_url(self) -> Self:
        # As with the database (docs/design.md §5): a Qdrant URL means the server, unless a backend is named.
        if self.qdrant_url and "backend" not in self.model_fields_set:
            self.backend = "qdrant"
        return self


class OutboxSettings(_Group):
    """The worker that carries changes to the vector and lexical indexes: rows per pass, idle poll interval,
    backoff cap."""

    batch_size: int = Field(256, ge=1, le=10_000)
    poll_seconds: float = Field(0.2, gt=0)
    max_backoff_seconds: float = Field(60.0, gt=0)
    # A change that fails this many times on its own (the index and embedder working) is set aside.
    max_attempts: int = Field(8, ge=1, le=1000)


class RecallSettings(_Group):
    """Which of the user's items a window considers, and how relevant each is (scoring/relevance.py)."""

    # Which rankings relevance fuses: both (the default), or one of them (for evaluation and fallback).
    mode: Literal["hybrid", "lexical", "vector"] = "hybrid"
    candidates: int = Field(100, ge=1, le=10_000)
    # At most this many of the user's items outside the window's scopes (other sessions, tasks, stages)
    # join a window because they are relevant to its query; 0 turns that off.
    limit: int = Field(8, ge=0, le=1_000)
    # How the lexical and vector rankings are fused: "convex", a weighted sum of min-max normalised scores
    # (the lexical ranking's weight; the vector's is 1 minus it), or "rrf", reciprocal-rank fusion with
    # constant rrf_k.
    fusion: Literal["convex", "rrf"] = "convex"
    # unset: the embedder's own (hashing and wordllama 0.7, minilm and http 0.5)
    fusion_lexical_weight: float | None = Field(None, ge=0, le=1)
    rrf_k: int = Field(60, ge=1)
    # Vector hits below this cosine similarity are not candidates; unset: the embedder's own threshold
    # (hashing 0.15, wordllama 0.1, minilm 0.2, http 0: unrelated texts still score a little above 0).
    vector_min_score: float | None = Field(None, ge=-1, le=1)
    # Relevance in context (in_context): a conversation turn (an episode with a session_id) gains this share
    # of the relevance of the best of its neighbours up to context_reach turns away in the same session,
    # halved per further turn; 0 turns it off.
    context_share: float = Field(0.5, ge=0, le=1)
    context_reach: int = Field(2, ge=0, le=10)
    # ... for the neighbours of this many of the most relevant items (a window shows a few dozen; the
    # neighbours of weaker hits gain too little to matter, and more sources answered no more of LoCoMo's
    # questions: bench/README.md#figures-behind-design-choices).
    context_sources: int = Field(32, ge=1, le=1_000)
    # Relevance in its session (in_session): a conversation turn's relevance becomes (1 - session_share) x its
    # own + session_share x its session's, the mean of the session's session_turns best relevances among the
    # scored items (passage retrieval with document-level evidence; 0 turns it off). Against 0, 0.25
    # answers more of LoCoMo's questions at every budget and of bench.recall_eval's at the smallest, fewer
    # nowhere, and shares near it do about as well (figures: docs/window.md#relevance,
    # bench/README.md#figures-behind-design-choices).
    session_share: float = Field(0.25, ge=0, le=1)
    session_turns: int = Field(3, ge=1, le=100)
    # A question is answered by the turn after it (answered: adjacency pairs): a conversation turn that ends in
    # a question keeps (1 - question_share) of its relevance and hands question_share of it to its reply (the
    # next turn of its session, for the context_sources most relevant); 0 turns it off. On LoCoMo a matching
    # question turn was evidence far less often than a matching statement, and the reply to one as often.
    # 0.15, the largest share that costs neither LoCoMo nor bench.recall_eval a question (bench.recall_eval's
    # assistant turns often end in a follow-up question, so a larger share loses one there; figures:
    # docs/window.md#relevance, bench/README.md#figures-behind-design-choices).
    question_share: float = Field(0.15, ge=0, le=1)
    # A query naming a date (a day, a month or a year: scoring.relevance.named_periods) prefers what was
    # observed then (in_period): a scored item's relevance becomes (1 - period_share) x its own, + period_share
    # if it was observed in a period the query names; 0 turns it off. 0.25 answers more of LoCoMo's questions
    # than 0 at every budget (figures: docs/window.md#relevance).
    period_share: float = Field(0.25, ge=0, le=1)
    # Changes not yet in the lexical index are searched from their text, the newest this many per user.
    lexical_pending_limit: int = Field(1_000, ge=0, le=100_000)
    # The lexical ranking ranks by the query's terms that are expected in at most this many of the user's
    # texts (service/windows/repository.py): what keeps it flat as a user's memory grows.
    lexical_max_hits: int = Field(2_000, ge=1, le=1_000_000)
    # A user with at most this many texts is ranked from a per-process copy of them (service/windows/
    # lexicon.py), the copies weighing this much in all (a posting or a text each weigh 1; ~36 per text;
    # a unit some tens of bytes of memory: docs/configuration.md); 0 turns it off.
    lexicon_texts: int = Field(5_000, ge=0, le=1_000_000)
    lexicon_postings: int = Field(1_000_000, ge=0)


class WindowSettings(_Group):
    """Windows (docs/design.md §3.6)."""

    # With context_limit, the budget is min(limit - reserve, watermark x limit).
    watermark: float = Field(0.6, gt=0, le=1)
    # A window's candidates: the standing context (pinned types, this session's / task's items, the
    # profile), the items retrieved for the query (recall.candidates per ranking), and the user's newest
    # recent_items other items; the rest are counted as "not retrieved".
    recent_items: int = Field(50, ge=0, le=10_000)
    # Per-process cache of what a window derives from a user's rows (service/caches.py), checked
    # against the database on every request. Bounded by entries (user x session/task/stage/step x domains)
    # and by the item and profile rows they hold, about 3.5 KB of memory each; 0 turns it off.
    cache_entries: int = Field(1_000, ge=0)
    cache_rows: int = Field(10_000, ge=0)
    value: WindowValueSettings = Field(default_factory=WindowValueSettings)
    # A window with a session_id and no messages fits the session's stored conversation: at most this many
    # of its newest live messages (as many as a request may send). The turns that fall out of the fitted
    # history become one episode item (each turn once), unless archive_session_turns is off.
    session_history_limit: int = Field(1_000, ge=1, le=10_000)
    archive_session_turns: bool = True


class ExtractionSettings(_Group):
    """Learning from stored conversations (docs/design.md §3.9, docs/extraction.md)."""

    # "rules" (offline, deterministic, English and Chinese), "llm" (an OpenAI-compatible /chat/completions
    # endpoint at url) or "off" (messages are stored and wait; nothing is learned until it is turned on).
    extractor: Literal["rules", "llm", "off"] = "rules"
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    # A session's waiting messages are extracted by the extract job once this many wait, once the newest
    # has waited idle_seconds, when the session ends, or on demand (POST …/sessions/{s}/extract).
    batch_messages: int = Field(20, ge=1, le=1_000)
    idle_seconds: int = Field(300, ge=0)
    # An API process looks for due sessions this often and runs the extract job itself (so the embedded
    # default learns without a scheduler beside it); 0 leaves extraction to `ctxmem scheduler`.
    server_seconds: float = Field(30.0, ge=0, le=86_400)
    # The llm extractor: messages per call, seconds per call, retries after a failed call (with backoff),
    # and the tokens (prompt + completion) one tenant may spend a UTC day; 0 = no cap.
    llm_messages_per_call: int = Field(20, ge=1, le=200)
    timeout_seconds: float = Field(30.0, gt=0, le=600)
    max_retries: int = Field(3, ge=0, le=10)
    daily_token_cap: int = Field(2_000_000, ge=0)

    @model_validator(mode="after")
    def _llm_needs_endpoint(self) -> Self:
        if self.extractor == "llm" and not (self.url and self.model):
            raise ValueError(
                "extractor 'llm' needs CTXMEM_EXTRACTOR_URL (an OpenAI-compatible base URL, e.g. "
                "http://localhost:11434/v1) and CTXMEM_EXTRACTOR_MODEL"
            )
        return self


class ConsoleSettings(_Group):
    """The operator console (docs/console.md)."""

    # A console session that has seen no request for this long is over: the operator signs in again.
    idle_minutes: int = Field(30, ge=1, le=24 * 60)


class TracingSettings(_Group):
    """OpenTelemetry traces (service/tracing.py, docs/operations.md#traces): off unless an endpoint is set,
    here or in the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT. Needs the
    ``otel`` extra (``pip install 'ctxmem[otel]'``)."""

    # The collector's OTLP/HTTP address (``http://collector:4318``): spans are posted to its /v1/traces
    # (a URL that already ends in /v1/traces is taken as it is). Wins over the OTEL_ variables.
    endpoint: str = ""
    # The spans' service.name; unset: OTEL_SERVICE_NAME, else "ctxmem".
    service_name: str | None = Field(None, min_length=1, max_length=256)


# The flat names every deployment has used (CTXMEM_<NAME> in the environment, <name> as a keyword of
# Settings and Settings.replace) → where the setting lives now, "group.field".
FLAT_NAMES: dict[str, str] = {
    "host": "server.host",
    "port": "server.port",
    "workers": "server.workers",
    "data_dir": "server.data_dir",
    "log_level": "server.log_level",
    "log_format": "server.log_format",
    "key_cache_seconds": "server.key_cache_seconds",
    "max_body_bytes": "server.max_body_bytes",
    "process_cache_bytes": "server.process_cache_bytes",
    "header_timeout_seconds": "server.header_timeout_seconds",
    "body_timeout_seconds": "server.body_timeout_seconds",
    "max_header_bytes": "server.max_header_bytes",
    "database_url": "database.url",
    "auto_migrate": "database.auto_migrate",
    "db_pool_size": "database.pool_size",
    "db_max_overflow": "database.max_overflow",
    "db_connect_timeout_seconds": "database.connect_timeout_seconds",
    "unavailable_retry_after_seconds": "database.unavailable_retry_after_seconds",
    "database_replica_urls": "database.replica_urls",
    "database_replica_max_lag_seconds": "database.replica_max_lag_seconds",
    "database_replica_wait_seconds": "database.replica_wait_seconds",
    "tokenizer": "tokens.tokenizer",
    "tokenizer_cache_dir": "tokens.cache_dir",
    "max_content_chars": "limits.max_content_chars",
    "max_batch_items": "limits.max_batch_items",
    "max_page_size": "limits.max_page_size",
    "default_page_size": "limits.default_page_size",
    "rate_limit_per_second": "rate_limit.per_second",
    "rate_limit_burst": "rate_limit.burst",
    "type_ttl_seconds": "lifetimes.by_type_seconds",
    "scope_ttl_seconds": "lifetimes.by_scope_seconds",
    "fourc": "profiles.fourc",
    "long_term_threshold": "profiles.long_term_threshold",
    "candidate_min_sessions": "profiles.candidate_min_sessions",
    "decay_days": "profiles.decay_days",
    "decay_days_overrides": "profiles.decay_days_overrides",
    "decay_score_factor": "profiles.decay_score_factor",
    "job_schedules": "jobs.schedules",
    "job_batch_size": "jobs.batch_size",
    "purge_deleted_after_days": "jobs.purge_deleted_after_days",
    "job_run_retention_days": "jobs.run_retention_days",
    "idempotency_retention_hours": "jobs.idempotency_retention_hours",
    "vector_backend": "vectors.backend",
    "qdrant_url": "vectors.qdrant_url",
    "qdrant_api_key": "vectors.qdrant_api_key",
    "qdrant_shard_by_tenant": "vectors.qdrant_shard_by_tenant",
    "qdrant_shard_number": "vectors.qdrant_shard_number",
    "qdrant_replication_factor": "vectors.qdrant_replication_factor",
    "vector_build_threshold": "vectors.build_threshold",
    "vector_max_lag_seconds": "vectors.max_lag_seconds",
    "embedder": "vectors.embedder",
    "embedding_dim": "vectors.embedding_dim",
    "embedding_url": "vectors.embedding_url",
    "embedding_model": "vectors.embedding_model",
    "embedding_api_key": "vectors.embedding_api_key",
    "outbox_batch_size": "outbox.batch_size",
    "outbox_poll_seconds": "outbox.poll_seconds",
    "outbox_max_backoff_seconds": "outbox.max_backoff_seconds",
    "outbox_max_attempts": "outbox.max_attempts",
    "recall_mode": "recall.mode",
    "recall_candidates": "recall.candidates",
    "recall_limit": "recall.limit",
    "fusion": "recall.fusion",
    "fusion_lexical_weight": "recall.fusion_lexical_weight",
    "rrf_k": "recall.rrf_k",
    "vector_min_score": "recall.vector_min_score",
    "context_share": "recall.context_share",
    "context_reach": "recall.context_reach",
    "context_sources": "recall.context_sources",
    "session_share": "recall.session_share",
    "session_turns": "recall.session_turns",
    "question_share": "recall.question_share",
    "period_share": "recall.period_share",
    "lexical_pending_limit": "recall.lexical_pending_limit",
    "lexical_max_hits": "recall.lexical_max_hits",
    "lexicon_texts": "recall.lexicon_texts",
    "lexicon_postings": "recall.lexicon_postings",
    "window_watermark": "window.watermark",
    "window_recent_items": "window.recent_items",
    "window_cache_entries": "window.cache_entries",
    "window_cache_rows": "window.cache_rows",
    "window_value": "window.value",
    "window_session_history_limit": "window.session_history_limit",
    "window_archive_session_turns": "window.archive_session_turns",
    "extractor": "extraction.extractor",
    "extractor_url": "extraction.url",
    "extractor_model": "extraction.model",
    "extractor_api_key": "extraction.api_key",
    "extract_batch_messages": "extraction.batch_messages",
    "extract_idle_seconds": "extraction.idle_seconds",
    "extract_server_seconds": "extraction.server_seconds",
    "extractor_messages_per_call": "extraction.llm_messages_per_call",
    "extractor_timeout_seconds": "extraction.timeout_seconds",
    "extractor_max_retries": "extraction.max_retries",
    "extractor_daily_token_cap": "extraction.daily_token_cap",
    "console_idle_minutes": "console.idle_minutes",
    "otel_endpoint": "tracing.endpoint",
    "otel_service_name": "tracing.service_name",
}


def group_and_field(flat: str) -> tuple[str, str]:
    """Where the flat name ``flat`` lives: ``("window", "watermark")`` for ``window_watermark``."""
    group, field = FLAT_NAMES[flat].split(".")
    return group, field


_FLAT_OF: dict[tuple[str, str], str] = {group_and_field(flat): flat for flat in FLAT_NAMES}


class Settings(BaseSettings):
    """Every setting, one group per concern; read ``settings.<group>.<field>``, set ``CTXMEM_<FLAT_NAME>``."""

    model_config = SettingsConfigDict(env_prefix="CTXMEM_", env_file=None, extra="ignore", env_nested_delimiter="__")

    server: ServerSettings = Field(default_factory=ServerSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    tokens: TokensSettings = Field(default_factory=TokensSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    rate_limit: RateLimitSettings = Field(default_factory=RateLimitSettings)
    lifetimes: LifetimesSettings = Field(default_factory=LifetimesSettings)
    profiles: ProfilesSettings = Field(default_factory=ProfilesSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    vectors: VectorsSettings = Field(default_factory=VectorsSettings)
    outbox: OutboxSettings = Field(default_factory=OutboxSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    window: WindowSettings = Field(default_factory=WindowSettings)
    extraction: ExtractionSettings = Field(default_factory=ExtractionSettings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)

    def __init__(self, *args: Any, **values: Any) -> None:
        try:
            super().__init__(*args, **values)
        except ValidationError as exc:
            raise _naming_variables(exc, given=values) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keywords first, then the nested spelling, then the flat names.
        return init_settings, env_settings, _FlatEnvironment(settings_cls), dotenv_settings, file_secret_settings

    @model_validator(mode="before")
    @classmethod
    def _flat_keywords(cls, data: Any) -> Any:
        """``Settings(window_watermark=0.5)`` sets ``window.watermark``; a flat keyword wins over its group's."""
        if not isinstance(data, Mapping) or not any(name in FLAT_NAMES for name in data):
            return data
        out = dict(data)
        for name in [n for n in out if n in FLAT_NAMES]:
            group, field = group_and_field(name)
            out[group] = {**_as_dict(out.get(group)), field: out.pop(name)}
        return out

    @model_validator(mode="after")
    def _shared_index_for_workers(self) -> Self:
        # The embedded index serves one process: with several workers and no backend named, the vectors live
        # in PostgreSQL, which every worker reaches (docs/operations.md#workers).
        vectors = self.vectors
        if vectors.backend == "edge" and "backend" not in vectors.model_fields_set and self.server.processes > 1:
            vectors.backend = "pgvector"
        return self

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (the flat names, or groups as dicts of their fields) applied and validated.
        The environment is not read again."""
        data = self.model_dump()
        for name, value in changes.items():
            data[name] = {**data[name], **value} if name in data and isinstance(value, Mapping) else value
        try:
            return self.model_validate(data)
        except ValidationError as exc:
            raise _naming_variables(exc, given=changes, environment={}) from None

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        # model_copy does not validate: a flat name would become a stray attribute that nothing reads.
        unknown = sorted(set(update or {}) - set(type(self).model_fields))
        if unknown:
            raise TypeError(f"Settings.model_copy(update=...) got {unknown}; use settings.replace(...)")
        return super().model_copy(update=update, deep=deep)

    @property
    def postgres_dir(self) -> Path:
        return self.server.data_dir / "postgres"

    @property
    def resolved_tokenizer_cache_dir(self) -> Path:
        return self.tokens.cache_dir or (self.server.data_dir / "tiktoken")


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return dict(value)
    return dict(value) if isinstance(value, Mapping) else {}


class _FlatEnvironment(PydanticBaseSettingsSource):
    """Reads ``CTXMEM_<FLAT_NAME>`` exactly as the environment source read the flat fields they once were
    (JSON for dicts and groups, ``__`` into the fields of a group) and files each value under its group."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self._env = EnvSettingsSource(_flat_model(settings_cls))

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ reads them all at once

    def __call__(self) -> dict[str, Any]:
        out: dict[str, dict[str, Any]] = {}
        for name, value in self._env().items():
            group, field = group_and_field(name)
            out.setdefault(group, {})[field] = value
        return out


@lru_cache(maxsize=4)
def _flat_model(settings_cls: type[BaseSettings]) -> type[BaseSettings]:
    """A settings class with one field per flat name, typed like the field it stands for (never validated:
    the environment source only needs the types to know what to decode)."""
    fields: dict[str, Any] = {}
    for name in FLAT_NAMES:
        group, field = group_and_field(name)
        group_model = settings_cls.model_fields[group].annotation
        assert isinstance(group_model, type) and issubclass(group_model, BaseModel)
        # With the field's metadata: NoDecode keeps a comma-separated list from being read as JSON.
        fields[name] = (group_model.model_fields[field].rebuild_annotation(), None)
    model: type[BaseSettings] = create_model("FlatNames", __base__=BaseSettings, **fields)
    model.model_config.update(settings_cls.model_config)
    return model


def _variable(loc: tuple[int | str, ...], given: Mapping[str, Any], environment: Mapping[str, str]) -> tuple[Any, ...]:
    """What the operator set for the value at ``loc`` (a path into the groups), tried in the order the sources
    win: a flat keyword, a group keyword, the nested variable, the flat variable."""
    if not loc or loc[0] not in Settings.model_fields:
        return loc
    flat = _FLAT_OF.get((str(loc[0]), str(loc[1]))) if len(loc) > 1 else None
    if flat in given:
        return (flat, *loc[2:])
    if loc[0] in given:
        return loc
    spellings = [(loc[:i], i) for i in range(len(loc), 0, -1)]
    if flat is not None:
        spellings += [((flat, *loc[2:i]), i) for i in range(len(loc), 1, -1)]
    for parts, used in spellings:
        key = "ctxmem_" + "__".join(str(p) for p in parts).lower()
        if key in environment or any(k.startswith(key + "__") for k in environment):
            return (key.upper(), *loc[used:])
    return ("CTXMEM_" + flat.upper(), *loc[2:]) if flat is not None else loc


def _naming_variables(
    exc: ValidationError, *, given: Mapping[str, Any], environment: Mapping[str, str] | None = None
) -> ValidationError:
    """``exc`` with each error placed at the variable (or keyword) that was set rather than at its group path."""
    env = {k.lower(): v for k, v in (os.environ if environment is None else environment).items()}
    errors: list[Any] = [
        {"type": e["type"], "loc": _variable(e["loc"], given, env), "input": e["input"], "ctx": e.get("ctx", {})}
        for e in exc.errors()
    ]
    try:
        return ValidationError.from_exception_data(exc.title, errors)
    except (KeyError, TypeError, ValueError):  # an error type pydantic cannot rebuild: the original then
        return exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
