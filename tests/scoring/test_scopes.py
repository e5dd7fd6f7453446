"""Scope applicability and narrower-scope overrides."""

from __future__ import annotations

import pytest

from scoring.scopes import ScopeContext, Scoped, applies, effective, scope_ref


def test_scope_ref() -> None:
    assert scope_ref("user", {}) == ""
    assert scope_ref("global", {"session_id": "s"}) == ""
    assert scope_ref("session", {"session_id": "s1"}) == "s1"
    assert scope_ref("task", {"task_id": "t1", "session_id": "s1"}) == "t1"
    with pytest.raises(ValueError, match="task_id"):
        scope_ref("task", {"session_id": "s1"})


def test_applies() -> None:
    ctx = ScopeContext(session_id="s1", task_id="t1")
    assert applies(Scoped("1", None, "user", ""), ctx)
    assert applies(Scoped("1", None, "global", ""), ScopeContext())
    assert applies(Scoped("1", None, "session", "s1"), ctx)
    assert not applies(Scoped("1", None, "session", "s2"), ctx)
    assert applies(Scoped("1", None, "task", "t1"), ctx)
    assert not applies(Scoped("1", None, "task", "t1"), ScopeContext(session_id="s1"))
    assert not applies(Scoped("1", None, "step", "x"), ctx)


def test_narrower_scope_overrides_only_inside_its_instance() -> None:
    items = [
        Scoped("a", "budget", "user", ""),
        Scoped("b", "budget", "task", "t1"),
        Scoped("c", "budget", "session", "s1"),
        Scoped("d", None, "user", ""),
        Scoped("e", "tone", "global", ""),
    ]
    inside = effective(items, ScopeContext(session_id="s1", task_id="t1"))
    assert inside == {"b": ["a", "c"], "d": [], "e": []}
    in_session = effective(items, ScopeContext(session_id="s1"))
    assert in_session == {"c": ["a"], "d": [], "e": []}
    outside = effective(items, ScopeContext(session_id="s2", task_id="t2"))
    assert outside == {"a": [], "d": [], "e": []}
