"""The effective profile: tiers, domain over global, this session's statements over history, hints."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scoring.profile import ProfileEntry, effective_profile

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def pe(
    id: str,
    value: str,
    *,
    domain: str | None = None,
    dimension: str = "preference",
    key: str = "brand",
    polarity: str = "like",
    tier: str = "long_term",
    status: str = "active",
    score: float = 70,
    explicit: bool = False,
    confirmed: bool = False,
    session: str | None = None,
    day: int = 0,
) -> ProfileEntry:
    return ProfileEntry(
        id=id,
        domain=domain,
        dimension=dimension,
        key=key,
        value=value,
        polarity=polarity,
        tier=tier,
        status=status,
        score=score,
        explicit=explicit,
        confirmed=confirmed,
        current_session_id=session,
        last_evidence_at=T0 + timedelta(days=day),
    )


def ids(entries) -> list[str]:  # type: ignore[no-untyped-def]
    return [getattr(e, "entry", e).id for e in entries]


def test_domain_entry_overrides_global_only_in_its_domain() -> None:
    entries = [pe("g", "apple", score=90, explicit=True), pe("d", "xiaomi", domain="phone", score=40)]
    phone = effective_profile(entries, session_id=None, domains=["phone"])
    assert ids(phone.entries) == ["d"]
    assert phone.entries[0].overrides == ("g",)
    assert dict(phone.overridden) == {"g": "d"}
    laptop = effective_profile(entries, session_id=None, domains=["laptop"])
    assert ids(laptop.entries) == ["g"] and laptop.overridden == ()
    both = effective_profile(entries, session_id=None, domains=["laptop", "phone"])
    assert ids(both.entries) == ["g", "d"]  # g still holds for laptop
    assert both.overridden == ()
    everywhere = effective_profile(entries, session_id=None, domains=None)
    assert ids(everywhere.entries) == ["g", "d"]


def test_current_explicit_statement_overrides_long_term_inside_its_session_only() -> None:
    entries = [
        pe("hist", "xiaomi", score=85, confirmed=True),
        pe("now", "apple", tier="current", explicit=True, session="s9", score=30),
    ]
    inside = effective_profile(entries, session_id="s9", domains=None)
    assert ids(inside.entries) == ["now"]
    assert inside.entries[0].why == "current-statement" and inside.entries[0].overrides == ("hist",)
    assert dict(inside.overridden) == {"hist": "now"}
    elsewhere = effective_profile(entries, session_id="s1", domains=None)
    assert ids(elsewhere.entries) == ["hist"] and ids(elsewhere.hints) == []
    no_session = effective_profile(entries, session_id=None, domains=None)
    assert ids(no_session.entries) == ["hist"]


def test_explicit_beats_inferred() -> None:
    entries = [pe("inf", "xiaomi", score=95), pe("exp", "apple", explicit=True, score=50)]
    prof = effective_profile(entries, session_id=None, domains=None)
    assert ids(prof.entries) == ["exp"] and dict(prof.overridden) == {"inf": "exp"}


def test_candidates_are_hints_rejected_and_expired_are_excluded() -> None:
    entries = [
        pe("lt", "xiaomi"),
        pe("cand", "oppo", tier="candidate", score=45),
        pe("weak", "vivo", status="weakened", score=30),
        pe("rej", "nokia", status="rejected"),
        pe("exp", "sony", status="expired"),
        pe("cur-inferred", "huawei", tier="current", session="s1", score=10),
        pe("cur-other", "meizu", tier="current", session="s2", explicit=True, score=20),
    ]
    prof = effective_profile(entries, session_id="s1", domains=None)
    assert ids(prof.entries) == ["lt"]
    assert ids(prof.hints) == ["cand", "weak", "cur-inferred"]  # by score
    assert "rej" not in ids(prof.hints) and "exp" not in ids(prof.hints)


def test_confirmed_dislike_is_a_constraint() -> None:
    entries = [
        pe("like", "xiaomi"),
        pe("no-fold", "foldable", key="form_factor", polarity="dislike", confirmed=True, explicit=True),
        pe("meh", "green", key="colour", polarity="dislike"),
    ]
    prof = effective_profile(entries, session_id=None, domains=None)
    assert ids(prof.constraints) == ["no-fold"]
    assert ids(prof.entries) == ["meh", "like"] or set(ids(prof.entries)) == {"meh", "like"}


def test_like_and_dislike_of_one_value_higher_precedence_stands() -> None:
    entries = [
        pe("like", "apple", score=80),
        pe("dislike", "apple", polarity="dislike", explicit=True, confirmed=True, score=40),
    ]
    prof = effective_profile(entries, session_id=None, domains=None)
    assert ids(prof.constraints) == ["dislike"] and ids(prof.entries) == []
    assert dict(prof.overridden) == {"like": "dislike"}


def test_output_is_deterministic_whatever_the_input_order() -> None:
    entries = [pe(str(i), f"v{i}", key=f"k{i % 3}", domain=[None, "a", "b"][i % 3], score=i) for i in range(12)]
    a = effective_profile(entries, session_id="s", domains=["a", "b"])
    b = effective_profile(list(reversed(entries)), session_id="s", domains=["b", "a"])
    assert a == b
