"""Set-based SQL of the scheduled jobs. Each function changes at most one batch of rows in the caller's
transaction, writes one event per change (with the run id and the rule), and returns what it did.
No Python loop over rows: the database does the work, a batch at a time."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from scoring.expr import Sql, literal, render, rounded
from scoring.fourc import (
    SCORE_DECIMALS,
    SECONDS_PER_DAY,
    FourCInputs,
    FourCParts,
    FourCWeights,
    contradiction_penalty,
    evidence_weight,
    fourc_parts,
    fourc_settle,
    promotion_rule,
)
from scoring.profile import DECAY_END_STATUS, DECAY_STEPS, DECAYING_STATUSES, decay_period_days_sql, decayed_score
from service.db.models import active_sql
from service.events import job_events


def _any_tenant(alias: str) -> str:
    """The counts of a run and the housekeeping tables: every tenant's rows when the run is global (scheduler,
    CLI), one tenant's when an admin runs it over the API."""
    return f"(CAST(:tenant AS text) IS NULL OR {alias}.tenant_id = CAST(:tenant AS text))"


def _pinned(alias: str) -> str:
    """A batch: always one tenant's rows (a global run sweeps the tenants one after the other, jobs/runner.py).
    A plain equality rather than ``_any_tenant``'s "one or all", so that a plan cached for the statement
    (asyncpg prepares it; PostgreSQL's generic plan after five runs) still finds the tenant's rows by index."""
    return f"{alias}.tenant_id = CAST(:tenant AS text)"


async def _scalar(session: AsyncSession, sql: str, params: Mapping[str, Any]) -> Any:
    return (await session.execute(text(sql), dict(params))).scalar_one()


# --- expire -------------------------------------------------------------------------------------------

_ITEM_EXPIRED = job_events(
    rows="changed",
    action="item.expired",
    entity_type="context_item",
    entity_id="id::text",
    reason="'past expires_at ' || expires_at::text",
    rule="expiry",
    before={"status": "before"},
    after={"status": "'expired'"},
)

EXPIRE_ITEMS = f"""
WITH picked AS (
    SELECT i.id, i.tenant_id, i.status FROM context_item i
    WHERE {active_sql("i")} AND i.expires_at <= :now AND {_pinned("i")} AND i.id > CAST(:after AS uuid)
    ORDER BY i.id LIMIT :batch FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE context_item c SET status = 'expired', status_reason = 'expired: past expires_at', updated_at = :now
    FROM picked WHERE c.tenant_id = picked.tenant_id AND c.id = picked.id
    RETURNING c.id, c.tenant_id, c.user_id, c.expires_at, picked.status AS before
), ev AS (
    {_ITEM_EXPIRED}
), outbox AS (
    INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at)
    SELECT tenant_id, user_id, id, 'sync', now(), now() FROM changed ORDER BY id
)
SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

_ENTRY_EXPIRED = job_events(
    rows="changed",
    action="profile.changed",
    entity_type="profile_entry",
    entity_id="id::text",
    reason="'past expires_at'",
    rule="expiry",
    before={"tier": "tier", "status": "before"},
    after={"tier": "tier", "status": "'expired'"},
)

EXPIRE_ENTRIES = f"""
WITH picked AS (
    SELECT e.id, e.tenant_id, e.status FROM profile_entry e
    WHERE e.status <> 'expired' AND e.expires_at <= :now AND {_pinned("e")} AND e.id > CAST(:after AS uuid)
    ORDER BY e.id LIMIT :batch FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE profile_entry p SET status = 'expired', updated_at = :now
    FROM picked WHERE p.tenant_id = picked.tenant_id AND p.id = picked.id
    RETURNING p.id, p.tenant_id, p.user_id, p.tier, picked.status AS before
), ev AS (
    {_ENTRY_EXPIRED}
)
SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

# The counts of a run, per tenant: the run's progress total (their sum) and the tenants it sweeps, one
# after the other (a sweep's batch is picked FOR UPDATE SKIP LOCKED with its tenant pinned: a sharded
# database locks rows on one shard at a time, docs/citus.md). A plain read, once per run.
COUNT_EXPIRE_ITEMS = f"""
SELECT i.tenant_id, count(*) FROM context_item i
WHERE {active_sql("i")} AND i.expires_at <= :now AND {_any_tenant("i")} GROUP BY i.tenant_id ORDER BY i.tenant_id
"""

COUNT_EXPIRE_ENTRIES = f"""
SELECT e.tenant_id, count(*) FROM profile_entry e
WHERE e.status <> 'expired' AND e.expires_at <= :now AND {_any_tenant("e")} GROUP BY e.tenant_id
ORDER BY e.tenant_id
"""


# --- decay --------------------------------------------------------------------------------------------


def _decay_case(part: int, otherwise: str) -> str:
    """The new tier (part 0) or status (part 1) of a decay step, a CASE built from DECAY_STEPS."""
    whens = " ".join(
        f"WHEN tier = {literal(tier)} AND status = {literal(status)} THEN {literal(step[part])}"
        for (tier, status), step in DECAY_STEPS.items()
    )
    return f"CASE {whens} ELSE {otherwise} END"


# An entry is stale once silent (no supporting evidence, and no decay step since) for its decay period
# (scoring.profile.decay_period_days).
_PERIOD_DAYS = decay_period_days_sql(
    columns={"domain_key": "e.domain_key", "dimension": "e.dimension"},
    overrides="CAST(:periods AS jsonb)",
    default_days="CAST(:default_days AS int)",
)
_STALE = f"""e.status IN ({", ".join(literal(s) for s in DECAYING_STATUSES)})
    AND GREATEST(COALESCE(e.last_supported_at, e.first_evidence_at), COALESCE(e.decayed_at, '-infinity'))
        <= CAST(:now AS timestamptz) - make_interval(days => {_PERIOD_DAYS})"""

_DECAYED = job_events(
    rows="changed",
    action="profile.changed",
    entity_type="profile_entry",
    entity_id="id::text",
    reason="'no supporting evidence for the decay period' || CASE WHEN domain_key <> '' THEN ' in ' || domain_key"
    " ELSE '' END",
    rule="decay",
    before={"tier": "old_tier", "status": "old_status"},
    after={"tier": "new_tier", "status": "new_status", "score": "new_score"},
)

DECAY = f"""
WITH picked AS (
    SELECT e.id, e.tenant_id, e.tier, e.status, e.score FROM profile_entry e
    WHERE {_STALE} AND {_pinned("e")} AND e.id > CAST(:after AS uuid)
    ORDER BY e.id LIMIT :batch FOR UPDATE SKIP LOCKED
), moved AS (
    -- one level down, as scoring.profile.decay_step and decayed_score
    SELECT id, tenant_id, tier AS old_tier, status AS old_status,
           {_decay_case(0, "tier")} AS new_tier,
           {_decay_case(1, literal(DECAY_END_STATUS))} AS new_status,
           {decayed_score(Sql("score"), factor=Sql("CAST(:factor AS float8)")).text}::float AS new_score
    FROM picked
), changed AS (
    UPDATE profile_entry p SET tier = m.new_tier, status = m.new_status, score = m.new_score,
           decayed_at = :now, updated_at = :now
    FROM moved m WHERE p.tenant_id = m.tenant_id AND p.id = m.id
    RETURNING p.id, p.tenant_id, p.user_id, p.domain_key, m.old_tier, m.old_status, m.new_tier, m.new_status,
              m.new_score
), ev AS (
    {_DECAYED}
)
SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

COUNT_DECAY = f"""
SELECT e.tenant_id, count(*) FROM profile_entry e WHERE {_STALE} AND {_any_tenant("e")} GROUP BY e.tenant_id
ORDER BY e.tenant_id
"""


def decay_params(*, overrides: Mapping[str, int], default_days: int, factor: float) -> dict[str, Any]:
    return {"periods": json.dumps(dict(overrides)), "default_days": default_days, "factor": factor}


# --- promote ------------------------------------------------------------------------------------------

# The statement's columns that scoring.fourc's rule reads (FourCInputs), and those of the parts it rounds.
_INPUTS = FourCInputs(
    sessions=Sql("sessions"),
    mass=Sql("mass"),
    span_days=Sql("span_days"),
    contexts=Sql("contexts"),
    confirmed=Sql("confirmed"),
    stated=Sql("stated"),
    raw_penalty=Sql("raw_penalty"),
)
_PARTS = FourCParts(
    count=Sql("p_count"), continuity=Sql("p_cont"), cross_context=Sql("p_cross"), confirmation=Sql("p_conf")
)

_PROMOTED = job_events(
    rows="changed",
    action="profile.changed",
    entity_type="profile_entry",
    entity_id="id::text",
    reason="'4C score ' || score::text || ' reached the long-term threshold'",
    rule="promotion",
    before={"tier": "'candidate'", "status": "'active'"},
    after={"tier": "'long_term'", "status": "'active'", "score": "score"},
)


def promote_sql(weights: FourCWeights, *, threshold: float, min_sessions: int) -> str:
    """One batch of candidates scored and promoted: scoring.fourc's ``fourc_parts``, ``fourc_settle`` and
    ``promotion_rule`` rendered over the batch's aggregates of its evidence, with ``weights`` and the two
    settings of the rule as literals. The aggregates are those ``score_4c`` computes (``FourCInputs``);
    tests/jobs/test_jobs.py holds the job and the Python scorer equal."""
    session_penalty = contradiction_penalty(Sql("hard"), weights)
    span_days = rounded(Sql("s.span_days"), SCORE_DECIMALS)
    parts = fourc_parts(_INPUTS, weights)
    penalty, score = fourc_settle(_PARTS, _INPUTS.raw_penalty)
    promote = promotion_rule(
        score=Sql("s.score"), sessions=Sql("s.sessions"), threshold=threshold, min_sessions=min_sessions
    )
    return f"""
WITH cand AS (
    SELECT e.id, e.tenant_id FROM profile_entry e
    WHERE e.tier = 'candidate' AND e.status = 'active' AND e.id > CAST(:after AS uuid) AND {_pinned("e")}
    ORDER BY e.id LIMIT :batch
), ev AS (
    SELECT o.entry_id, o.id, o.session_id, o.context, o.explicit, o.confirmation, o.stance = 'supports' AS sup,
           o.observed_at, {render(evidence_weight(Sql("o.weight")))} AS w
    FROM observation o JOIN cand ON cand.tenant_id = o.tenant_id AND cand.id = o.entry_id
    WHERE o.observed_at <= :now
), per_session AS (
    SELECT entry_id, session_id, max(w) AS w FROM ev WHERE sup GROUP BY entry_id, session_id
), contra AS (
    SELECT entry_id, session_id, bool_or(explicit OR confirmation) AS hard FROM ev WHERE NOT sup
    GROUP BY entry_id, session_id
), sup AS (
    SELECT entry_id, EXTRACT(EPOCH FROM max(observed_at) - min(observed_at)) / {SECONDS_PER_DAY} AS span_days,
           count(DISTINCT context) AS contexts, bool_or(confirmation) AS confirmed, bool_or(explicit) AS stated
    FROM ev WHERE sup GROUP BY entry_id
), ps AS (
    SELECT entry_id, count(*) AS sessions, sum(w) AS mass FROM per_session GROUP BY entry_id
), pen AS (
    SELECT entry_id, count(*) AS contra_sessions, sum({render(session_penalty)}) AS raw_penalty
    FROM contra GROUP BY entry_id
), ids AS (
    SELECT entry_id, jsonb_agg(id::text ORDER BY id::text) AS evidence_ids FROM ev GROUP BY entry_id
), agg AS (
    SELECT cand.tenant_id, cand.id AS entry_id, COALESCE(ps.sessions, 0) AS sessions, COALESCE(ps.mass, 0) AS mass,
           COALESCE(sup.span_days, 0) AS span_days, COALESCE(sup.contexts, 0) AS contexts,
           COALESCE(sup.confirmed, false) AS confirmed, COALESCE(sup.stated, false) AS stated,
           COALESCE(pen.contra_sessions, 0) AS contra_sessions, COALESCE(pen.raw_penalty, 0) AS raw_penalty
    FROM cand LEFT JOIN ps ON ps.entry_id = cand.id LEFT JOIN sup ON sup.entry_id = cand.id
         LEFT JOIN pen ON pen.entry_id = cand.id
), parts AS (
    SELECT tenant_id, entry_id, sessions, span_days, contexts, contra_sessions, raw_penalty,
           {render(parts.count)} AS p_count,
           {render(parts.continuity)} AS p_cont,
           {render(parts.cross_context)} AS p_cross,
           {render(parts.confirmation)} AS p_conf
    FROM agg
), scored AS (
    SELECT *, {render(penalty)} AS p_pen, {render(score)} AS score
    FROM parts
), changed AS (
    UPDATE profile_entry p SET tier = 'long_term', score = s.score::float, updated_at = :now,
           breakdown = jsonb_build_object(
               'count', s.p_count, 'continuity', s.p_cont, 'cross_context', s.p_cross, 'confirmation', s.p_conf,
               'penalty', s.p_pen, 'score', s.score, 'sessions', s.sessions,
               'span_days', {render(span_days)}, 'contexts', s.contexts,
               'contradicting_sessions', s.contra_sessions,
               'evidence_ids', COALESCE(ids.evidence_ids, '[]'::jsonb))
    FROM scored s LEFT JOIN ids ON ids.entry_id = s.entry_id
    WHERE p.tenant_id = s.tenant_id AND p.id = s.entry_id AND {render(promote)}
    RETURNING p.id, p.tenant_id, p.user_id, s.score
), events AS (
    {_PROMOTED}
)
SELECT (SELECT count(*) FROM changed) AS promoted, (SELECT count(*) FROM cand) AS examined,
       (SELECT max(id::text) FROM cand) AS last_id
"""


COUNT_PROMOTE = f"""
SELECT e.tenant_id, count(*) FROM profile_entry e
WHERE e.tier = 'candidate' AND e.status = 'active' AND {_any_tenant("e")} GROUP BY e.tenant_id ORDER BY e.tenant_id
"""


async def promote_batch(
    session: AsyncSession, sql: str, params: Mapping[str, Any], after: uuid.UUID
) -> tuple[int, int, uuid.UUID | None]:
    """One batch of ``promote_sql``: (entries promoted, candidates examined, last candidate id)."""
    row = (await session.execute(text(sql), {**params, "after": str(after)})).one()
    return int(row.promoted), int(row.examined), uuid.UUID(row.last_id) if row.last_id else None


# --- purge --------------------------------------------------------------------------------------------

_ITEM_PURGED = job_events(
    rows="gone",
    action="item.purged",
    entity_type="context_item",
    entity_id="id::text",
    reason="'tombstone past retention (deleted ' || deleted_at::text || ')'",
    rule="retention",
    before={"status": "'deleted'"},
    after={},
)

PURGE_ITEMS = f"""
WITH picked AS (
    SELECT i.id, i.tenant_id FROM context_item i
    WHERE i.status = 'deleted' AND i.deleted_at <= CAST(:now AS timestamptz) - make_interval(days => :days)
      AND {_pinned("i")} AND i.id > CAST(:after AS uuid)
    ORDER BY i.id LIMIT :batch FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM context_item c USING picked WHERE c.tenant_id = picked.tenant_id AND c.id = picked.id
    RETURNING c.id, c.tenant_id, c.user_id, c.deleted_at
), ev AS (
    {_ITEM_PURGED}
)
SELECT (SELECT count(*) FROM gone) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

PURGE_IDEMPOTENCY = f"""
WITH picked AS (
    SELECT r.tenant_id, r.key FROM idempotency_record r
    WHERE r.created_at <= CAST(:now AS timestamptz) - make_interval(hours => :hours) AND {_pinned("r")}
    LIMIT :batch FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM idempotency_record d USING picked WHERE d.tenant_id = picked.tenant_id AND d.key = picked.key
    RETURNING 1
)
SELECT count(*) FROM gone
"""

PURGE_RUNS = f"""
WITH gone AS (
    DELETE FROM job_run j WHERE j.id IN (
        SELECT id FROM job_run WHERE finished_at <= CAST(:now AS timestamptz) - make_interval(days => :days)
          AND {_any_tenant("job_run")} LIMIT :batch)
    RETURNING 1
)
SELECT count(*) FROM gone
"""

# Console sessions idle past CTXMEM_CONSOLE_IDLE_MINUTES: refused at their next use already, deleted here.
PURGE_CONSOLE_SESSIONS = f"""
WITH gone AS (
    DELETE FROM console_session c WHERE c.id IN (
        SELECT id FROM console_session
        WHERE last_seen_at <= CAST(:now AS timestamptz) - make_interval(mins => :minutes)
          AND {_any_tenant("console_session")} LIMIT :batch)
    RETURNING 1
)
SELECT count(*) FROM gone
"""

COUNT_PURGE = f"""
SELECT i.tenant_id, count(*) FROM context_item i
WHERE i.status = 'deleted' AND i.deleted_at <= CAST(:now AS timestamptz) - make_interval(days => :days)
  AND {_any_tenant("i")} GROUP BY i.tenant_id ORDER BY i.tenant_id
"""

COUNT_PURGE_IDEMPOTENCY = f"""
SELECT r.tenant_id, count(*) FROM idempotency_record r
WHERE r.created_at <= CAST(:now AS timestamptz) - make_interval(hours => :hours) AND {_any_tenant("r")}
GROUP BY r.tenant_id ORDER BY r.tenant_id
"""


async def run_statement(session: AsyncSession, sql: str, params: Mapping[str, Any]) -> int:
    return int(await _scalar(session, sql, params))


async def per_tenant(session: AsyncSession, sql: str, params: Mapping[str, Any]) -> dict[str, int]:
    """A ``COUNT_*`` statement's rows: {tenant: rows to change}, tenants in order."""
    return {t: int(n) for t, n in (await session.execute(text(sql), dict(params))).all()}


async def run_keyset(
    session: AsyncSession, sql: str, params: Mapping[str, Any], after: uuid.UUID
) -> tuple[int, int, uuid.UUID | None]:
    """One batch of a keyset-paginated statement: (rows changed, rows picked, last id picked). Walking the
    primary key from ``after`` keeps a run linear in the table: no batch rescans what earlier ones passed."""
    row = (await session.execute(text(sql), {**params, "after": str(after)})).one()
    return int(row.changed), int(row.picked), uuid.UUID(row.last_id) if row.last_id else None
