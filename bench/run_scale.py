"""Indexing and query cost on a synthetic vault: first index, no-op reconcile, 1% edits, latency.

Relevance is not measured here (the text is random words); use scifact/locomo/updates for that.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
from pathlib import Path
from typing import Any

from . import metrics
from .harness import Result, RunOptions, cache_key, index_report, log, open_memory, peak_rss_mb, progress_printer, table
from .synth import build_synth, edit_notes, sample_queries

MODES = ("bm25", "dense", "hybrid")
NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def _dir_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 2)


def run(opts: RunOptions) -> Result:
    res = Result("scale", opts)
    n = int(opts.extra.get("notes") or (200 if opts.quick else 1000))
    n_queries = 30 if opts.quick else 100
    vault = opts.cache / "vaults" / cache_key("synth", str(n))
    index_dir = opts.cache / "index" / cache_key("synth", str(n), opts.embedder_name, "scale")
    synth = build_synth(vault, n)  # restores any notes a previous run edited
    shutil.rmtree(index_dir, ignore_errors=True)  # the first index is what we time
    res.params.update(notes=n, words=synth.words, queries=n_queries, edit_fraction=0.01, vault=str(vault))
    out: dict[str, Any] = {}

    t = time.perf_counter()
    with open_memory(vault, index_dir, opts.embedder_name) as mem:
        out["open_seconds_cold"] = round(time.perf_counter() - t, 3)
        rep = mem.index(progress=progress_printer("scale index"))
        out["first_index"] = index_report(rep)
        out["first_index_wall_seconds"] = round(time.perf_counter() - t, 2)
    log(f"scale: first index {out['first_index']}")

    t = time.perf_counter()
    with open_memory(vault, index_dir, opts.embedder_name) as mem:
        out["open_seconds_warm"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        out["noop_reconcile"] = index_report(mem.index(progress=None))
        out["noop_reconcile_wall_seconds"] = round(time.perf_counter() - t, 3)

        edited = edit_notes(vault, 0.01, seed=1)
        t = time.perf_counter()
        out["edit_reconcile"] = index_report(mem.index(progress=None))
        out["edit_reconcile_wall_seconds"] = round(time.perf_counter() - t, 3)
        out["edited_notes"] = len(edited)

        lat: dict[str, list[float]] = {m: [] for m in MODES}
        queries = sample_queries(n_queries)
        for mode in MODES:
            mem.recall(queries[0], k=10, mode=mode, decay=False, now=NOW, touch=False)  # warm-up
            for q in queries:
                t = time.perf_counter()
                mem.recall(q, k=10, mode=mode, decay=True, now=NOW, touch=False)
                lat[mode].append((time.perf_counter() - t) * 1000)
        out["latency_ms"] = {m: {"median": round(metrics.median(v), 2), "p95": round(metrics.p95(v), 2)}
                             for m, v in lat.items()}
    out["index_mb"] = _dir_mb(index_dir)
    out["vault_mb"] = _dir_mb(vault)
    out["peak_rss_mb"] = peak_rss_mb()
    res.results.update(out)

    first = out["first_index"]
    rows = [
        ["first index", out["first_index_wall_seconds"], first.get("texts_embedded", first.get("chunks_embedded"))],
        ["no-op reconcile", out["noop_reconcile_wall_seconds"],
         out["noop_reconcile"].get("texts_embedded", out["noop_reconcile"].get("chunks_embedded"))],
        [f"reconcile after editing {len(edited)} notes", out["edit_reconcile_wall_seconds"],
         out["edit_reconcile"].get("texts_embedded", out["edit_reconcile"].get("chunks_embedded"))],
    ]
    lat_rows = [[m, v["median"], v["p95"]] for m, v in out["latency_ms"].items()]
    res.markdown += [
        f"Synthetic vault: {n} notes, {synth.words:,} words; index {out['index_mb']} MB on disk; "
        f"peak RSS {out['peak_rss_mb']} MB.",
        "",
        *table(["step", "seconds", "texts embedded"], rows),
        "",
        *table(["recall mode (k=10, decay on)", "ms p50", "ms p95"], lat_rows),
    ]
    return res
