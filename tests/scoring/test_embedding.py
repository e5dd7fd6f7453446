"""The hashing embedder: the vectorised code against a one-text-at-a-time statement of the rule, and the
properties recall relies on (unit length, determinism, similar texts closer than unrelated ones)."""

# ruff: noqa: RUF001 - fullwidth letters and punctuation are test input on purpose.

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import embedding
from scoring.embedding import DEFAULT_DIM, FAMILY_WEIGHTS, hash_embed

ROOT = Path(__file__).resolve().parents[2]
M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    x &= M64
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def _reference(text: str, dim: int) -> np.ndarray:
    """The rule of the module docstring, one character at a time with Python integers (and the classes of
    ``_char_class``, not the vectorised table)."""
    p, k_len, seeds = int(embedding._P), int(embedding._K_LEN), [int(s) for s in embedding._SEEDS]
    boundary = int(embedding._BOUNDARY)
    words: list[tuple[list[int], bool]] = []  # (code points, is CJK)
    current: list[int] = []
    for char in unicodedata.normalize("NFKC", text.replace("\x00", " ")).casefold():
        cls = embedding._char_class(ord(char))
        if cls != embedding._WORD and current:
            words.append((current, False))
            current = []
        if cls == embedding._WORD:
            current.append(ord(char))
        elif cls == embedding._CJK:
            words.append(([ord(char)], True))
    if current:
        words.append((current, False))

    features: Counter[tuple[int, int]] = Counter()
    hashes = []
    for cps, _ in words:
        poly = sum(c * pow(p, i, 1 << 64) for i, c in enumerate(cps))
        hashes.append(_mix(poly + len(cps) * k_len))
    features.update((0, _mix(h ^ seeds[0]) >> 24) for h in hashes)
    features.update((1, _mix(a * p + b + seeds[1]) >> 24) for a, b in itertools.pairwise(hashes))
    for cps, is_cjk in words:
        if not is_cjk:
            padded = [boundary, *cps, boundary]
            features.update(
                (2, _mix((padded[i] * p + padded[i + 1]) * p + padded[i + 2] + seeds[2]) >> 24) for i in range(len(cps))
            )
    vector = np.zeros(dim)
    for (family, feature), tf in features.items():
        sign = -1.0 if feature & 1 else 1.0
        vector[(feature >> 1) % dim] += sign * (1 + math.log(tf)) * FAMILY_WEIGHTS[family]
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector


def cos(a: str, b: str) -> float:
    va, vb = hash_embed([a, b])
    return float(va @ vb)


SAMPLES = [
    "The user prefers dark mode and concise answers.",
    "我们的运维团队很小，明天去北京出差。",
    "deploy → deployed → deployment; naïve Ärger данные मौसम",
    "混合 mixed テキスト with カタカナ and 漢字 and emoji 🚀 and 𠀀 (CJK ext. B)",
    "snake_case_name x9 ＦＵＬＬＷＩＤＴＨ ﬁ ligature",
    "lone surrogate \ud800 and NUL \x00 inside",
    "a",
    "",
    "  ... !!! ",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_matches_the_reference_rule(text: str) -> None:
    assert np.allclose(hash_embed([text])[0], _reference(text, DEFAULT_DIM), atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("运维团队很小カナ _-\x00Ａ"), max_size=40),
        max_size=6,
    ),
    st.sampled_from([1, 7, 64, 384]),
)
def test_any_batch_matches_the_reference_text_by_text(texts: list[str], dim: int) -> None:
    # Texts of one batch do not leak into each other (no bigram or 3-gram spans two texts).
    vectors = hash_embed(texts, dim=dim)
    assert vectors.shape == (len(texts), dim)
    assert vectors.dtype == np.float32
    for text, row in zip(texts, vectors, strict=True):
        assert np.allclose(row, _reference(text, dim), atol=1e-6)


def test_rows_are_unit_length_or_zero() -> None:
    vectors = hash_embed(SAMPLES)
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms[:-2], 1.0, atol=1e-6)
    assert norms[-2] == 0.0  # empty text
    assert norms[-1] == 0.0  # punctuation only: no word


def test_empty_batch_and_bad_arguments() -> None:
    assert hash_embed([]).shape == (0, DEFAULT_DIM)
    with pytest.raises(ValueError, match="dim"):
        hash_embed(["x"], dim=0)
    with pytest.raises(TypeError, match="sequence"):
        hash_embed("one string")


def test_deterministic_within_and_across_processes() -> None:
    texts = ["hello world", "我们的运维团队很小", "Deployment failed at 03:00"]
    first = hash_embed(texts)
    assert np.array_equal(first, hash_embed(texts))
    code = (
        "import sys; from scoring.embedding import hash_embed\n"
        "sys.stdout.write(hash_embed(sys.argv[1:]).tobytes().hex())\n"
    )
    # A different PYTHONHASHSEED would change anything that leaned on Python's hash().
    out = subprocess.run(
        [sys.executable, "-c", code, *texts],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert bytes.fromhex(out.stdout) == first.tobytes()


def test_stored_vectors_stay_valid() -> None:
    # Pinned output: if this changes on purpose, every stored vector is stale, so bump
    # HashingEmbedder.name (service/vectors/embedders.py) and update these numbers.
    vector = hash_embed(["hello world"])[0]
    nonzero = np.flatnonzero(vector)
    assert nonzero.size == 13  # 2 unigrams + 1 bigram + 10 3-grams, no collision
    assert nonzero.tolist()[:6] == [16, 27, 61, 98, 153, 175]
    assert float(vector[16]) == pytest.approx(0.21320, abs=1e-5)


def test_case_width_and_punctuation_do_not_matter() -> None:
    base = hash_embed(["hello world 42"])
    for variant in ["Hello, World! 42", "HELLO   world (42)", "ｈｅｌｌｏ ｗｏｒｌｄ ４２"]:
        assert np.array_equal(hash_embed([variant]), base), variant
    assert not np.array_equal(hash_embed(["helloworld 42"]), base)


def test_similar_english_texts_are_closer_than_unrelated_ones() -> None:
    anchor = "Our operations team is small"
    assert cos(anchor, "The operations team is very small") > cos(anchor, "I am flying to Beijing tomorrow") + 0.3
    # Morphology through character 3-grams: shared stems, no shared word.
    assert cos("deployment failed", "deployed failing") > 0.25
    assert cos("deployment failed", "banana bread") < 0.1


def test_similar_chinese_texts_are_closer_than_unrelated_ones() -> None:
    anchor = "我们的运维团队很小"
    assert cos(anchor, "运维团队人手很少") > cos(anchor, "明天去北京出差") + 0.3
    assert cos(anchor, "运维团队人手很少") > 0.3


def test_word_order_matters_through_bigrams() -> None:
    same_words = cos("dog bites man", "man bites dog")
    assert 0.3 < same_words < 0.9  # same unigrams and 3-grams, different bigrams
    assert cos("团队很小", "小很队团") < 0.9


def test_paraphrases_without_shared_words_are_not_captured() -> None:
    # The documented limit: no synonyms. If this starts failing, the docstring needs rewriting.
    assert abs(cos("the car is fast", "automobile quick")) < 0.2


def test_repetition_is_damped() -> None:
    once = hash_embed(["alpha beta"])[0]
    many = hash_embed(["alpha beta " + "alpha " * 50])[0]
    # Sublinear TF: fifty more "alpha"s do not drown "beta" (linear TF would give a cosine near 1 with
    # "alpha" alone).
    alpha = hash_embed(["alpha"])[0]
    assert float(many @ once) > 0.5
    assert float(many @ alpha) < 0.9
