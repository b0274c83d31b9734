"""Hard update order: facts stated inside real talk, paraphrased, months apart, among same-subject distractors.

The vault and questions come from data/updates_hard.py (about 80 facts, each stated 2-3 times
in notes of real LoCoMo talk). Every question is asked through the library as an agent would,
with `now` a day after the newest statement:

- `recall(query, k=5)` (the default k), hybrid, decay on (the default) and off. Columns, per
  question: both (all) statements in the top 5; newer one first (the newest statement is
  returned and ranked above every older one returned); both, newer first.
- `prefetch(query)` at the default budget: the newest statement present in the block; first
  among the statements shown (present and above every older one shown); all present; only a
  stale one; none.

Both renderings of the same notes: `frontmatter` (`created`) and `journal` (dated file names,
no frontmatter). The JSON keeps per-question detail for calibrating a fix: each statement's
rank in a deeper recall (k=20, decay on and off), relevance, cosine of its best chunk, the
cosine of the statement sentence alone, the best chunk's length and whether it holds the
sentence, the cosine between the statements' best chunks (what the same-subject rule looks
at), and what prefetch showed. `evaluate(mem, bench)` computes all of it for any index.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory.internals import internals

from .. import metrics
from ..data.updates_hard import STYLES, HardBench, Question, build_updates_hard
from ..harness import (
    Result,
    RunOptions,
    cache_key,
    chunk_sanity,
    hit_keys,
    index_report,
    k_prefix_stable,
    log,
    open_memory,
    progress_printer,
    table,
)

K = 5  # recall's default k: what an agent is handed
K_DEEP = 20  # where the statements sit when they miss the top 5
SETTINGS = (("hybrid+decay", True), ("hybrid", False))


def shown_order(paths: Sequence[str], statements: Sequence[str]) -> dict[str, bool]:
    """The columns for one ranked list (recall's hits or prefetch's entries)."""
    pos = {p: i for i, p in enumerate(paths)}
    present = [s in pos for s in statements]
    newest_first = metrics.newer_first(list(paths), list(statements))
    return {
        "all_present": all(present),
        "newest_present": present[-1],
        "newest_first": newest_first,
        "both_newest_first": all(present) and newest_first,
        "stale_only": present[-1] is False and any(present[:-1]),
        "none": not any(present),
    }


def _cosines(mem: Any, chunk_ids: Sequence[str | None]) -> list[list[float | None]]:
    """Pairwise cosine between chunks (None where a chunk is unknown)."""
    known = [c for c in chunk_ids if c]
    rows = internals(mem).catalog.chunks_by_ids(known)
    vecs = internals(mem).catalog.get_vectors([r.text_hash for r in rows.values()])
    vec = {c: vecs.get(rows[c].text_hash) if c in rows else None for c in known}
    out: list[list[float | None]] = []
    for a in chunk_ids:
        out.append(
            [
                round(float(vec[a] @ vec[b]), 4)
                if a and b and vec.get(a) is not None and vec.get(b) is not None
                else None
                for b in chunk_ids
            ]
        )
    return out


def evaluate(
    mem: Any, questions: Sequence[Question], now: dt.datetime, *, k: int = K, k_deep: int = K_DEEP
) -> dict[str, Any]:
    """Ask `questions` through `mem` (an open, indexed Memory over their vault) at `now`.

    Returns {"summary": {setting: {column: share}}, "questions": [per-question detail]}; the
    settings are "hybrid+decay", "hybrid" (decay off) and "prefetch". Nothing is written.
    """
    qvecs = internals(mem).embedder.embed([q.query for q in questions])
    svecs = internals(mem).embedder.embed([s for q in questions for s in q.fact.sentences])
    rows: list[dict[str, Any]] = []
    cols: dict[str, list[dict[str, bool]]] = {label: [] for label, _ in SETTINGS} | {"prefetch": []}
    s_at = 0
    for qi, q in enumerate(questions):
        st = list(q.statements)
        sent_cos = [round(float(qvecs[qi] @ svecs[s_at + j]), 4) for j in range(len(st))]
        s_at += len(st)
        row: dict[str, Any] = {
            "id": q.fact.id,
            "vault": q.fact.vault,
            "kind": q.fact.kind,
            "person": q.fact.person,
            "question": q.query,
            "values": list(q.fact.values),
            "answer": q.fact.answer,
            "sentences": list(q.fact.sentences),
            "dates": [d.isoformat() for d in q.fact.dates],
            "statements": st,
            "distractors": list(q.distractors),
            "age_days": [round((now - d).total_seconds() / 86400, 1) for d in q.fact.dates],
            "sentence_similarity": sent_cos,
        }
        for label, decay in SETTINGS:
            hits = mem.recall(q.query, k=k, decay=decay, now=now, touch=False)
            paths = [h.path for h in hits]
            cols[label].append(shown_order(paths, st))
            deep = mem.recall(q.query, k=k_deep, decay=decay, now=now, touch=False)

            def ask(n: int, query: str = q.query, decay: bool = decay) -> Any:
                return mem.recall(query, k=n, decay=decay, now=now, touch=False)

            # the first n of -k 1 .. -k k (the top the columns judge) are the first n of -k k_deep
            cols[label][-1]["k_prefix_stable"] = hit_keys(hits) == hit_keys(deep)[:k] and k_prefix_stable(
                deep, ask, range(1, k)
            )
            by_path = {h.path: (i + 1, h) for i, h in enumerate(deep)}
            detail = {
                "top": paths,
                "ranks_top_k": [paths.index(s) + 1 if s in paths else None for s in st],
                "ranks_deep": [by_path[s][0] if s in by_path else None for s in st],
            }
            per_statement = []
            for s, sentence in zip(st, q.fact.sentences, strict=True):
                hit = by_path.get(s, (None, None))[1]
                per_statement.append(
                    None
                    if hit is None
                    else {
                        "relevance": hit.relevance,
                        "similarity": hit.similarity,
                        "strength": hit.strength,
                        "dormant": hit.dormant,
                        "reactivated": hit.reactivated,
                        "chunk_id": hit.chunk_id,
                        "chunk_chars": len(hit.text),
                        "chunk_words": len(hit.text.split()),
                        "sentence_in_chunk": sentence in hit.text,
                    }
                )
            detail["statements"] = per_statement
            if not decay:
                detail["chunk_cosine"] = _cosines(mem, [p["chunk_id"] if p else None for p in per_statement])
            row[label] = detail
        pre = mem.prefetch(q.query, now=now, refresh_staged=False)
        shown = [e.path for e in pre.entries]
        cols["prefetch"].append(shown_order(shown, st))
        entry = {e.path: (i + 1, e) for i, e in enumerate(pre.entries)}
        row["prefetch"] = {
            "shown": shown,
            "relevant": pre.relevant,
            "chars": len(pre.block),
            "positions": [entry[s][0] if s in entry else None for s in st],
            "scores": [round(entry[s][1].score, 4) if s in entry else None for s in st],
            "merged": {e.path: list(e.merged) for e in pre.entries if e.merged},
        }
        rows.append(row)
    return {"summary": summarise(cols), "questions": rows, "columns": cols}


def summarise(cols: dict[str, list[dict[str, bool]]]) -> dict[str, dict[str, float]]:
    return {
        label: {key: round(metrics.mean(c[key] for c in cs), 4) for key in cs[0]} if cs else {}
        for label, cs in cols.items()
    }


def evaluate_bench(bench: HardBench, index_root: Path, embedder: str) -> dict[str, Any]:
    """Index each vault of `bench` (into `index_root/<vault>`) and ask all its questions."""
    cols: dict[str, list[dict[str, bool]]] = {}
    rows: list[dict[str, Any]] = []
    indexes = {}
    for vault in bench.vaults:
        with open_memory(vault, index_root / vault.name, embedder) as mem:
            rep = index_report(mem.index(progress=progress_printer(f"updates_hard {bench.style} {vault.name}")))
            rep.update(chunk_sanity(vault, rep))
            indexes[vault.name] = rep
            got = evaluate(mem, [q for q in bench.questions if q.vault == vault], bench.now)
        rows += got["questions"]
        for label, cs in got["columns"].items():
            cols.setdefault(label, []).extend(cs)
    return {"summary": summarise(cols), "questions": rows, "index": indexes}


def _diagnostics(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """How far apart the statements are for the same-subject rule, and how much talk dilutes them."""
    pair_cos = [
        c
        for q in questions
        for i, row in enumerate(q["hybrid"].get("chunk_cosine", []))
        for j, c in enumerate(row)
        if j > i and c is not None
    ]
    stmt = [s for q in questions for s in q["hybrid"]["statements"] if s]
    sent = [c for q in questions for c in q["sentence_similarity"]]
    return {
        "statement_chunk_cosine_median": round(float(np.median(pair_cos)), 4) if pair_cos else None,
        "statement_chunk_cosine_share_ge_0_5": round(metrics.mean(c >= 0.5 for c in pair_cos), 4),
        "query_to_statement_chunk_cosine_median": round(float(np.median([s["similarity"] for s in stmt])), 4)
        if stmt
        else None,
        "query_to_sentence_alone_cosine_median": round(float(np.median(sent)), 4) if sent else None,
        "statement_chunk_words_median": float(np.median([s["chunk_words"] for s in stmt])) if stmt else None,
        "sentence_in_best_chunk_share": round(metrics.mean(s["sentence_in_chunk"] for s in stmt), 4),
    }


def run(opts: RunOptions) -> Result:
    res = Result("updates_hard", opts)
    per_style: dict[str, Any] = {}
    benches: dict[str, HardBench] = {}
    for style in STYLES:
        root = opts.cache / "vaults" / cache_key("updates_hard", opts.suffix, style)
        index_root = opts.cache / "index" / cache_key("updates_hard", opts.suffix, style, opts.embedder_name)
        bench = build_updates_hard(opts.data, root, style=style, quick=opts.quick)
        benches[style] = bench
        got = evaluate_bench(bench, index_root, opts.embedder_name)
        got["diagnostics"] = _diagnostics(got["questions"])
        per_style[style] = got
        log(f"updates_hard {style}: {got['summary']}")
        log(f"updates_hard {style}: {got['diagnostics']}")
    first = benches[STYLES[0]]
    n_facts = len(first.questions)
    n_statements = sum(len(q.statements) for q in first.questions)
    res.params.update(
        facts=n_facts,
        statements=n_statements,
        notes=first.n_notes,
        vaults=len(first.vaults),
        k=K,
        k_deep=K_DEEP,
        now=first.now.isoformat(),
        seed=11,
        mode="hybrid",
        prefetch_budget="default",
        styles=list(STYLES),
        filler="LoCoMo turns, read in place",
    )
    res.results["styles"] = per_style

    recall_rows = [
        [style, label, s["all_present"], s["newest_first"], s["both_newest_first"], s["k_prefix_stable"]]
        for style, got in per_style.items()
        for label, s in got["summary"].items()
        if label != "prefetch"
    ]
    pre_rows = [
        [style, s["newest_present"], s["newest_first"], s["all_present"], s["stale_only"], s["none"]]
        for style, got in per_style.items()
        for s in [got["summary"]["prefetch"]]
    ]
    diag = per_style[STYLES[0]]["diagnostics"]
    res.markdown += [
        f"{n_facts} facts stated {n_statements} times in {len(first.vaults)} vaults ({first.n_notes} notes of real "
        "LoCoMo talk, one per day, with same-subject distractors; one fact per kind per vault); the question asks "
        "for the current value, now = a day after the newest "
        f"statement. Recall: `recall(query, k={K})`, hybrid. Newer one first: the newest statement is returned and "
        "ranked above every older one returned. k-prefix stable: share of questions whose `-k n` hits (note, "
        f"chunk, label) are the first n of `-k {K_DEEP}`'s for every n <= {K}.",
        "",
        *table(
            [
                "vault",
                "setting",
                f"both statements in top {K}",
                "newer one first",
                "both, newer first",
                "k-prefix stable",
            ],
            recall_rows,
        ),
        "",
        "The prefetch block for the same question (default budget): newest statement present; first among the "
        "statements shown (share of all questions); all present; only a stale one shown; none shown.",
        "",
        *table(["vault", "newest present", "newest first among shown", "all present", "stale only", "none"], pre_rows),
        "",
        f"Why freshness does not fire ({STYLES[0]}, decay off): the statements' best chunks have median cosine "
        f"{diag['statement_chunk_cosine_median']} to each other ({diag['statement_chunk_cosine_share_ge_0_5']:.0%} "
        f"of pairs reach the 0.5 the same-subject rule needs); the question's cosine to a statement's best chunk "
        f"is {diag['query_to_statement_chunk_cosine_median']} (median; {diag['statement_chunk_words_median']:.0f} "
        f"words of talk around it) against {diag['query_to_sentence_alone_cosine_median']} to the sentence alone.",
        "",
        "Per-question detail (ranks at k=20, relevance, cosines, chunk sizes, prefetch entries) is in the JSON.",
    ]
    if opts.quick:
        res.markdown += ["", "_Quick: 12 facts, fake embedder; the numbers say nothing about ranking._"]
    return res


__all__ = ["K", "K_DEEP", "Question", "evaluate", "evaluate_bench", "run"]
