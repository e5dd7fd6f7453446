"""Set-based SQL of the scheduled jobs. Each function changes at most one batch of rows in the caller's
transaction, writes one event per change (with the run id and the rule), and returns what it did.
No Python loop over rows: the database does the work, a batch at a time."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import asdict, fields
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from scoring.fourc import SCORE_DECIMALS, SECONDS_PER_DAY, FourCWeights
from scoring.profile import DECAY_END_STATUS, DECAY_STEPS, DECAYING_STATUSES
from service.db.models import active_sql

# The counts of a run and the housekeeping tables: every tenant's rows when the run is global (scheduler,
# CLI), one tenant's when an admin runs it over the API.
_TENANT = "(CAST(:tenant AS text) IS NULL OR {t}.tenant_id = CAST(:tenant AS text))"
# A batch: always one tenant's rows (a global run sweeps the tenants one after the other, jobs/runner.py).
# A plain equality rather than _TENANT's "one or all", so that a plan cached for the statement (asyncpg
# prepares it; PostgreSQL's generic plan after five runs) still finds the tenant's rows by index.
_PIN = "{t}.tenant_id = CAST(:tenant AS text)"

_EVENT_COLUMNS = (
    "id, tenant_id, user_id, actor, actor_role, action, entity_type, entity_id, reason, rule, before, after,"
    " created_at, run_id"
)


async def _scalar(session: AsyncSession, sql: str, params: Mapping[str, Any]) -> Any:
    return (await session.execute(text(sql), dict(params))).scalar_one()


# --- expire -------------------------------------------------------------------------------------------

EXPIRE_ITEMS = f"""
WITH picked AS (
    SELECT i.id, i.tenant_id, i.status FROM context_item i
    WHERE {active_sql("i")} AND i.expires_at <= :now AND {_PIN.format(t="i")} AND i.id > CAST(:after AS uuid)
    ORDER BY i.id LIMIT :batch FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE context_item c SET status = 'expired', status_reason = 'expired: past expires_at', updated_at = :now
    FROM picked WHERE c.tenant_id = picked.tenant_id AND c.id = picked.id
    RETURNING c.id, c.tenant_id, c.user_id, c.expires_at, picked.status AS before
), ev AS (
    INSERT INTO event ({_EVENT_COLUMNS})
    SELECT ctxmem_uuid7(), tenant_id, user_id, :actor, 'system', 'item.expired', 'context_item', id::text,
           'past expires_at ' || expires_at::text, 'expiry', jsonb_build_object('status', before),
           jsonb_build_object('status', 'expired', 'run_id', CAST(:run AS text)), :now, CAST(:run AS uuid)
    FROM changed
), outbox AS (
    INSERT INTO vector_outbox (tenant_id, user_id, item_id, op, created_at, next_attempt_at)
    SELECT tenant_id, user_id, id, 'sync', now(), now() FROM changed ORDER BY id
)
SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

EXPIRE_ENTRIES = f"""
WITH picked AS (
    SELECT e.id, e.tenant_id, e.status FROM profile_entry e
    WHERE e.status <> 'expired' AND e.expires_at <= :now AND {_PIN.format(t="e")} AND e.id > CAST(:after AS uuid)
    ORDER BY e.id LIMIT :batch FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE profile_entry p SET status = 'expired', updated_at = :now
    FROM picked WHERE p.tenant_id = picked.tenant_id AND p.id = picked.id
    RETURNING p.id, p.tenant_id, p.user_id, p.tier, picked.status AS before
), ev AS (
    INSERT INTO event ({_EVENT_COLUMNS})
    SELECT ctxmem_uuid7(), tenant_id, user_id, :actor, 'system', 'profile.changed', 'profile_entry', id::text,
           'past expires_at', 'expiry', jsonb_build_object('tier', tier, 'status', before),
           jsonb_build_object('tier', tier, 'status', 'expired', 'run_id', CAST(:run AS text)), :now, CAST(:run AS uuid)
    FROM changed
)
SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

# The counts of a run, per tenant: the run's progress total (their sum) and the tenants it sweeps, one
# after the other (a sweep's batch is picked FOR UPDATE SKIP LOCKED with its tenant pinned: a sharded
# database locks rows on one shard at a time, docs/citus.md). A plain read, once per run.
COUNT_EXPIRE_ITEMS = f"""
SELECT i.tenant_id, count(*) FROM context_item i
WHERE {active_sql("i")} AND i.expires_at <= :now AND {_TENANT.format(t="i")} GROUP BY i.tenant_id ORDER BY i.tenant_id
"""

COUNT_EXPIRE_ENTRIES = f"""
SELECT e.tenant_id, count(*) FROM profile_entry e
WHERE e.status <> 'expired' AND e.expires_at <= :now AND {_TENANT.format(t="e")} GROUP BY e.tenant_id
ORDER BY e.tenant_id
"""


# --- decay --------------------------------------------------------------------------------------------


def _literal(value: str) -> str:
    """A SQL string literal of one of scoring/'s own names (tiers, statuses), never of input."""
    if not value.replace("_", "").isalpha():
        raise ValueError(f"not a name: {value!r}")
    return f"'{value}'"


def _decay_case(part: int, otherwise: str) -> str:
    """The new tier (part 0) or status (part 1) of a decay step, a CASE built from DECAY_STEPS."""
    whens = " ".join(
        f"WHEN tier = {_literal(tier)} AND status = {_literal(status)} THEN {_literal(step[part])}"
        for (tier, status), step in DECAY_STEPS.items()
    )
    return f"CASE {whens} ELSE {otherwise} END"


# The silence an entry is allowed: "domain.dimension", then "domain", then "dimension", then the default.
_PERIOD = """make_interval(days => COALESCE(
    (CAST(:periods AS jsonb) ->> (e.domain_key || '.' || e.dimension))::int,
    (CAST(:periods AS jsonb) ->> e.domain_key)::int,
    (CAST(:periods AS jsonb) ->> e.dimension)::int,
    CAST(:default_days AS int)))"""
_STALE = f"""e.status IN ({", ".join(_literal(s) for s in DECAYING_STATUSES)})
    AND GREATEST(COALESCE(e.last_supported_at, e.first_evidence_at), COALESCE(e.decayed_at, '-infinity'))
        <= CAST(:now AS timestamptz) - {_PERIOD}"""

DECAY = f"""
WITH picked AS (
    SELECT e.id, e.tenant_id, e.tier, e.status, e.score FROM profile_entry e
    WHERE {_STALE} AND {_PIN.format(t="e")} AND e.id > CAST(:after AS uuid)
    ORDER BY e.id LIMIT :batch FOR UPDATE SKIP LOCKED
), moved AS (
    -- one level down, as scoring.profile.decay_step and decayed_score
    SELECT id, tenant_id, tier AS old_tier, status AS old_status,
           {_decay_case(0, "tier")} AS new_tier,
           {_decay_case(1, _literal(DECAY_END_STATUS))} AS new_status,
           round((score * CAST(:factor AS float8))::numeric, {SCORE_DECIMALS})::float AS new_score
    FROM picked
), changed AS (
    UPDATE profile_entry p SET tier = m.new_tier, status = m.new_status, score = m.new_score,
           decayed_at = :now, updated_at = :now
    FROM moved m WHERE p.tenant_id = m.tenant_id AND p.id = m.id
    RETURNING p.id, p.tenant_id, p.user_id, p.domain_key, m.old_tier, m.old_status, m.new_tier, m.new_status,
              m.new_score
), ev AS (
    INSERT INTO event ({_EVENT_COLUMNS})
    SELECT ctxmem_uuid7(), tenant_id, user_id, :actor, 'system', 'profile.changed', 'profile_entry', id::text,
           'no supporting evidence for the decay period'
             || CASE WHEN domain_key <> '' THEN ' in ' || domain_key ELSE '' END,
           'decay', jsonb_build_object('tier', old_tier, 'status', old_status),
           jsonb_build_object('tier', new_tier, 'status', new_status, 'score', new_score,
                              'run_id', CAST(:run AS text)),
           :now, CAST(:run AS uuid)
    FROM changed
)
SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

COUNT_DECAY = f"""
SELECT e.tenant_id, count(*) FROM profile_entry e WHERE {_STALE} AND {_TENANT.format(t="e")} GROUP BY e.tenant_id
ORDER BY e.tenant_id
"""


def decay_params(*, overrides: Mapping[str, int], default_days: int, factor: float) -> dict[str, Any]:
    return {"periods": json.dumps(dict(overrides)), "default_days": default_days, "factor": factor}


# --- promote ------------------------------------------------------------------------------------------

# The 4C score of scoring/fourc.py and its promotion rule (``promotable``), in SQL over one batch of
# candidates. The weights are bound under their FourCWeights names (one column of ``w`` each), the
# threshold and the sessions floor come from settings, the rounding and the day length from
# scoring/fourc.py; tests/jobs/test_jobs.py holds the two implementations equal.
_WEIGHT_NAMES = tuple(f.name for f in fields(FourCWeights))
_WEIGHTS = ",\n           ".join(
    f"CAST(:{name} AS float8) AS {name}" for name in (*_WEIGHT_NAMES, "threshold", "min_sessions")
)
_D = SCORE_DECIMALS

PROMOTE = f"""
WITH w AS (
    SELECT {_WEIGHTS}
), cand AS (
    SELECT e.id, e.tenant_id FROM profile_entry e
    WHERE e.tier = 'candidate' AND e.status = 'active' AND e.id > CAST(:after AS uuid) AND {_PIN.format(t="e")}
    ORDER BY e.id LIMIT :batch
), ev AS (
    SELECT o.entry_id, o.id, o.session_id, o.context, o.explicit, o.confirmation, o.stance = 'supports' AS sup,
           o.observed_at, LEAST(GREATEST(o.weight, 0), 1) AS w
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
    SELECT entry_id, count(*) AS contra_sessions,
           sum(CASE WHEN hard THEN w.explicit_contradiction_penalty ELSE w.contradiction_penalty END) AS raw_penalty
    FROM contra CROSS JOIN w GROUP BY entry_id
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
    SELECT tenant_id, entry_id, sessions, span_days, contexts, contra_sessions,
           round((w.count_points * LEAST(mass, w.count_saturation_sessions) / w.count_saturation_sessions)::numeric,
                 {_D}) AS p_count,
           round((w.continuity_points * LEAST(1.0, span_days / w.continuity_saturation_days))::numeric, {_D}) AS p_cont,
           round((w.cross_context_points * LEAST(1.0, contexts::float / w.cross_context_saturation))::numeric,
                 {_D}) AS p_cross,
           round((CASE WHEN confirmed THEN w.confirmation_points WHEN stated THEN w.explicit_points
                       ELSE w.inferred_points * LEAST(1.0, sessions::float / w.inferred_saturation_sessions)
                  END)::numeric, {_D}) AS p_conf,
           round(raw_penalty::numeric, {_D}) AS raw_pen
    FROM agg CROSS JOIN w
), scored AS (
    SELECT *, LEAST(raw_pen, p_count + p_cont + p_cross + p_conf) AS p_pen,
           p_count + p_cont + p_cross + p_conf - LEAST(raw_pen, p_count + p_cont + p_cross + p_conf) AS score
    FROM parts
), changed AS (
    UPDATE profile_entry p SET tier = 'long_term', score = s.score::float, updated_at = :now,
           breakdown = jsonb_build_object(
               'count', s.p_count, 'continuity', s.p_cont, 'cross_context', s.p_cross, 'confirmation', s.p_conf,
               'penalty', s.p_pen, 'score', s.score, 'sessions', s.sessions,
               'span_days', round(s.span_days::numeric, {_D}), 'contexts', s.contexts,
               'contradicting_sessions', s.contra_sessions,
               'evidence_ids', COALESCE(ids.evidence_ids, '[]'::jsonb))
    FROM scored s CROSS JOIN w LEFT JOIN ids ON ids.entry_id = s.entry_id
    WHERE p.tenant_id = s.tenant_id AND p.id = s.entry_id AND s.sessions >= w.min_sessions AND s.score >= w.threshold
    RETURNING p.id, p.tenant_id, p.user_id, s.score
), events AS (
    INSERT INTO event ({_EVENT_COLUMNS})
    SELECT ctxmem_uuid7(), tenant_id, user_id, :actor, 'system', 'profile.changed', 'profile_entry', id::text,
           '4C score ' || score::text || ' reached the long-term threshold', 'promotion',
           jsonb_build_object('tier', 'candidate', 'status', 'active'),
           jsonb_build_object('tier', 'long_term', 'status', 'active', 'score', score, 'run_id', CAST(:run AS text)),
           :now, CAST(:run AS uuid)
    FROM changed
)
SELECT (SELECT count(*) FROM changed) AS promoted, (SELECT count(*) FROM cand) AS examined,
       (SELECT max(id::text) FROM cand) AS last_id
"""

COUNT_PROMOTE = f"""
SELECT e.tenant_id, count(*) FROM profile_entry e
WHERE e.tier = 'candidate' AND e.status = 'active' AND {_TENANT.format(t="e")} GROUP BY e.tenant_id ORDER BY e.tenant_id
"""


def promote_params(weights: FourCWeights, *, threshold: float, min_sessions: int) -> dict[str, Any]:
    """The binds of ``PROMOTE``: every weight under its own name, and the two settings of ``promotable``."""
    return {**asdict(weights), "threshold": threshold, "min_sessions": min_sessions}


async def promote_batch(
    session: AsyncSession, params: Mapping[str, Any], after: uuid.UUID
) -> tuple[int, int, uuid.UUID | None]:
    row = (await session.execute(text(PROMOTE), {**params, "after": str(after)})).one()
    return int(row.promoted), int(row.examined), uuid.UUID(row.last_id) if row.last_id else None


# --- purge --------------------------------------------------------------------------------------------

PURGE_ITEMS = f"""
WITH picked AS (
    SELECT i.id, i.tenant_id FROM context_item i
    WHERE i.status = 'deleted' AND i.deleted_at <= CAST(:now AS timestamptz) - make_interval(days => :days)
      AND {_PIN.format(t="i")} AND i.id > CAST(:after AS uuid)
    ORDER BY i.id LIMIT :batch FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM context_item c USING picked WHERE c.tenant_id = picked.tenant_id AND c.id = picked.id
    RETURNING c.id, c.tenant_id, c.user_id, c.deleted_at
), ev AS (
    INSERT INTO event ({_EVENT_COLUMNS})
    SELECT ctxmem_uuid7(), tenant_id, user_id, :actor, 'system', 'item.purged', 'context_item', id::text,
           'tombstone past retention (deleted ' || deleted_at::text || ')', 'retention',
           jsonb_build_object('status', 'deleted'), jsonb_build_object('run_id', CAST(:run AS text)), :now,
           CAST(:run AS uuid)
    FROM gone
)
SELECT (SELECT count(*) FROM gone) AS changed, (SELECT count(*) FROM picked) AS picked,
       (SELECT max(id::text) FROM picked) AS last_id
"""

PURGE_IDEMPOTENCY = f"""
WITH picked AS (
    SELECT r.tenant_id, r.key FROM idempotency_record r
    WHERE r.created_at <= CAST(:now AS timestamptz) - make_interval(hours => :hours) AND {_PIN.format(t="r")}
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
          AND {_TENANT.format(t="job_run")} LIMIT :batch)
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
          AND {_TENANT.format(t="console_session")} LIMIT :batch)
    RETURNING 1
)
SELECT count(*) FROM gone
"""

COUNT_PURGE = f"""
SELECT i.tenant_id, count(*) FROM context_item i
WHERE i.status = 'deleted' AND i.deleted_at <= CAST(:now AS timestamptz) - make_interval(days => :days)
  AND {_TENANT.format(t="i")} GROUP BY i.tenant_id ORDER BY i.tenant_id
"""

COUNT_PURGE_IDEMPOTENCY = f"""
SELECT r.tenant_id, count(*) FROM idempotency_record r
WHERE r.created_at <= CAST(:now AS timestamptz) - make_interval(hours => :hours) AND {_TENANT.format(t="r")}
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


# --- job_run ------------------------------------------------------------------------------------------


async def start_run(session: AsyncSession, row: Mapping[str, Any]) -> bool:
    """Record a run; False when a scheduler tick of this job was already taken by another replica."""
    result = await session.execute(
        text(
            "INSERT INTO job_run (id, name, tenant_id, trigger, tick, as_of, started_at, status, rows) "
            "VALUES (:id, :name, :tenant, :trigger, :tick, :as_of, :started_at, 'running', '{}'::jsonb) "
            "ON CONFLICT DO NOTHING RETURNING id"
        ),
        dict(row),
    )
    return result.scalar_one_or_none() is not None


async def interrupt_stale(session: AsyncSession, name: str, now: datetime) -> int:
    """Runs still 'running' while we hold the job's lock died mid-way (crash, kill): say so."""
    result = await session.execute(
        text(
            "UPDATE job_run SET status = 'interrupted', finished_at = :now, "
            "error = 'the process running it stopped before it finished; later runs pick up the rest' "
            "WHERE name = :name AND status = 'running' RETURNING id"
        ),
        {"name": name, "now": now},
    )
    return len(result.all())


async def finish_run(
    session: AsyncSession, run_id: uuid.UUID, *, status: str, rows: Mapping[str, int], error: str | None, now: datetime
) -> dict[str, Any]:
    """Close the run's record and return it as stored (what ``GET /v1/jobs/runs`` lists)."""
    result = await session.execute(
        text(
            "UPDATE job_run SET status = :status, rows = CAST(:rows AS jsonb), error = :error, finished_at = :now "
            "WHERE id = :id RETURNING *"
        ),
        {"id": run_id, "status": status, "rows": json.dumps(dict(rows)), "error": error, "now": now},
    )
    return dict(result.mappings().one())


async def list_runs(session: AsyncSession, *, tenant_id: str | None, name: str | None, limit: int) -> list[Any]:
    sql = "SELECT * FROM job_run WHERE (tenant_id IS NULL OR tenant_id = :tenant)"
    params: dict[str, Any] = {"tenant": tenant_id, "limit": limit}
    if tenant_id is None:
        sql = "SELECT * FROM job_run WHERE TRUE"
    if name:
        sql += " AND name = :name"
        params["name"] = name
    sql += " ORDER BY started_at DESC, id DESC LIMIT :limit"
    return list((await session.execute(text(sql), params)).mappings())


# The latest finished run of each job (any tenant's or the global one), with the rows it changed in all:
# for the job gauges of /metrics (jobs/metrics.py). One probe of ix_job_run_name_started per job name.
LATEST_RUNS = """
SELECT j.name, r.status, EXTRACT(EPOCH FROM r.finished_at - r.started_at)::float8 AS seconds,
       EXTRACT(EPOCH FROM r.finished_at)::float8 AS finished,
       (SELECT coalesce(sum(v.value::numeric), 0)::float8 FROM jsonb_each_text(coalesce(r.rows, '{}'::jsonb)) AS v
        WHERE v.value ~ '^-?[0-9]+$') AS changed
FROM unnest(CAST(:names AS text[])) AS j(name)
CROSS JOIN LATERAL (
    SELECT status, started_at, finished_at, rows FROM job_run
    WHERE name = j.name AND finished_at IS NOT NULL ORDER BY started_at DESC LIMIT 1
) AS r
"""


async def latest_runs(session: AsyncSession, *, names: list[str]) -> list[Any]:
    return list((await session.execute(text(LATEST_RUNS), {"names": names})).mappings())
