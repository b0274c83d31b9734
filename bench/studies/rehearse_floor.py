"""Calibrate which recalled notes count as used: the rehearsal floor (`rehearse_min_similarity`).

    python -m bench rehearse_floor [--quick]

Recall returns k notes; only the ones that clearly answered the query should be rehearsed
(written back as `last_accessed`), or every search writes to a person's notes. Fused
relevance cannot say "clearly": it is min-max scaled per query, so the top hit is always
about 1. Cosine has one scale. For SciFact (a hit is right when the qrels say it is relevant)
and LoCoMo (a hit is right when its text holds an evidence turn) this records, for every
hit in the top 5 by rank, its cosine to the query and whether it was right, and reports for
each candidate floor and each cap on the number of hits rehearsed: precision (share of
rehearsed hits that were right), the share of queries that rehearse anything, and how many
notes a query writes on average. The chosen default is the lowest floor whose precision,
with the default cap, reaches the target on both data sets.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..data.datasets import SCIFACT_CREATED, build_locomo, build_scifact
from ..harness import Result, RunOptions, cache_key, log, open_memory, table

FLOORS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
CAPS = (1, 2, 3)
K = 5
TARGET_PRECISION = 0.8


def _scifact(opts: RunOptions) -> list[list[tuple[float, bool]]]:
    vault = opts.cache / "vaults" / cache_key("scifact", opts.suffix)
    index_dir = opts.cache / "index" / cache_key("scifact", opts.suffix, opts.embedder_name)
    ds = build_scifact(opts.data, vault, quick=opts.quick)
    now = SCIFACT_CREATED + dt.timedelta(days=1)
    out = []
    with open_memory(vault, index_dir, opts.embedder_name) as mem:
        mem.index()
        for qid, text in ds.queries.items():
            hits = mem.recall(text, k=K, now=now, touch=False)
            rel = ds.qrels[qid]
            out.append([(h.similarity, rel.get(ds.path_to_doc.get(h.path, ""), 0) > 0) for h in hits])
    return out


def _locomo(opts: RunOptions) -> tuple[list[list[tuple[float, bool]]], list[list[tuple[float, bool]]]]:
    """(answerable questions on their own conversation, questions asked of another conversation).

    The second set is what a floor must keep from writing: a question whose answer is not in
    the vault (another conversation's question, or a category-5 question about something
    never said) still gets hits, and none of them was used.
    """
    from ..data.datasets import turn_ids

    root = opts.cache / "vaults" / cache_key("locomo", opts.suffix)
    index_root = opts.cache / "index" / cache_key("locomo", opts.suffix, opts.embedder_name)
    convs = build_locomo(opts.data, root, quick=opts.quick)
    own: list[list[tuple[float, bool]]] = []
    foreign: list[list[tuple[float, bool]]] = []
    for i, conv in enumerate(convs):
        now = conv.last_date + dt.timedelta(hours=1)
        other = convs[(i + 1) % len(convs)]
        with open_memory(conv.vault, index_root / conv.sample_id, opts.embedder_name) as mem:
            mem.index()
            for q in conv.questions:
                if q.category == 5:
                    foreign.append(
                        [
                            (h.similarity, False)
                            for h in mem.recall(q.question, k=K, now=now, touch=False, granularity="chunk")
                        ]
                    )
                    continue
                if q.category not in (1, 2, 3, 4) or not q.evidence:
                    continue
                hits = mem.recall(q.question, k=K, now=now, touch=False, granularity="chunk")
                ev = set(q.evidence)
                own.append([(h.similarity, bool(ev & set(turn_ids(h.text)))) for h in hits])
            if other is not conv:
                for q in other.questions[:150]:
                    hits = mem.recall(q.question, k=K, now=now, touch=False, granularity="chunk")
                    foreign.append([(h.similarity, False) for h in hits])
    return own, foreign


def sweep(rows: list[list[tuple[float, bool]]]) -> list[dict[str, Any]]:
    """Precision, reach and writes per query for each (floor, cap): what `recall.used_hits` would do."""
    out = []
    for cap in CAPS:
        for floor in FLOORS:
            chosen = [[ok for sim, ok in hits if sim >= floor][:cap] for hits in rows]
            n = sum(len(c) for c in chosen)
            out.append(
                {
                    "cap": cap,
                    "floor": floor,
                    "rehearsed": n,
                    "precision": round(sum(sum(c) for c in chosen) / n, 4) if n else None,
                    "right_rehearsals": round(sum(1 for c in chosen if any(c)) / len(rows), 4) if rows else 0.0,
                    "queries_rehearsing": round(sum(1 for c in chosen if c) / len(rows), 4) if rows else 0.0,
                    "writes_per_query": round(n / len(rows), 3) if rows else 0.0,
                }
            )
    return out


def run(opts: RunOptions) -> Result:
    res = Result("rehearse_floor", opts)
    own, foreign = _locomo(opts)
    data = {"scifact": _scifact(opts), "locomo": own}
    for name, rows in data.items():
        base = sum(sum(ok for _, ok in hits) for hits in rows) / max(1, sum(len(h) for h in rows))
        top1 = sum(1 for hits in rows if hits and hits[0][1]) / max(1, len(rows))
        res.results[name] = {
            "queries": len(rows),
            "share_of_top5_hits_right": round(base, 4),
            "top1_right": round(top1, 4),
            "sweep": sweep(rows),
        }
        log(f"{name}: {len(rows)} queries, top-5 hits right {base:.3f}, top-1 right {top1:.3f}")
    res.results["unanswerable"] = {"queries": len(foreign), "sweep": sweep(foreign)}
    res.markdown += [
        f"Top-{K} hits of every query, MiniLM cosine of each to its query; a hit is right when it is "
        "relevant (SciFact qrels) or holds an evidence turn (LoCoMo). Precision = share of rehearsed "
        "hits that were right; right rehearsals = share of queries whose rehearsed hits include a right "
        "one. Unanswerable: LoCoMo category-5 questions and another conversation's questions, asked of "
        f"a conversation's vault ({len(foreign)} queries): every write there is a note nobody used.",
        "",
    ]
    rows_md = []
    for i, entry in enumerate(res.results["scifact"]["sweep"]):
        lo = res.results["locomo"]["sweep"][i]
        un = res.results["unanswerable"]["sweep"][i]
        rows_md.append(
            [
                entry["cap"],
                entry["floor"],
                entry["precision"],
                entry["right_rehearsals"],
                lo["precision"],
                lo["right_rehearsals"],
                un["queries_rehearsing"],
            ]
        )
    res.markdown += table(
        [
            "cap",
            "floor",
            "SciFact precision",
            "SciFact right rehearsals",
            "LoCoMo precision",
            "LoCoMo right rehearsals",
            "unanswerable queries writing",
        ],
        rows_md,
    )
    return res
