"""service/auth/service.py: issuing keys, checking them, and what each role may do."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

from service.auth.principal import ROLE_PERMISSIONS, Permission, Principal
from service.auth.service import KEY_PREFIX, authenticate, create_key, hash_secret
from service.db.engine import Database, session_scope
from service.errors import Forbidden, Unauthorized, ValidationFailed
from service.ids import uuid7

NOW = datetime(2026, 9, 1, tzinfo=UTC)


def test_admin_may_do_everything_agent_and_operator_split_the_rest() -> None:
    assert ROLE_PERMISSIONS["admin"] == frozenset(Permission)
    agent, operator = ROLE_PERMISSIONS["agent"], ROLE_PERMISSIONS["operator"]
    assert Permission.ITEMS_WRITE in agent and Permission.ITEMS_WRITE not in operator
    assert Permission.EVIDENCE_READ in operator and Permission.EVIDENCE_READ not in agent
    for only_admin in (Permission.USERS_ERASE, Permission.KEYS_MANAGE, Permission.JOBS_RUN):
        assert only_admin not in agent | operator


@given(st.sampled_from(sorted(ROLE_PERMISSIONS)), st.sampled_from(list(Permission)))
def test_require_agrees_with_can_and_names_a_role_that_may(role: str, permission: Permission) -> None:
    p = Principal(tenant_id="t", key_id=uuid7(), role=role)
    if p.can(permission):
        p.require(permission)
        return
    with pytest.raises(Forbidden) as err:
        p.require(permission)
    msg = err.value.detail
    assert f"role {role!r} may not {permission.value}" in msg
    allowed = [r for r, granted in ROLE_PERMISSIONS.items() if permission in granted]
    assert all(repr(r) in msg for r in allowed)
    assert f"ctxmem keys create --role {allowed[0]}" in msg
    assert err.value.status == 403


def test_the_actor_names_the_key() -> None:
    key_id = uuid7()
    assert Principal(tenant_id="t", key_id=key_id, role="agent").actor == f"key:{key_id}"


def test_hash_secret_is_sha256_hex() -> None:
    assert hash_secret("cmk_x") == hashlib.sha256(b"cmk_x").hexdigest()


@pytest.mark.parametrize(
    ("tenant", "role", "message"),
    [
        ("", "agent", "tenant must be 1-128 characters"),
        ("a b", "agent", "tenant must be"),
        ("t" * 129, "agent", "tenant must be"),
        ("ok", "root", "role must be one of agent, operator, admin"),
    ],
)
async def test_create_key_refuses_bad_tenants_and_roles(db: Database, tenant: str, role: str, message: str) -> None:
    async with db.sessionmaker() as session:
        with pytest.raises(ValidationFailed, match=message) as err:
            await create_key(session, tenant_id=tenant, role=role, name=None, now=NOW, actor="test")
        assert err.value.status == 422
        assert not session.in_transaction()  # refused before anything was sent


async def events_of(db: Database, tenant: str) -> list[str]:
    async with db.engine.connect() as conn:
        sql = "SELECT action FROM event WHERE tenant_id = :t ORDER BY created_at, action DESC"
        return list((await conn.execute(text(sql), {"t": tenant})).scalars())


async def test_a_key_is_issued_once_and_checks_back_as_its_principal(db: Database) -> None:
    tenant = f"t-{secrets.token_hex(6)}"
    async with session_scope(db) as session:
        first = await create_key(session, tenant_id=tenant, role="operator", name="ops", now=NOW, actor="test")
        second = await create_key(session, tenant_id=tenant, role="agent", name=None, now=NOW, actor="test")
    assert first.secret.startswith(KEY_PREFIX) and len(first.secret) > len(KEY_PREFIX) + 40
    assert first.secret != second.secret and first.id < second.id
    assert (first.tenant_id, first.role, first.created_at) == (tenant, "operator", NOW)
    assert await events_of(db, tenant) == ["tenant.created", "key.created", "key.created"]
    async with db.engine.connect() as conn:
        stored = (
            await conn.execute(text("SELECT secret_hash, prefix FROM api_key WHERE id = :i"), {"i": first.id})
        ).one()
    assert stored == (hash_secret(first.secret), first.secret[: len(KEY_PREFIX) + 6])  # the secret is not kept
    async with db.sessionmaker() as session:
        principal = await authenticate(session, f"Bearer {first.secret}")
        assert principal == Principal(tenant_id=tenant, key_id=first.id, role="operator")
        assert (await authenticate(session, f"bearer   {second.secret}  ")).role == "agent"  # scheme any case


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "send Authorization: Bearer <api key>"),
        ("", "send Authorization: Bearer <api key>"),
        ("Basic dXNlcjpwdw==", "must be 'Bearer <api key>'"),
        ("Bearer ", "must be 'Bearer <api key>'"),
        ("Bearer not-a-ctxmem-key", "unknown or revoked API key"),
        ("Bearer cmk_" + "x" * 300, "unknown or revoked API key"),
        ("Bearer cmk_never-issued", "unknown or revoked API key"),
    ],
)
async def test_authenticate_refuses_with_a_401_that_says_what_to_send(
    db: Database, header: str | None, message: str
) -> None:
    async with db.sessionmaker() as session:
        with pytest.raises(Unauthorized, match=message) as err:
            await authenticate(session, header)
    assert err.value.status == 401
