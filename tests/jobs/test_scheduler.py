"""The scheduler with a simulated clock: replicas on separate connections run each tick once, and the
schedules in settings become clock-aligned triggers (docs/design.md §3.5)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from jobs.scheduler import build_scheduler, fire, tick_of
from service.clock import FixedClock
from service.db.engine import Database, create_database
from service.settings import Settings

# Long before any row of the suite: a global expire run as of then changes nothing, and its ticks are its own.
T = datetime(1990, 1, 1, tzinfo=UTC)


@pytest.fixture
async def replicas(settings: Settings) -> AsyncIterator[list[Database]]:
    """Two scheduler replicas: each its own engine, so its own connections and advisory-lock sessions."""
    dbs = [create_database(settings.database.url, settings) for _ in range(2)]
    yield dbs
    for d in dbs:
        await d.dispose()


async def test_two_replicas_run_each_tick_once(replicas: list[Database], db: Database, settings: Settings) -> None:
    spec = "interval:2"
    # Firings as each replica's clock sees them: two land in each 2-second tick, and both replicas fire each.
    instants = [T + timedelta(seconds=s) for s in (0, 1.5, 2.0, 3.9, 4.2, 5.0)]
    results = []
    for at in instants:
        results += await asyncio.gather(
            *(fire("expire", spec, db=r, settings=settings, clock=FixedClock(at)) for r in replicas)
        )
    ran = [r for r in results if r.status == "succeeded"]
    # the first firing of each tick runs it, as of that firing's time
    assert sorted((r.record["tick"], r.as_of) for r in ran if r.record) == [
        (T, T),
        (T + timedelta(seconds=2), T + timedelta(seconds=2)),
        (T + timedelta(seconds=4), T + timedelta(seconds=4.2)),
    ]
    assert all(r.status == "skipped" and r.reason for r in results if r.status != "succeeded")
    async with db.engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT tick, count(*) AS n FROM job_run WHERE name = 'expire' AND trigger = 'scheduler'"
                    " AND tick >= :t AND tick < :t + interval '1 hour' GROUP BY tick ORDER BY tick"
                ),
                {"t": T},
            )
        ).all()
    assert [(r.tick, r.n) for r in rows] == [(T + timedelta(seconds=s), 1) for s in (0, 2, 4)]


def test_ticks_are_the_same_on_every_replica() -> None:
    assert tick_of("interval:300", T + timedelta(seconds=299.9)) == T
    assert tick_of("interval:300", T + timedelta(seconds=300)) == T + timedelta(seconds=300)
    assert tick_of("cron:15 3 * * *", T + timedelta(hours=3, minutes=15, seconds=7)) == T + timedelta(
        hours=3, minutes=15
    )


async def test_schedules_become_clock_aligned_triggers(db: Database, settings: Settings) -> None:
    custom = settings.replace(job_schedules={"expire": "interval:300", "decay": "cron:15 3 * * *", "purge": "off"})
    clock = FixedClock(T)
    scheduler = build_scheduler(db, custom, clock=clock)
    jobs = {j.id: j for j in scheduler.get_jobs()}
    assert sorted(jobs) == ["decay", "expire"]  # "off" is not scheduled; unnamed jobs are not either
    after = T + timedelta(seconds=1)
    assert jobs["expire"].trigger.get_next_fire_time(None, after) == T + timedelta(seconds=300)
    assert jobs["decay"].trigger.get_next_fire_time(None, after) == T + timedelta(hours=3, minutes=15)
    assert jobs["expire"].args == ("expire", "interval:300") and jobs["expire"].kwargs["clock"] is clock
