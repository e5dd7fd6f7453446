"""Runtime settings: one pydantic-settings class, every variable prefixed ``CTXMEM_``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.jobs import JOB_NAMES
from scoring.window_policy import SECTION_WEIGHTS, ValueModel

# Default lifetimes (seconds). A tool result describes the world at one moment and goes stale within
# minutes; a step/stage is over within hours; preferences, rules and facts have no built-in end.
DEFAULT_TYPE_TTL: dict[str, int] = {"tool_result": 30 * 60}
DEFAULT_SCOPE_TTL: dict[str, int] = {
    "step": 2 * 3600,
    "stage": 12 * 3600,
    "task": 30 * 86400,
    "session": 30 * 86400,
}


class FourCSettings(BaseModel):
    """Weights of the 4C score (scoring/fourc.py documents each and the calibration they hold).
    Set one with e.g. ``CTXMEM_FOURC__COUNT_POINTS=30``."""

    model_config = ConfigDict(extra="forbid")

    count_points: float = Field(30.0, ge=0)
    count_saturation_sessions: int = Field(6, ge=1)
    continuity_points: float = Field(25.0, ge=0)
    continuity_saturation_days: float = Field(90.0, gt=0)
    cross_context_points: float = Field(15.0, ge=0)
    cross_context_saturation: int = Field(3, ge=1)
    confirmation_points: float = Field(30.0, ge=0)
    explicit_points: float = Field(20.0, ge=0)
    inferred_points: float = Field(10.0, ge=0)
    inferred_saturation_sessions: int = Field(3, ge=1)
    contradiction_penalty: float = Field(15.0, ge=0)
    explicit_contradiction_penalty: float = Field(25.0, ge=0)

    @model_validator(mode="after")
    def _max_100(self) -> FourCSettings:
        total = self.count_points + self.continuity_points + self.cross_context_points + self.confirmation_points
        if total > 100:
            raise ValueError(f"the four maxima must add up to at most 100 (got {total})")
        return self


class WindowValueSettings(BaseModel):
    """The window's value model (scoring/window_policy.py documents each number and why it has its shape).
    Set one with e.g. ``CTXMEM_WINDOW_VALUE__RELEVANCE_FLOOR=0.2`` or
    ``CTXMEM_WINDOW_VALUE__SECTION_WEIGHTS='{"background": 0.5}'`` (named sections only; the rest keep
    their defaults)."""

    model_config = ConfigDict(extra="forbid")

    section_weights: dict[str, float] = Field(default_factory=dict)
    relevance_floor: float = Field(0.02, gt=0, le=1)
    relevance_sharpness: float = Field(2.0, ge=0, le=50)
    length_exponent: float = Field(1.0, ge=0, le=2)
    length_reference_tokens: int = Field(32, ge=1)
    merit_base: float = Field(0.4, gt=0)
    w_authority: float = Field(0.3, ge=0)
    w_confidence: float = Field(0.15, ge=0)
    w_freshness: float = Field(0.15, ge=0)
    freshness_half_life_days: float = Field(30.0, gt=0)
    extractive_exponent: float = Field(0.95, gt=0, le=4)
    key_fields_exponent: float = Field(0.9, gt=0, le=4)
    index_share: float = Field(0.05, gt=0, le=1)
    history_turn_value: float = Field(0.5, gt=0)
    history_exchange_value: float = Field(1.0, gt=0)
    history_decay: float = Field(0.85, gt=0, le=1)

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


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CTXMEM_", env_file=None, extra="ignore", env_nested_delimiter="__")

    # Empty → start (or attach to) an embedded PostgreSQL under ``data_dir/postgres``.
    database_url: str = ""
    data_dir: Path = Path(".ctxmem")
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=1, le=65535)
    # Apply migrations when the service starts. On for the embedded default; production runs
    # ``ctxmem migrate`` as its own step and sets this to false.
    auto_migrate: bool = True
    db_pool_size: int = Field(10, ge=1, le=200)
    db_max_overflow: int = Field(10, ge=0, le=500)
    # A connection attempt gives up after this long (a server that does not answer at all); while the
    # database is unreachable requests are answered 503 with Retry-After: unavailable_retry_after_seconds.
    db_connect_timeout_seconds: float = Field(5.0, gt=0, le=120)
    unavailable_retry_after_seconds: int = Field(2, ge=1, le=3600)

    tokenizer: Literal["o200k_base", "cl100k_base", "estimate"] = "o200k_base"
    # Where the offline BPE file is materialised; default ``data_dir/tiktoken``.
    tokenizer_cache_dir: Path | None = None

    # Limits (docs/design.md §4).
    max_body_bytes: int = Field(1024 * 1024, ge=1024)
    # Slow or oversized requests (service/http_server.py): a request's line and headers must arrive within
    # header_timeout_seconds, its body within body_timeout_seconds of them (else 408), and the line and
    # headers hold at most max_header_bytes (else 431).
    header_timeout_seconds: float = Field(10.0, gt=0, le=600)
    body_timeout_seconds: float = Field(60.0, gt=0, le=3600)
    max_header_bytes: int = Field(64 * 1024, ge=4096, le=16 * 1024 * 1024)
    max_content_chars: int = Field(32_000, ge=1)
    max_batch_items: int = Field(1_000, ge=1)
    max_page_size: int = Field(500, ge=1)
    default_page_size: int = Field(50, ge=1)
    # Per API key (per client address without one), per process: sustained requests a second and the burst
    # above it; over it, 429 with Retry-After before any database work. 0 turns the limit off.
    rate_limit_per_second: float = Field(200.0, ge=0)
    rate_limit_burst: int = Field(400, ge=1)

    # Lifetimes applied when a client sends no ``expires_at`` (seconds; the shorter of type and scope wins).
    type_ttl_seconds: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_TYPE_TTL))
    scope_ttl_seconds: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_SCOPE_TTL))

    # Stored responses of idempotent requests are kept this long (hours).
    idempotency_retention_hours: int = Field(24, ge=1)

    # Profiles (docs/design.md §3.3-3.4).
    fourc: FourCSettings = Field(default_factory=FourCSettings)
    # A candidate whose score reaches this is promoted to long_term by the promotion job.
    long_term_threshold: float = Field(60.0, ge=0, le=100)
    # Independent sessions needed before an entry becomes a candidate.
    candidate_min_sessions: int = Field(2, ge=2)

    # Scheduled jobs (docs/design.md §3.5). Schedules: "interval:<seconds>" or "cron:<5-field crontab, UTC>".
    job_schedules: dict[str, str] = Field(
        default_factory=lambda: {
            "expire": "interval:300",
            "promote": "interval:3600",
            "decay": "cron:15 3 * * *",
            "purge": "cron:45 3 * * *",
        }
    )
    # Rows per transaction: a crashed run leaves whole batches behind, and a rerun picks up the rest.
    job_batch_size: int = Field(5_000, ge=1, le=1_000_000)
    # Silence (days without supporting evidence) before an entry decays one level. Overrides by domain,
    # by dimension, or both as "domain.dimension" (most specific wins).
    decay_days: int = Field(90, ge=1)
    decay_days_overrides: dict[str, int] = Field(default_factory=dict)
    # Each decay step multiplies the entry's score by this.
    decay_score_factor: float = Field(0.5, ge=0, le=1)
    # Retention: tombstoned items are hard-deleted after this many days; job runs are kept this long.
    purge_deleted_after_days: int = Field(30, ge=0)
    job_run_retention_days: int = Field(90, ge=1)

    # Vector recall (docs/design.md §3.8). Backends: "edge" (Qdrant's embedded engine under data_dir/vectors, the
    # default without qdrant_url), "qdrant" (a server at qdrant_url: the default when it is set), "memory"
    # (qdrant-client in memory: tests), "local" (qdrant-client's local mode: slow, a Python scan), "off".
    vector_backend: Literal["edge", "qdrant", "memory", "local", "off"] = "edge"
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    # Embedders: "hashing" (dependency-free default), "minilm" (extra: local sentence model), "http"
    # (an OpenAI-compatible /embeddings endpoint at embedding_url).
    embedder: Literal["hashing", "minilm", "http"] = "hashing"
    embedding_dim: int = Field(384, ge=8, le=8192)
    embedding_url: str | None = None
    embedding_model: str | None = None
    embedding_api_key: str | None = None
    # The outbox worker: rows per pass, idle poll interval, backoff cap; the window stops trusting the index
    # (and says "degraded") when the oldest pending change is older than vector_max_lag_seconds.
    outbox_batch_size: int = Field(256, ge=1, le=10_000)
    outbox_poll_seconds: float = Field(0.2, gt=0)
    outbox_max_backoff_seconds: float = Field(60.0, gt=0)
    # A change that fails this many times on its own (the index and embedder working) is set aside.
    outbox_max_attempts: int = Field(8, ge=1, le=1000)
    vector_max_lag_seconds: float = Field(30.0, gt=0)
    # The embedded index (edge) builds HNSW graphs in a child process once this many points were written
    # since its last build and some user has this many points (a user's search is otherwise an exact scan
    # of their points: ~0.3 ms a thousand); 0 never builds (service/vectors/qdrant_edge.py).
    vector_build_threshold: int = Field(20_000, ge=0)
    # Hybrid relevance: how the lexical and vector rankings are fused (scoring/relevance.py): "convex", a
    # weighted sum of min-max normalised scores (the lexical ranking's weight; the vector's is 1 minus it),
    # or "rrf", reciprocal-rank fusion with constant rrf_k; and how many candidates each ranking gives.
    fusion: Literal["convex", "rrf"] = "convex"
    # unset: the embedder's own (hashing 0.7, minilm and http 0.5)
    fusion_lexical_weight: float | None = Field(None, ge=0, le=1)
    rrf_k: int = Field(60, ge=1)
    # Which rankings relevance fuses: both (the default), or one of them (for evaluation and fallback).
    recall_mode: Literal["hybrid", "lexical", "vector"] = "hybrid"
    recall_candidates: int = Field(100, ge=1, le=10_000)
    # Relevance in context (scoring/relevance.py, in_context): a conversation turn (an episode with a
    # session_id) gains this share of the relevance of the best of its neighbours up to context_reach turns
    # away in the same session, halved per further turn; 0 turns it off.
    context_share: float = Field(0.5, ge=0, le=1)
    context_reach: int = Field(2, ge=0, le=10)
    # ... for the neighbours of this many of the most relevant items (a window shows a few dozen; the
    # neighbours of weaker hits gain too little to matter: LoCoMo 900 tokens 71.4 % with 32, 70.9 % with 100).
    context_sources: int = Field(32, ge=1, le=1_000)
    # Changes not yet in the lexical index are searched from their text, the newest this many per user.
    lexical_pending_limit: int = Field(1_000, ge=0, le=100_000)
    # The lexical ranking ranks by the query's terms that are expected in at most this many of the user's
    # texts (service/windows/recall.py): what keeps it flat as a user's memory grows.
    lexical_max_hits: int = Field(2_000, ge=1, le=1_000_000)
    # Vector hits below this cosine similarity are not candidates; unset: the embedder's own threshold
    # (hashing 0.15, minilm 0.2, http 0: unrelated texts still score a little above 0).
    vector_min_score: float | None = Field(None, ge=-1, le=1)
    # At most this many of the user's items outside the window's scopes (other sessions, tasks, stages)
    # join a window because they are relevant to its query; 0 turns that off.
    recall_limit: int = Field(8, ge=0, le=1_000)

    # Windows (docs/design.md §3.6): with context_limit, the budget is min(limit - reserve, watermark x limit).
    window_watermark: float = Field(0.6, gt=0, le=1)
    # Per-process cache of what a window derives from a user's rows (service/windows/cache.py), checked
    # against the database on every request. Bounded by entries (user x session/task/stage/step x domains)
    # and by the item and profile rows they hold, about 3.5 KB of memory each; 0 turns it off.
    window_cache_entries: int = Field(1_000, ge=0)
    window_cache_rows: int = Field(10_000, ge=0)
    # A window's candidates: the standing context (pinned types, this session's / task's items, the
    # profile), the items retrieved for the query (recall_candidates per ranking), and the user's newest
    # window_recent_items other items; the rest are counted as "not retrieved".
    window_recent_items: int = Field(50, ge=0, le=10_000)
    window_value: WindowValueSettings = Field(default_factory=WindowValueSettings)

    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("postgresql://", "postgres://", "postgresql+asyncpg://")):
            raise ValueError("CTXMEM_DATABASE_URL must be a postgresql:// URL (or empty for the embedded default)")
        return value

    @field_validator("type_ttl_seconds", "scope_ttl_seconds")
    @classmethod
    def _positive_ttls(cls, value: dict[str, int]) -> dict[str, int]:
        for name, seconds in value.items():
            if seconds <= 0:
                raise ValueError(f"TTL for {name!r} must be a positive number of seconds")
        return value

    @field_validator("job_schedules")
    @classmethod
    def _schedules(cls, value: dict[str, str]) -> dict[str, str]:
        for name, spec in value.items():
            if name not in JOB_NAMES:
                raise ValueError(f"unknown job {name!r} in job_schedules (jobs: {', '.join(JOB_NAMES)})")
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

    @model_validator(mode="after")
    def _check_pages(self) -> Settings:
        if self.default_page_size > self.max_page_size:
            raise ValueError("default_page_size must not exceed max_page_size")
        return self

    @model_validator(mode="after")
    def _server_when_url(self) -> Settings:
        # As with the database (docs/design.md §5): a Qdrant URL means the server, unless a backend is named.
        if self.qdrant_url and "vector_backend" not in self.model_fields_set:
            self.vector_backend = "qdrant"
        return self

    @property
    def embedded(self) -> bool:
        return not self.database_url

    @property
    def postgres_dir(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def resolved_tokenizer_cache_dir(self) -> Path:
        return self.tokenizer_cache_dir or (self.data_dir / "tiktoken")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
