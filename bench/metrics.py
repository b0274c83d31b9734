"""Retrieval metrics, pure functions over plain values.

Conventions follow BEIR / trec_eval where they exist: graded relevance is used as the gain
(not 2**rel - 1), the discount is log2(rank + 1) with ranks starting at 1, and the ideal DCG
comes from the qrels themselves (so relevant documents missing from the run still count).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def _dedupe(ranked: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each id (a run must not count a document twice)."""
    seen: set[str] = set()
    out: list[str] = []
    for doc in ranked:
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains listed in rank order (rank 1 first)."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    """nDCG@k of one ranked list against graded qrels ({doc_id: relevance}, <= 0 = not relevant).

    Returns 0.0 when the query has no relevant documents (BEIR only evaluates judged queries,
    so callers should not pass those).
    """
    if k <= 0:
        raise ValueError("k must be positive")
    gains = [max(float(qrels.get(doc, 0.0)), 0.0) for doc in _dedupe(ranked)[:k]]
    ideal = sorted((max(float(r), 0.0) for r in qrels.values()), reverse=True)[:k]
    idcg = dcg(ideal)
    return dcg(gains) / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str] | Mapping[str, float], k: int) -> float:
    """Share of relevant ids found in the top k. A mapping is read as qrels (relevance > 0)."""
    if k <= 0:
        raise ValueError("k must be positive")
    if isinstance(relevant, Mapping):
        rel = {doc for doc, score in relevant.items() if float(score) > 0}
    else:
        rel = set(relevant)
    if not rel:
        return 0.0
    return len(rel & set(_dedupe(ranked)[:k])) / len(rel)


def evidence_recall(units: Sequence[Iterable[str]], gold: Iterable[str], k: int) -> float:
    """Share of gold turn ids contained in the top-k retrieved units.

    `units` is the ranked list of retrieved units (chunks), each given as the turn ids it
    contains. An evidence turn counts once it appears in any of the first k units.
    """
    if k <= 0:
        raise ValueError("k must be positive")
    want = set(gold)
    if not want:
        return 0.0
    found: set[str] = set()
    for unit in units[:k]:
        found.update(unit)
    return len(want & found) / len(want)


def flatten_units(units: Sequence[Iterable[str]]) -> list[str]:
    """Turn ids of ranked units in reading order, each once: a budget-fair ranked list of turns.

    Evidence recall over the first n of these compares a multi-turn unit with a single-turn
    baseline at the same amount of text.
    """
    return _dedupe(t for unit in units for t in unit)


def newer_first(ranked: Sequence[str], statements: Sequence[str]) -> bool:
    """True when the newest statement is retrieved and ranked above every older one retrieved.

    `statements` are listed oldest to newest; `ranked` is the retrieved list (already cut to k).
    Older statements that were not retrieved do not count against the newest.
    """
    if not statements:
        raise ValueError("statements must not be empty")
    order = {doc: i for i, doc in enumerate(_dedupe(ranked))}
    newest = statements[-1]
    if newest not in order:
        return False
    return all(order.get(old, math.inf) > order[newest] for old in statements[:-1])


def all_in_top_k(ranked: Sequence[str], statements: Iterable[str], k: int) -> bool:
    """True when every statement is among the first k retrieved ids."""
    top = set(_dedupe(ranked)[:k])
    return all(s in top for s in statements)


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; 0.0 for no values (so empty categories render as 0, not an error)."""
    vals = [float(v) for v in values]
    return sum(vals) / len(vals) if vals else 0.0


def percentile(values: Iterable[float], q: float) -> float:
    """q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default)."""
    vals = sorted(float(v) for v in values)
    if not vals:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    pos = (len(vals) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def median(values: Iterable[float]) -> float:
    return percentile(values, 50.0)


def p95(values: Iterable[float]) -> float:
    return percentile(values, 95.0)
