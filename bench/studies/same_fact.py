"""Calibrate "the same fact" (issue 21): which of recall's head are put newest first.

    python -m bench same_fact [--quick]

Collects recall's gated relevance order once per question (answer windows on, decay on, no
freshness) for the labelled real-vault questions (bench/data/realvault.py, a clone of each
vault), `updates_hard` (81 facts in real talk, frontmatter rendering, k = 5) and `updates`
(40 facts in one-line notes, k = 10 cut to 5), then replays ranking.same_fact_groups and
ranking.refill (the library's own code) over a grid: the answers' cosine (`alike`), the
relevance band, the head, and two structural clauses (the same folder; only the best
answer's group). Columns: on the real vault, the freshness moves that are right (between
notes the labels say give different values, the newer above) of all moves, and the pairs the
rule grouped that are right; on the benchmarks, newest first, all statements in the top 5,
both. The library's choice is the row marked `*`; docs/ranking.md cites this table.
"""

from __future__ import annotations

import itertools
import shutil
from typing import Any

from vault_memory.internals import internals
from vault_memory.search.ranking import (
    HEAD,
    RECALL_HIDES_DORMANT,
    RELEVANCE_BAND,
    answer_vector,
    freshness,
    rank,
    refill,
    same_fact_groups,
)

from .. import metrics
from ..data import realvault as rv
from ..data.updates import build_updates
from ..data.updates_hard import build_updates_hard
from ..harness import REPO, Result, RunOptions, cache_key, log, open_memory, table

ALIKE = (0.35, 0.4, 0.45, 0.5)
BANDS = (0.2, RELEVANCE_BAND, 1.0)
HEADS = (HEAD, 10)
CHOSEN = {"alike": 0.35, "band": RELEVANCE_BAND, "head": HEAD, "same_folder": True, "anchored": True}  # alike = weak


def _collect(mem: Any, query: str, now: Any, truth: Any) -> dict[str, Any]:
    """Recall's relevance order for one question (no freshness), with what the rule reads: dormant
    notes keep their places and marks, as recall and prefetch rank them (RECALL_HIDES_DORMANT)."""
    searcher = internals(mem).searcher()
    cands = searcher.search(query, candidates=100, windows=internals(mem).window_scorer())
    notes = internals(mem).catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    cands = [c for c in cands if c.node_id in notes]
    items = rank(
        cands,
        notes,
        model=internals(mem).decay,
        now=now,
        decay=True,
        k=max(HEADS),
        vectors=None,
        cal=internals(mem).calibration,
        hide_dormant=RECALL_HIDES_DORMANT,
    )
    vecs = searcher.vectors_of([r.cand.chunk for r in items])
    return {"items": items, "answers": [answer_vector(r, vecs) for r in items], "truth": truth}


def _order(
    q: dict[str, Any], cal: Any, *, alike: float, band: float, head: int, same_folder: bool, anchored: bool
) -> list[Any]:
    items, answers = q["items"], q["answers"]
    top = items[:head]
    groups = same_fact_groups(
        top,
        answers[:head],
        [r.path for r in top],
        cal,
        alike=alike,
        band=band,
        same_folder=same_folder,
        anchored=anchored,
    )
    return refill(list(items), groups if not anchored else groups[:1])


def _score_real(qs: list[dict[str, Any]], args: dict[str, Any], cal: Any) -> dict[str, Any]:
    moves_ok = moves = pairs_ok = pairs = 0
    for q in qs:
        case: rv.Case = q["truth"]
        out = _order(q, cal, **args)
        top = out[:5]
        for i, r in enumerate(top):
            for j in range(i + 1, len(top)):
                if top[j].relevance_rank < r.relevance_rank:  # r was moved above it
                    verdict = case.pair(r.path, top[j].path)
                    if verdict == "skip":
                        continue
                    moves += 1
                    moves_ok += verdict == "change" and freshness(r.state, r.strength) > freshness(top[j].state, 0.0)
        for r in top:
            for other in r.same_fact:
                o = next((x for x in top if x.node_id == other), None)
                if o is None or o.node_id < r.node_id:
                    continue
                verdict = case.pair(r.path, o.path)
                if verdict != "skip":
                    pairs += 1
                    pairs_ok += verdict == "change"
    return {"moves": [moves_ok, moves], "pairs": [pairs_ok, pairs]}


def _score_bench(qs: list[dict[str, Any]], args: dict[str, Any], cal: Any, k: int) -> dict[str, float]:
    nf, allk, both = [], [], []
    for q in qs:
        out = _order(q, cal, **args)
        ranked = [r.path for r in out][:k]
        st = q["truth"]
        nf.append(metrics.newer_first(ranked, st))
        a = all(s in ranked[:5] for s in st)
        allk.append(a)
        both.append(a and metrics.newer_first(ranked[:5], st))
    return {
        "newer_first": round(metrics.mean(nf), 3),
        "all_top": round(metrics.mean(allk), 3),
        "both": round(metrics.mean(both), 3),
    }


def run(opts: RunOptions) -> Result:
    res = Result("same_fact", opts)
    real: list[dict[str, Any]] = []
    cal = None
    for name, src in rv.vault_sources(REPO).items():
        if not src.is_dir():
            continue
        vault = rv.copy_vault(src, opts.cache / "same_fact" / f"{name}-now", "now")
        index = opts.cache / "same_fact" / f"{name}-now.index-{opts.embedder_name}"
        shutil.rmtree(index, ignore_errors=True)
        with open_memory(vault, index, opts.embedder_name) as mem:
            mem.index()
            cal = internals(mem).calibration
            real += [_collect(mem, c.query, rv.NOW, c) for c in rv.cases(name)[: 8 if opts.quick else None]]
    hard_root = opts.cache / "vaults" / cache_key("updates_hard", opts.suffix, "frontmatter")
    hard_index = opts.cache / "index" / cache_key("updates_hard", opts.suffix, "frontmatter", opts.embedder_name)
    bench = build_updates_hard(opts.data, hard_root, style="frontmatter", quick=opts.quick)
    hard: list[dict[str, Any]] = []
    for vault in bench.vaults:
        with open_memory(vault, hard_index / vault.name, opts.embedder_name) as mem:
            mem.index()
            hard += [_collect(mem, q.query, bench.now, list(q.statements)) for q in bench.questions if q.vault == vault]
    easy_vault = opts.cache / "vaults" / cache_key("updates", opts.suffix)
    easy_index = opts.cache / "index" / cache_key("updates", opts.suffix, opts.embedder_name)
    ub = build_updates(easy_vault, quick=opts.quick)
    with open_memory(easy_vault, easy_index, opts.embedder_name) as mem:
        mem.index()
        cal = cal or internals(mem).calibration
        easy = [_collect(mem, c.query, ub.now, list(c.statements)) for c in ub.cases]
    log(f"same_fact: {len(real)} real-vault, {len(hard)} updates_hard, {len(easy)} updates questions collected")
    assert cal is not None
    grid, rows = [], []
    for alike, band, head, folder, anchored in itertools.product(ALIKE, BANDS, HEADS, (True, False), (True, False)):
        args = {"alike": alike, "band": band, "head": head, "same_folder": folder, "anchored": anchored}
        r, h, e = _score_real(real, args, cal), _score_bench(hard, args, cal, 5), _score_bench(easy, args, cal, 10)
        grid.append({**args, "real_vault": r, "updates_hard": h, "updates": e})
    chosen = next(g for g in grid if all(g[k] == v for k, v in CHOSEN.items()))

    def one_off(g: dict[str, Any]) -> bool:  # the chosen row, or it with one setting changed
        return sum(g[k] != v for k, v in CHOSEN.items()) <= 1

    for g in [chosen, *(g for g in grid if one_off(g) and g is not chosen)]:
        r, h, e = g["real_vault"], g["updates_hard"], g["updates"]
        rows.append(
            [
                "*" if g is chosen else "",
                g["alike"],
                g["band"],
                g["head"],
                "yes" if g["same_folder"] else "no",
                "best answer's" if g["anchored"] else "every",
                f"{r['moves'][0]}/{r['moves'][1]}",
                f"{r['pairs'][0]}/{r['pairs'][1]}",
                h["newer_first"],
                h["all_top"],
                h["both"],
                e["newer_first"],
                e["all_top"],
                e["both"],
            ]
        )
    res.params.update(
        real_vault_questions=len(real), updates_hard_questions=len(hard), updates_questions=len(easy), chosen=CHOSEN
    )
    res.results["grid"] = grid
    res.markdown += [
        "Replay of ranking.same_fact_groups on recall's head (answer windows and decay on). Real vault: the "
        "labelled questions on a clone, top 5; a move or a grouped pair is right when the labels say the two "
        "give different values (a move: the newer above). updates_hard: k = 5; updates: k = 10, statements "
        "counted in the top 5. `*`: the library's rule; the other rows change one setting of it "
        "(the full grid is in the JSON).",
        "",
        *table(
            [
                "",
                "alike",
                "band",
                "head",
                "same folder",
                "groups",
                "real vault: moves right",
                "real vault: grouped pairs right",
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
