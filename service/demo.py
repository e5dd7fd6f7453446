"""``ctxmem demo``: a scripted technology-selection session against the embedded service, next to what a
sliding window of the same size would have sent.

Turn 1 the user says the ops team is small; turn 2 "don't recommend Redis Cluster". Then the agent runs
tool after tool (benchmarks, docs, pricing) while the window budget stays tight. Each turn prints one line
(mode, tokens, the level of every item by section); at the end the last turn's window text in full, then
the same turn as the newest messages that fit the same budget, with what that sliding window lost. The demo
fails (exit 1) if either constraint is ever missing from the window verbatim. Its tenant is removed at the
end unless ``keep`` is set.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx

from scoring.history import message_tokens
from service.app import create_app
from service.auth import repository as auth_repository
from service.auth.service import create_key
from service.clock import Clock
from service.db.engine import Database, session_scope
from service.settings import Settings
from service.tokenizer import build_tokenizer

LEGEND = "levels: L0 whole · L1 condensed · L2 summary · L3 key fields · L4 index line (a name to fetch it by)"
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


def sliding_window(messages: list[dict[str, Any]], budget: int, count: Any) -> tuple[list[dict[str, Any]], int]:
    """The newest messages that fit ``budget``, as a plain sliding window sends them (a tool result whose
    assistant call fell out is dropped too: a chat API would refuse it), and their tokens."""
    used = 0
    kept: list[dict[str, Any]] = []
    for m in reversed(messages):
        cost = message_tokens(m, count)
        if used + cost > budget:
            break
        kept.insert(0, m)
        used += cost
    while kept and kept[0]["role"] == "tool":
        used -= message_tokens(kept.pop(0), count)
    return kept, used


def _show(m: dict[str, Any]) -> str:
    if m.get("tool_calls"):
        call = m["tool_calls"][0]["function"]
        return f"{m['role']}: -> {call['name']}({call['arguments']})"
    text = str(m.get("content") or "")
    return f"{m['role']}: {text if len(text) <= 150 else text[:150] + ' …'}"


def _boxed(text: str) -> str:
    return "\n".join(f"  | {line}" for line in text.splitlines())


async def run_demo(settings: Settings, db: Database, *, turns: int = 16, budget: int = 1000, keep: bool = False) -> int:
    tenant = f"demo-{secrets.token_hex(3)}"
    async with session_scope(db) as session:
        key = await create_key(session, tenant_id=tenant, role="agent", name="demo", now=Clock().now(), actor="demo")
        admin = await create_key(session, tenant_id=tenant, role="admin", name="demo", now=Clock().now(), actor="demo")
    try:
        return await _session(settings, db, tenant, key.secret, turns=turns, budget=budget)
    finally:
        if keep:
            print(f"kept: tenant {tenant} (agent key {key.secret})")
        else:
            await _remove(settings, db, tenant, admin.secret)
            print(f"cleaned up: tenant {tenant} erased and removed (--keep keeps it)")


async def _remove(settings: Settings, db: Database, tenant: str, admin_secret: str) -> None:
    app = create_app(settings, database=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.demo") as client:
        r = await client.delete("/v1/users/demo-user", headers={"Authorization": f"Bearer {admin_secret}"})
        if r.status_code not in (200, 404):
            raise RuntimeError(f"erasing the demo user failed: HTTP {r.status_code} {r.text}")
    async with session_scope(db) as session:
        await auth_repository.delete_tenant(session, tenant)


async def _session(settings: Settings, db: Database, tenant: str, secret: str, *, turns: int, budget: int) -> int:
    app = create_app(settings, database=db)
    count = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir).count
    headers = {"Authorization": f"Bearer {secret}"}
    user = "demo-user"
    messages: list[dict[str, Any]] = []
    ok = True
    said: dict[str, int] = {}
    w: dict[str, Any] = {}
    user_text = ""
    print(f"ctxmem demo — tenant {tenant}, user {user}, budget {budget} tokens per window")
    print(LEGEND)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ctxmem.demo") as client:
        for turn in range(1, turns + 1):
            if turn == 1:
                user_text = "We need a cache for session data. " + SMALL_TEAM
                said[SMALL_TEAM] = turn
                await client.post(
                    f"/v1/users/{user}/items",
                    json={"type": "constraint", "hard": True, "content": SMALL_TEAM, "source": "user", "key": "ops"},
                    headers=headers,
                )
            elif turn == 2:
                user_text = NO_CLUSTER + " It burned us last year."
                said[NO_CLUSTER] = turn
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
    print(f"\n=== turn {turns}: the window ctxmem assembled ({w['tokens']['used']} of {budget} tokens) ===")
    print(_boxed(w["text"]))
    print(f"  + the newest {len(w['messages'])} of {len(messages)} chat messages, fitted to the rest of the budget")
    # The window's history ends with this turn's tool exchange; the sliding window gets the same messages.
    tools_tokens = count(json.dumps(TOOLS, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    slid, used = sliding_window(messages, budget - tools_tokens, count)
    shown = "\n".join(_show(m) for m in slid)
    print(
        f"\n=== turn {turns}: a sliding window of the same {budget} tokens "
        f"(the newest {len(slid)} messages that fit: {used} tokens, and {tools_tokens} for the tools) ==="
    )
    print(_boxed(shown))
    sent = "\n".join(str(m.get("content") or "") for m in slid)
    lost = [f'"{text}" (said in turn {t})' for text, t in said.items() if text not in sent]
    print("the sliding window lost: " + (", ".join(lost) if lost else "nothing"))
    print("both constraints verbatim in every window since turn 2: " + ("yes" if ok else "NO"))
    return 0 if ok else 1
