"""What a window derives from a user's standing rows — kept in ``ProcessCaches.windows`` between requests.

The rows are the window's standing candidates (``repository.window_items``: pinned types, this session's,
task's, stage's and step's items, and the user's newest few others) and the profile entries. From them,
for one selection (user, session/task/stage/step, domains) and one span of time: the live items as
elements, what was left out (stale tool results, scope overrides), the effective profile, and the
prepared elements of ``scoring.window`` per combination of "the request brings its own goal / plan".
Every decision — section, pinning, value, profile wording — is ``scoring.window_policy``'s; this module
only turns rows into the plain values those functions take and keeps the result.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from scoring.conflicts import normalize_value
from scoring.items import AUTHORITY_RANK
from scoring.profile import effective_profile
from scoring.relevance import whole_days
from scoring.scopes import SCOPE_ORDER, ScopeContext, Scoped, effective
from scoring.window import Element, Memos, Prepared, handle_costs, pinned_element, prepare, profile_element
from scoring.window_policy import (
    STANDING_STATUSES,
    STANDING_TYPES,
    Omission,
    Omitted,
    ValueModel,
    place_item,
    profile_lines,
    related_groups,
)
from service.items.service import item_levels
from service.profiles.service import pure_entry


def standing(row: Any) -> bool:
    """Whether a user- or global-scope item is among every window's standing candidates."""
    return row["type"] in STANDING_TYPES or row["status"] in STANDING_STATUSES


def item_element(
    row: Any,
    *,
    user_id: str,
    count: Callable[[str], int],
    model: ValueModel,
    day: int,
    recalled: bool = False,
) -> Element:
    """An item row as the window's element: placed and valued by ``window_policy``. A ``recalled`` item
    (from outside the window's scopes) is background, whatever its type."""
    rid = str(row["id"])
    order = (row["observed_at"], rid)
    if recalled:
        where = f"{row['scope']} {row['scope_ref']}" if row["scope_ref"] else row["scope"]
        section, pinned, reason = "background", False, f"recalled: relevant to the query ({row['type']} from {where})"
    else:
        section, pinned, reason = place_item(
            type=row["type"], status=row["status"], authority=row["authority"], hard=row["hard"], scope=row["scope"]
        )
    if pinned:
        return pinned_element(rid, section, row["content"], reason, count, order=order)
    texts, tokens = item_levels(row, count=count)
    value = model.item_value(
        section,
        authority_rank=AUTHORITY_RANK[row["authority"]],
        confidence=float(row["confidence"]),
        age_days=day - whole_days(row["observed_at"]),
    )
    marks = handle_costs(rid, texts, tokens, count)
    return Element(rid, section, texts, tokens, reason=reason, value=value, order=order, handle_tokens=marks)


class Variant:
    """The prepared elements for requests that bring their own goal / plan or not: without one, the
    newest goal / plan item is pinned, which moves it out of the items that give way."""

    def __init__(self, state: UserState, pin_goal: bool, pin_plan: bool) -> None:
        latest = {j: t for t, j in state.latest.items() if (pin_goal if t == "goal" else pin_plan)}
        ids, contents = state.ids, state.contents
        loose = [j for j in range(len(ids)) if j not in state.pinned and j not in latest]

        groups = related_groups([ids[j] for j in loose], {ids[j]: state.related.get(j, ()) for j in loose})
        elements = list(state.pinned.values())
        for j, t in latest.items():
            elements.append(
                pinned_element(ids[j], t, contents[j], f"pinned: current {t}", state.count, order=state.orders[j])
            )
        for j in loose:
            e = state.loose[j]
            group = groups.get(ids[j])
            elements.append(replace(e, group=group) if group is not None else e)
        elements += state.profile.elements
        self.prepared: Prepared = prepare(elements, state.model, state.memos)
        # The state's lists, not the state itself: the state holds its variants, and a reference cycle
        # would leave every replaced entry to the cyclic garbage collector (long pauses).
        self._contents, self._ids = contents, ids
        # Pinned items, in the order they claim a normalised text (after the request's; the first one wins).
        pinned = sorted([*state.pinned, *latest])
        self.pinned_norms = [(normalize_value(None, contents[j]), ids[j]) for j in pinned]
        self.longest_pinned = max((len(contents[j]) for j in pinned), default=0)
        # Loose items by normalised text, indexed shortest first as far as requests need (only an item no
        # longer than twice the longest pinned text, plus 16, is compared).
        self._by_length = sorted(loose, key=lambda j: len(contents[j]))
        self._indexed = 0
        self._by_norm: dict[int, list[int]] = {}

    def repeats(self, pinned_norm: dict[str, str], longest: int) -> dict[str, str]:
        """Loose item id → the pinned element whose normalised text it repeats, for items of at most
        ``longest`` characters."""
        contents, ids = self._contents, self._ids
        while self._indexed < len(self._by_length):
            j = self._by_length[self._indexed]
            if len(contents[j]) > longest:
                break
            self._by_norm.setdefault(hash(normalize_value(None, contents[j])), []).append(j)
            self._indexed += 1
        out: dict[str, str] = {}
        for norm, eid in pinned_norm.items():
            for j in self._by_norm.get(hash(norm), ()):
                if len(contents[j]) <= longest and normalize_value(None, contents[j]) == norm:
                    out[ids[j]] = eid
        return out


@dataclass(frozen=True)
class ProfilePart:
    """What a window takes from a user's profile entries, for one session and set of domains: the effective
    profile's lines as elements, the entries' version (count, bit_xor of their row versions, as
    ``repository.version_of``), and what the state's own version takes of them. It does not change with the
    user's items or the time, so a state rebuilt after an item was written keeps its predecessor's when
    ``repository.window_version`` shows the same entries (service.py ``_user_state``)."""

    version: tuple[int, int]
    elements: tuple[Element, ...]
    rows: int
    ids_mix: int  # bit_xor of the entries' ids
    stamp: datetime | None  # the latest updated_at among them


def profile_part(
    entry_rows: Sequence[Any],
    *,
    user_id: str,
    session_id: str | None,
    domains: Sequence[str] | None,
    count: Callable[[str], int],
    model: ValueModel,
) -> ProfilePart:
    profile = effective_profile([pure_entry(e) for e in entry_rows], session_id=session_id, domains=domains)
    elements = tuple(profile_element(line, count) for line in profile_lines(profile, user_id, model))
    mix = ids_mix = 0
    for e in entry_rows:
        mix ^= e["version"]
        ids_mix ^= e["id"].int
    stamp = max((e["updated_at"] for e in entry_rows), default=None)
    return ProfilePart((len(entry_rows), mix), elements, len(entry_rows), ids_mix, stamp)


class UserState:
    """What the window derives from one fetch of standing items and the profile, valid while their
    versions stay the same and the time stays between ``valid_from`` and ``valid_until`` (the next expiry,
    and the next UTC midnight: values count ages in whole days). It keeps plain values (ids, texts,
    elements), not the fetched records. ``version`` is the items' (count, bit_xor of row versions) followed
    by the profile entries'. ``applicable`` is how many of the user's active items apply to this selection
    in all, counted when the rows were fetched."""

    def __init__(
        self,
        rows: Sequence[Any],
        profile: ProfilePart,
        *,
        items_version: tuple[int, int],
        now: datetime,
        user_id: str,
        scope: ScopeContext,
        domains: Sequence[str] | None,
        count: Callable[[str], int],
        model: ValueModel,
        applicable: int,
        recent: int = 0,
        elements: MutableMapping[Any, Any] | None = None,
        memos: Memos | None = None,
    ) -> None:
        self.elements = elements if elements is not None else {}
        self.memos = memos if memos is not None else Memos()
        self.version = (*items_version, *profile.version)
        self.rows = len(rows) + profile.rows
        self.profile = profile
        self.count = count
        self.model = model
        self.applicable = applicable
        self.day = whole_days(now)
        past = [r["expires_at"] for r in rows if r["expires_at"] is not None and r["expires_at"] <= now]
        ahead = [r["expires_at"] for r in rows if r["expires_at"] is not None and r["expires_at"] > now]
        midnight = datetime.fromtimestamp((self.day + 1) * 86_400, tz=UTC)
        self.valid_from = max(past, default=None)
        self.valid_until = min([*ahead, midnight])

        warnings: list[str] = []
        omitted: list[Omission] = []
        live = []
        for r in rows:
            if r["expires_at"] is not None and r["expires_at"] <= now:
                if r["type"] == "tool_result":
                    warnings.append(f"stale tool result {r['id']} excluded (expired {r['expires_at'].isoformat()})")
                    omitted.append(Omission(str(r["id"]), str(Omitted.STALE), Omitted.STALE))
                continue
            live.append(r)
        chosen = effective([Scoped(str(r["id"]), r["key"], r["scope"], r["scope_ref"]) for r in live], scope)
        overridden_by = {o: w for w, os in chosen.items() for o in os}
        for o, w in sorted(overridden_by.items()):
            omitted.append(Omission(o, f"{Omitted.OVERRIDDEN} by {w}", Omitted.OVERRIDDEN))
        self.warnings = tuple(warnings)
        self.omitted = tuple(omitted)

        live = [r for r in live if str(r["id"]) in chosen]
        # The narrowest live item per key: an item retrieved for a query with the same key in a broader
        # scope is overridden by it.
        self.key_winner: dict[str, tuple[int, str]] = {
            r["key"]: (SCOPE_ORDER[r["scope"]], str(r["id"])) for r in live if r["key"] is not None
        }
        self.ids = [str(r["id"]) for r in live]
        self.contents = [r["content"] for r in live]
        # Every item fetched, live or not: retrieval fetches only items outside this set.
        self.known = frozenset(str(r["id"]) for r in rows)
        # The oldest of the user's newest few (non-standing) items: older ones are read only on demand.
        newest = [r["id"] for r in rows if r["scope"] in ("user", "global") and not standing(r)]
        self.newest_floor = min(newest, default=None) if len(newest) >= recent else None
        self.orders = [(r["observed_at"], rid) for r, rid in zip(live, self.ids, strict=True)]
        self.related = {j: tuple(str(i) for i in r["related_ids"]) for j, r in enumerate(live) if r["related_ids"]}
        # The newest goal / plan item (rows come in id order), pinned when the request brings none.
        self.latest: dict[str, int] = {}
        for j, r in enumerate(live):
            if r["type"] in ("goal", "plan") and r["status"] != "missing":
                self.latest[r["type"]] = j
        self.pinned: dict[int, Element] = {}
        self.loose: dict[int, Element] = {}
        for j, r in enumerate(live):
            e = cached_element(
                self.elements, r, user_id=user_id, count=count, model=model, day=self.day, recalled=False
            )
            (self.pinned if e.pinned else self.loose)[j] = e
        self._variants: dict[tuple[bool, bool], Variant] = {}

        # Changes when any applicable item or profile entry is added, removed or updated.
        mix = profile.ids_mix
        for r in rows:
            mix ^= r["id"].int
        stamp = max((r["updated_at"] for r in rows), default=None)
        if profile.stamp is not None and (stamp is None or profile.stamp > stamp):
            stamp = profile.stamp
        state = hashlib.sha256(f"{len(rows)}:{profile.rows}:{mix:x}:{stamp}".encode())
        self.state_version = "sv1:" + state.hexdigest()[:24]

    def valid_at(self, now: datetime) -> bool:
        return (self.valid_from is None or self.valid_from <= now) and (
            self.valid_until is None or now < self.valid_until
        )

    def variant(self, *, pin_goal: bool, pin_plan: bool) -> Variant:
        key = (pin_goal and "goal" in self.latest, pin_plan and "plan" in self.latest)
        if key not in self._variants:
            self._variants[key] = Variant(self, *key)
        return self._variants[key]


def cached_element(
    memo: MutableMapping[Any, Any],
    row: Any,
    *,
    user_id: str,
    count: Callable[[str], int],
    model: ValueModel,
    day: int,
    recalled: bool,
) -> Element:
    """The row's element, kept in ``memo`` (``ProcessCaches.elements``) by row version: successive turns
    about one subject retrieve the same items, a state rebuilt after one item was written holds the same
    rows but one, and a row's element changes only with the row (its version), the day (ages count in
    whole days), the value model and the tokenizer (for rows from before stored levels). The entry holds
    the model and the counter its key names by ``id()``, and a hit is confirmed with ``is``."""
    key = (row["version"], str(row["id"]), day, recalled, id(model), id(count))
    held = memo.get(key)
    if held is not None and held[0] is model and held[1] is count:
        return held[2]  # type: ignore[no-any-return]
    e = item_element(row, user_id=user_id, count=count, model=model, day=day, recalled=recalled)
    memo[key] = (model, count, e)
    return e


def retrieved_elements(
    rows: Sequence[tuple[Any, bool]],
    state: UserState,
    *,
    user_id: str,
    count: Callable[[str], int],
    recall_limit: int,
) -> tuple[list[Element], list[Omission], int]:
    """The items retrieved for a query that the standing rows do not hold, best first, each with whether
    it applies to the window's scopes (``repository.retrieved_items``): elements for those that apply here
    (unless a narrower item with the same key overrides them), and up to ``recall_limit`` recalled from
    outside the window's scopes (other sessions, tasks) as background. Also what was left out, and how many
    of them apply here."""
    elements: list[Element] = []
    omitted: list[Omission] = []
    recalled = applicable = 0
    for r, applies in rows:
        if applies:
            applicable += 1
            winner = state.key_winner.get(r["key"]) if r["key"] is not None else None
            if winner is not None and winner[0] < SCOPE_ORDER[r["scope"]]:
                omitted.append(Omission(str(r["id"]), f"{Omitted.OVERRIDDEN} by {winner[1]}", Omitted.OVERRIDDEN))
                continue
            e = cached_element(
                state.elements, r, user_id=user_id, count=count, model=state.model, day=state.day, recalled=False
            )
            if not e.pinned:  # pinned types are standing rows, fetched with the state
                elements.append(e)
        elif recalled < recall_limit:
            recalled += 1
            elements.append(
                cached_element(
                    state.elements, r, user_id=user_id, count=count, model=state.model, day=state.day, recalled=True
                )
            )
    return elements, omitted, applicable
