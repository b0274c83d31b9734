"""What a learned weighting of recall's own evidence would buy, left one set out (issue 38).

The read path orders candidates by hand-set rules over a few kinds of evidence: fused relevance,
BM25, the chunk's and its best answer sentence's cosines, the share of the query's words a chunk
covers, its note's names, dates, length, and the one-fact rule's moves; and two kinds the rules do
not read (stop 81): how many other candidates link to a note, and whether an answer sentence holds
what the question asks for (a number, a date, a name). This study asks whether any
linear weighting of that evidence orders the candidates better than the rules do, on text nobody
here tuned on: for every answered question of the real vaults' question files and the LongMemEval
pool's dev questions, recall's first 30 candidates are read with their features (`FEATURES`), and a
pairwise logistic model (each answer against each other candidate, every question weighing the
same) is fitted on all sets but one and judged on the one left out: its right note first and in
the top 5, against recall's own order on the same candidates.

    python -m bench reweigh [--questions DIR,DIR,...] [--sets dexter,flancian,...]

`--questions`: folders of `<vault>.questions.json` files (default: ../shared/real-vaults, then every
folder of `bench/questions/`); a file kept apart from its vault reads the vault in
../shared/real-vaults, as `bench foreign` does. Two fits: every feature, and the evidence alone
(without recall's own place, so the model must rebuild the order). Quick mode: the pool's first 12
questions and the first question folder, with the fake embedder.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory.lifecycle import recall as recall_module

from ..data import foreign as fd
from ..harness import Result, RunOptions, log, table
from ..runners import foreign

CANDIDATES = 30
#: name -> what it reads of a candidate (every one scaled within its question's list where it says so)
FEATURES = {
    "place": "−log(1 + recall's place)",
    "relevance": "fused relevance (recall's scale, best about 1)",
    "cosine": "the chunk's cosine",
    "cosine_gap": "its cosine less the list's best",
    "answer": "its answer sentence's cosine (the chunk's when none)",
    "answer_gap": "that less the list's best",
    "bm25": "its BM25 over the list's best",
    "coverage": "share of the query's words the chunk covers",
    "title": "share of the query's words in its note's title",
    "dated": "its note is dated",
    "note_length": "log of its note's characters / 10",
    "chunks": "log of its note's chunks",
    "folder_share": "share of the 30 in its folder",
    "one_fact": "in a one-fact group",
    "linked": "log(1 + how many of the other candidates' notes link to its note)",
    "answer_type": "its answer sentence holds what the question asks for: a number (how much / many / long), "
    "a date or time (when), a name (who, where, which town ...)",
}
EVIDENCE = [f for f in FEATURES if f != "place"]
HEADER = ["fitted on", "left out", "questions", "first: recall", "first: fitted", "top 5: recall", "top 5: fitted"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", default=None, help="comma list of question folders")
    parser.add_argument("--sets", default=None, help="comma list of sets (dexter,flancian,jbranchaud-til,longmemeval)")


def _folders(opts: RunOptions) -> list[Path]:
    given = [Path(p) for p in str(opts.extra.get("questions") or "").split(",") if p]
    if given:
        return given
    here = Path(__file__).resolve().parents[1] / "questions"
    extra = sorted(p for p in here.iterdir() if p.is_dir()) if here.is_dir() else []
    return [foreign.DEFAULT_VAULTS, *extra][: 1 if opts.quick else None]


#: What a question asks for, read from its words, and what an answer sentence holding it shows.
_ASKS = (
    (re.compile(r"\bhow (?:much|many|long|often|old|far)\b|\bwhat (?:percentage|price|number)\b", re.I), "number"),
    (re.compile(r"^when\b|\bwhen (?:did|do|does|was|is|will)\b|\bwhat (?:time|day|date)\b", re.I), "date"),
    (re.compile(r"\bwho\b|\bwhere\b|\bwhich (?:town|city|country|company|person|hospital|store)\b", re.I), "name"),
)
_HOLDS = {
    "number": re.compile(r"[$€£]\s?\d|\b\d+(?:[.,]\d+)?\b"),
    "date": re.compile(
        r"\b(?:\d{4}-\d{2}-\d{2}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}|"
        r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|tomorrow|\d{1,2}(?::\d{2})? ?[ap]m)\b",
        re.I,
    ),
    "name": re.compile(r"(?<=[a-z,;] )[A-Z][a-z]+|\[\[[^\]]+\]\]"),
}


def asks_for(question: str) -> str | None:
    """The kind of answer the question asks for (`_ASKS`): "number", "date", "name", or None."""
    return next((kind for pattern, kind in _ASKS if pattern.search(question)), None)


def _linked(ranked: Sequence[Any], links: dict[str, frozenset[str]]) -> list[int]:
    """For each candidate, how many other candidates' notes link to its note (by its file name)."""
    stems = [r.path.rpartition("/")[2].removesuffix(".md").lower() for r in ranked]
    return [
        sum(1 for j, o in enumerate(ranked) if j != i and o.path != r.path and stems[i] in links.get(o.node_id, ()))
        for i, r in enumerate(ranked)
    ]


def _links(ws: Any) -> dict[str, frozenset[str]]:
    """node_id -> the file names (lowercased, no folder) its wikilinks name."""
    return {
        n: frozenset(t.rpartition("/")[2].removesuffix(".md").lower() for t in targets)
        for n, _, targets in ws.catalog.link_rows()
    }


def _rows(
    got: Any, ws: Any, q: fd.Question, notes: foreign.Notes, links: dict[str, frozenset[str]] | None = None
) -> list[dict[str, Any]]:
    """Recall's first CANDIDATES candidates for `q`, each with its features and whether it is right."""
    ranked = got.ranked[:CANDIDATES]
    if not ranked:
        return []
    linked = _linked(ranked, links or {})
    wanted = asks_for(q.text)
    answer = [r.cand.answer_similarity for r in ranked]
    best_cos, best_answer = max(r.cand.similarity for r in ranked), max(answer)
    best_lex = max(r.cand.lexical for r in ranked) or 1.0
    folders = collections.Counter(r.path.rpartition("/")[0] for r in ranked)
    out = []
    for place, (r, a) in enumerate(zip(ranked, answer, strict=True)):
        c, note = r.cand, got.notes[r.node_id]
        chunks = ws.catalog.chunks_of(r.node_id)
        title = set(note.title.lower().split())
        out.append(
            {
                "place": -math.log(1 + place),
                "relevance": c.relevance,
                "cosine": c.similarity,
                "cosine_gap": c.similarity - best_cos,
                "answer": a,
                "answer_gap": a - best_answer,
                "bm25": c.lexical / best_lex,
                "coverage": c.coverage or 0.0,
                "title": len(title & c.terms) / max(1, len(c.terms)),
                "dated": float(r.state.stated.day() is not None),
                "note_length": math.log(1 + sum(len(x.body) for x in chunks)) / 10,
                "chunks": math.log(max(1, len(chunks))),
                "folder_share": folders[r.path.rpartition("/")[0]] / len(ranked),
                "one_fact": float(bool(r.same_fact)),
                "linked": math.log(1 + linked[place]),
                "answer_type": float(wanted is not None and bool(_HOLDS[wanted].search(c.answer_text or c.chunk.body))),
                "right": r.path in q.answers or notes.holds(r.path, q.answer_texts),
            }
        )
    return out


def collect(opts: RunOptions) -> dict[str, list[list[dict[str, Any]]]]:
    """Every answered question's candidates, per set (a question with none is kept: a miss either way)."""
    sets = [s for s in str(opts.extra.get("sets") or "").split(",") if s] or [*fd.REAL_VAULTS, fd.LME]
    caught: dict[str, Any] = {}
    rank_query = recall_module.rank_query

    def spy(ws: Any, *args: Any, **kw: Any) -> Any:
        caught["got"], caught["ws"] = rank_query(ws, *args, **kw), ws
        return caught["got"]

    out: dict[str, list[list[dict[str, Any]]]] = collections.defaultdict(list)
    recall_module.rank_query = spy  # recall's own call, so the candidates are exactly recall's
    try:
        for name in sets:
            folders = [None] if name == fd.LME else _folders(opts)
            for folder in folders:
                run_opts = opts if folder is None else _with(opts, vaults=folder)
                for ds in foreign.datasets(run_opts, [name]):
                    with foreign.opened(ds, run_opts) as (mem, vault, _):
                        notes = foreign.Notes(vault)
                        links: dict[str, frozenset[str]] | None = None
                        for q in ds.questions:
                            if q.answerable:
                                mem.recall(q.text, k=10, now=q.now, touch=False, before=q.before)
                                links = _links(caught["ws"]) if links is None else links
                                out[name].append(_rows(caught["got"], caught["ws"], q, notes, links))
                    log(f"reweigh {name} {folder or 'pool'}: {len(out[name])} questions")
    finally:
        recall_module.rank_query = rank_query
    return out


def _with(opts: RunOptions, **extra: Any) -> RunOptions:
    return dataclasses.replace(opts, extra={**opts.extra, **extra})


def _matrix(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[r[n] for n in names] for r in rows], dtype=float).reshape(len(rows), len(names))
    return x, np.array([r["right"] for r in rows], dtype=bool)


def fit(questions: Sequence[tuple[np.ndarray, np.ndarray]], *, l2: float = 1e-3, steps: int = 3000) -> np.ndarray:
    """Weights of a pairwise logistic model: every right candidate against every other of its
    question, each question weighing the same; plain gradient descent from zero (the loss is convex)."""
    diffs, weights = [], []
    for x, y in questions:
        if y.any() and (~y).any():
            d = (x[y][:, None, :] - x[~y][None, :, :]).reshape(-1, x.shape[1])
            diffs.append(d)
            weights.append(np.full(len(d), 1.0 / len(d)))
    if not diffs:
        return np.zeros(questions[0][0].shape[1] if questions else 0)
    d, wt, n = np.concatenate(diffs), np.concatenate(weights), len(diffs)
    w = np.zeros(d.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(np.clip(d @ w, -50, 50)))
        w -= 2.0 * (-(d * (p * wt)[:, None]).sum(0) / n + l2 * w)
    return w


def judge(questions: Sequence[tuple[np.ndarray, np.ndarray]], w: np.ndarray | None) -> tuple[float, float]:
    """Right note first, and in the top 5, ordered by `w` (None: recall's order)."""
    first = top5 = 0
    for x, y in questions:
        order = np.arange(len(y)) if w is None else np.argsort(-(x @ w), kind="stable")
        first += bool(y[order][:1].any())
        top5 += bool(y[order][:5].any())
    n = max(1, len(questions))
    return first / n, top5 / n


def run(opts: RunOptions) -> Result:
    res = Result("reweigh", opts)
    got = collect(opts)
    res.params.update(candidates=CANDIDATES, folders=[str(f) for f in _folders(opts)], features=FEATURES)
    rows = []
    weights: dict[str, Any] = {}
    for label, names in (("every feature", list(FEATURES)), ("the evidence alone", EVIDENCE)):
        m = {s: [_matrix(q, names) for q in qs] for s, qs in got.items()}
        for left in m:
            w = fit([q for s in m if s != left for q in m[s]])
            base, learned = judge(m[left], None), judge(m[left], w)
            rows.append([label, left, len(m[left]), base[0], learned[0], base[1], learned[1]])
        weights[label] = dict(zip(names, np.round(fit([q for qs in m.values() for q in qs]), 3).tolist(), strict=True))
    res.results.update(rows=rows, weights=weights, questions={s: len(q) for s, q in got.items()})
    res.markdown += [
        "Recall's order against a pairwise logistic weighting of its evidence, fitted on the other sets "
        f"(first {CANDIDATES} candidates of each answered question):",
        "",
        *table(HEADER, rows),
        "",
        "Weights fitted on every set: " + "; ".join(f"{k}: {v}" for k, v in weights.items()),
    ]
    return res
