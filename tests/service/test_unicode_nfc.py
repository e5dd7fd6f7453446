"""Text is compared and keyed in one Unicode form, NFC (issue #12, F and part 2): "Café" typed as one code
point and as "e" plus a combining accent is one slot value and one profile entry."""

from __future__ import annotations

import unicodedata

import httpx

from tests.conftest import TenantKeys

NFC = unicodedata.normalize("NFC", "Café crème")
NFD = unicodedata.normalize("NFD", "Café crème")


def test_the_two_spellings_differ_as_sent() -> None:
    assert NFC != NFD and len(NFD) == len(NFC) + 2


async def test_slot_values_in_nfc_and_nfd_reinforce(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    async def write(**body: object) -> dict[str, object]:
        r = await client.post("/v1/users/nfc/items", json={"type": "fact", **body}, headers=tenant.agent)
        assert r.status_code == 201, r.text
        return dict(r.json())

    a = await write(key="drink", value={"name": NFC, NFC: 1}, content="likes café crème")
    b = await write(key="drink", value={"name": NFD, NFD: 1}, content="likes café crème again")
    assert b["resolution"]["outcome"] == "reinforced" and b["resolution"]["active_id"] == a["id"]
    # a keyed item without a value is compared by its content
    c = await write(key="order", content=f"order a {NFC}")
    d = await write(key="order", content=f"ORDER a {NFD}")
    assert d["resolution"]["outcome"] == "reinforced" and d["resolution"]["active_id"] == c["id"]
    # the text itself is kept as sent
    assert b["value"] == {"name": NFD, NFD: 1}


async def test_profile_values_in_nfc_and_nfd_are_one_entry(client: httpx.AsyncClient, tenant: TenantKeys) -> None:
    base = {"dimension": "preference", "key": "drink"}
    first = await client.post(
        "/v1/users/nfc/observations", json={**base, "value": NFC, "session_id": "s1"}, headers=tenant.agent
    )
    second = await client.post(
        "/v1/users/nfc/observations", json={**base, "value": NFD, "session_id": "s2"}, headers=tenant.agent
    )
    assert first.status_code == second.status_code == 201, second.text
    assert second.json()["id"] == first.json()["id"]
    assert second.json()["evidence_count"] == 2 and second.json()["value"] == NFC
    profile = (await client.get("/v1/users/nfc/profile", headers=tenant.agent)).json()
    values = [e["value"] for tier in profile["tiers"].values() for entries in tier.values() for e in entries]
    assert values == [NFC]
