"""Indexing and query cost on synthetic vaults of several sizes: first index, no-op reconcile,
1% edits, warm recall latency, peak RSS, and a plot of how they grow.

`python -m bench scale --notes 1000,10000`. By default the vectors are FAKE (`fake:384`: the
feature-hashing test embedder at MiniLM's dimension), so index times measure the pipeline
(scan, parse, chunk, catalog, Chroma HNSW inserts) without model cost; MiniLM's own throughput
is reported next to them from bench/results/embed_compare.json (pass `--embedder minilm` to
pay it for real). Relevance is not measured here (the text is random words).

Each size runs in two fresh subprocesses so their peak RSS figures are separate: one indexes
(first index, 3 no-op reconciles, a 1% edit reconcile), the other serves recall (opens the
index, reconciles as the CLI would, then times warm recall with the modes interleaved per
query so machine load hits them alike).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from vault_memory.internals import internals

from .. import metrics
from ..data.synth import build_synth, edit_notes, sample_queries
from ..harness import BENCH, REPO, Result, RunOptions, cache_key, index_report, log, table

MODES = ("bm25", "dense", "hybrid")
NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
NOOP_REPEATS = 3


def _dir_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 2)


def _rss_peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _rss_now_mb() -> float:
    try:
        import psutil

        return round(psutil.Process().memory_info().rss / 2**20, 1)
    except Exception:
        return float("nan")


def open_index(vault: Path, index_dir: Path, embedder: Any) -> Any:
    from vault_memory import Config, Memory

    cfg = Config(
        vault=vault,
        index_dir=index_dir,
        embedder=embedder if isinstance(embedder, str) else "fake",
        read_only=True,
    )
    return Memory(cfg) if isinstance(embedder, str) else Memory(cfg, embedder=embedder)


class Recording:
    """Wraps an embedder and records every text it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        return self.inner.embed(texts)


# --------------------------------------------------------------------------- workers (subprocesses)


class Stopwatch:
    """Wall time spent inside some methods (patched on their classes, in the worker process only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def wrap(self, cls: Any, name: str, label: str) -> None:
        fn = getattr(cls, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - t

        setattr(cls, name, timed)


def worker_index(vault: Path, index_dir: Path, embedder: str, repeats: int) -> dict[str, Any]:
    """First index from nothing, no-op reconciles, and a reconcile after editing 1% of notes."""
    from vault_memory.index import catalog, indexer, vectorstore
    from vault_memory.index.embedders import make_embedder

    # Where a first index's time goes, as the vault grows: the vector store's writes (Chroma's
    # HNSW inserts), the embedder's calls and the lexical segment's sort, beside the total.
    watch = Stopwatch()
    watch.wrap(vectorstore.VectorStore, "upsert", "store_upsert")
    watch.wrap(indexer.Indexer, "_embed_missing", "embed")
    watch.wrap(catalog.Catalog, "save_lexical_segment", "lexical_segment")
    out: dict[str, Any] = {}
    shutil.rmtree(index_dir, ignore_errors=True)
    t = time.perf_counter()
    cpu = time.process_time()  # all threads of this process: less swayed than wall time by other jobs' load
    with open_index(vault, index_dir, embedder) as mem:
        rep = mem.index(progress=None)
        out["first_index"] = index_report(rep)
        out["chunks"] = internals(mem).catalog.chunk_count()
        out["notes"] = len(internals(mem).catalog.notes())
    out["first_index_seconds"] = round(time.perf_counter() - t, 2)
    out["first_index_cpu_ms_per_chunk"] = round((time.process_time() - cpu) * 1000 / max(1, out["chunks"]), 3)
    out["first_index_ms_per_chunk"] = round(out["first_index_seconds"] * 1000 / max(1, out["chunks"]), 3)
    out["first_index_parts_seconds"] = {k: round(v, 2) for k, v in watch.seconds.items()}
    out["peak_rss_index_mb"] = _rss_peak_mb()
    log(
        f"  [index worker] first index {out['first_index_seconds']}s, {out['chunks']} chunks, "
        f"peak RSS {out['peak_rss_index_mb']} MB"
    )

    noop, noop_open = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        with open_index(vault, index_dir, embedder) as mem:
            t1 = time.perf_counter()
            r = index_report(mem.index(progress=None))
            noop.append(time.perf_counter() - t1)
            noop_open.append(t1 - t)
            assert r.get("texts_embedded") == 0, r
    out["noop_reconcile_seconds"] = [round(x, 3) for x in noop]
    out["noop_reconcile_median"] = round(metrics.median(noop), 3)
    out["open_seconds_median"] = round(metrics.median(noop_open), 3)

    rec = Recording(make_embedder(embedder))
    with open_index(vault, index_dir, rec) as mem:
        before_cached = {h for (h,) in internals(mem).catalog.db.execute("SELECT text_hash FROM vectors")}
        edited = edit_notes(vault, 0.01, seed=1)
        t = time.perf_counter()
        rep = index_report(mem.index(progress=None))
        out["edit_reconcile_seconds"] = round(time.perf_counter() - t, 3)
        want: list[str] = []
        for rel in edited:
            row = internals(mem).catalog.note_by_path(rel)
            assert row is not None, rel
            want += [c.text for c in internals(mem).catalog.chunks_of(row.node_id) if c.text_hash not in before_cached]
    # duplicates within one call are embedded once, so compare as sets and count
    out["edit_reconcile"] = rep
    out["edited_notes"] = len(edited)
    out["edit_texts_embedded"] = len(rec.texts)
    out["edit_changed_chunks"] = len(set(want))
    out["edit_embedded_exactly_changed"] = sorted(rec.texts) == sorted(set(want))
    out["peak_rss_index_worker_mb"] = _rss_peak_mb()
    return out


def worker_serve(vault: Path, index_dir: Path, embedder: str, n_queries: int) -> dict[str, Any]:
    """A fresh serving process: open, reconcile (no-op), then warm recall latency per mode."""
    out: dict[str, Any] = {"rss_start_mb": _rss_now_mb()}
    t = time.perf_counter()
    with open_index(vault, index_dir, embedder) as mem:
        r = index_report(mem.index(progress=None))
        out["open_and_reconcile_seconds"] = round(time.perf_counter() - t, 3)
        out["reconcile_texts_embedded"] = r.get("texts_embedded")
        queries = sample_queries(n_queries)
        for mode in MODES:  # warm-up
            mem.recall(queries[-1], k=10, mode=mode, decay=True, now=NOW, touch=False)
        # The embedder's own time inside each recall (a new question's vector and its answer
        # windows): the model's work, which fake vectors only stand in for; reported beside it.
        from vault_memory.index import embedders

        inside = [0.0]
        for cls in (embedders.FakeEmbedder, embedders.MiniLMEmbedder):
            real = cls.embed

            def timed(self: Any, texts: Any, real: Any = real) -> Any:
                t0 = time.perf_counter()
                try:
                    return real(self, texts)
                finally:
                    inside[0] += time.perf_counter() - t0

            cls.embed = timed
        lat: dict[str, list[float]] = {m: [] for m in MODES}
        bare: dict[str, list[float]] = {m: [] for m in MODES}
        for q in queries:
            for mode in MODES:  # interleaved: load spikes hit every mode alike
                inside[0] = 0.0
                t = time.perf_counter()
                mem.recall(q, k=10, mode=mode, decay=True, now=NOW, touch=False)
                lat[mode].append((time.perf_counter() - t) * 1000)
                bare[mode].append(lat[mode][-1] - inside[0] * 1000)
        out["latency_ms"] = {
            m: {"p50": round(metrics.median(v), 2), "p95": round(metrics.p95(v), 2)} for m, v in lat.items()
        }
        out["latency_without_embedder_ms"] = {
            m: {
                "p50": round(metrics.median(v), 2),
                "embedder_mean": round(sum(a - b for a, b in zip(lat[m], v, strict=True)) / len(v), 2),
            }
            for m, v in bare.items()
        }
        out["rss_serving_mb"] = _rss_now_mb()
        out["peak_rss_serve_mb"] = _rss_peak_mb()
        out["exact_search"] = internals(mem).exact_search()
        # The other dense backend on the same index, interleaved query by query: exact search
        # over the catalog's vectors vs Chroma's HNSW (exact_search_limit=0).
        from dataclasses import replace

        from vault_memory import Memory

        with Memory(replace(internals(mem).config, exact_search_limit=0), embedder=internals(mem).embedder) as ann:
            for m in (mem, ann):
                m.recall(queries[-1], k=10, mode="hybrid", decay=True, now=NOW, touch=False)
            both: dict[str, list[float]] = {
                f"{b}:{mode}": [] for b in ("exact", "hnsw") for mode in ("dense", "hybrid")
            }
            for q in queries:
                for mode in ("dense", "hybrid"):
                    for name, m in (("exact", mem), ("hnsw", ann)):
                        t = time.perf_counter()
                        m.recall(q, k=10, mode=mode, decay=True, now=NOW, touch=False)
                        both[f"{name}:{mode}"].append((time.perf_counter() - t) * 1000)
        out["backends_ms"] = {
            k: {"p50": round(metrics.median(v), 2), "p95": round(metrics.p95(v), 2)} for k, v in both.items()
        }
    return out


def _subprocess(kind: str, *args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.runners.scale", kind, *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} worker failed:\n{proc.stderr[-3000:]}")
    sys.stderr.write(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- runner


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _minilm_throughput() -> dict[str, Any] | None:
    path = BENCH / "results" / "embed_compare.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        ours = data.get("results", data)["ours"]  # harness.Result's shape; older files had it at the top
        return {"chunks_per_s": ours["chunks_per_s"], "tokens_per_s": ours["tokens_per_s"], "source": str(path)}
    except (OSError, KeyError, ValueError):
        return None


def _plot(points: list[dict[str, Any]], path: Path, embedder: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    xs = [p["notes"] for p in points]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot(xs, [p["first_index_seconds"] for p in points], "o-", label="first index")
    a.plot(xs, [p["noop_reconcile_median"] for p in points], "s-", label="no-op reconcile")
    a.plot(xs, [p["edit_reconcile_seconds"] for p in points], "^-", label="1% edit reconcile")
    a.set(xscale="log", yscale="log", xlabel="notes", ylabel="seconds", title=f"Indexing ({embedder} vectors)")
    a.legend()
    for mode in MODES:
        b.plot(xs, [p["latency_ms"][mode]["p50"] for p in points], "o-", label=f"{mode} p50")
    b.axhline(50, color="grey", ls=":", label="target 50 ms @10k")
    b.set(xscale="log", xlabel="notes", ylabel="ms", title="Warm recall latency (k=10)")
    b.legend()
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def run(opts: RunOptions) -> Result:
    embedder = opts.embedder or ("fake" if opts.quick else "fake:384")
    opts = dataclasses.replace(opts, embedder=embedder)
    res = Result("scale", opts)
    sizes = [int(x) for x in str(opts.extra.get("notes") or ("200" if opts.quick else "1000,10000")).split(",")]
    repeats = int(opts.extra.get("repeats") or NOOP_REPEATS)
    n_queries = 30 if opts.quick else 100
    res.params.update(
        notes=sizes,
        queries=n_queries,
        edit_fraction=0.01,
        noop_repeats=repeats,
        vectors="FAKE (feature hashing, no model)" if embedder.startswith("fake") else embedder,
        load_at_start=_load(),
    )
    points: list[dict[str, Any]] = []
    for n in sizes:
        vault = opts.cache / "vaults" / cache_key("synth", str(n))
        index_dir = opts.cache / "index" / cache_key("synth", str(n), embedder, "scale")
        t = time.perf_counter()
        synth = build_synth(vault, n)  # restores any notes a previous run edited
        log(f"scale: {n} notes ({synth.words:,} words) synced in {time.perf_counter() - t:.1f}s; indexing")
        p: dict[str, Any] = {"notes": n, "words": synth.words}
        p.update(_subprocess("index", str(vault), str(index_dir), embedder, str(repeats)))
        log(f"scale: {n} notes indexed; serving")
        p.update(_subprocess("serve", str(vault), str(index_dir), embedder, str(n_queries)))
        p["index_mb"] = _dir_mb(index_dir)
        p["vault_mb"] = _dir_mb(vault)
        points.append(p)
        res.results["points"] = points  # partial results survive a later failure
        shown = {k: p[k] for k in ("first_index_seconds", "noop_reconcile_median", "latency_ms")}
        log(f"scale: {n} notes: {json.dumps(shown)}")
        # written after every size, so a long run (40k notes: most of an hour) leaves what it measured
        _render(res, points, embedder, repeats, opts)
        res.write()
    return res


def _render(res: Result, points: list[dict[str, Any]], embedder: str, repeats: int, opts: RunOptions) -> None:
    res.results["load_at_end"] = _load()
    mini = _minilm_throughput()
    res.results["minilm_throughput"] = mini

    rows = []
    index_rows = []
    for p in points:
        parts = p.get("first_index_parts_seconds", {})
        per = 1000 / max(1, p["chunks"])
        index_rows.append(
            [
                p["notes"],
                p["chunks"],
                p["first_index_seconds"],
                p.get("first_index_ms_per_chunk"),
                p.get("first_index_cpu_ms_per_chunk", "-"),
                round(parts.get("store_upsert", 0.0) * per, 3),
                round((p["first_index_seconds"] - parts.get("store_upsert", 0.0)) * per, 3),
                round(parts.get("embed", 0.0) * per, 3),
                round(parts.get("lexical_segment", 0.0) * per, 3),
            ]
        )
        rows.append(
            [
                p["notes"],
                p["chunks"],
                p["first_index_seconds"],
                p["noop_reconcile_median"],
                f"{p['edit_reconcile_seconds']} ({p['edit_texts_embedded']} texts for {p['edited_notes']} notes"
                f"{', exactly the changed chunks' if p['edit_embedded_exactly_changed'] else ', MISMATCH'})",
                p["peak_rss_index_mb"],
                p["peak_rss_serve_mb"],
                p["index_mb"],
            ]
        )
    lat_rows = [
        [p["notes"], p["chunks"], *(p["latency_ms"][m][s] for m in MODES for s in ("p50", "p95"))] for p in points
    ]
    bare_rows = [
        [p["notes"], *(f"{p['latency_ms'][m]['p50']} / {b[m]['embedder_mean']} / {b[m]['p50']}" for m in MODES)]
        for p in points
        if (b := p.get("latency_without_embedder_ms"))
    ]
    fake = embedder.startswith("fake")
    md = [
        f"Synthetic vaults (bench/data/synth.py); vectors from `{embedder}`"
        + (" — **fake vectors** (feature hashing, 384-d), so index times exclude model cost." if fake else ".")
        + f" No-op reconcile: median of {repeats}. Each size runs in two fresh subprocesses (index; serve), "
        "so the RSS peaks are separate. Machine: 2 cores shared with other benchmarks "
        f"(load {res.params['load_at_start']} "
        f"at start, {res.results['load_at_end']} at end).",
        "",
        *table(
            [
                "notes",
                "chunks",
                "first index s",
                "no-op reconcile s",
                "1% edit reconcile s",
                "peak RSS indexing MB",
                "peak RSS serving MB",
                "index MB",
            ],
            rows,
        ),
        "",
        *table(["notes", "chunks", *(f"{m} {s} ms" for m in MODES for s in ("p50", "p95"))], lat_rows),
        "",
        "Each recall above asks a question not asked before in that process, so dense and hybrid also "
        "embed it and its answer windows (windows.py): the embedder's work, which fake vectors stand in "
        "for. Per mode, p50 / the embedder's mean share / p50 of each recall's time without it, ms:",
        "",
        *table(["notes", *(f"{m}: p50 / embedder / p50 without" for m in MODES)], bare_rows),
        "",
        "First index, ms per chunk (wall): all of it, CPU time of the process (all threads), inside the vector "
        "store's upserts (Chroma: HNSW inserts), all but those, inside the embedder (fake vectors here: feature "
        "hashing), and sorting the lexical segment:",
        "",
        *table(
            [
                "notes",
                "chunks",
                "first index s",
                "ms/chunk",
                "CPU ms/chunk",
                "store upserts",
                "all but the store",
                "embedder",
                "lexical segment",
            ],
            index_rows,
        ),
        "",
        "Dense backend on the same index, interleaved query by query (`exact`: the catalog's vectors, what "
        "recall uses up to `exact_search_limit` chunks; `hnsw`: Chroma, `exact_search_limit=0`), p50 / p95 ms:",
        "",
        *table(
            ["notes", "chunks", "default backend", "exact dense", "hnsw dense", "exact hybrid", "hnsw hybrid"],
            [
                [
                    p["notes"],
                    p["chunks"],
                    "exact" if p.get("exact_search") else "hnsw",
                    *(
                        f"{p['backends_ms'][k]['p50']} / {p['backends_ms'][k]['p95']}"
                        for k in ("exact:dense", "hnsw:dense", "exact:hybrid", "hnsw:hybrid")
                    ),
                ]
                for p in points
                if "backends_ms" in p
            ],
        ),
    ]
    if fake and mini:
        md += [
            "",
            f"MiniLM embedding (from embed_compare.json, same machine): {mini['chunks_per_s']} chunks/s, "
            f"{mini['tokens_per_s']} tokens/s; a real first index adds about chunks / {mini['chunks_per_s']} s "
            + "("
            + ", ".join(f"{p['notes']} notes: ~{p['chunks'] / mini['chunks_per_s'] / 60:.0f} min" for p in points)
            + "). Dense/hybrid latency above excludes the MiniLM query "
            "embedding (one short query: a few ms once the model is loaded).",
        ]
    if len(points) > 1 and not opts.quick:
        png = opts.out / "scale.png"
        opts.out.mkdir(parents=True, exist_ok=True)
        if _plot(points, png, embedder):
            md += ["", "![index time and recall latency against vault size](scale.png)"]
            res.results["plot"] = str(png)
    res.markdown = md


if __name__ == "__main__":  # worker entry: python -m bench.runners.scale index|serve ...
    kind, vault_s, index_s, emb, arg = sys.argv[1:6]
    fn = worker_index if kind == "index" else worker_serve
    result = fn(Path(vault_s), Path(index_s), emb, int(arg))
    print(json.dumps(result, default=str))
