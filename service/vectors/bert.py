"""A BERT sentence encoder in numpy: the WordPiece tokenizer of uncased BERT and the encoder's forward pass,
mean-pooled, as sentence-transformers computes all-MiniLM-L6-v2. No torch, no tokenizers package: the
weights are read straight from a ``.safetensors`` file and the vocabulary from ``vocab.txt``.

Only what an uncased BERT sentence model needs is implemented (the normaliser, pre-tokeniser and WordPiece
model that ``tokenizer.json`` names for all-MiniLM-L6-v2); a test holds the token ids and the vectors to the
reference implementations.
"""

from __future__ import annotations

import json
import struct
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MAX_WORD_CHARS = 100  # WordPiece: a longer word is [UNK] (tokenizer.json's max_input_chars_per_word)
# Abramowitz & Stegun 7.1.26: erf(z) ~ 1 - (a5*t^5 + ... + a1*t)*exp(-z^2), t = 1 / (1 + p*z); highest first.
_ERF_COEFFICIENTS = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def _is_cjk(code: int) -> bool:
    """The CJK ideograph blocks BERT's normaliser pads with spaces, so each is a word of its own."""
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


class WordPiece:
    """BERT's uncased tokenizer: clean control characters, pad CJK ideographs, strip accents, lowercase, split
    on whitespace and punctuation, then greedy longest-match WordPiece with ``##`` continuations."""

    def __init__(self, vocab_path: Path, *, max_length: int) -> None:
        tokens = vocab_path.read_text(encoding="utf-8").split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        self.vocab = {token: i for i, token in enumerate(tokens)}
        self.unk = self.vocab["[UNK]"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]
        self.max_length = max_length

    def _normalise(self, text: str) -> str:
        out = []
        for char in text:
            code = ord(char)
            if code == 0 or code == 0xFFFD:
                continue
            category = unicodedata.category(char)
            if char in "\t\n\r" or category == "Zs":
                out.append(" ")
            elif category.startswith("C"):
                continue
            elif _is_cjk(code):
                out.append(f" {char} ")
            else:
                out.append(char)
        decomposed = unicodedata.normalize("NFD", "".join(out))
        return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()

    def _words(self, text: str) -> list[str]:
        words: list[str] = []
        for chunk in self._normalise(text).split():
            start = 0
            for i, char in enumerate(chunk):
                if _is_punctuation(char):
                    if i > start:
                        words.append(chunk[start:i])
                    words.append(char)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def _pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self.unk]
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [self.unk]
            ids.append(found)
            start = end
        return ids

    def encode(self, text: str) -> list[int]:
        """[CLS] + the text's pieces + [SEP], cut to ``max_length`` ids in all."""
        ids: list[int] = []
        room = self.max_length - 2
        for word in self._words(text):
            ids.extend(self._pieces(word))
            if len(ids) >= room:
                break
        return [self.cls, *ids[:room], self.sep]


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file as float32 arrays (an 8-byte header size, a JSON header, raw
    little-endian data), memory-mapped rather than copied where the dtype allows."""
    with path.open("rb") as f:
        (header_size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_size)
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = data[begin:end].view(_SAFETENSORS_DTYPES[info["dtype"]]).reshape(info["shape"])
        tensors[name] = np.ascontiguousarray(array, dtype=np.float32) if info["dtype"] != "I64" else array
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + eps) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x·Φ(x), with erf from Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32's
    resolution at these magnitudes); numpy has no erf of its own."""
    z = np.abs(x) * np.float32(1 / np.sqrt(2))
    t = 1 / (1 + np.float32(0.3275911) * z)
    poly = np.zeros_like(t)
    for coefficient in _ERF_COEFFICIENTS:
        poly = (poly + np.float32(coefficient)) * t
    erf = 1 - poly * np.exp(-z * z)
    return x * np.float32(0.5) * (1 + np.sign(x) * erf)


class BertEncoder:
    """The forward pass of a BERT encoder (post-LayerNorm, absolute positions, one segment) over a batch of
    token-id lists, mean-pooled over each text's tokens, as a sentence-transformers model with mean pooling
    computes it. Weights keep the names of the Hugging Face checkpoint."""

    def __init__(self, weights: dict[str, np.ndarray], *, heads: int, eps: float = 1e-12) -> None:
        w = {name.removeprefix("bert."): array for name, array in weights.items()}
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.segment = w["embeddings.token_type_embeddings.weight"][0]
        self.embed_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.heads = heads
        self.eps = eps
        self.layers = []
        i = 0
        while f"encoder.layer.{i}.attention.self.query.weight" in w:
            p = f"encoder.layer.{i}."
            qkv = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]).T
            qkv_bias = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self.layers.append(
                (
                    np.ascontiguousarray(qkv),
                    qkv_bias,
                    np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                    w[p + "attention.output.dense.bias"],
                    (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                    np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    w[p + "intermediate.dense.bias"],
                    np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    w[p + "output.dense.bias"],
                    (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                )
            )
            i += 1
        self.dim = self.word.shape[1]

    def __call__(self, batch: Sequence[Sequence[int]]) -> np.ndarray:
        """Mean-pooled last hidden states, one row per id list (not normalised)."""
        n, length = len(batch), max(len(ids) for ids in batch)
        ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, token_ids in enumerate(batch):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        x = self.word[ids] + self.position[:length] + self.segment
        x = _layer_norm(x, *self.embed_norm, self.eps)
        d, h = self.dim, self.heads
        head = d // h
        # Padding keys get a large negative score, so each text attends to its own tokens only.
        key_bias = ((1 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1 / np.sqrt(head))
        for qkv, qkv_b, out_w, out_b, norm1, up_w, up_b, down_w, down_b, norm2 in self.layers:
            q, k, v = np.split(x @ qkv + qkv_b, 3, axis=-1)
            q = q.reshape(n, length, h, head).transpose(0, 2, 1, 3)
            k = k.reshape(n, length, h, head).transpose(0, 2, 3, 1)
            v = v.reshape(n, length, h, head).transpose(0, 2, 1, 3)
            scores = (q @ k) * scale + key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, d)
            x = _layer_norm(context @ out_w + out_b + x, *norm1, self.eps)
            x = _layer_norm(_gelu(x @ up_w + up_b) @ down_w + down_b + x, *norm2, self.eps)
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled: np.ndarray = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        return pooled
