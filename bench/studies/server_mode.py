"""Embedded Chroma vs a Chroma server (`chroma run` on loopback), measured in the same run.

    python -m bench server_mode [--notes 2000] [--queries 200] [--minilm-sample 256] [--quick]

On one synthetic vault (bench/data/synth.py) and the fake embedder, so the vector store is what
is measured, for each backend:

- first index: wall time and chunks/s, and the time spent inside the store's writes alone;
- store refill: drop the collection and re-sync it from the catalog's vector cache (pure
  store writes, batches of 1,000, nothing parsed or embedded);
- no-op reconcile;
- warm recall latency p50/p95 over N queries in hybrid, dense and bm25 mode (bm25 never
  touches the store: it is the control), and a bare nearest-neighbour query on the store.

Then MiniLM's embedding throughput on a sample of the same chunks, to set the store's
write rate against what embedding costs with the default embedder. Loopback only: the
numbers show the protocol and serialisation cost of a server, not a network's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vault_memory.internals import internals

from .. import metrics
from ..data.synth import build_synth, sample_queries
from ..harness import REPO, Result, RunOptions, log, table

NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
MODES = ("hybrid", "dense", "bm25")


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(metrics.median(values), 2),
        "p95": round(metrics.p95(values), 2),
        "mean": round(metrics.mean(values), 2),
    }


@contextmanager
def _timed_store_writes(mem: Any) -> Iterator[dict[str, float]]:
    """Add up the seconds spent in the store's upsert/delete while the block runs."""
    acc = {"seconds": 0.0, "rows": 0.0}
    store = internals(mem).store
    originals: dict[str, Callable[..., Any]] = {"upsert": store.upsert, "delete": store.delete}

    def wrap(name: str) -> Callable[..., Any]:
        fn = originals[name]

        def timed(ids: Any, *args: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(ids, *args)
            finally:
                acc["seconds"] += time.perf_counter() - t
                if name == "upsert":
                    acc["rows"] += len(ids)

        return timed

    store.upsert, store.delete = wrap("upsert"), wrap("delete")
    try:
        yield acc
    finally:
        del store.upsert, store.delete  # back to the class's methods


def open_backend(vault: Path, index_dir: Path, url: str | None) -> Any:
    from vault_memory import Config, Memory
    from vault_memory.index.embedders import FakeEmbedder

    shutil.rmtree(index_dir, ignore_errors=True)
    cfg = Config(vault=vault, index_dir=index_dir, embedder="fake", chroma_url=url, read_only=True)
    return Memory(cfg, embedder=FakeEmbedder(), clock=lambda: NOW)


def measure_indexing(label: str, mem: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"backend": label}
    t = time.perf_counter()
    store = internals(mem).store
    out["open_seconds"] = round(time.perf_counter() - t, 3)
    out["collection"] = store.name
    with _timed_store_writes(mem) as writes:
        t = time.perf_counter()
        rep = mem.index()
        wall = time.perf_counter() - t
    out["first_index"] = {
        "notes": rep.notes,
        "chunks": rep.chunks,
        "chunks_written": rep.chunks_written,
        "wall_seconds": round(wall, 2),
        "chunks_per_s": round(rep.chunks_written / wall, 1),
        "store_write_seconds": round(writes["seconds"], 2),
        "store_share_of_wall": round(writes["seconds"] / wall, 3),
        "store_chunks_per_s": round(writes["rows"] / writes["seconds"], 1) if writes["seconds"] else None,
    }
    log(f"  {label}: first index {out['first_index']}")

    store.drop()
    t = time.perf_counter()
    internals(mem).resync_store()  # an Indexer re-syncs a store that lost rows as it opens it; either way all come back
    refill = time.perf_counter() - t
    fixed = store.count()
    assert fixed == internals(mem).catalog.chunk_count()
    out["store_refill"] = {"chunks": fixed, "seconds": round(refill, 2), "chunks_per_s": round(fixed / refill, 1)}
    log(f"  {label}: store refill {out['store_refill']}")

    t = time.perf_counter()
    noop = mem.index()
    out["noop_reconcile_seconds"] = round(time.perf_counter() - t, 4)
    assert noop.chunks_written == 0
    return out


def measure_latency(mems: dict[str, Any], queries: list[str]) -> dict[str, dict[str, Any]]:
    """Warm recall latency, the backends interleaved query by query (alternating which goes first),
    so a busy machine's load drifts fall on both alike."""
    labels = list(mems)
    lat: dict[str, dict[str, list[float]]] = {b: {} for b in labels}
    for mode in MODES:
        for q in queries[:10]:  # warm-up
            for b in labels:
                mems[b].recall(q, k=10, mode=mode, now=NOW, touch=False)
        for i, q in enumerate(queries):
            for b in labels if i % 2 == 0 else labels[::-1]:
                t = time.perf_counter()
                mems[b].recall(q, k=10, mode=mode, now=NOW, touch=False)
                lat[b].setdefault(mode, []).append((time.perf_counter() - t) * 1000)
    qvecs = mems[labels[0]].embedder.embed(queries)
    for v in qvecs[:10]:
        for b in labels:
            mems[b].store.query(v, 100)
    for i, v in enumerate(qvecs):
        for b in labels if i % 2 == 0 else labels[::-1]:
            t = time.perf_counter()
            mems[b].store.query(v, 100)
            lat[b].setdefault("store_query_top100", []).append((time.perf_counter() - t) * 1000)
    return {b: {m: _ms(v) for m, v in lat[b].items()} for b in labels}


def measure_minilm(vault: Path, sample: int, queries: list[str]) -> dict[str, Any]:
    """MiniLM embedding throughput on chunks of the same vault, chunked for MiniLM's 256-token window."""
    from vault_memory.index.embedders import make_embedder
    from vault_memory.vault.markdown import chunk_body
    from vault_memory.vault.notefile import parse_note

    try:
        emb = make_embedder("minilm")
        emb.embed(["warm up"])  # load the model
    except Exception as exc:  # the default model is a dependency, but report rather than die
        return {"error": f"{exc.__class__.__name__}: {exc}"}
    texts: list[str] = []
    for path in sorted(vault.rglob("*.md")):
        rel = str(path.relative_to(vault))
        note = parse_note(rel, path.read_bytes(), path.stat().st_mtime)
        texts += [c.text for c in chunk_body(note.body, max_tokens=emb.max_tokens, count_tokens=emb.count_tokens)]
        if len(texts) >= sample:
            break
    texts = texts[:sample]
    t = time.perf_counter()
    for start in range(0, len(texts), 128):  # EMBED_SLICE, as the indexer hands them over
        emb.embed(texts[start : start + 128])
    seconds = time.perf_counter() - t
    lat = []
    for q in queries[:50]:
        t = time.perf_counter()
        emb.embed([q])
        lat.append((time.perf_counter() - t) * 1000)
    return {
        "texts": len(texts),
        "seconds": round(seconds, 2),
        "chunks_per_s": round(len(texts) / seconds, 1),
        "query_embed_ms": _ms(lat),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--notes", type=int, default=None, help="synthetic notes (2000; 200 with --quick)")
    parser.add_argument("--queries", type=int, default=None, help="recall queries per mode (200; 20 with --quick)")
    parser.add_argument(
        "--minilm-sample", type=int, default=None, help="chunk texts MiniLM embeds (256; 0 skips it, as --quick does)"
    )


def run(opts: RunOptions) -> Result:
    res = Result("server_mode", opts)
    n_notes = int(opts.extra.get("notes") or (200 if opts.quick else 2000))
    n_queries = int(opts.extra.get("queries") or (20 if opts.quick else 200))
    sample = opts.extra.get("minilm_sample")
    minilm_sample = int(sample) if sample is not None else (0 if opts.quick else 256)

    sys.path.insert(0, str(REPO))
    from tests.chroma_server import ChromaServer

    vault = opts.cache / "vaults" / f"synth-{n_notes}-server-mode"
    synth = build_synth(vault, n_notes)
    queries = sample_queries(n_queries)
    work = Path(tempfile.mkdtemp(prefix="vm-bench-server-"))
    results: dict[str, Any] = {}
    try:
        log(f"server_mode: {n_notes} notes, {synth.words:,} words, {len(queries)} queries")
        with ChromaServer(work / "chroma-server") as server:
            log(f"  chroma run at {server.url}")
            mems = {
                "embedded": open_backend(vault, work / "index-embedded", None),
                "server": open_backend(vault, work / "index-server", server.url),
            }
            try:
                for label, mem in mems.items():
                    results[label] = measure_indexing(label, mem)
                for label, lat in measure_latency(mems, queries).items():
                    results[label]["recall_latency_ms"] = lat
                    log(f"  {label}: latency {lat}")
            finally:
                for mem in mems.values():
                    mem.close()
        if minilm_sample:
            results["minilm"] = measure_minilm(vault, minilm_sample, queries)
            log(f"  minilm: {results['minilm']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    emb, srv = results["embedded"], results["server"]
    summary = {
        "store_write_slowdown": round(emb["store_refill"]["chunks_per_s"] / srv["store_refill"]["chunks_per_s"], 2),
        "first_index_slowdown": round(srv["first_index"]["wall_seconds"] / emb["first_index"]["wall_seconds"], 2),
        "hybrid_p50_added_ms": round(
            srv["recall_latency_ms"]["hybrid"]["p50"] - emb["recall_latency_ms"]["hybrid"]["p50"], 2
        ),
        "store_query_p50_added_ms": round(
            srv["recall_latency_ms"]["store_query_top100"]["p50"]
            - emb["recall_latency_ms"]["store_query_top100"]["p50"],
            2,
        ),
    }
    mini = results.get("minilm", {})
    if "chunks_per_s" in mini:
        summary["minilm_vs_server_store_writes"] = round(srv["store_refill"]["chunks_per_s"] / mini["chunks_per_s"], 1)
    results["summary"] = summary
    res.params.update(
        notes=n_notes,
        words=synth.words,
        queries=len(queries),
        embedder="fake",
        minilm_sample=minilm_sample,
        k=10,
        server="chroma run on 127.0.0.1",
    )
    res.results.update(results)

    rows = []
    for key, name in (("embedded", "embedded"), ("server", "server (loopback)")):
        r = results[key]
        lat = r["recall_latency_ms"]
        rows.append(
            [
                name,
                r["first_index"]["chunks_per_s"],
                r["first_index"]["store_chunks_per_s"],
                r["store_refill"]["chunks_per_s"],
                r["noop_reconcile_seconds"],
                *(f"{lat[m]['p50']} / {lat[m]['p95']}" for m in (*MODES, "store_query_top100")),
            ]
        )
    lines = table(
        [
            "backend",
            "index chunks/s",
            "store-write chunks/s (in index)",
            "refill chunks/s",
            "no-op reconcile s",
            "hybrid ms p50/p95",
            "dense ms p50/p95",
            "bm25 ms p50/p95",
            "store top-100 ms p50/p95",
        ],
        rows,
    )
    if "chunks_per_s" in mini:
        lines.append(
            f"\nMiniLM embeds {mini['chunks_per_s']} chunks/s here ({mini['texts']} chunks); "
            f"a query embeds in {mini['query_embed_ms']['p50']} ms p50."
        )
    res.markdown += [
        f"{n_notes} synthetic notes, fake embedder (the store is what is measured), "
        f"{len(queries)} warm queries per mode, the two backends interleaved.",
        "",
        *lines,
    ]
    return res
