"""Experiment: dense pseudo-relevance feedback (Rocchio) on LoCoMo, replayed on the calibration dump.

The query vector q becomes q + beta * mean(top-m hybrid chunks' vectors); within a query
cos(x, q + beta*c) ranks as cos(x, q) + beta * x.c, so no query vector is needed. Fusion is
recall's (`0.5 * cos' + 0.5 * bm25' * coverage`). Needs bench/.cache/calibrate/locomo.pkl
(`python -m bench.calibrate collect`). `python -m bench.prf_experiment` writes
bench/results/prf_experiment.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory.ranking import coverage, query_terms

from . import calibrate, metrics

ROOT = Path(__file__).resolve().parent


def _mm(x: list[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    span = a.max() - a.min()
    return np.ones_like(a) if span < 1e-12 else (a - a.min()) / span


def replay(dump: list[dict[str, Any]], beta: float, m: int, alpha: float = 0.5) -> dict[str, float]:
    per: dict[int, list[float]] = {}
    for q in dump:
        items = q["items"]
        if not items:
            per.setdefault(q["category"], []).append(0.0)
            continue
        terms = query_terms(q["query"])
        lex = _mm([i["lex"] for i in items]) * np.array([coverage(terms, i["text"]) for i in items])
        cos = np.array([i["cos"] for i in items])
        fused = alpha * _mm(cos) + (1 - alpha) * lex
        if beta:
            vecs = np.vstack([i["vec"].astype("float32") for i in items])
            centroid = vecs[np.argsort(-fused)[:m]].mean(0)
            fused = alpha * _mm(cos + beta * (vecs @ centroid)) + (1 - alpha) * lex
        order = np.argsort(-fused, kind="stable")[:10]
        per.setdefault(q["category"], []).append(
            metrics.evidence_recall([items[i]["turns"] for i in order], q["evidence"], 10))
    pooled = [x for v in per.values() for x in v]
    return {"r@10": round(float(np.mean(pooled)), 4), **{f"c{c}": round(float(np.mean(v)), 4)
                                                          for c, v in sorted(per.items())}}


def main() -> None:
    dump = calibrate._load()["locomo"]
    out = {"hybrid (recall's fusion)": replay(dump, 0.0, 0)}
    for beta in (0.3, 0.5, 1.0, 2.0):
        for m in (1, 3, 5):
            out[f"prf beta={beta} m={m}"] = replay(dump, beta, m)
    (ROOT / "results" / "prf_experiment.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
