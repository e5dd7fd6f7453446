"""The lexical ranking of a user's texts for a query: which of the query's terms rank, and BM25 over the
texts holding them. Pure: the terms come analysed (PostgreSQL's ``ctxmem_tsv``: English stemming of the
text outside CJK runs, plus each CJK run's characters and character pairs, ``cjk_terms``) and the
postings (for each kept term, the texts holding it and their lengths) from
the full-text index or the per-process copy of it (service/recall/lexicon.py).

Which terms rank (``kept_terms``): the query's terms, most common first to go, are kept while the texts they
would bring stay within ``max_hits``: a term's share of all indexed texts (PostgreSQL's statistics of the
index) times the user's ``documents`` estimates how many of the user's texts hold it. Ranking every text
that holds a very common word is what would make a window slower as a user's memory grows, and such a
word says little about relevance (its inverse document frequency is near 0): a user with a few thousand
items keeps every term; one with 100,000 keeps the rarer ones, and a query made only of very common words
is ranked by the vector index alone.

BM25 (``bm25``; Robertson & Zaragoza, 2009): k1 1.2, b 0.75, term presence (a text's tsvector holds each
lexeme once), a text's length its number of distinct lexemes, the average length that of the texts found,
N the user's ``documents`` (or the texts found, if more), idf = ln(1 + (N - df + 0.5) / (df + 0.5)).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

K = TypeVar("K", bound=Hashable)

K1 = 1.2
B = 0.75

# Kana, CJK ideographs (extension A and the unified block), Hangul syllables and compatibility ideographs:
# the ranges migration 0018's ctxmem_cjk splits on (a parity test in tests/db holds the two together).
CJK_RANGES = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")


def cjk_terms(text: str) -> list[str]:
    """The lexical terms of the CJK runs of ``text``, in text order: each character and each pair of
    adjacent characters ("集群可" → 集, 集群, 群, 群可, 可). Chinese and Japanese are written without spaces
    and most of their words are two characters long: a text holding the query's words holds its pairs,
    which are rare and weigh much in BM25, while a text sharing only characters (用, 的) matches single
    characters, which are common and weigh little; single characters keep one-character words (猫, 怕)
    findable. Chosen over pairs alone and the jieba segmenter by ``python -m bench.chinese``
    (docs/window.md#chinese-and-japanese)."""
    terms: list[str] = []
    for run in _CJK_RUN.findall(text):
        for i, char in enumerate(run):
            terms.append(char)
            if i + 1 < len(run):
                terms.append(run[i : i + 2])
    return terms


def kept_terms(
    lexemes: Sequence[str], shares: Mapping[str, float], *, documents: int, max_hits: int
) -> tuple[list[str], int]:
    """The query's lexemes that rank, rarest first, and how many were too common to (``max_hits``)."""
    order = sorted(set(lexemes), key=lambda t: (shares.get(t, 0.0), t))
    kept: list[str] = []
    running = 0.0
    for term in order:
        running += shares.get(term, 0.0)
        if running * documents > max_hits:
            break
        kept.append(term)
    return kept, len(order) - len(kept)


def bm25(
    postings: Sequence[npt.NDArray[np.integer[Any]]],
    lengths: npt.NDArray[np.integer[Any]],
    keys: Sequence[K],
    *,
    documents: int,
    limit: int,
) -> list[tuple[K, float]]:
    """The best ``limit`` texts by BM25, best first, ties by the greater key first. ``postings``: for each
    kept term, the texts holding it (distinct indexes into ``lengths``, each text's length, and ``keys``)."""
    hits = [p for p in postings if len(p)]
    if not hits or limit <= 0:
        return []
    size = len(lengths)
    pairs = np.concatenate(hits)
    sizes = np.array([len(p) for p in hits], dtype=np.float64)
    found = np.flatnonzero(np.bincount(pairs, minlength=size))
    n = max(float(documents), float(len(found)))
    length = lengths[found].astype(np.float64)
    avglen = max(float(length.mean()), 1.0)
    idf = np.log(1.0 + (n - sizes + 0.5) / (sizes + 0.5))
    weight = np.bincount(pairs, weights=np.repeat(idf, sizes.astype(np.int64)), minlength=size)[found]
    score = weight * (K1 + 1.0) / (1.0 + K1 * ((1.0 - B) + B * length / avglen))
    best = np.arange(len(found))
    if len(found) > limit:  # the top ``limit`` and whatever ties the last of them
        cut = np.partition(score, len(score) - limit)[len(score) - limit]
        best = np.flatnonzero(score >= cut)
    ranked = sorted(((keys[found[i]], float(score[i])) for i in best), key=lambda kv: (kv[1], kv[0]), reverse=True)
    return ranked[:limit]


def named_terms(matched: Sequence[str]) -> list[str]:
    """The matched query terms to name, in order: a CJK character that a matched pair holds is left out
    (集群 names the match, not 集, 集群, 群); everything else as it came."""
    pairs = [t for t in matched if len(t) == 2 and _CJK_RUN.fullmatch(t)]
    return [t for t in matched if not (len(t) == 1 and _CJK_RUN.fullmatch(t) and any(t in p for p in pairs))]
