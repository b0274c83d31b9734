"""SciFact (BEIR): nDCG@10 and Recall@100 at note level for bm25, dense and hybrid recall."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from .. import metrics
from ..data.datasets import SCIFACT_CREATED, build_scifact
from ..harness import (
    Result,
    RunOptions,
    cache_key,
    chunk_sanity,
    index_report,
    k_prefix_stable,
    log,
    open_memory,
    progress_printer,
    table,
)

MODES = ("bm25", "dense", "hybrid")
K = 100
#: the k whose hits must be the first k of -k K's (issue 21: k never changes the order)
PREFIX_KS = (1, 5, 10, 25)

# From the data README (test split); printed beside ours so the table is self-explaining.
PUBLISHED = (
    ("BM25 flat (Lucene, title+text)", 0.679, 0.925, "Anserini BEIR regressions"),
    ("BM25 multifield (BEIR paper)", 0.665, 0.908, "BEIR paper / Anserini"),
    ("all-MiniLM-L6-v2 (dense only)", 0.645, 0.925, "MTEB paper results"),
    ("bge-small-en-v1.5 (dense only)", 0.713, 0.945, "MTEB results"),
)


def run(opts: RunOptions) -> Result:
    res = Result("scifact", opts)
    vault = opts.cache / "vaults" / cache_key("scifact", opts.suffix)
    index_dir = opts.cache / "index" / cache_key("scifact", opts.suffix, opts.embedder_name)
    t0 = time.perf_counter()
    ds = build_scifact(opts.data, vault, quick=opts.quick)
    log(f"scifact: {ds.n_docs} notes ({ds.sync}), {len(ds.queries)} queries in {time.perf_counter() - t0:.1f}s")
    now = SCIFACT_CREATED + dt.timedelta(days=1)
    res.params.update(
        k=K,
        granularity="note",
        decay=False,
        notes=ds.n_docs,
        queries=len(ds.queries),
        vault=str(vault),
        index_dir=str(index_dir),
    )

    per_mode: dict[str, Any] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    with open_memory(vault, index_dir, opts.embedder_name) as mem:
        rep = mem.index(progress=progress_printer("scifact index"))
        res.results["index"] = index_report(rep)
        res.results["index"].update(chunk_sanity(vault, res.results["index"]))
        log(f"scifact: index {res.results['index']}")
        for mode in MODES:
            ndcg: list[float] = []
            rec: list[float] = []
            lat: list[float] = []
            stable: list[bool] = []
            for qid, text in ds.queries.items():
                t = time.perf_counter()
                hits = mem.recall(text, k=K, mode=mode, decay=False, now=now, touch=False, granularity="note")
                lat.append((time.perf_counter() - t) * 1000)

                def ask(k: int, text: str = text, mode: str = mode) -> Any:
                    return mem.recall(text, k=k, mode=mode, decay=False, now=now, touch=False, granularity="note")

                stable.append(k_prefix_stable(hits, ask, PREFIX_KS))
                ranked = [ds.path_to_doc.get(h.path, h.path) for h in hits]
                qrels = ds.qrels[qid]
                n10 = metrics.ndcg_at_k(ranked, qrels, 10)
                r100 = metrics.recall_at_k(ranked, qrels, K)
                ndcg.append(n10)
                rec.append(r100)
                per_query.setdefault(qid, {})[mode] = {"ndcg@10": round(n10, 4), "recall@100": round(r100, 4)}
            per_mode[mode] = {
                "ndcg@10": round(metrics.mean(ndcg), 4),
                "recall@100": round(metrics.mean(rec), 4),
                "k_prefix_stable": [sum(stable), len(stable)],
                "latency_ms_median": round(metrics.median(lat), 2),
                "latency_ms_p95": round(metrics.p95(lat), 2),
            }
            log(f"scifact: {mode}: {per_mode[mode]}")
    res.results["modes"] = per_mode
    res.results["per_query"] = per_query

    rows: list[list[Any]] = [
        [
            f"vault-memory {mode} ({opts.embedder_name})",
            v["ndcg@10"],
            v["recall@100"],
            f"{v['latency_ms_median']:.1f} / {v['latency_ms_p95']:.1f}",
            "{}/{}".format(*v["k_prefix_stable"]),
            "this run",
        ]
        for mode, v in per_mode.items()
    ]
    rows += [[name, n, r, "", "", src] for name, n, r, src in PUBLISHED]
    res.markdown += [
        f"SciFact test split, {len(ds.queries)} queries over {ds.n_docs} notes, note level "
        "(a note's score is its best chunk), top-100 per query, decay off. k-prefix stable: the queries whose "
        f"`-k n` hits are the first n of `-k {K}`'s for n in {', '.join(map(str, PREFIX_KS))}.",
        "",
        *table(["system", "nDCG@10", "Recall@100", "ms p50 / p95", "k-prefix stable", "source"], rows),
    ]
    if opts.quick:
        res.markdown += ["", "_Quick slice: numbers are not comparable with the published ones._"]
    return res
