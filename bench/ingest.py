"""Batch ingest: N items for M users through the real service, against raw asyncpg in the same run.

    python -m bench.ingest [--items 100000] [--users 100] [--batch 1000] [--concurrency 2]
                           [--database-url URL] [--in-process]

Paths, each writing the same generated items into a tenant of its own:

* ``service/http``    a real ``ctxmem serve`` (uvicorn) in a subprocess, batches POSTed over loopback with
                      ``--concurrency`` requests in flight, each with an ``Idempotency-Key``: validation,
                      token counting, conflict resolution, item and event inserts, the idempotency record.
* ``service/asgi``    (``--in-process``) the same app called through ``httpx.ASGITransport`` in this process:
                      what is left without the HTTP server and the socket.
* ``raw executemany`` the very rows the service stored (read back, re-keyed to another tenant) inserted with
                      asyncpg ``executemany``: one connection, one transaction per request's rows. The ratio
                      baseline.
* ``raw executemany + events``  as above plus the item events the service wrote for those rows.
* ``raw COPY``        asyncpg ``copy_records_to_table`` of the same item rows: the fastest way in.

The target (docs/design.md §6) is ≥ 5,000 items/s over HTTP with token counting, events and idempotency.
Results are printed and written to ``bench/results/ingest.json``.
"""

# The generated Chinese text uses full-width punctuation on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil

from service.auth.service import create_key
from service.clock import Clock
from service.db import migrate
from service.db.embedded import ensure_database, start_embedded
from service.db.engine import Database, create_database, plain_url, session_scope
from service.ids import uuid7
from service.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "ingest.json"
TARGET_ITEMS_PER_S = 5_000
RSS_TARGET_MB = 250
BENCH_DATABASE = "ctxmem_bench"


def _insert_sql(table: str, columns: Sequence[str]) -> str:
    placeholders = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"


# --------------------------------------------------------------------------------------------------
# Deterministic, realistic items
# --------------------------------------------------------------------------------------------------

CITIES = [
    "Shanghai",
    "Berlin",
    "Austin",
    "Lisbon",
    "Osaka",
    "Nairobi",
    "Toronto",
    "Hangzhou",
    "Seville",
    "Perth",
]
FOODS = ["spicy Sichuan food", "vegan dishes", "sushi", "dim sum", "anything with peanuts", "dark chocolate"]
TOOLS = [
    "flight_search",
    "weather",
    "calendar.lookup",
    "crm.get_account",
    "sql.query",
    "web.fetch",
    "stock_quote",
]
PHONES = ["Pixel 9", "iPhone 16 Pro", "Galaxy S25", "Xiaomi 15", "Nothing Phone 3"]
DOMAINS = ["phone", "finance", "travel", "food", "work", "health", "shopping", "family", "code"]
KEYS = {
    "fact": ["home.city", "employer", "phone.model", "kids.count", "birthday.month", "timezone"],
    "preference": ["diet", "reply.language", "tone", "seat", "airline", "notify.channel", "units"],
    "constraint": ["budget", "cache.exclude", "allergy", "travel.max_hours", "meeting.no_before"],
    "decision": ["vendor", "plan.tier", "hotel"],
    "goal": ["savings.target", "fitness.goal"],
    "entity": ["manager", "partner.name", "pet"],
    "plan": ["trip.itinerary", "release.steps"],
}
EN_SENTENCES = [
    "The user said they live in {city} and commute by bike most days.",
    "They prefer {food} and asked to avoid long restaurant queues.",
    "Budget for the {domain} project is capped at {n} USD per month, agreed on {weekday}.",
    "The user switched to a {phone} last spring and wants setup tips for it.",
    "When answering, keep replies short and skip the small talk unless asked.",
    "They mentioned a meeting with the finance team every {weekday} at {hour}:00.",
    "Do not suggest flights with more than one stop; the user gets motion sick.",
    "Last session we compared three hosting plans and picked the middle one for cost reasons.",
    "The user's manager is called {name} and reviews all travel bookings above {n} USD.",
    "Their daughter starts school in {city} in September, so weekday mornings are busy.",
    "The agent ran {tool} and got {n} results; the cheapest option was rejected as too slow.",
    "They asked to be reminded about the insurance renewal two weeks before it is due.",
    "The user corrected an earlier note: the apartment is in {city}, not near the airport.",
    "Prefers metric units, 24-hour time and ISO dates in every answer.",
    "Said plainly: never share the home address with third-party booking tools.",
    "We drafted a plan with {n} steps; step two is blocked on a missing invoice.",
    "The user is learning Mandarin and likes short vocabulary drills after lunch.",
    "Mentioned an allergy to {food}, confirmed twice in separate conversations.",
]
ZH_SENTENCES = [
    "用户住在{city_zh}，平时骑自行车上班。",
    "用户不吃辣，点餐时请避开川菜和火锅。",
    "本月{domain_zh}预算上限为{n}元，超过需要再确认。",
    "用户去年换了新手机，希望得到数据迁移的步骤说明。",
    "回答请简洁，不要寒暄，直接给出结论和理由。",
    "每周{weekday_zh}上午{hour}点有例会，期间不要安排其他事项。",
    "上次会话比较了三个方案，最后选择了性价比最高的那个。",
    "用户的经理叫{name_zh}，所有超过{n}元的报销都需要他审批。",
    "孩子九月开学，工作日早上比较忙，消息请推迟到十点以后。",
    "工具返回了{n}条结果，最便宜的选项因为转机时间太长被放弃了。",
    "请在保险到期前两周提醒用户续保。",
    "用户纠正了之前的记录：公寓在市中心，不在机场附近。",
    "所有日期请使用年月日格式，时间使用二十四小时制。",
    "明确要求：不得把家庭住址提供给第三方订票工具。",
    "我们制定了{n}个步骤的计划，第二步因为缺少发票而暂停。",
    "用户正在学习英语口语，喜欢午饭后做十分钟的练习。",
]
CITIES_ZH = ["上海", "杭州", "北京", "深圳", "成都", "南京", "广州", "西安"]
DOMAINS_ZH = ["旅行", "装修", "餐饮", "培训", "办公"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
WEEKDAYS_ZH = ["一", "二", "三", "四", "五"]
NAMES = ["Priya", "Tomás", "Mei", "Jonas", "Aiko", "Kwame"]
NAMES_ZH = ["王伟", "李娜", "张敏", "刘洋"]

TYPE_WEIGHTS = {
    "fact": 24,
    "preference": 18,
    "constraint": 10,
    "tool_result": 15,
    "episode": 14,
    "decision": 5,
    "goal": 4,
    "entity": 4,
    "plan": 4,
    "summary": 2,
}
CONTENT_RANGE = {"episode": (300, 600), "tool_result": (100, 600)}
DEFAULT_RANGE = (50, 400)
SOURCES = {
    "fact": ["user", "user", "model", "tool"],
    "preference": ["user", "user", "model"],
    "constraint": ["user"],
    "tool_result": ["tool"],
    "episode": ["summary", "model"],
    "summary": ["summary"],
}


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        city=rng.choice(CITIES),
        food=rng.choice(FOODS),
        domain=rng.choice(DOMAINS),
        phone=rng.choice(PHONES),
        weekday=rng.choice(WEEKDAYS),
        hour=rng.randint(8, 17),
        n=rng.randint(2, 5000),
        name=rng.choice(NAMES),
        tool=rng.choice(TOOLS),
        city_zh=rng.choice(CITIES_ZH),
        domain_zh=rng.choice(DOMAINS_ZH),
        weekday_zh=rng.choice(WEEKDAYS_ZH),
        name_zh=rng.choice(NAMES_ZH),
    )


def _prose(rng: random.Random, lo: int, hi: int, chinese: bool) -> str:
    target = rng.randint(lo, hi)
    pool, sep = (ZH_SENTENCES, "") if chinese else (EN_SENTENCES, " ")
    text = ""
    while len(text) < target:
        text += (sep if text else "") + _fill(rng, rng.choice(pool))
    if len(text) <= hi:
        return text
    if chinese:
        return text[: hi - 1] + "。"
    cut = text.rfind(" ", lo, hi)
    return (text[:cut] if cut > 0 else text[:hi]).rstrip(",;") + "…"


def _tool_output(rng: random.Random, lo: int, hi: int) -> tuple[str, Any]:
    tool = rng.choice(TOOLS)
    target = rng.randint(lo, hi)
    doc: dict[str, Any] = {"tool": tool, "status": "ok", "took_ms": rng.randint(3, 900), "results": []}
    text = json.dumps(doc, ensure_ascii=False)
    while True:
        doc["results"].append(
            {
                "id": f"r{rng.randint(1000, 99999)}",
                "title": rng.choice(CITIES + CITIES_ZH + PHONES),
                "price": round(rng.uniform(5, 3000), 2),
                "score": round(rng.random(), 3),
            }
        )
        candidate = json.dumps(doc, ensure_ascii=False)
        if len(candidate) > hi:
            doc["results"].pop()
            break
        text = candidate
        if len(text) >= target:
            break
    summary = {"tool": tool, "count": len(doc["results"])}
    return text, summary


def _key_value(rng: random.Random, item_type: str) -> tuple[str | None, Any]:
    keys = KEYS.get(item_type)
    if not keys or rng.random() > 0.3:
        return None, None
    key = rng.choice(keys)
    value: Any
    roll = rng.random()
    if key == "budget":
        value = {"max": rng.randint(100, 20000), "currency": rng.choice(["USD", "CNY", "EUR"])}
    elif roll < 0.4:
        value = rng.choice(CITIES + FOODS + PHONES + CITIES_ZH)
    elif roll < 0.6:
        value = rng.randint(0, 100)
    elif roll < 0.8:
        value = {"value": rng.choice(DOMAINS), "since": f"202{rng.randint(0, 6)}-0{rng.randint(1, 9)}"}
    else:
        value = None
    return key, value


def generate_item(rng: random.Random, anchor: datetime) -> dict[str, Any]:
    """One item as a client would send it: only the fields it sets."""
    item_type = rng.choices(list(TYPE_WEIGHTS), weights=list(TYPE_WEIGHTS.values()))[0]
    lo, hi = CONTENT_RANGE.get(item_type, DEFAULT_RANGE)
    chinese = rng.random() < 0.35
    item: dict[str, Any] = {"type": item_type}
    value: Any = None
    if item_type == "tool_result":
        item["content"], value = _tool_output(rng, lo, hi)
    else:
        item["content"] = _prose(rng, lo, hi, chinese)
    key, slot_value = _key_value(rng, item_type)
    if key is not None:
        item["key"] = key
        value = slot_value if slot_value is not None else value
    if value is not None:
        item["value"] = value
    if rng.random() < 0.45:
        item["domain"] = rng.choice(DOMAINS)
    item["source"] = rng.choice(SOURCES.get(item_type, ["user", "model", "summary"]))
    if item_type == "preference":
        item["kind"] = "opinion"
    if item_type == "constraint" and rng.random() < 0.5:
        item["hard"] = True
    roll = rng.random()
    if (item_type in ("tool_result", "episode") and roll < 0.6) or roll < 0.12:
        item["scope"] = "session"
        item["session_id"] = f"s-{rng.randint(1, 40):03d}"
    elif item_type == "plan" or roll < 0.16:
        item["scope"] = "task"
        item["task_id"] = f"task-{rng.randint(1, 15)}"
    elif roll < 0.17:
        item["scope"] = "step"
        item["task_id"] = f"task-{rng.randint(1, 15)}"
        item["step_id"] = f"step-{rng.randint(1, 9)}"
    if rng.random() < 0.3:
        item["confidence"] = round(rng.uniform(0.3, 1.0), 2)
    if rng.random() < 0.25:
        observed = anchor - timedelta(minutes=rng.randint(1, 90 * 24 * 60))
        item["observed_at"] = observed.isoformat()
        if rng.random() < 0.1:
            item["expires_at"] = (observed + timedelta(days=rng.randint(30, 400))).isoformat()
    if rng.random() < 0.05:
        item["variants"] = {"condensed": item["content"][: max(20, len(item["content"]) // 3)]}
    return item


@dataclass
class Batch:
    user_id: str
    index: int
    items: list[dict[str, Any]]
    body: bytes = b""


def generate(n_items: int, n_users: int, batch_size: int, seed: int, anchor: datetime) -> list[Batch]:
    rng = random.Random(seed)
    base, extra = divmod(n_items, n_users)
    batches: list[Batch] = []
    for u in range(n_users):
        user_id = f"user-{u:04d}"
        items = [generate_item(rng, anchor) for _ in range(base + (1 if u < extra else 0))]
        for i in range(0, len(items), batch_size):
            batches.append(Batch(user_id, i // batch_size, items[i : i + batch_size]))
    for b in batches:
        b.body = json.dumps({"items": b.items}, ensure_ascii=False, separators=(",", ":")).encode()
    # Round robin over users (every user's first batch, then every user's second…): requests in flight
    # belong to different users, as when many agents write at once, and each user's batches stay in order.
    batches.sort(key=lambda b: (b.index, b.user_id))
    return batches


# --------------------------------------------------------------------------------------------------
# The rows the service stored, replayed for the raw baselines
# --------------------------------------------------------------------------------------------------


@dataclass
class RawBatch:
    items: list[tuple[Any, ...]]
    events: list[tuple[Any, ...]] = field(default_factory=list)


@dataclass
class RawPlan:
    """What the service stored, grouped as it was written: one group per request (a request's rows share
    ``user_id`` and ``created_at``), in the order the requests ran."""

    item_columns: tuple[str, ...]
    event_columns: tuple[str, ...]
    groups: list[tuple[list[asyncpg.Record], list[asyncpg.Record]]]
    users: list[str]
    orphan_events: int

    @property
    def events(self) -> int:
        return sum(len(e) for _, e in self.groups)

    def rekey(self, tenant_id: str) -> list[RawBatch]:
        """The same rows for another tenant: new ids, and every reference to an item id follows it."""
        ids: dict[uuid.UUID, uuid.UUID] = {r["id"]: uuid7() for items, _ in self.groups for r in items}
        texts = {str(old): str(new) for old, new in ids.items()}
        item_tenant = self.item_columns.index("tenant_id")
        event_tenant = self.event_columns.index("tenant_id") if self.event_columns else -1

        def follow(value: Any) -> Any:
            if isinstance(value, uuid.UUID):
                return ids.get(value, value)
            if isinstance(value, list) and value and isinstance(value[0], uuid.UUID):
                return [ids.get(v, v) for v in value]
            return value

        out: list[RawBatch] = []
        for items, events in self.groups:
            item_rows = []
            for rec in items:
                row = [follow(v) for v in rec.values()]
                row[item_tenant] = tenant_id
                item_rows.append(tuple(row))
            event_rows = []
            for rec in events:
                row = [texts.get(v, v) if isinstance(v, str) else v for v in rec.values()]
                row[0] = uuid7()
                row[event_tenant] = tenant_id
                event_rows.append(tuple(row))
            out.append(RawBatch(item_rows, event_rows))
        return out


async def load_plan(conn: asyncpg.Connection, tenant_id: str, requests: int) -> RawPlan:
    # Generated columns (the search tsvector) are the database's to compute: the replay leaves them out.
    stored = await conn.fetch(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'context_item'"
        " AND is_generated = 'NEVER' ORDER BY ordinal_position"
    )
    columns = ", ".join(r["column_name"] for r in stored)
    items = await conn.fetch(
        f"SELECT {columns} FROM context_item WHERE tenant_id = $1 ORDER BY created_at, id",
        tenant_id,
    )
    events = await conn.fetch("SELECT * FROM event WHERE tenant_id = $1 AND user_id IS NOT NULL ORDER BY id", tenant_id)
    if not items:
        raise BenchFailure(f"the service stored no items for tenant {tenant_id}")
    groups: dict[tuple[str, datetime], tuple[list[asyncpg.Record], list[asyncpg.Record]]] = {}
    for rec in items:
        groups.setdefault((rec["user_id"], rec["created_at"]), ([], []))[0].append(rec)
    if len(groups) != requests:
        raise BenchFailure(
            f"the stored rows fall into {len(groups)} (user_id, created_at) groups for {requests} requests:"
            " bench.ingest.load_plan assumes one created_at per request and needs updating"
        )
    orphans = 0
    for rec in events:
        group = groups.get((rec["user_id"], rec["created_at"]))
        if group is None:
            orphans += 1
        else:
            group[1].append(rec)
    event_columns = tuple(events[0].keys()) if events else ()
    if events and event_columns[0] != "id":
        raise BenchFailure("unexpected event table layout: the first column is not id")
    return RawPlan(
        item_columns=tuple(items[0].keys()),
        event_columns=event_columns,
        groups=list(groups.values()),
        users=sorted({r["user_id"] for r in items}),
        orphan_events=orphans,
    )


async def raw_insert(
    conn: asyncpg.Connection, plan: RawPlan, batches: Sequence[RawBatch], *, copy: bool, with_events: bool
) -> tuple[float, list[float]]:
    item_sql = _insert_sql("context_item", plan.item_columns)
    event_sql = _insert_sql("event", plan.event_columns)
    latencies: list[float] = []
    started = time.perf_counter()
    for b in batches:
        t0 = time.perf_counter()
        async with conn.transaction():
            if copy:
                await conn.copy_records_to_table("context_item", records=b.items, columns=plan.item_columns)
                if with_events and b.events:
                    await conn.copy_records_to_table("event", records=b.events, columns=plan.event_columns)
            else:
                await conn.executemany(item_sql, b.items)
                if with_events and b.events:
                    await conn.executemany(event_sql, b.events)
        latencies.append((time.perf_counter() - t0) * 1000)
    return time.perf_counter() - started, latencies


async def prepare_raw_tenant(conn: asyncpg.Connection, tenant_id: str, users: Sequence[str]) -> None:
    now = datetime.now(UTC)
    async with conn.transaction():
        await conn.execute("INSERT INTO tenant (id, created_at) VALUES ($1, $2)", tenant_id, now)
        await conn.executemany(
            "INSERT INTO end_user (tenant_id, user_id, created_at, updated_at) VALUES ($1, $2, $3, $3)",
            [(tenant_id, u, now) for u in users],
        )


async def warm_raw(conn: asyncpg.Connection, plan: RawPlan, tenant_id: str) -> None:
    """Prepare the statements and touch the tables once, rolled back, outside the timed loop."""
    batch = plan.rekey(tenant_id)[0]
    tr = conn.transaction()
    await tr.start()
    try:
        await prepare_raw_tenant(conn, tenant_id, plan.users)
        await conn.executemany(_insert_sql("context_item", plan.item_columns), batch.items[:50])
        if batch.events:
            await conn.executemany(_insert_sql("event", plan.event_columns), batch.events[:50])
    finally:
        await tr.rollback()


async def checkpoint(conn: asyncpg.Connection) -> None:
    """Flush dirty pages between paths so that no path pays for the previous one's checkpoint."""
    with contextlib.suppress(asyncpg.PostgresError):
        await conn.execute("CHECKPOINT")


# --------------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------------


@dataclass
class PathResult:
    name: str
    tenant_id: str
    items: int
    seconds: float
    requests: int
    latencies_ms: list[float] = field(default_factory=list)
    app_cpu_s: float | None = None
    pg_cpu_s: float | None = None
    client_cpu_s: float | None = None
    load_avg: tuple[float, float] | None = None  # the 1-minute load average at the start and at the end

    @property
    def items_per_s(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else math.inf

    def percentile(self, q: int) -> float | None:
        if not self.latencies_ms:
            return None
        if len(self.latencies_ms) == 1:
            return self.latencies_ms[0]
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[q - 1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.name,
            "tenant_id": self.tenant_id,
            "items": self.items,
            "seconds": round(self.seconds, 4),
            "items_per_s": round(self.items_per_s, 1),
            "requests": self.requests,
            "latency_ms_p50": _round(self.percentile(50)),
            "latency_ms_p95": _round(self.percentile(95)),
            "latency_ms_max": _round(max(self.latencies_ms) if self.latencies_ms else None),
            "app_cpu_s": _round(self.app_cpu_s),
            "app_cpu_s_per_1000_items": _round3(self.app_cpu_s * 1000 / self.items if self.app_cpu_s else None),
            "pg_cpu_s": _round(self.pg_cpu_s),
            "client_cpu_s": _round(self.client_cpu_s),
            "load_avg_1m_start_end": self.load_avg,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _round3(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def load_1m() -> float:
    return round(os.getloadavg()[0], 2)


class BenchFailure(RuntimeError):
    pass


class CpuMeter:
    """CPU seconds (user + system) used by some processes between ``start`` and ``stop``; processes that
    appear in between (new PostgreSQL backends) count from zero."""

    def __init__(self, find: Any) -> None:
        self.find = find
        self.before: dict[int, float] = {}
        self.seconds: float | None = None

    def _snapshot(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for p in self.find():
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
        return out

    def start(self) -> CpuMeter:
        self.before = self._snapshot()
        return self

    def stop(self) -> float | None:
        after = self._snapshot()
        self.seconds = sum(v - self.before.get(pid, 0.0) for pid, v in after.items()) if after else None
        return self.seconds


def postgres_processes(postmaster: psutil.Process | None) -> list[psutil.Process]:
    if postmaster is None:
        return []
    with contextlib.suppress(psutil.Error):
        return [postmaster, *postmaster.children(recursive=True)]
    return []


async def find_postmaster(conn: asyncpg.Connection) -> psutil.Process | None:
    """The local postmaster behind ``conn`` (the parent of our backend), if the server runs on this host."""
    pid = await conn.fetchval("SELECT pg_backend_pid()")
    with contextlib.suppress(psutil.Error):
        backend = psutil.Process(pid)
        parent = backend.parent()
        if parent is not None and all("postgres" in (p.name() + " ".join(p.cmdline())) for p in (backend, parent)):
            return parent
    return None


async def post_batches(
    client: httpx.AsyncClient,
    batches: Sequence[Batch],
    headers: dict[str, str],
    run_id: str,
    concurrency: int,
) -> tuple[float, list[float], bytes]:
    """POST every batch with ``concurrency`` requests in flight; returns wall seconds, per-request
    latencies (ms) and the first response body (for the replay check)."""
    jobs = iter(batches)
    latencies: list[float] = []
    failures: list[str] = []
    first_body: list[bytes] = []

    async def worker() -> None:
        for b in jobs:
            h = {**headers, "Idempotency-Key": f"bench-{run_id}-{b.user_id}-{b.index}"}
            t0 = time.perf_counter()
            response = await client.post(f"/v1/users/{b.user_id}/items/batch", content=b.body, headers=h)
            latencies.append((time.perf_counter() - t0) * 1000)
            if response.status_code != 201:
                detail = f"HTTP {response.status_code} {response.text[:400]}"
                failures.append(f"{b.user_id} batch {b.index}: {detail}")
            elif b is batches[0]:
                first_body.append(response.content)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    if failures:
        raise BenchFailure(f"{len(failures)} of {len(batches)} requests failed, first: {failures[0]}")
    return elapsed, latencies, first_body[0] if first_body else b""


async def replay_check(
    client: httpx.AsyncClient, batch: Batch, headers: dict[str, str], run_id: str, first_body: bytes
) -> bool:
    """Send the first batch again with its key: must answer 201 with the stored body byte for byte."""
    h = {**headers, "Idempotency-Key": f"bench-{run_id}-{batch.user_id}-{batch.index}"}
    response = await client.post(f"/v1/users/{batch.user_id}/items/batch", content=batch.body, headers=h)
    return response.status_code == 201 and response.content == first_body


async def warm_service(
    client: httpx.AsyncClient, headers: dict[str, str], batches: Sequence[Batch], run_id: str
) -> None:
    """A few small untimed requests into a separate tenant: imports, pools and caches get warm."""
    for i in range(3):
        body = json.dumps({"items": batches[i % len(batches)].items[:100]}, ensure_ascii=False).encode()
        h = {**headers, "Idempotency-Key": f"warmup-{run_id}-{i}"}
        response = await client.post(f"/v1/users/warmup-{i}/items/batch", content=body, headers=h)
        if response.status_code != 201:
            raise BenchFailure(f"warm-up request failed: HTTP {response.status_code} {response.text[:400]}")


# --------------------------------------------------------------------------------------------------
# The server subprocess and its memory
# --------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(url: str, port: int, data_dir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["CTXMEM_DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("CTXMEM_DATABASE_URL", None)
    cmd = [
        sys.executable,
        "-m",
        "service.cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--database-url",
        url,
    ]
    with log_path.open("wb") as log:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


async def wait_ready(client: httpx.AsyncClient, proc: subprocess.Popen[bytes], log_path: Path) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < 90:
        if proc.poll() is not None:
            raise BenchFailure(f"ctxmem serve exited with {proc.returncode}:\n{log_tail(log_path)}")
        with contextlib.suppress(httpx.TransportError):
            if (await client.get("/healthz")).status_code == 200:
                return time.perf_counter() - started
        await asyncio.sleep(0.1)
    raise BenchFailure(f"ctxmem serve did not become healthy within 90 s:\n{log_tail(log_path)}")


def peak_rss_bytes(pid: int) -> int | None:
    """VmHWM: the kernel's high-water mark of the process's resident set (Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def rss_parts(pid: int) -> dict[str, int]:
    """The resident set by kind (Linux ``/proc/<pid>/status``, bytes): ``RssAnon`` (the heap: Python objects,
    the tokenizer, the vector index's id tracker and payload indexes) and ``RssFile`` (mapped files: shared
    libraries and the vector index's memory-mapped segments, which the kernel may drop and read back)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("RssAnon:", "RssFile:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0]) * 1024
    except OSError:
        return {}
    return out


class RssSampler:
    """Samples a process's RSS every ``interval`` seconds while running (max and last), and its anonymous
    and file-backed parts (their maxima, which need not fall in the same sample)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.process = psutil.Process(pid)
        self.interval = interval
        self.max_rss = 0
        self.max_parts: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> int:
        rss = int(self.process.memory_info().rss)
        self.max_rss = max(self.max_rss, rss)
        for key, value in rss_parts(self.process.pid).items():
            self.max_parts[key] = max(self.max_parts.get(key, 0), value)
        return rss

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(psutil.Error):
                self.sample()
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def mb(value: int | None) -> float | None:
    return None if value is None else round(value / 2**20, 1)


# --------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------


@dataclass
class Environment:
    url: str = ""
    embedded: Any = None
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ctxmem-bench-")))


async def open_database(args: argparse.Namespace, env: Environment) -> None:
    if args.database_url:
        env.url = plain_url(args.database_url)
        return
    env.embedded = await asyncio.to_thread(start_embedded, env.tmp / "pg")
    await ensure_database(env.embedded.get_uri(), BENCH_DATABASE)
    env.url = env.embedded.get_uri(BENCH_DATABASE)


async def issue_key(db: Database, tenant_id: str) -> dict[str, str]:
    async with session_scope(db) as session:
        issued = await create_key(
            session, tenant_id=tenant_id, role="agent", name="bench", now=Clock().now(), actor="bench"
        )
    return {"Authorization": f"Bearer {issued.secret}", "Content-Type": "application/json"}


async def server_info(conn: asyncpg.Connection) -> dict[str, Any]:
    row = await conn.fetchrow(
        "SELECT current_setting('server_version') AS version,"
        " current_setting('shared_buffers') AS shared_buffers,"
        " current_setting('synchronous_commit') AS synchronous_commit,"
        " current_setting('fsync') AS fsync"
    )
    return dict(row) if row else {}


async def tenant_summary(conn: asyncpg.Connection, tenant_id: str) -> dict[str, Any]:
    agg = await conn.fetchrow(
        "SELECT count(*) AS items, coalesce(sum(token_cost), 0) AS tokens,"
        " coalesce(sum(length(content)), 0) AS chars, count(DISTINCT user_id) AS users,"
        " min(token_model) AS token_model"
        " FROM context_item WHERE tenant_id = $1",
        tenant_id,
    )
    statuses = await conn.fetch(
        "SELECT status, count(*) AS n FROM context_item WHERE tenant_id = $1 GROUP BY status ORDER BY status",
        tenant_id,
    )
    actions = await conn.fetch(
        "SELECT action, count(*) AS n FROM event WHERE tenant_id = $1 AND user_id IS NOT NULL"
        " GROUP BY action ORDER BY action",
        tenant_id,
    )
    idem = await conn.fetchval("SELECT count(*) FROM idempotency_record WHERE tenant_id = $1", tenant_id)
    assert agg is not None
    return {
        **dict(agg),
        "statuses": {r["status"]: r["n"] for r in statuses},
        "events": {r["action"]: r["n"] for r in actions},
        "idempotency_records": idem,
    }


async def verify(
    conn: asyncpg.Connection, results: Sequence[PathResult], expected: int, replay_ok: bool
) -> dict[str, Any]:
    """Every path stored all items (and the service one event per item and one record per request), and
    stored the same content: token and character sums match the service's."""
    report = {r.name: await tenant_summary(conn, r.tenant_id) for r in results}
    problems: list[str] = []
    reference = report["service/http"]
    for r in results:
        got = report[r.name]
        if got["items"] != expected:
            problems.append(f"{r.name}: {got['items']} items stored, expected {expected}")
        created = got["events"].get("item.created", 0)
        if (r.name.startswith("service") or "events" in r.name) and created != expected:
            problems.append(f"{r.name}: {created} item.created events, expected {expected}")
        if r.name.startswith("service") and got["idempotency_records"] != r.requests:
            n = got["idempotency_records"]
            problems.append(f"{r.name}: {n} idempotency records for {r.requests} requests")
        for k in ("tokens", "chars", "users", "statuses"):
            if got[k] != reference[k]:
                problems.append(f"{r.name}: {k} {got[k]} differs from service/http's {reference[k]}")
    if not replay_ok:
        problems.append("replaying the first batch did not return the stored 201 response byte for byte")
    return {"ok": not problems, "problems": problems, "idempotent_replay_ok": replay_ok, "per_path": report}


@dataclass
class Run:
    args: argparse.Namespace
    env: Environment
    run_id: str = field(default_factory=lambda: secrets.token_hex(3))
    proc: subprocess.Popen[bytes] | None = None
    db: Database | None = None
    conn: asyncpg.Connection | None = None
    postmaster: psutil.Process | None = None
    results: list[PathResult] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    replay_ok: bool = False

    def tenant(self, path: str) -> str:
        slug = {
            "service/http": "http",
            "service/asgi": "asgi",
            "raw executemany": "raw",
            "raw executemany + events": "rawev",
            "raw COPY": "copy",
            "warmup": "warmup",
        }[path]
        return f"bench-{slug}-{self.run_id}"

    def pg_meter(self) -> CpuMeter:
        return CpuMeter(lambda: postgres_processes(self.postmaster)).start()

    async def service_http(self, batches: Sequence[Batch], settings: Settings) -> None:
        assert self.db is not None and self.conn is not None
        headers = await issue_key(self.db, self.tenant("service/http"))
        warm_headers = await issue_key(self.db, self.tenant("warmup"))
        port = free_port()
        log_path = self.env.tmp / "server.log"
        self.proc = start_server(self.env.url, port, self.env.tmp / "server-data", log_path)
        n = self.args.concurrency
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=httpx.Timeout(300.0)
        ) as client:
            startup = await wait_ready(client, self.proc, log_path)
            sampler = RssSampler(self.proc.pid)
            rss_idle = sampler.sample()
            await warm_service(client, warm_headers, batches, self.run_id)
            rss_warm = sampler.sample()
            await checkpoint(self.conn)
            app = CpuMeter(lambda: [psutil.Process(self.proc.pid)] if self.proc else []).start()
            me, pg = CpuMeter(lambda: [psutil.Process()]).start(), self.pg_meter()
            sampler.start()
            load_start = load_1m()
            try:
                seconds, lat, first_body = await post_batches(client, batches, headers, self.run_id, n)
            except BenchFailure as exc:
                raise BenchFailure(f"{exc}\nserver log (tail):\n{log_tail(log_path)}") from exc
            await sampler.stop()
            app.stop(), me.stop(), pg.stop()
            load_end = load_1m()
            rss_after = sampler.sample()
            self.replay_ok = await replay_check(client, batches[0], headers, self.run_id, first_body)
            hwm = peak_rss_bytes(self.proc.pid)
        items = sum(len(b.items) for b in batches)
        self.results.append(
            PathResult(
                "service/http",
                self.tenant("service/http"),
                items,
                seconds,
                len(batches),
                lat,
                app_cpu_s=app.seconds,
                pg_cpu_s=pg.seconds,
                client_cpu_s=me.seconds,
                load_avg=(load_start, load_end),
            )
        )
        say(f"service/http: {seconds:.2f} s (server ready in {startup:.1f} s)")
        stop_server(self.proc)
        self.proc = None
        self.memory = {
            "server_rss_mb_idle": mb(rss_idle),
            "server_rss_mb_after_warmup": mb(rss_warm),
            "server_rss_mb_peak_sampled": mb(sampler.max_rss),
            "server_rss_mb_after_run": mb(rss_after),
            "server_vmhwm_mb": mb(hwm),
            "server_rss_anon_mb_peak_sampled": mb(sampler.max_parts.get("RssAnon")),
            "server_rss_file_mb_peak_sampled": mb(sampler.max_parts.get("RssFile")),
            "target_mb": RSS_TARGET_MB,
        }

    async def service_asgi(self, batches: Sequence[Batch], settings: Settings) -> None:
        from service.app import create_app

        assert self.db is not None and self.conn is not None
        app = create_app(settings, database=self.db)
        headers = await issue_key(self.db, self.tenant("service/asgi"))
        warm_headers = await issue_key(self.db, self.tenant("warmup") + "-asgi")
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench.local", timeout=httpx.Timeout(300.0)
        ) as client:
            await warm_service(client, warm_headers, batches, self.run_id + "-asgi")
            await checkpoint(self.conn)
            me, pg = CpuMeter(lambda: [psutil.Process()]).start(), self.pg_meter()
            seconds, lat, _ = await post_batches(client, batches, headers, self.run_id, self.args.concurrency)
            me.stop(), pg.stop()
        items = sum(len(b.items) for b in batches)
        self.results.append(
            PathResult(
                "service/asgi",
                self.tenant("service/asgi"),
                items,
                seconds,
                len(batches),
                lat,
                app_cpu_s=me.seconds,
                pg_cpu_s=pg.seconds,
            )
        )
        say(f"service/asgi: {seconds:.2f} s")

    async def raw(self, plan: RawPlan, name: str, *, copy: bool, with_events: bool) -> None:
        assert self.conn is not None
        tenant_id = self.tenant(name)
        batches = plan.rekey(tenant_id)
        await prepare_raw_tenant(self.conn, tenant_id, plan.users)
        await checkpoint(self.conn)
        me, pg = CpuMeter(lambda: [psutil.Process()]).start(), self.pg_meter()
        seconds, lat = await raw_insert(self.conn, plan, batches, copy=copy, with_events=with_events)
        me.stop(), pg.stop()
        items = sum(len(b.items) for b in batches)
        self.results.append(
            PathResult(name, tenant_id, items, seconds, len(batches), lat, app_cpu_s=me.seconds, pg_cpu_s=pg.seconds)
        )
        say(f"{name}: {seconds:.2f} s")

    async def main(self) -> int:
        args, env = self.args, self.env
        say("database: " + ("--database-url" if args.database_url else f"embedded PostgreSQL in {env.tmp}"))
        await open_database(args, env)
        settings = Settings(database_url=env.url, data_dir=env.tmp / "bench-data")
        self.db = create_database(env.url, settings)
        await migrate.upgrade(self.db.engine)
        self.conn = await asyncpg.connect(env.url)
        self.postmaster = await find_postmaster(self.conn)
        pg_info = await server_info(self.conn)

        t0 = time.perf_counter()
        batches = generate(args.items, args.users, args.batch, args.seed, datetime.now(UTC))
        sizes = [len(b.body) for b in batches]
        if max(sizes) > settings.server.max_body_bytes:
            raise BenchFailure(
                f"a batch body is {max(sizes)} bytes, over the {settings.server.max_body_bytes} byte limit:"
                " use a smaller --batch"
            )
        say(
            f"generated {args.items:,} items for {args.users} users in {len(batches)} batches"
            f" ({time.perf_counter() - t0:.1f} s; body mean {statistics.mean(sizes) / 1024:.0f} KiB,"
            f" max {max(sizes) / 1024:.0f} KiB)"
        )

        await self.service_http(batches, settings)
        plan = await load_plan(self.conn, self.tenant("service/http"), len(batches))
        await warm_raw(self.conn, plan, self.tenant("warmup") + "-raw")
        await self.raw(plan, "raw executemany", copy=False, with_events=False)
        if args.in_process:
            await self.service_asgi(batches, settings)
        await self.raw(plan, "raw executemany + events", copy=False, with_events=True)
        await self.raw(plan, "raw COPY", copy=True, with_events=False)

        check = await verify(self.conn, self.results, args.items, self.replay_ok)
        if plan.orphan_events:
            check["problems"].append(f"{plan.orphan_events} service events could not be matched to a request")
        report = build_report(args, pg_info, sizes, self.results, self.memory, check, plan)
        print_report(report)
        write_json(report, Path(args.output))
        if args.database_url and not args.keep_data:
            await drop_tenants(self.conn, self.run_id)
        return 0 if check["ok"] else 1

    async def close(self) -> None:
        if self.proc is not None:
            stop_server(self.proc)
        if self.conn is not None:
            await self.conn.close()
        if self.db is not None:
            await self.db.dispose()
        if self.env.embedded is not None:
            await asyncio.to_thread(self.env.embedded.cleanup)
        await asyncio.to_thread(shutil.rmtree, self.env.tmp, True)


async def run(args: argparse.Namespace) -> int:
    bench = Run(args, Environment())
    try:
        return await bench.main()
    except BenchFailure as exc:
        print(f"bench failed: {exc}", file=sys.stderr)
        return 1
    finally:
        await bench.close()


async def drop_tenants(conn: asyncpg.Connection, run_id: str) -> None:
    """With --database-url: remove this run's tenants (every bench tenant id ends with the run id)."""
    pattern = f"bench-%-{run_id}%"
    async with conn.transaction():
        for table in ("event", "idempotency_record", "context_item", "end_user", "api_key", "tenant"):
            column = "id" if table == "tenant" else "tenant_id"
            await conn.execute(f"DELETE FROM {table} WHERE {column} LIKE $1", pattern)


# --------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------


def build_report(
    args: argparse.Namespace,
    pg: dict[str, Any],
    sizes: Sequence[int],
    results: Sequence[PathResult],
    memory: dict[str, Any],
    check: dict[str, Any],
    plan: RawPlan,
) -> dict[str, Any]:
    baseline = next(r for r in results if r.name == "raw executemany")
    http = next(r for r in results if r.name == "service/http")
    rows = []
    for r in results:
        d = r.as_dict()
        d["time_vs_raw_executemany"] = round(r.seconds / baseline.seconds, 2)
        rows.append(d)
    service = check["per_path"]["service/http"]
    return {
        "benchmark": "ingest",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {
            "items": args.items,
            "users": args.users,
            "batch": args.batch,
            "concurrency": args.concurrency,
            "seed": args.seed,
            "database": "external (--database-url)" if args.database_url else "embedded",
            "tokenizer": service.get("token_model"),
            "batch_body_kib_mean": round(statistics.mean(sizes) / 1024, 1),
            "batch_body_kib_max": round(max(sizes) / 1024, 1),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "postgres": pg,
        },
        "workload": {
            "tokens": service.get("tokens"),
            "chars": service.get("chars"),
            "item_statuses": service.get("statuses"),
            "item_events": service.get("events"),
            "raw_event_rows": plan.events,
        },
        "results": rows,
        "target_items_per_s": TARGET_ITEMS_PER_S,
        "service_http_items_per_s": round(http.items_per_s, 1),
        "meets_target": http.items_per_s >= TARGET_ITEMS_PER_S,
        "memory": memory,
        "verification": check,
    }


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_report(report: dict[str, Any]) -> None:
    cfg, wl = report["config"], report["workload"]
    pg_version = report["machine"]["postgres"].get("version")
    print()
    print(
        f"ingest: {cfg['items']:,} items, {cfg['users']} users, batch {cfg['batch']}, concurrency"
        f" {cfg['concurrency']}, tokenizer {cfg['tokenizer']}, PostgreSQL {pg_version}"
        f" ({cfg['database']}), {report['machine']['cpus']} CPUs"
    )
    statuses = ", ".join(f"{k} {v:,}" for k, v in (wl["item_statuses"] or {}).items())
    events = ", ".join(f"{k} {v:,}" for k, v in (wl["item_events"] or {}).items())
    print(f"stored: {statuses}; events: {events}; {wl['tokens']:,} tokens")
    header = (
        f"{'path':<26} {'items':>8} {'seconds':>8} {'items/s':>9} {'x raw em':>8}"
        f" {'p50 ms':>8} {'p95 ms':>8} {'app cpu s':>9} {'pg cpu s':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in report["results"]:
        print(
            f"{r['path']:<26} {r['items']:>8,} {r['seconds']:>8.2f} {r['items_per_s']:>9,.0f}"
            f" {r['time_vs_raw_executemany']:>7.2f}x {fmt(r['latency_ms_p50'], '>8.1f')}"
            f" {fmt(r['latency_ms_p95'], '>8.1f')} {fmt(r['app_cpu_s'], '>9.1f')}"
            f" {fmt(r['pg_cpu_s'], '>8.1f')}"
        )
    print(
        "  x raw em = wall time / raw executemany wall time (same rows, same run); latency per request/batch;"
        "\n  app cpu = the ctxmem server process (service/http) or this process (other paths)"
    )
    m = report["memory"]
    http = next(r for r in report["results"] if r["path"] == "service/http")
    load = http["load_avg_1m_start_end"]
    print(
        f"server CPU: {fmt(http['app_cpu_s_per_1000_items'], '.3f')} s per 1,000 items"
        f" (1-minute load average {load[0] if load else '-'} at the start, {load[1] if load else '-'} at the end;"
        " other work on the machine slows the wall time first)"
    )
    print(
        f"server RSS: idle {fmt(m['server_rss_mb_idle'], '.0f')} MB, peak sampled under load"
        f" {fmt(m['server_rss_mb_peak_sampled'], '.0f')} MB (anonymous"
        f" {fmt(m['server_rss_anon_mb_peak_sampled'], '.0f')} MB, file-backed"
        f" {fmt(m['server_rss_file_mb_peak_sampled'], '.0f')} MB at their peaks), VmHWM"
        f" {fmt(m['server_vmhwm_mb'], '.0f')} MB (target ≤ {m['target_mb']} MB)"
    )
    v = report["verification"]
    replay = "ok" if v["idempotent_replay_ok"] else "FAILED"
    print(
        "verification: "
        + ("ok" if v["ok"] else "FAILED: " + "; ".join(v["problems"]))
        + f" (rows, item.created events, idempotency records, token/char sums; replay {replay})"
    )
    rate = report["service_http_items_per_s"]
    verdict = "MEETS" if report["meets_target"] else "MISSES"
    print(
        f"verdict: service/http ingests {rate:,.0f} items/s — {verdict} the"
        f" >= {report['target_items_per_s']:,} items/s target (docs/design.md §6)"
    )


def write_json(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str, ensure_ascii=False) + "\n")
    print(f"results written to {path}")


def say(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    description = (__doc__ or "").split("\n\n")[0]
    p = argparse.ArgumentParser(prog="python -m bench.ingest", description=description)
    p.add_argument("--items", type=int, default=100_000, help="items in total (default 100000)")
    p.add_argument("--users", type=int, default=100, help="users the items are spread over (default 100)")
    p.add_argument("--batch", type=int, default=1000, help="items per batch request (default 1000, the maximum)")
    p.add_argument("--concurrency", type=int, default=2, help="batch requests in flight (default 2)")
    p.add_argument(
        "--database-url",
        default=os.environ.get("CTXMEM_BENCH_DATABASE_URL", ""),
        help="postgresql:// URL of an existing database (CTXMEM_BENCH_DATABASE_URL); default: embedded",
    )
    p.add_argument("--in-process", action="store_true", help="also run the app in process (httpx.ASGITransport)")
    p.add_argument("--seed", type=int, default=20261201, help="seed of the generated items")
    p.add_argument("--keep-data", action="store_true", help="with --database-url: keep the bench rows")
    p.add_argument("--output", default=str(RESULTS), help="JSON results file (default bench/results/ingest.json)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.items < 1 or args.users < 1 or args.items < args.users:
        raise SystemExit("--items and --users must be positive, with at least one item per user")
    if not 1 <= args.batch <= 1000:
        raise SystemExit("--batch must be 1-1000 (the API's batch limit)")
    if args.concurrency < 1:
        raise SystemExit("--concurrency must be at least 1")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
