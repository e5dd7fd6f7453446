"""scoring.lexical: which of a query's terms rank, and BM25 over the texts holding them."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scoring.lexical import bm25, cjk_terms, kept_terms, named_terms


def reference(texts: dict[str, set[str]], terms: list[str], documents: int) -> dict[str, float]:
    """BM25 written out term by term from its definition (k1 1.2, b 0.75, presence, length = distinct terms,
    average length over the texts that hold a term, N = max(documents, texts found))."""
    found = {t: words for t, words in texts.items() if words & set(terms)}
    if not found:
        return {}
    n = max(documents, len(found))
    avg = max(sum(len(w) for w in found.values()) / len(found), 1)
    out = {}
    for t, words in found.items():
        score = 0.0
        for term in terms:
            if term in words:
                df = sum(1 for w in found.values() if term in w)
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                score += idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * len(words) / avg))
        out[t] = score
    return out


def ranked(texts: dict[str, set[str]], terms: list[str], *, documents: int, limit: int) -> list[tuple[str, float]]:
    keys = sorted(texts)
    lengths = np.array([len(texts[k]) for k in keys], dtype=np.int32)
    postings = [np.array([i for i, k in enumerate(keys) if term in texts[k]], dtype=np.int32) for term in terms]
    return bm25(postings, lengths, keys, documents=documents, limit=limit)


def test_rare_terms_and_short_texts_rank_first() -> None:
    texts = {
        "a": {"replica", "lag", "orders"},
        "b": {"lag", "batch", "night", "orders", "team", "cache"},
        "c": {"cache", "team"},
        "d": {"lag"},
    }
    hits = ranked(texts, ["replica", "lag"], documents=10, limit=10)
    assert [k for k, _ in hits] == ["a", "d", "b"]  # the rare term first; then the shorter of the two
    assert ranked(texts, ["replica", "lag"], documents=10, limit=1) == hits[:1]
    assert ranked(texts, ["nothing"], documents=10, limit=5) == []
    assert ranked(texts, [], documents=10, limit=5) == []
    # ties: the greater key first, also across the cut of ``limit``
    same = {k: {"x"} for k in "pqrs"}
    assert [k for k, _ in ranked(same, ["x"], documents=4, limit=2)] == ["s", "r"]


words = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"])


@given(
    st.dictionaries(st.text("abcdef", min_size=1, max_size=3), st.sets(words, min_size=1), max_size=12),
    st.lists(words, min_size=1, max_size=4, unique=True),
    st.integers(0, 40),
)
def test_bm25_is_its_definition(texts: dict[str, set[str]], terms: list[str], documents: int) -> None:
    want = reference(texts, terms, documents)
    got = dict(ranked(texts, terms, documents=documents, limit=len(texts) + 1))
    assert got.keys() == want.keys()
    for k in want:
        assert math.isclose(got[k], want[k], rel_tol=1e-12), (k, got[k], want[k])
    best = ranked(texts, terms, documents=documents, limit=len(texts) + 1)
    assert best == sorted(best, key=lambda kv: (kv[1], kv[0]), reverse=True)
    for limit in range(len(best) + 1):
        assert ranked(texts, terms, documents=documents, limit=limit) == best[:limit]


def test_common_terms_go_first_while_the_hits_they_bring_exceed_the_cap() -> None:
    shares = {"the": 0.9, "cache": 0.2, "team": 0.1}
    # 100 texts: "zanzibar" (unknown to the statistics: share 0) and "team" (10) fit, "cache" (20 more) not.
    assert kept_terms(["the", "cache", "team", "zanzibar"], shares, documents=100, max_hits=15) == (
        ["zanzibar", "team"],
        2,
    )
    assert kept_terms(["the", "cache", "team"], shares, documents=10, max_hits=2_000) == (["team", "cache", "the"], 0)
    assert kept_terms(["team", "team"], shares, documents=10, max_hits=2_000) == (["team"], 0)
    assert kept_terms([], shares, documents=10, max_hits=1) == ([], 0)


def test_cjk_terms_are_characters_and_adjacent_pairs_in_text_order() -> None:
    assert cjk_terms("Redis 集群可以") == ["集", "集群", "群", "群可", "可", "可以", "以"]
    assert cjk_terms("猫") == ["猫"]
    assert cjk_terms("A集B群C") == ["集", "群"]  # runs end at anything not CJK
    assert cjk_terms("東京の天気") == ["東", "東京", "京", "京の", "の", "の天", "天", "天気", "気"]
    assert cjk_terms("no cjk, 123") == []


def test_a_text_sharing_the_query_s_words_outranks_texts_sharing_only_its_characters() -> None:
    """The issue's case: for "集群可以用吗" the texts holding only 用 scored 0.78 and 0.60 of the best when each
    character was a term; with pairs the one holding 集群 is far ahead of them."""
    texts = ["运维团队太小用不了集群", "数据仓库用的是", "用户的猫叫小白", "周六我们去香山爬山", "婚礼定在明年五月"]
    lexemes = [set(cjk_terms(t)) for t in texts]
    query = sorted(set(cjk_terms("集群可以用吗")))
    postings = [np.array([i for i, x in enumerate(lexemes) if t in x], dtype=np.int64) for t in query]
    ranked = bm25(postings, np.array([len(x) for x in lexemes]), list(range(len(texts))), documents=5, limit=5)
    assert ranked[0][0] == 0
    assert all(score < 0.5 * ranked[0][1] for _, score in ranked[1:])


def test_named_terms_leave_out_a_character_its_matched_pair_names() -> None:
    assert named_terms(["redis", "集", "集群", "群", "用"]) == ["redis", "集群", "用"]
    assert named_terms(["用", "lag"]) == ["用", "lag"]
