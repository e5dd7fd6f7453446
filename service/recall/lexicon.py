"""A per-process copy of a user's lexical index — each text's lexemes as postings (lexeme → the texts
holding it), its length and its expiry — so that a window ranks by BM25 (scoring.lexical) without asking
PostgreSQL which texts hold each query term: for a user with a thousand or so texts, the GIN probes and
reading the (term, text) pairs they find are most of the lexical ranking's time, and the copy answers the
same from memory.

A copy is used only when it is current. The window's first lexical round trip reads the user's count of
``item_search`` rows and the sum of their ``seq`` (a new number from one sequence each time a row is
written, migration 0016) from the user's index entries alone; any insert, re-index or delete of one of
the user's rows changes that pair. A copy that does not match is brought up to date (``current``):

1. the rows written since the copy's greatest seq (a range of ix_item_search_user_seq: after a turn of
   conversation, a few rows), read in the same statement as the user's count and sum now — for a user
   who has a copy, that is the window's first lexical round trip itself (``since``), so storing a turn
   costs the next window no statement of its own;
   for a copy being built, a statement of its own from seq 0;
2. if that does not account for the count and sum (a text was removed, or written with a smaller seq by a
   transaction that committed late), one statement lists every (id, seq) of the user's and the texts of
   the rows the copy does not hold in that version; what it does not list is removed.

Each step's rows and totals come from one statement (one snapshot), so a copy holds exactly what its
version says; it is used only if that is the version the window's first lexical round trip read.
Removed and superseded texts stay in the postings, masked, until they are a quarter of the copy, which
is then built again. And the copy is used only when the outbox worker has applied all of the user's
changes — otherwise the ranking must analyse the pending texts, which PostgreSQL does
(repository.lexical_ranking). The database stays the source of truth: each process keeps its own copies.

Only users with at most ``recall.lexicon_texts`` texts get a copy, at their second ranking in a process
(the build reads all of the user's texts, most of its cost PostgreSQL reading them — not worth it for a
user who asks once, and building on every first request would thrash the copies once more users ask than
they hold); larger users are ranked in PostgreSQL, whose cost stays flat
(the GIN index is per user and very common terms are dropped). Copies are bounded in all by
``recall.lexicon_postings`` (LRU, in ``ProcessCaches.lexicons``: service/caches.py), postings and texts
each weighing 1, a unit of weight being some tens of bytes (the arrays' own overhead per term dominates a
small copy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from service.caches import Memo, ProcessCaches, WindowCache

NEVER = math.inf
# The rows written since a copy's greatest seq read with the version (the window's first lexical
# statement) at most: past that, the copy is reconciled from one statement of its own.
DELTA_ROWS = 1_000
# A copy is built anew once removed or superseded texts are this share of what it holds.
MAX_DEAD_SHARE = 0.25

_DELTA = """
SELECT t.texts, t.seqs::bigint AS seqs, d.id, d.lexemes, d.expires_at, d.seq
FROM (SELECT count(*) AS texts, coalesce(sum(seq), 0) AS seqs FROM item_search
      WHERE tenant_id = $1 AND user_id = $2) AS t
LEFT JOIN LATERAL (
    SELECT item_id::text AS id, tsvector_to_array(tsv) AS lexemes, expires_at, seq FROM item_search
    WHERE tenant_id = $1 AND user_id = $2 AND seq > $3
    ORDER BY seq LIMIT $4
) AS d ON true
"""
_RECONCILE = """
SELECT s.item_id::text AS id, s.seq, s.expires_at,
       CASE WHEN h.id IS NULL THEN tsvector_to_array(s.tsv) END AS lexemes
FROM item_search s
LEFT JOIN unnest($3::uuid[], $4::bigint[]) AS h(id, seq) ON h.id = s.item_id AND h.seq = s.seq
WHERE s.tenant_id = $1 AND s.user_id = $2
"""


@dataclass(frozen=True)
class Lexicon:
    """One user's texts as postings; never changed once stored (``with_rows`` makes a new one).
    ``version`` is (texts, sum of seq, 0, 0): the WindowCache's shape."""

    version: tuple[int, int, int, int]
    keys: list[str]  # text index → item id
    seqs: list[int]  # text index → the seq of the row it was read from
    at: dict[str, int]  # item id → its live text index
    lengths: npt.NDArray[np.int32]  # text index → distinct lexemes
    expires: npt.NDArray[np.float64]  # text index → expires_at (epoch seconds; inf: never)
    alive: npt.NDArray[np.bool_]  # text index → still the user's (not removed, not superseded)
    postings: dict[str, npt.NDArray[np.int32]]
    rows: int  # postings held: the entry's weight in the cache
    top: int  # the greatest seq read
    valid_from: datetime | None = None
    valid_until: datetime | None = None

    def valid_at(self, now: datetime) -> bool:
        return True  # expiry is checked per text, at ranking time

    def postings_of(self, terms: Iterable[str], now: datetime) -> list[npt.NDArray[np.int32]]:
        """For each term, the live texts holding it that have not expired at ``now``."""
        live = self.alive & (self.expires > now.timestamp())
        return [p[live[p]] for p in (self.postings[t] for t in terms if t in self.postings)]

    @property
    def dead(self) -> int:
        return len(self.keys) - len(self.at)

    def with_rows(self, rows: Sequence[Any], removed: Iterable[str] = ()) -> Lexicon:
        """This copy with ``rows`` (id, lexemes, expires_at, seq) written — new texts, or new versions of
        held ones — and the texts of ``removed`` ids gone."""
        keys, seqs, at = list(self.keys), list(self.seqs), dict(self.at)
        dead: list[int] = []
        for key in removed:
            i = at.pop(key, None)
            if i is not None:
                dead.append(i)
        lengths: list[int] = []
        expires: list[float] = []
        added: dict[str, list[int]] = {}
        top = self.top
        for r in rows:
            old = at.get(r["id"])
            if old is not None:
                dead.append(old)
            i = at[r["id"]] = len(keys)
            keys.append(r["id"])
            seqs.append(r["seq"])
            top = max(top, r["seq"])
            lexemes = r["lexemes"]
            lengths.append(len(lexemes))
            expires.append(NEVER if r["expires_at"] is None else r["expires_at"].timestamp())
            for term in lexemes:
                held = added.get(term)
                if held is None:
                    added[term] = [i]
                else:
                    held.append(i)
        postings = dict(self.postings)
        for term, ids in added.items():
            new = np.array(ids, dtype=np.int32)
            old_ids = postings.get(term)
            postings[term] = new if old_ids is None else np.concatenate((old_ids, new))
        alive = np.concatenate((self.alive, np.ones(len(keys) - len(self.keys), dtype=np.bool_)))
        alive[dead] = False
        return Lexicon(
            version=(len(at), sum(seqs[i] for i in at.values()), 0, 0),
            keys=keys,
            seqs=seqs,
            at=at,
            lengths=np.concatenate((self.lengths, np.array(lengths, dtype=np.int32))),
            expires=np.concatenate((self.expires, np.array(expires, dtype=np.float64))),
            alive=alive,
            postings=postings,
            rows=self.rows + sum(lengths) + len(lengths),
            top=top,
        )


EMPTY = Lexicon(
    version=(0, 0, 0, 0),
    keys=[],
    seqs=[],
    at={},
    lengths=np.zeros(0, dtype=np.int32),
    expires=np.zeros(0, dtype=np.float64),
    alive=np.zeros(0, dtype=np.bool_),
    postings={},
    rows=0,
    top=0,
)


async def _reconciled(driver: Any, tenant_id: str, user_id: str, held: Lexicon) -> Lexicon:
    """``held`` brought to what the user's rows are now, from one statement."""
    ids = list(held.at)
    rows = await driver.fetch(_RECONCILE, tenant_id, user_id, ids, [held.seqs[held.at[k]] for k in ids])
    now = {r["id"] for r in rows}
    return held.with_rows([r for r in rows if r["lexemes"] is not None], [k for k in ids if k not in now])


def held(lexicons: WindowCache, tenant_id: str, user_id: str) -> Lexicon | None:
    """The copy this process holds of the user's texts (in ``lexicons``), whatever its version."""
    found = lexicons.peek((tenant_id, user_id))
    return found if isinstance(found, Lexicon) else None


async def current(
    driver: Any,
    *,
    caches: ProcessCaches,
    tenant_id: str,
    user_id: str,
    version: tuple[int, int],
    max_postings: int,
    since: tuple[Lexicon, Sequence[Any]] | None = None,
) -> Lexicon | None:
    """This process's copy of the user's texts as of ``version`` (their count and sum of seq), brought up
    to date if it is behind; None if the user's texts changed again meanwhile (the caller ranks in
    PostgreSQL this time). ``since``: a copy and the rows written after its greatest seq, read in the
    same statement as ``version`` (the ranking's first round trip), which then need not be read here.
    Copies are kept in ``caches.lexicons``, keyed by (tenant, user), and used only once their version
    matched."""
    lexicons = caches.lexicons
    key = (tenant_id, user_id)
    want = (version[0], version[1], 0, 0)
    found = lexicons.get(key, want, datetime.min)
    if isinstance(found, Lexicon):
        return found
    if since is not None:
        base, written = since
        copy, now = base.with_rows(written), want
    else:
        kept = lexicons.peek(key)
        if not isinstance(kept, Lexicon) and not _asked_before(caches.asked, key):
            return None
        copy = kept if isinstance(kept, Lexicon) else EMPTY
        # In seq order, at most as many as the user has texts: the generic plan reads the index's range.
        rows = await driver.fetch(_DELTA, tenant_id, user_id, copy.top, version[0])
        now = (rows[0]["texts"], rows[0]["seqs"], 0, 0)
        copy = copy.with_rows([r for r in rows if r["id"] is not None])
    if copy.version != now:
        copy = await _reconciled(driver, tenant_id, user_id, copy)
    if copy.dead > MAX_DEAD_SHARE * max(len(copy.at), 1):
        copy = await _reconciled(driver, tenant_id, user_id, EMPTY)
    lexicons.put(key, copy, max_entries=max_postings, max_rows=max_postings)
    return copy if copy.version == want else None


def _asked_before(asked: Memo[None], key: tuple[str, str]) -> bool:
    """Whether ``key`` asked before (and is now forgotten); else remember that it asked. A copy is built
    for a user's second ranking, not the first: building reads all of the user's texts, which a user who
    asks once would pay for nothing — and with more users asking than the copies hold, building on every
    first request would evict and rebuild copies on every window. ``asked`` (``ProcessCaches.asked``)
    keeps the users who asked lately, the least recent dropped first."""
    if key in asked:
        del asked[key]
        return True
    asked[key] = None
    return False
