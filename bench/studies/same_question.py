"""Calibrate "the same question" (issue 14): which of recall's top k are ordered stated later first.

    python -m bench same_question [--quick]

Replays ranking's step 3 on the top k that recall chose (answer windows on, decay on) for
`updates_hard` (81 facts stated inside real talk, k = 5, frontmatter rendering) and `updates`
(40 facts in one-line notes, k = 10 cut to 5, as its runner does), for a grid of the rule's
four numbers: answers alike (cosine of the best windows, else chunks), the relevance band,
and the "both answer the query" floor and margin. The k themselves never change (relevance
chose them), so one collection serves the whole grid. Columns: `updates_hard` newer first
and both-newer-first; `updates` newer first, all statements in the top 5, both. The
library's constants are the row marked `*`; the README's "Ranking" cites this table.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from vault_memory.ranking import (
    ANSWER_FLOOR,
    ANSWER_MARGIN,
    RELEVANCE_BAND,
    SAME_SUBJECT_COSINE,
    answer_vector,
    freshness,
    rank,
    refill,
    same_question_groups,
)

from .. import metrics
from ..data.updates import build_updates
from ..data.updates_hard import build_updates_hard
from ..harness import Result, RunOptions, cache_key, log, open_memory, table

ALIKE = (0.45, 0.5, 0.55)
BANDS = (0.3, 0.35, 0.4)
FLOORS = (0.35, 0.4, None)  # None: no "both answer" clause
MARGINS = (0.05, 0.1, 1.0)


def _collect(mem: Any, query: str, statements: Sequence[str], now: Any, k: int) -> dict[str, Any]:
    """Recall's top k for one question, with what the rule looks at."""
    cands = mem.searcher().search(query, candidates=100, windows=mem.window_scorer())
    notes = mem.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    head = cands[: 4 * k + 20]
    vectors = mem.catalog.get_vectors([c.chunk.text_hash for c in head])
    # relevance order of the k (decay gate applied, no reordering): the rule replays on it
    top = rank(cands, notes, model=mem.decay, now=now, decay=True, k=k, vectors=None)
    return {
        "statements": list(statements),
        "paths": [notes[r.node_id].path for r in top],
        "relevance": [r.score for r in top],
        "answers": [r.cand.answer_similarity for r in top],
        "vectors": np.vstack([answer_vector(r, vectors) for r in top]).astype(np.float32) if top else None,
        "fresh": [freshness(r.state, r.strength) for r in top],
    }


def _order(q: dict[str, Any], alike: float, band: float, floor: float | None, margin: float) -> list[str]:
    if q["vectors"] is None:
        return []
    groups = same_question_groups(
        q["vectors"],
        q["relevance"],
        q["paths"],
        alike,
        band,
        None,
        q["answers"] if floor is not None else None,
        floor or 0.0,
        margin,
    )
    return [q["paths"][i] for i in refill(groups, q["fresh"], len(q["paths"]))]


def _score(qs: list[dict[str, Any]], cut: int, args: tuple[float, float, float | None, float]) -> dict[str, float]:
    nf, allk, both = [], [], []
    for q in qs:
        ranked = _order(q, *args)
        st = q["statements"]
        nf.append(metrics.newer_first(ranked, st))
        a = all(s in ranked[:cut] for s in st)
        allk.append(a)
        both.append(a and metrics.newer_first(ranked[:cut], st))
    return {
        "newer_first": round(metrics.mean(nf), 3),
        "all_top": round(metrics.mean(allk), 3),
        "both": round(metrics.mean(both), 3),
    }


def run(opts: RunOptions) -> Result:
    res = Result("same_question", opts)
    hard_root = opts.cache / "vaults" / cache_key("updates_hard", opts.suffix, "frontmatter")
    hard_index = opts.cache / "index" / cache_key("updates_hard", opts.suffix, "frontmatter", opts.embedder_name)
    bench = build_updates_hard(opts.data, hard_root, style="frontmatter", quick=opts.quick)
    hard: list[dict[str, Any]] = []
    for vault in bench.vaults:
        with open_memory(vault, hard_index / vault.name, opts.embedder_name) as mem:
            mem.index()
            hard += [_collect(mem, q.query, q.statements, bench.now, 5) for q in bench.questions if q.vault == vault]
    easy_vault = opts.cache / "vaults" / cache_key("updates", opts.suffix)
    easy_index = opts.cache / "index" / cache_key("updates", opts.suffix, opts.embedder_name)
    ub = build_updates(easy_vault, quick=opts.quick)
    with open_memory(easy_vault, easy_index, opts.embedder_name) as mem:
        mem.index()
        easy = [_collect(mem, c.query, c.statements, ub.now, 10) for c in ub.cases]
    log(f"same_question: {len(hard)} updates_hard and {len(easy)} updates questions collected")
    chosen = (SAME_SUBJECT_COSINE, RELEVANCE_BAND, ANSWER_FLOOR, ANSWER_MARGIN)
    rows, grid = [], []
    for alike, band, floor, margin in itertools.product(ALIKE, BANDS, FLOORS, MARGINS):
        if floor is None and margin != MARGINS[0]:
            continue  # the margin belongs to the floor's clause
        args = (alike, band, floor, margin)
        h, e = _score(hard, 5, args), _score(easy, 5, args)
        mark = "*" if args == chosen else ""
        grid.append({"alike": alike, "band": band, "floor": floor, "margin": margin, "updates_hard": h, "updates": e})
        rows.append(
            [
                mark,
                alike,
                band,
                "-" if floor is None else floor,
                "-" if floor is None else margin,
                h["newer_first"],
                h["all_top"],
                h["both"],
                e["newer_first"],
                e["all_top"],
                e["both"],
            ]
        )
    res.params.update(
        updates_hard_questions=len(hard),
        updates_questions=len(easy),
        k_hard=5,
        k_updates=10,
        chosen=dict(zip(("alike", "band", "floor", "margin"), chosen, strict=True)),
    )
    res.results["grid"] = grid
    res.markdown += [
        "Replay of ranking's same-question rule on recall's top k (answer windows and decay on). "
        "updates_hard: k = 5; updates: k = 10, statements counted in the top 5. `*`: the library's constants.",
        "",
        *table(
            [
                "",
                "alike",
                "band",
                "floor",
                "margin",
                "hard: newer first",
                "hard: all in top 5",
                "hard: both",
                "updates: newer first",
                "updates: all in top 5",
                "updates: both",
            ],
            rows,
        ),
    ]
    if opts.quick:
        res.markdown += ["", "_Quick: small slices, fake embedder; the numbers say nothing about ranking._"]
    return res


__all__ = ["run"]
