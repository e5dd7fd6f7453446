"""Migrations: up from an empty database, in step with the models, reversible, concurrent-safe."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import asyncpg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.engine import make_url

from schemas.items import ItemCreate
from service.db import migrate
from service.db.embedded import ensure_database
from service.db.engine import Database, create_database
from service.db.models import metadata
from service.settings import Settings


@pytest.fixture
async def empty_db(server_url: str, settings: Settings) -> AsyncIterator[Database]:
    name = f"ctxmem_mig_{secrets.token_hex(4)}"
    await ensure_database(server_url, name)
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    db = create_database(url, settings)
    yield db
    await db.dispose()
    conn = await asyncpg.connect(server_url)
    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await conn.close()


def _diff(sync_conn):  # type: ignore[no-untyped-def]
    ctx = MigrationContext.configure(sync_conn, opts={"compare_type": True})
    return compare_metadata(ctx, metadata)


async def test_up_from_empty_matches_models_and_round_trips(empty_db: Database) -> None:
    assert await migrate.current_revision(empty_db.engine) is None
    await migrate.upgrade(empty_db.engine)
    assert await migrate.current_revision(empty_db.engine) == migrate.head_revision()
    async with empty_db.engine.connect() as conn:
        assert await conn.run_sync(_diff) == []
        tables = set((await conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname='public'"))).scalars())
    assert {"tenant", "api_key", "end_user", "context_item", "event", "idempotency_record"} <= tables
    await migrate.downgrade(empty_db.engine, "base")
    assert await migrate.current_revision(empty_db.engine) is None
    await migrate.upgrade(empty_db.engine)
    assert await migrate.current_revision(empty_db.engine) == migrate.head_revision()


async def test_concurrent_migrators_take_turns(empty_db: Database) -> None:
    """Two processes starting at once (serve + a CLI command) must not both create the tables."""
    await asyncio.gather(migrate.upgrade(empty_db.engine), migrate.upgrade(empty_db.engine))
    assert await migrate.current_revision(empty_db.engine) == migrate.head_revision()


async def test_events_are_append_only(db: Database) -> None:
    async with db.engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO event (id, tenant_id, actor, actor_role, action, entity_type, created_at) "
                "VALUES (gen_random_uuid(), 'append-only', 'test', 'admin', 'x', 'y', now())"
            )
        )
    with pytest.raises(Exception, match="append-only"):
        async with db.engine.begin() as conn:
            await conn.execute(text("UPDATE event SET action = 'rewritten' WHERE tenant_id = 'append-only'"))


async def test_without_btree_gin_a_role_that_cannot_create_it_is_told_how_to_fix_it(
    server_url: str, settings: Settings
) -> None:
    """Migration 0015 needs the btree_gin extension. A role without CREATE on its database cannot create it:
    the migration stops with what to run, leaves the schema where it was, and goes on once it exists."""
    name, role, password = f"ctxmem_mig_{secrets.token_hex(4)}", f"ctxmem_role_{secrets.token_hex(4)}", "pw-mig"
    admin = await asyncpg.connect(server_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
    await admin.execute(f'GRANT CONNECT, TEMPORARY ON DATABASE "{name}" TO "{role}"')
    on_db = await asyncpg.connect(make_url(server_url).set(database=name).render_as_string(hide_password=False))
    await on_db.execute(f'GRANT ALL ON SCHEMA public TO "{role}"')
    url = make_url(server_url).set(database=name, username=role, password=password)
    db = create_database(url.render_as_string(hide_password=False), settings)
    try:
        with pytest.raises(RuntimeError, match="CREATE EXTENSION btree_gin"):
            await migrate.upgrade(db.engine)
        assert await migrate.current_revision(db.engine) != migrate.head_revision()
        await on_db.execute("CREATE EXTENSION btree_gin")
        await migrate.upgrade(db.engine)
        assert await migrate.current_revision(db.engine) == migrate.head_revision()
    finally:
        await db.dispose()
        await on_db.close()
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        await admin.close()


async def test_item_search_rows_written_before_0016_get_their_expiry_and_a_change_number(
    empty_db: Database, settings: Settings
) -> None:
    """Migration 0016 copies each indexed item's expires_at into item_search and numbers every existing row
    (the per-process copy of a user's texts is checked against their count and sum of seq)."""
    from service.auth.principal import Principal
    from service.auth.service import create_key
    from service.clock import Clock
    from service.context import RequestContext
    from service.db.engine import session_scope
    from service.items.service import create_items
    from service.tokenizer import build_tokenizer
    from service.vectors.repository import sync_search

    await migrate.upgrade(empty_db.engine)
    tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
    now = Clock().now()
    async with session_scope(empty_db) as s:
        key = await create_key(s, tenant_id="t-mig", role="agent", name=None, now=now, actor="test")
    principal = Principal(tenant_id="t-mig", key_id=key.id, role="agent")
    soon = "2999-01-01T00:00:00+00:00"
    async with session_scope(empty_db) as s:
        ctx = RequestContext(s, principal, settings, tokenizer, now)
        items = [{"type": "fact", "content": "walrus tank", "expires_at": soon}, {"type": "fact", "content": "narwhal"}]
        written = await create_items(ctx, user_id="u", items=[ItemCreate.model_validate(i) for i in items], batch=True)
        await sync_search(s, ["t-mig"], [w.id for w in written])
    await migrate.downgrade(empty_db.engine, "20261202_0015")
    async with empty_db.engine.connect() as conn:
        cols = set((await conn.execute(text("SELECT column_name FROM information_schema.columns "
                                            "WHERE table_name = 'item_search'"))).scalars())  # fmt: skip
    assert "seq" not in cols and "expires_at" not in cols
    await migrate.upgrade(empty_db.engine)
    async with empty_db.engine.connect() as conn:
        rows = (await conn.execute(text("SELECT item_id, expires_at, seq FROM item_search ORDER BY seq"))).all()
    by_id = {r.item_id: r for r in rows}
    assert by_id[written[0].id].expires_at is not None and by_id[written[0].id].expires_at.year == 2999
    assert by_id[written[1].id].expires_at is None
    assert len({r.seq for r in rows}) == 2 and all(r.seq > 0 for r in rows)


_CJK_SAMPLES = [
    "Redis 集群可以用吗",
    "数据仓库用的是 ClickHouse。",
    "猫",
    "東京の天気はどうですか",
    "서울 날씨",
    "",
    "A集B群C",
]


async def test_cjk_terms_in_postgresql_are_the_pure_rule_and_0018_reindexes_both_ways(
    empty_db: Database, settings: Settings
) -> None:
    """ctxmem_tsv's CJK lexemes are scoring.lexical.cjk_terms (characters and adjacent pairs) and its English
    ones leave CJK runs out; migration 0018 re-indexes the texts holding CJK on the way up and down, each
    with a new change number, and leaves the others alone."""
    import importlib.util
    from pathlib import Path

    from scoring.lexical import CJK_RANGES, cjk_terms

    path = next((Path(migrate.__file__).parent / "migrations" / "versions").glob("*_0018_*.py"))
    spec = importlib.util.spec_from_file_location("m0018", path)
    assert spec is not None and spec.loader is not None
    m0018 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m0018)
    assert m0018.CJK.encode().decode("unicode_escape") == CJK_RANGES

    await migrate.upgrade(empty_db.engine)
    async with empty_db.engine.connect() as conn:
        for sample in _CJK_SAMPLES:
            row = (
                await conn.execute(
                    text("SELECT ctxmem_cjk(:t) AS cjk, tsvector_to_array(ctxmem_tsv(:t)) AS lexemes"), {"t": sample}
                )
            ).one()
            assert list(row.cjk) == cjk_terms(sample)
            assert set(row.lexemes) >= set(cjk_terms(sample))
        lexemes = (await conn.execute(text("SELECT tsvector_to_array(ctxmem_tsv('Redis 集群可以用吗'))"))).scalar()
    assert sorted(lexemes) == sorted({"redi", *cjk_terms("集群可以用吗")})

    from service.auth.principal import Principal
    from service.auth.service import create_key
    from service.clock import Clock
    from service.context import RequestContext
    from service.db.engine import session_scope
    from service.items.service import create_items
    from service.tokenizer import build_tokenizer
    from service.vectors.repository import sync_search

    tokenizer = build_tokenizer(settings.tokens.tokenizer, cache_dir=settings.resolved_tokenizer_cache_dir)
    now = Clock().now()
    async with session_scope(empty_db) as s:
        key = await create_key(s, tenant_id="t-cjk", role="agent", name=None, now=now, actor="test")
    principal = Principal(tenant_id="t-cjk", key_id=key.id, role="agent")
    async with session_scope(empty_db) as s:
        ctx = RequestContext(s, principal, settings, tokenizer, now)
        items = [ItemCreate(type="fact", content="集群可以用"), ItemCreate(type="fact", content="plain words")]
        zh, en = await create_items(ctx, user_id="u", items=items, batch=True)
        await sync_search(s, ["t-cjk"], [zh.id, en.id])

    async def indexed() -> dict[object, tuple[set[str], int]]:
        async with empty_db.engine.connect() as conn:
            rows = (await conn.execute(text("SELECT item_id, tsvector_to_array(tsv) AS l, seq FROM item_search"))).all()
        return {r.item_id: (set(r.l), r.seq) for r in rows}

    up = await indexed()
    assert up[zh.id][0] == set(cjk_terms("集群可以用"))
    await migrate.downgrade(empty_db.engine, "20261203_0017")
    down = await indexed()
    assert down[zh.id][0] == {"集群可以用", *"集群可以用"} and down[zh.id][1] > up[zh.id][1]
    assert down[en.id] == up[en.id]
    await migrate.upgrade(empty_db.engine)
    again = await indexed()
    assert again[zh.id][0] == up[zh.id][0] and again[zh.id][1] > down[zh.id][1] and again[en.id] == up[en.id]


async def test_0019_adds_the_handle_index_over_items_written_before_it_and_drops_it_on_the_way_down(
    empty_db: Database,
) -> None:
    """Migration 0019 indexes the end of every item's id (ix_context_item_handle, HANDLE_INDEX of the
    models), items written before it included; its downgrade drops the index."""
    await migrate.upgrade(empty_db.engine, "20261203_0018")

    async def handle_index() -> str | None:
        async with empty_db.engine.connect() as conn:
            found = await conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_context_item_handle'")
            )
            return found.scalar()

    async with empty_db.engine.begin() as conn:
        await conn.execute(text("INSERT INTO tenant (id, created_at) VALUES ('t-h', now())"))
        await conn.execute(
            text("INSERT INTO end_user (tenant_id, user_id, created_at, updated_at) VALUES ('t-h', 'u', now(), now())")
        )
        await conn.execute(
            text(
                "INSERT INTO context_item (id, tenant_id, user_id, type, content, source, authority, scope, hard,"
                " kind, status, confidence, observed_at, created_at, updated_at, token_cost, token_model)"
                " VALUES ('0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00', 't-h', 'u', 'fact', 'x', 'user', 'user', 'user',"
                " false, 'fact', 'available', 1, now(), now(), now(), 1, 'o200k_base')"
            )
        )
    assert await handle_index() is None
    await migrate.upgrade(empty_db.engine)
    definition = await handle_index()
    assert definition is not None and '(tenant_id, user_id, "right"((id)::text, 8))' in definition, definition
    async with empty_db.engine.connect() as conn:
        ids = (
            await conn.execute(
                text("SELECT id::text FROM context_item WHERE tenant_id = 't-h' AND user_id = 'u'"
                     " AND right(id::text, 8) = '8a4c1b00'")
            )
        ).scalars().all()  # fmt: skip
    assert ids == ["0190a5c2-7d3e-7c4a-9b1e-2f6d8a4c1b00"]
    await migrate.downgrade(empty_db.engine, "20261203_0018")
    assert await handle_index() is None
    assert await migrate.current_revision(empty_db.engine) == "20261203_0018"
