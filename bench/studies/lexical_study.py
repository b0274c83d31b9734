"""Lexical search engines on one index, interleaved query by query: where BM25's time goes.

`python -m bench lexical_study [--notes 1000,10000,40000] [--queries 100] [--minilm]`

On the scale runner's synthetic vaults (bench/data/synth.py, fake vectors; built here if missing),
each query of the scale runner's set is answered, in turn, by:

- `fts5 before`: the query this project ran until now (`SELECT chunk_id, bm25(...) ... ORDER
  BY s LIMIT 1000`), kept here verbatim;
- `fts5`: the same FTS5 ranking asked for rowids, the top joined to `chunks` (catalog.py);
- `memory`: lexical.py's postings, loaded once per process (the load is timed too).

It checks that the three return the same chunks in the same order with the same scores, then
times whole recalls (hybrid, bm25, dense) with the lexical engine before and after, interleaved.
With `--minilm` it also times MiniLM's embedding of each query, to state hybrid with a real
query vector. Writes bench/results/lexical_study.json and .md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vault_memory.index import lexical
from vault_memory.index.catalog import Catalog, fts_query
from vault_memory.internals import internals

from .. import metrics
from ..data.synth import build_synth, sample_queries
from ..harness import Result, RunOptions, cache_key, log, table
from ..runners.scale import open_index

NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
WIDE = 1000  # what recall asks the lexical side for (max(1000, 10 * candidates))
MODES = ("hybrid", "bm25", "dense")


def fts5_before(cat: Catalog, query: str, limit: int) -> list[tuple[str, float]]:
    """The lexical query as it was before this study (commit d0bb608)."""
    q = fts_query(query)
    if q is None:
        return []
    rows = cat.db.execute(
        "SELECT chunk_id, bm25(chunks_fts, 0.0, 1.0, 2.0) AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
        "ORDER BY s LIMIT ?",
        (q, limit),
    ).fetchall()
    return [(cid, -float(s)) for cid, s in rows]


def _stats(ms: list[float]) -> dict[str, float]:
    return {"p50": round(metrics.median(ms), 2), "p95": round(metrics.p95(ms), 2)}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def study(n: int, n_queries: int, cache: Path, minilm: Any) -> dict[str, Any]:
    vault = cache / "vaults" / cache_key("synth", str(n))
    index_dir = cache / "index" / cache_key("synth", str(n), "fake:384", "scale")
    build_synth(vault, n)
    out: dict[str, Any] = {"notes": n, "load_at_start": _load()}
    with open_index(vault, index_dir, "fake:384") as mem:
        t = time.perf_counter()
        rep = mem.index(progress=None)
        out["reconcile_seconds"] = round(time.perf_counter() - t, 2)
        out["reconcile_counts"] = rep.counts
        cat: Catalog = internals(mem).catalog
        out["chunks"] = cat.chunk_count()
        queries = sample_queries(n_queries)
        matches = [
            cat.db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (fts_query(q),)).fetchone()[0]
            for q in queries
        ]
        out["matches_per_query_median"] = metrics.median(matches)

        # the postings' load, from nothing, as a warm process pays it once
        t = time.perf_counter()
        assert cat.lexical_search(queries[0], WIDE, engine="memory") is not None
        out["postings_load_ms"] = round((time.perf_counter() - t) * 1000, 1)
        size = cat.postings_size()
        assert size is not None
        out["postings"], out["postings_mb"] = size

        engines: dict[str, Callable[[str], list[tuple[str, float]]]] = {
            "fts5 before": lambda q: fts5_before(cat, q, WIDE),
            "fts5": lambda q: cat.lexical_search(q, WIDE, engine="fts5"),
            "memory": lambda q: cat.lexical_search(q, WIDE, engine="memory"),
        }
        lat: dict[str, list[float]] = {k: [] for k in engines}
        same_order = 0
        same_set_top100 = 0
        max_diff = 0.0
        for q in queries:
            got = {}
            for name, fn in engines.items():
                t = time.perf_counter()
                got[name] = fn(q)
                lat[name].append((time.perf_counter() - t) * 1000)
            a, b, c = got["fts5 before"], got["fts5"], got["memory"]
            same_order += [x for x, _ in b] == [x for x, _ in c]
            same_set_top100 += {x for x, _ in a[:100]} == {x for x, _ in c[:100]}
            max_diff = max([max_diff, *(abs(s1 - s2) for (_, s1), (_, s2) in zip(b, c, strict=True))])
            assert sorted(s for _, s in a) == sorted(s for _, s in b), "FTS5 before/after differ beyond ties"
        out["lexical_ms"] = {k: _stats(v) for k, v in lat.items()}
        out["same_order_fts5_memory"] = f"{same_order}/{len(queries)}"
        out["same_top100_set_before_memory"] = f"{same_set_top100}/{len(queries)}"
        out["max_score_diff_fts5_memory"] = max_diff

        # whole recalls, lexical engine before vs after, interleaved per query and mode
        real = cat.lexical_search
        paths: dict[str, Callable[[str, int], list[tuple[str, float]]]] = {
            "before": lambda q, k: fts5_before(cat, q, k),
            "after": lambda q, k: real(q, k, engine="memory"),
        }
        rec: dict[str, list[float]] = {f"{p}:{m}": [] for p in paths for m in MODES}
        for q in queries:
            for mode in MODES:
                for name, fn in paths.items():
                    cat.lexical_search = fn  # type: ignore[method-assign]
                    t = time.perf_counter()
                    mem.recall(q, k=10, mode=mode, decay=True, now=NOW, touch=False)
                    rec[f"{name}:{mode}"].append((time.perf_counter() - t) * 1000)
        cat.lexical_search = real  # type: ignore[method-assign]
        out["recall_ms"] = {k: _stats(v) for k, v in rec.items()}
        if minilm is not None:
            emb = []
            for q in queries:
                t = time.perf_counter()
                minilm.embed([q])
                emb.append((time.perf_counter() - t) * 1000)
            out["minilm_query_embed_ms"] = _stats(emb)
    out["load_at_end"] = _load()
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--notes", default=None, help="vault sizes, a comma list (1000,10000; quick: 200)")
    parser.add_argument("--queries", type=int, default=None, help="queries per size (100; quick: 10)")
    parser.add_argument("--minilm", action="store_true", help="also time MiniLM's query embedding")


def run(opts: RunOptions) -> Result:
    res = Result("lexical_study", opts)
    notes = str(opts.extra.get("notes") or ("200" if opts.quick else "1000,10000"))
    queries = int(opts.extra.get("queries") or (10 if opts.quick else 100))
    args = argparse.Namespace(notes=notes, queries=queries, minilm=bool(opts.extra.get("minilm")), cache=opts.cache)
    sizes = [int(x) for x in args.notes.split(",")]
    res.params.update(notes=sizes, queries=args.queries, wide=WIDE, merge_at=lexical.MERGE_AT)
    minilm = None
    if args.minilm:
        from vault_memory.index.embedders import make_embedder

        minilm = make_embedder("minilm")
        minilm.embed(["warm up"])
    points = []
    for n in sizes:
        log(f"lexical_study: {n} notes")
        points.append(study(n, args.queries, args.cache, minilm))
        res.results["points"] = points
    rows = [
        [
            p["notes"],
            p["chunks"],
            p["matches_per_query_median"],
            *(f"{p['lexical_ms'][k]['p50']} / {p['lexical_ms'][k]['p95']}" for k in ("fts5 before", "fts5", "memory")),
            p["same_order_fts5_memory"],
            p["postings_load_ms"],
            p["postings_mb"],
        ]
        for p in points
    ]
    rec_rows = [
        [
            p["notes"],
            p["chunks"],
            *(
                f"{p['recall_ms'][f'{w}:{m}']['p50']} / {p['recall_ms'][f'{w}:{m}']['p95']}"
                for m in MODES
                for w in ("before", "after")
            ),
        ]
        for p in points
    ]
    res.markdown += [
        f"Synthetic vaults (bench/data/synth.py), fake vectors; {args.queries} queries of 2-6 words, top {WIDE} "
        "(what recall asks for); engines interleaved query by query, p50 / p95 ms. Load average "
        + ", ".join(f"{p['notes']} notes: {p['load_at_start']} -> {p['load_at_end']}" for p in points)
        + ".",
        "",
        *table(
            [
                "notes",
                "chunks",
                "matches/query",
                "FTS5 before",
                "FTS5 rowids",
                "memory",
                "same ranking",
                "postings load ms",
                "postings MB",
            ],
            rows,
        ),
        "",
        "Whole warm recall (k=10, decay on), lexical engine before / after, interleaved, p50 / p95 ms:",
        "",
        *table(["notes", "chunks", *(f"{m} {w}" for m in MODES for w in ("before", "after"))], rec_rows),
    ]
    if minilm is not None:
        res.markdown += [
            "",
            "MiniLM query embedding, p50 / p95 ms: "
            + ", ".join(
                f"{p['notes']} notes: {p['minilm_query_embed_ms']['p50']} / {p['minilm_query_embed_ms']['p95']}"
                for p in points
            ),
        ]
    return res
