"""The configured tokenizer: exact offline BPE counts, and a logged fallback to the estimate."""

# ruff: noqa: RUF001 - the CJK sample text uses fullwidth punctuation on purpose.

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from scoring.tokens import estimate_tokens
from service import tokenizer as tokenizer_module
from service.tokenizer import Tokenizer, build_tokenizer


def _cache_file(cache_dir: Path, name: str) -> Path:
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    return cache_dir / hashlib.sha1(url.encode(), usedforsecurity=False).hexdigest()


@pytest.fixture(scope="module")
def o200k(tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    return build_tokenizer("o200k_base", cache_dir=tmp_path_factory.mktemp("tiktoken"))


def test_o200k_loads_offline_and_exactly(o200k: Tokenizer) -> None:
    assert (o200k.name, o200k.exact, o200k.fallback_reason) == ("o200k_base", True, None)


# Expected values computed once with tiktoken 0.14's o200k_base.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello world", 2),
        ("The user prefers managed services because the operations team is small.", 12),
        ("我们的运维团队很小", 6),
        ("Hello 世界", 2),
        ("用户偏好使用 PostgreSQL 16 和 Qdrant，部署在 Kubernetes 上。", 18),
    ],
)
def test_o200k_counts_known_strings(o200k: Tokenizer, text: str, expected: int) -> None:
    assert o200k.count(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("<|endoftext|>", 7), ("<|endofprompt|>", 7), ("hello <|endoftext|> world", 9)],
)
def test_special_token_text_counts_as_plain_text(o200k: Tokenizer, text: str, expected: int) -> None:
    assert o200k.count(text) == expected


def test_lone_surrogate_counts_without_raising(o200k: Tokenizer) -> None:
    assert o200k.count("\ud800") == 1


def test_count_many_equals_count_one_by_one(o200k: Tokenizer) -> None:
    texts = ["", "hello world", "我们的运维团队很小", "a <|endoftext|> b", "x" * 5000] * 30
    assert o200k.count_many(texts) == [o200k.count(text) for text in texts]
    assert o200k.count_many([]) == []


def test_count_many_encodes_a_repeated_text_once(o200k: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    encoding = o200k._encoding
    assert encoding is not None
    seen: list[str] = []
    real = encoding.encode_ordinary

    def spy(text: str) -> list[int]:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(encoding, "encode_ordinary", spy)
    assert o200k.count_many(["hello world", "我们", "hello world", "", "我们"]) == [2, 1, 2, 0, 1]
    assert seen == ["hello world", "我们", ""]


def test_the_encoding_keeps_no_python_copy_of_its_ranks(o200k: Tokenizer) -> None:
    # ~26 MB of resident memory: the Rust core has its own copy, and counts stay exact without it.
    assert o200k._encoding is not None
    assert o200k._encoding._mergeable_ranks == {}
    assert o200k.count("The user prefers managed services because the operations team is small.") == 12


def test_cl100k_counts_known_strings(tmp_path: Path) -> None:
    cl100k = build_tokenizer("cl100k_base", cache_dir=tmp_path)
    assert (cl100k.name, cl100k.exact) == ("cl100k_base", True)
    assert cl100k.count("hello world") == 2
    assert cl100k.count("我们的运维团队很小") == 11
    assert cl100k.count("hello <|endoftext|> world") == 8


def test_estimate_needs_no_files(tmp_path: Path) -> None:
    estimate = build_tokenizer("estimate", cache_dir=tmp_path / "unused")
    assert (estimate.name, estimate.exact, estimate.fallback_reason) == ("estimate", False, None)
    assert estimate.count("我们的运维团队很小") == 14
    assert estimate.count_many(["", "abcd", "Hello 世界"]) == [0, 1, 5]
    assert not (tmp_path / "unused").exists()


def test_unknown_name_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown tokenizer 'gpt2'"):
        build_tokenizer("gpt2", cache_dir=tmp_path)


def test_unwritable_cache_dir_falls_back_to_the_estimate(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    regular_file = tmp_path / "not-a-dir"
    regular_file.write_text("x")
    with caplog.at_level(logging.WARNING, logger="ctxmem.tokenizer"):
        fallback = build_tokenizer("o200k_base", cache_dir=regular_file / "tiktoken")
    assert (fallback.name, fallback.exact) == ("estimate", False)
    assert fallback.fallback_reason is not None
    assert "o200k_base" in fallback.fallback_reason
    assert fallback.count("我们的运维团队很小") == estimate_tokens("我们的运维团队很小")
    assert [r.name for r in caplog.records if r.levelno == logging.WARNING] == ["ctxmem.tokenizer"]


def test_missing_bpe_package_falls_back_to_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_package(name: str) -> None:
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(tokenizer_module, "resources", SimpleNamespace(files=no_package))
    with caplog.at_level(logging.WARNING, logger="ctxmem.tokenizer"):
        fallback = build_tokenizer("o200k_base", cache_dir=tmp_path)
    assert fallback.exact is False
    assert "ModuleNotFoundError" in (fallback.fallback_reason or "")
    assert caplog.records


def test_second_build_reuses_the_cache_file(tmp_path: Path) -> None:
    first = build_tokenizer("cl100k_base", cache_dir=tmp_path)
    cached = _cache_file(tmp_path, "cl100k_base")
    before = cached.stat()
    # Forget the in-process Encoding so the second build goes back to the directory.
    tokenizer_module._load_encoding.cache_clear()
    second = build_tokenizer("cl100k_base", cache_dir=tmp_path)
    after = cached.stat()
    assert second.exact
    assert second.count("hello world") == first.count("hello world")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in tmp_path.iterdir()) == [cached.name]


def test_a_damaged_cache_file_is_replaced(tmp_path: Path) -> None:
    cached = _cache_file(tmp_path, "cl100k_base")
    cached.write_bytes(b"not a bpe file\n")
    tokenizer = build_tokenizer("cl100k_base", cache_dir=tmp_path)
    assert tokenizer.exact
    assert tokenizer.count("hello world") == 2
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == tokenizer_module._BPE_FILES["cl100k_base"].sha256


def test_build_leaves_the_environment_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/somewhere/else")
    assert build_tokenizer("cl100k_base", cache_dir=tmp_path / "a").exact
    assert os.environ["TIKTOKEN_CACHE_DIR"] == "/somewhere/else"
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    assert build_tokenizer("cl100k_base", cache_dir=tmp_path / "b").exact
    assert "TIKTOKEN_CACHE_DIR" not in os.environ


def test_bpe_files_match_what_tiktoken_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    # If tiktoken ever moves its URLs or hashes, our cache file would be missed and tiktoken would try
    # to download: fail here instead.
    from tiktoken_ext import openai_public  # type: ignore[import-untyped, unused-ignore]

    requested: list[tuple[str, str | None]] = []

    def record(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        requested.append((url, expected_hash))
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", record)
    for name, spec in tokenizer_module._BPE_FILES.items():
        openai_public.ENCODING_CONSTRUCTORS[name]()
        assert requested.pop() == (spec.url, spec.sha256)


# Realistic text: the estimate must stay within 0.5x-3x of the exact o200k_base count (the documented
# band for English, code, CJK and mixed text; see scoring/tokens.py).
@pytest.mark.parametrize(
    "text",
    [
        "The user prefers managed services because the operations team is small, and deployments must stay reversible.",
        "Always answer in British English and cite the source document for every number you quote.",
        '{"type": "preference", "content": "use PostgreSQL 16", "confidence": 0.92, "tags": ["db", "ops"]}',
        "我们的运维团队很小，所以更喜欢托管服务。部署必须可以回滚，数据库使用PostgreSQL。",
        "私たちの運用チームは小さいので、マネージドサービスを好みます。",
        "우리 운영 팀은 작아서 관리형 서비스를 선호합니다.",
        "用户偏好使用 PostgreSQL 16 和 Qdrant，部署在 Kubernetes 上，预算上限是每月 500 美元。",
    ],
)
def test_estimate_stays_within_the_documented_band_of_o200k(o200k: Tokenizer, text: str) -> None:
    exact = o200k.count(text)
    assert 0.5 * exact <= estimate_tokens(text) <= 3 * exact
