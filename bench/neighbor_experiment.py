"""Experiment: let a chunk borrow relevance from its neighbours in the same note.

score' = fused + lam * max(fused of chunk idx-1, idx+1 of the same note, when in the pool),
replayed on the calibration dumps (`python -m bench.calibrate collect` first) for LoCoMo
(evidence R@10, chunk level) and SciFact (nDCG@10, note = best chunk). Conversation turns are
local, so LoCoMo gains; abstracts are not, so SciFact loses: not adopted.
`python -m bench.neighbor_experiment` writes bench/results/neighbor_experiment.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory.ranking import coverage, query_terms

from . import calibrate, metrics

ROOT = Path(__file__).resolve().parent
LAMBDAS = (0.0, 0.1, 0.2, 0.3, 0.5)


def _mm(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    span = a.max() - a.min()
    return np.ones_like(a) if span < 1e-12 else (a - a.min()) / span


def scores(q: dict[str, Any], lam: float, mode: str = "hybrid") -> np.ndarray:
    items = q["items"]
    terms = query_terms(q["query"])
    lex = _mm([i["lex"] for i in items])
    cos = _mm([i["cos"] for i in items])
    fused = lex if mode == "bm25" else 0.5 * cos + 0.5 * lex * np.array([coverage(terms, i["text"]) for i in items])
    pos = {it["chunk"]: j for j, it in enumerate(items)}
    out = fused.copy()
    for j, it in enumerate(items):
        node, idx = it["chunk"].rsplit("#", 1)
        near = [fused[pos[f"{node}#{int(idx) + d}"]] for d in (-1, 1) if f"{node}#{int(idx) + d}" in pos]
        if near and lam:
            out[j] += lam * max(near)
    return out


def main() -> None:
    loaded = calibrate._load()
    out: dict[str, Any] = {"locomo_r@10": {}, "scifact_ndcg@10": {}}
    for mode in ("hybrid", "bm25"):
        for lam in LAMBDAS:
            rs = []
            for q in loaded["locomo"]:
                if not q["items"]:
                    rs.append(0.0)
                    continue
                order = np.argsort(-scores(q, lam, mode), kind="stable")[:10]
                rs.append(metrics.evidence_recall([q["items"][i]["turns"] for i in order], q["evidence"], 10))
            out["locomo_r@10"][f"{mode} lam={lam}"] = round(float(np.mean(rs)), 4)
    for lam in LAMBDAS:
        nd = []
        for q in loaded.get("scifact", []):
            if not q["items"]:
                nd.append(0.0)
                continue
            docs: list[str] = []
            seen: set[str] = set()
            for i in np.argsort(-scores(q, lam), kind="stable"):
                it = q["items"][i]
                if it["node"] not in seen:
                    seen.add(it["node"])
                    docs.append(it["doc"])
            nd.append(metrics.ndcg_at_k(docs, q["qrels"], 10))
        out["scifact_ndcg@10"][f"hybrid lam={lam}"] = round(float(np.mean(nd)), 4) if nd else None
    (ROOT / "results" / "neighbor_experiment.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
