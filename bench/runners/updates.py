"""Update order: does recall return a fact's whole history and put the newest statement first?

Metrics per query (see updates.py for the data): newer-first among the top 10, recall of all
statements in the top 5, and "both" (all statements in the top 5 and the newest first).
The target (docs/benchmarks.md) is both at once: recall >= 0.95 and newer-first >= 0.90.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from .. import metrics
from ..data.updates import build_updates
from ..harness import (
    Result,
    RunOptions,
    cache_key,
    index_report,
    k_prefix_stable,
    log,
    open_memory,
    progress_printer,
    table,
)

MODES = ("bm25", "dense", "hybrid")
K_RETRIEVE = 10
K_RECALL = 5


AGE_BUCKETS = ("<= 61 d", "62-181 d", "> 181 d")  # age at query time (now = newest statement + 1 day)


def _age_bucket(days: int) -> str:
    return AGE_BUCKETS[0] if days <= 61 else AGE_BUCKETS[1] if days <= 181 else AGE_BUCKETS[2]


def run(opts: RunOptions) -> Result:
    res = Result("updates", opts)
    vault = opts.cache / "vaults" / cache_key("updates", opts.suffix)
    index_dir = opts.cache / "index" / cache_key("updates", opts.suffix, opts.embedder_name)
    bench = build_updates(vault, quick=opts.quick)
    res.params.update(
        subjects=len(bench.cases),
        notes=bench.n_notes,
        k_retrieve=K_RETRIEVE,
        k_recall=K_RECALL,
        granularity="note",
        now=bench.now.isoformat(),
        seed=7,
        vault=str(vault),
    )
    chance = metrics.mean(1 / len(c.statements) for c in bench.cases)
    summary: dict[str, Any] = {}
    # label -> age bucket of the newest statement -> [(newer_first, all_in_top, both)]
    buckets: dict[str, dict[str, list[tuple[bool, bool, bool]]]] = defaultdict(lambda: defaultdict(list))
    per_case: dict[str, Any] = {}
    with open_memory(vault, index_dir, opts.embedder_name) as mem:
        res.results["index"] = index_report(mem.index(progress=progress_printer("updates index")))
        for decay in (False, True):
            for mode in MODES:
                label = f"{mode}{'+decay' if decay else ''}"
                nf: list[bool] = []
                allk: list[bool] = []
                both: list[bool] = []
                lat: list[float] = []
                newest: list[bool] = []
                stable: list[bool] = []
                for case in bench.cases:
                    t = time.perf_counter()
                    hits = mem.recall(
                        case.query, k=K_RETRIEVE, mode=mode, decay=decay, now=bench.now, touch=False, granularity="note"
                    )
                    lat.append((time.perf_counter() - t) * 1000)

                    def ask(k: int, query: str = case.query, mode: str = mode, decay: bool = decay) -> Any:
                        return mem.recall(
                            query, k=k, mode=mode, decay=decay, now=bench.now, touch=False, granularity="note"
                        )

                    stable.append(k_prefix_stable(hits, ask, range(1, K_RETRIEVE)))
                    ranked = [h.path for h in hits]
                    a = metrics.newer_first(ranked[:K_RETRIEVE], case.statements)
                    b = metrics.all_in_top_k(ranked, case.statements, K_RECALL)
                    c = b and metrics.newer_first(ranked[:K_RECALL], case.statements)
                    nf.append(a)
                    # The truth is the newest statement: is it in the top K_RECALL (forgetting may
                    # hide older, never-used versions, which `recall_all` counts as misses)?
                    newest.append(case.statements[-1] in ranked[:K_RECALL])
                    allk.append(b)
                    both.append(c)
                    buckets[label][_age_bucket((bench.now - case.dates[-1]).days)].append((a, b, c))
                    rank = {p: i + 1 for i, p in enumerate(ranked)}
                    per_case.setdefault(case.subject, {"query": case.query, "statements": len(case.statements)})[
                        label
                    ] = [rank.get(p) for p in case.statements]
                summary[label] = {
                    "newer_first": round(metrics.mean(nf), 4),
                    f"recall_all@{K_RECALL}": round(metrics.mean(allk), 4),
                    "both": round(metrics.mean(both), 4),
                    f"newest_in_top{K_RECALL}": round(metrics.mean(newest), 4),
                    "k_prefix_stable": [sum(stable), len(stable)],
                    "latency_ms_median": round(metrics.median(lat), 2),
                }
                log(f"updates: {label}: {summary[label]}")
    by_age = {
        label: {
            bucket: {
                "n": len(v),
                "newer_first": round(metrics.mean(x[0] for x in v), 4),
                f"recall_all@{K_RECALL}": round(metrics.mean(x[1] for x in v), 4),
                "both": round(metrics.mean(x[2] for x in v), 4),
            }
            for bucket, v in sorted(per.items(), key=lambda kv: AGE_BUCKETS.index(kv[0]))
        }
        for label, per in buckets.items()
    }
    res.results.update(settings=summary, by_newest_age=by_age, chance_newer_first=round(chance, 4), per_case=per_case)
    age_rows = [
        [label, bucket, v["n"], v["newer_first"], v[f"recall_all@{K_RECALL}"], v["both"]]
        for label, per in by_age.items()
        for bucket, v in per.items()
    ]
    rows = [
        [
            label,
            s["newer_first"],
            s[f"recall_all@{K_RECALL}"],
            s["both"],
            s[f"newest_in_top{K_RECALL}"],
            "{}/{}".format(*s["k_prefix_stable"]),
        ]
        for label, s in summary.items()
    ]
    res.markdown += [
        f"{len(bench.cases)} subjects, each stated 2-4 times months apart ({bench.n_notes} notes with distractors); "
        f"the query's answer is the newest statement. Newer-first: newest ranked above every older statement "
        f"retrieved in the top {K_RETRIEVE}. Chance newer-first if all statements tie: {chance:.3f}. "
        "Target: recall >= 0.95 and newer-first >= 0.90 at once. k-prefix stable: the queries whose "
        f"`-k n` hits are the first n of `-k {K_RETRIEVE}`'s for every n < {K_RETRIEVE} (note, chunk and label).",
        "",
        *table(
            [
                "setting",
                "newer-first",
                f"all in top {K_RECALL}",
                "both",
                f"newest in top {K_RECALL}",
                "k-prefix stable",
            ],
            rows,
        ),
        "",
        "By the age of the newest statement at query time (facts stated long ago are still true):",
        "",
        *table(["setting", "newest statement age", "n", "newer-first", f"all in top {K_RECALL}", "both"], age_rows),
        "",
        "`per_case` in the JSON lists each statement's rank (oldest to newest) per setting.",
    ]
    return res
