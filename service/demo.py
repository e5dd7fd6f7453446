"""``ctxmem demo``: a scripted technology-selection session against the embedded service.

Turn 1 the user says the ops team is small; turn 2 "don't recommend Redis Cluster". Then the agent
runs tool after tool (benchmarks, docs, pricing) while the window budget stays tight. Each turn prints
the window's mode, tokens and sections; the demo fails (exit 1) if either constraint is ever missing
from the window verbatim.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx

from service.app import create_app
from service.auth.service import create_key
from service.clock import Clock
from service.db.engine import Database, session_scope
from service.settings import Settings

SMALL_TEAM = "Our ops team is small (two people): prefer options that are simple to run."
NO_CLUSTER = "Don't recommend Redis Cluster."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_docs",
            "description": "Search product documentation",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }
]
TOPICS = [
    ("memcached_benchmark", "Memcached 1.6 benchmark", {"ops_per_s": 410000, "p99_ms": 1.9, "nodes": 3}),
    ("redis_benchmark", "Redis 7 single node benchmark", {"ops_per_s": 380000, "p99_ms": 2.3, "nodes": 1}),
    ("valkey_notes", "Valkey release notes", {"version": "8.0", "threads": "io-threads", "license": "BSD"}),
    ("pricing", "Managed cache pricing", {"redis_managed_usd_month": 420, "memcached_managed_usd_month": 310}),
    ("ops_runbook", "Cache ops runbook", {"failover": "manual", "backup": "none", "oncall": 2}),
    ("client_libs", "Client library survey", {"python": "redis-py, pymemcache", "go": "go-redis, gomemcache"}),
    ("latency_trace", "Production latency trace", {"p50_ms": 0.8, "p99_ms": 4.2, "hot_keys": 12}),
    ("eviction", "Eviction policy comparison", {"lru": "both", "lfu": "redis only", "ttl": "both"}),
]


def _tool_text(title: str, fields: dict[str, Any], turn: int) -> str:
    detail = " ".join(f"Observation {k} is {v} under the test load of turn {turn}." for k, v in fields.items())
    return json.dumps({"title": title, **fields, "notes": detail * 4}, ensure_ascii=False)


async def run_demo(settings: Settings, db: Database, *, turns: int = 16, budget: int = 1000) -> int:
    tenant = f"demo-{secrets.token_hex(3)}"
    async with session_scope(db) as session:
        key = await create_key(session, tenant_id=tenant, role="agent", name="demo", now=Clock().now(), actor="demo")
    app = create_app(settings, database=db)
    headers = {"Authorization": f"Bearer {key.secret}"}
    user = "demo-user"
    messages: list[dict[str, Any]] = []
    ok = True
    print(f"ctxmem demo — tenant {tenant}, user {user}, budget {budget} tokens per window")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.demo") as client:
        for turn in range(1, turns + 1):
            if turn == 1:
                user_text = "We need a cache for session data. " + SMALL_TEAM
                await client.post(
                    f"/v1/users/{user}/items",
                    json={"type": "constraint", "hard": True, "content": SMALL_TEAM, "source": "user", "key": "ops"},
                    headers=headers,
                )
            elif turn == 2:
                user_text = NO_CLUSTER + " It burned us last year."
                await client.post(
                    f"/v1/users/{user}/items",
                    json={"type": "constraint", "hard": True, "content": NO_CLUSTER, "source": "user"},
                    headers=headers,
                )
            else:
                user_text = f"Turn {turn}: what did you find? Keep comparing."
            name, title, fields = TOPICS[(turn - 1) % len(TOPICS)]
            call_id = f"call_{turn}"
            result = _tool_text(title, fields, turn)
            await client.post(
                f"/v1/users/{user}/items",
                json={"type": "tool_result", "content": result, "source": "tool", "key": f"tool.{name}.{turn}"},
                headers=headers,
            )
            messages += [
                {"role": "user", "content": user_text},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "search_docs", "arguments": json.dumps({"q": title})},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": result[:600]},
            ]
            r = await client.post(
                f"/v1/users/{user}/window",
                json={
                    "input": user_text,
                    "max_tokens": budget,
                    "goal": "Recommend a cache for session data",
                    "session_id": "demo-session",
                    "messages": messages,
                    "tools": TOOLS,
                },
                headers=headers,
            )
            if r.status_code != 200:
                print(f"turn {turn:2d}: HTTP {r.status_code} {r.text}")
                return 1
            w = r.json()
            team, cluster = SMALL_TEAM in w["text"], NO_CLUSTER in w["text"]
            ok = ok and team and (cluster or turn == 1)
            marks = f"small-team {'yes' if team else 'NO'}, no-redis-cluster " + (
                "yes" if cluster else ("not said yet" if turn == 1 else "NO")
            )
            sections = " ".join(
                s["id"] + "[" + ",".join(f"L{item['level']}" for item in s["items"]) + "]" for s in w["sections"]
            )
            print(
                f"turn {turn:2d}: {w['mode']:<8} {w['tokens']['used']:5d}/{budget} tokens "
                f"(text {w['tokens']['text']}, history {w['tokens']['messages']} in {len(w['messages'])} msgs, "
                f"tools {w['tokens']['tools']}); verbatim: {marks}"
            )
            print(f"         sections: {sections}")
    print("both constraints verbatim in every window since turn 2: " + ("yes" if ok else "NO"))
    return 0 if ok else 1
