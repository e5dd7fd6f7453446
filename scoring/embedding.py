"""The dependency-free default embedder (docs/design.md §3.8): feature hashing of words and character n-grams.

``hash_embed`` turns each text into a fixed-size, unit-length vector whose cosine with another text's
vector measures how much *surface* they share:

- **Words**: NFKC-normalised, case-folded word unigrams and adjacent-word bigrams. Words are runs of
  Unicode letters, digits and combining marks (so "naïve", "Ärger", "данные" and "मौसम" are words);
  everything else separates them. Bigrams make the vector sensitive to word order ("dog bites man" is
  close to, but not the same as, "man bites dog").
- **Morphology**: character 3-grams of each word, with word-boundary markers (fastText's scheme), so
  "deploy", "deployed" and "deployment" share most of their features and typos cost little.
- **Chinese and Japanese**, written without spaces: every Han or kana character is a word of its own,
  so the unigrams and bigrams above become character unigrams and bigrams ("我们的运维团队很小" and
  "运维团队人手很少" share 运, 维, 团, 队, 很, 运维, 维团 and 团队: cosine 0.50, against -0.07 for
  "明天去北京出差", which shares nothing).

What it does **not** capture: meaning. Synonyms and paraphrases with no words in common ("car" vs
"automobile", "the team is small" vs "we are short-staffed") score near zero; there is no IDF, so
frequent words count as much as rare ones (sublinear TF damps repetition only). Scripts other than
Chinese and Japanese that are written without spaces (Thai, Lao, Khmer) get one "word" per run, matched
only through its character 3-grams. Use the sentence-model or HTTP embedder when meaning matters.

Each feature is hashed with a fixed, seeded 64-bit hash (a polynomial string hash finished by
splitmix64 — never Python's per-process randomised ``hash()``) into one of ``dim`` buckets with a sign
(±1), which keeps collisions from biasing cosines upwards (Weinberger et al., 2009, "Feature Hashing for
Large Scale Multitask Learning"). Weights are sublinear term frequencies, 1 + ln(tf), per feature and
text; rows are then L2-normalised. Everything runs in numpy over the whole batch at once, so a text in a
batch costs a small share of one embedded alone (a query), which is mostly numpy's per-call overhead; the
table of character classes is built once per process. The last 1,024 single texts are remembered (a query
repeated costs a copy). The figures: bench/README.md#figures-behind-design-choices.
Changing any feature, weight or seed changes every stored vector: bump ``HashingEmbedder.name`` then.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

DEFAULT_DIM: Final = 384  # the size of all-MiniLM-L6-v2's vectors, so either embedder fits one collection

# Feature families and their weights. A word's unigram weighs 1, each of its character 3-grams (a word of
# n letters has n) 0.5: chosen by hand on a few pairs so that a shared stem or a typo still counts
# ("deployment failed" / "deployed failing" ~0.35, "kubernetes cluster" / "kubernetse clustr" ~0.33) while
# sharing the exact word counts for more (then the unigram, bigrams and all 3-grams match).
UNIGRAM: Final = 0
BIGRAM: Final = 1
CHAR3: Final = 2
FAMILY_WEIGHTS: Final = (1.0, 1.0, 0.5)

# Texts per numpy batch; keeps the text id within the key's 22 high bits and bounds memory.
_CHUNK: Final = 1 << 16

_U64 = np.uint64
_P: Final = _U64(0x100000001B3)  # FNV-1 64-bit prime: an odd multiplier for the polynomial hash
_K_LEN: Final = _U64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: mixes the word length in
_SEEDS: Final = (_U64(0x243F6A8885A308D3), _U64(0x13198A2E03707344), _U64(0xA4093822299F31D0))  # pi digits
_BOUNDARY: Final = _U64(0x110000)  # one past the last code point: the word-boundary marker of 3-grams
_HASH_BITS: Final = 40  # bits of each feature hash kept for counting and bucketing
_HASH_MASK: Final = _U64((1 << _HASH_BITS) - 1)

# Character classes of the per-code-point table.
_SEP, _WORD, _CJK = 0, 1, 2
# Han (with extensions and compatibility ideographs), kana, halfwidth katakana, and the ideographic
# iteration marks: each character is a word. Hangul is written with spaces, so it is not listed.
_CJK_RANGES: Final = (
    (0x3005, 0x3007),
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3FFFF),
)


_S30, _S27, _S31 = _U64(30), _U64(27), _U64(31)
_M1, _M2 = _U64(0xBF58476D1CE4E5B9), _U64(0x94D049BB133111EB)
_FAMILY_WEIGHTS = np.asarray(FAMILY_WEIGHTS)
_FAMILY_BITS = np.array([family << _HASH_BITS for family in (UNIGRAM, BIGRAM, CHAR3)], dtype=np.uint64)
_TEXT_SHIFT, _HASH_SHIFT = _U64(_HASH_BITS + 2), _U64(64 - _HASH_BITS)


def _splitmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser: every input bit affects every output bit. uint64 arithmetic wraps."""
    x = x ^ (x >> _S30)
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return x


_powers_table = np.ones(1, dtype=np.uint64)


def _powers(n: int) -> npt.NDArray[np.uint64]:
    """P^0 .. P^(n-1) (uint64, wrapping), from a table kept for the longest word seen so far."""
    global _powers_table
    if _powers_table.size < n:
        size = max(n, 2 * _powers_table.size, 64)
        _powers_table = np.concatenate(([_U64(1)], np.cumprod(np.full(size - 1, _P, dtype=np.uint64))))
    return _powers_table[:n]


def _char_class(cp: int) -> int:
    """Letters, digits and combining marks make words (Python's ``\\w`` would drop the marks, cutting Indic
    words apart, and keep ``_``); a Han or kana character is a word by itself; anything else separates."""
    if any(lo <= cp <= hi for lo, hi in _CJK_RANGES):
        return _CJK
    return _WORD if unicodedata.category(chr(cp))[0] in "LNM" else _SEP


@functools.cache
def _bmp_classes() -> npt.NDArray[np.uint8]:
    """The class of every code point of the Basic Multilingual Plane, built once on first use (65,536 lookups in
    ``unicodedata``: too many to repeat per call)."""
    category = unicodedata.category
    table = np.fromiter((category(chr(cp))[0] in "LNM" for cp in range(0x10000)), dtype=np.uint8, count=0x10000)
    for lo, hi in _CJK_RANGES:
        table[lo : hi + 1] = _CJK  # slices past the BMP are cut short or empty
    return table


def _classes(cp: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint8]:
    classes = _bmp_classes()[np.minimum(cp, 0xFFFF)]
    astral = np.flatnonzero(cp > 0xFFFF)  # rare: emoji, historic scripts, CJK extensions B and on
    if astral.size:
        classes[astral] = [_char_class(int(c)) for c in cp[astral]]
    return classes


def hash_embed(texts: Sequence[str], *, dim: int = DEFAULT_DIM) -> npt.NDArray[np.float32]:
    """One row per text, shape ``(len(texts), dim)``, float32, each row of unit L2 length — or all zeros
    for a text with no letters or digits. Deterministic across processes and platforms."""
    if dim < 1:
        raise ValueError(f"dim must be at least 1, got {dim}")
    if isinstance(texts, str):
        raise TypeError("hash_embed takes a sequence of texts, not one string")
    if len(texts) == 1:  # a query: the same text comes again (retries, a conversation's repeated turns)
        return _embed_one(texts[0], dim).copy()
    if len(texts) <= _CHUNK:
        return _embed_chunk(texts, dim)
    return np.concatenate([_embed_chunk(texts[lo : lo + _CHUNK], dim) for lo in range(0, len(texts), _CHUNK)])


@functools.lru_cache(maxsize=1_024)
def _embed_one(text: str, dim: int) -> npt.NDArray[np.float32]:
    """One text's row (callers get a copy: the cached array is never handed out)."""
    return _embed_chunk([text], dim)


def _embed_chunk(texts: Sequence[str], dim: int) -> npt.NDArray[np.float32]:
    n = len(texts)
    out = np.zeros((n, dim), dtype=np.float32)
    # One string for the whole batch, texts separated by NUL (a separator, so no word spans two texts).
    joined = "\x00".join(t.replace("\x00", " ") for t in texts)
    joined = unicodedata.normalize("NFKC", joined).casefold()
    encoded = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    # A sentinel, so that "the next character" always exists; native byte order from here on.
    raw = np.zeros(encoded.size + 1, dtype=np.uint32)
    raw[:-1] = encoded
    cls = _classes(raw)
    cp = raw.astype(np.uint64)

    is_char = cls != _SEP
    is_cjk = cls == _CJK
    starts = is_char.copy()  # a word starts after a separator, and at every CJK character or after one
    starts[1:] &= ~is_char[:-1] | is_cjk[1:] | is_cjk[:-1]

    pos = np.flatnonzero(is_char)  # positions of word characters
    if pos.size == 0:
        return out
    text_of = np.cumsum(raw == 0, dtype=np.uint64)  # the text each position belongs to
    is_first = starts[pos]
    first = np.flatnonzero(is_first)  # index into ``pos`` of each word's first character
    word_of = np.cumsum(is_first) - 1
    offset = np.arange(pos.size) - first[word_of]  # a character's place within its word
    length = np.empty(first.size, dtype=np.uint64)
    length[:-1] = first[1:] - first[:-1]
    length[-1] = pos.size - first[-1]

    # Words: sum of c_i * P^i over the word's characters, with its length, then mixed.
    powers = _powers(int(offset.max()) + 1)  # P^i
    poly = np.add.reduceat(cp[pos] * powers[offset], first)
    word_hash = _splitmix64(poly + length * _K_LEN)
    word_text = text_of[pos[first]]
    unigram = word_hash ^ _SEEDS[UNIGRAM]

    same_text = word_text[1:] == word_text[:-1]
    bigram = (word_hash[:-1] * _P + word_hash[1:] + _SEEDS[BIGRAM])[same_text]
    bigram_text = word_text[1:][same_text]

    # Character 3-grams of non-CJK words: one per character, centred on it, with boundary markers.
    p = pos[~is_cjk[pos]]
    left = np.where(starts[p], _BOUNDARY, cp[p - 1])
    right = np.where(is_char[p + 1] & ~starts[p + 1], cp[p + 1], _BOUNDARY)
    char3 = (left * _P + cp[p]) * _P + right + _SEEDS[CHAR3]
    char3_text = text_of[p]

    # Key: text (22 bits) | family (2 bits) | feature hash (40 bits), each feature mixed by splitmix64 (all
    # families at once). After sorting, equal features of one text are adjacent, and the length of their
    # run is the term frequency.
    sizes = (unigram.size, bigram.size, char3.size)
    family_bits = np.repeat(_FAMILY_BITS, sizes)
    text_bits = np.concatenate((word_text, bigram_text, char3_text)) << _TEXT_SHIFT
    keys = text_bits | family_bits | (_splitmix64(np.concatenate((unigram, bigram, char3))) >> _HASH_SHIFT)
    keys.sort()
    run_start = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    tf = np.empty(run_start.size, dtype=np.intp)
    tf[:-1] = run_start[1:] - run_start[:-1]
    tf[-1] = keys.size - run_start[-1]
    unique = keys[run_start]

    feature = unique & _HASH_MASK
    family = ((unique >> _U64(_HASH_BITS)) & _U64(3)).astype(np.intp)
    text_id = (unique >> _U64(_HASH_BITS + 2)).astype(np.intp)
    bucket = ((feature >> _U64(1)) % _U64(dim)).astype(np.intp)
    sign = 1.0 - 2.0 * (feature & _U64(1)).astype(np.float64)
    weight = sign * (1.0 + np.log(tf)) * _FAMILY_WEIGHTS[family]

    np.add.at(out.reshape(-1), text_id * dim + bucket, weight.astype(np.float32))
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))
    np.divide(out, norms[:, None], out=out, where=norms[:, None] > 0)
    return out
