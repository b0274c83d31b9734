"""Experiment: dense score of a chunk = max cosine over its sub-windows ("small-to-big").

MiniLM was trained on sequences of at most 128 word pieces; our chunks target 200. This
replays LoCoMo's hybrid retrieval with the chunk's dense score taken as (a) its own vector
(what recall does), (b) the best of its sub-windows (line groups of <= W tokens), (c) the
best of both, and reports evidence R@5/10/25 (chunk level) for dense and hybrid.
`python -m bench.subvector_experiment [W ...]`; results in bench/results/subvector_experiment.json.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory.config import Config
from vault_memory.memory import Memory
from vault_memory.ranking import coverage, fuse, query_terms

from . import metrics
from .datasets import build_locomo, turn_ids

ROOT = Path(__file__).resolve().parent
CACHE = ROOT / ".cache"
DATA = ROOT.parent.parent / "shared" / "bench-data"
VEC_CACHE = CACHE / "subvectors.pkl"
KS = (5, 10, 25)


def windows(text: str, limit: int, count: Any) -> list[str]:
    """Consecutive lines packed to <= limit tokens (a longer line is its own window)."""
    out: list[str] = []
    cur: list[str] = []
    n = 0
    for line in (x for x in text.split("\n") if x.strip()):
        t = count(line)
        if cur and n + t > limit:
            out.append("\n".join(cur))
            cur, n = [], 0
        cur.append(line)
        n += t
    if cur:
        out.append("\n".join(cur))
    return out


def main(limits: list[int]) -> None:
    convs = build_locomo(DATA, CACHE / "vaults" / "locomo-full")
    cache: dict[str, np.ndarray] = pickle.loads(VEC_CACHE.read_bytes()) if VEC_CACHE.exists() else {}
    variants = ["full"] + [f"{v}{w}" for w in limits for v in ("sub", "max")]
    scores: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    started = time.time()
    for conv in convs:
        cfg = Config(vault=conv.vault, index_dir=CACHE / "index" / "locomo-full-minilm" / conv.sample_id,
                     embedder="minilm", read_only=True)
        with Memory(cfg) as mem:
            mem.index()
            emb = mem.embedder
            cat = mem.catalog
            ids, full = cat.all_chunk_vectors()
            rows = cat.chunks_by_ids(ids)
            texts = [rows[c].text for c in ids]
            subs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            for w in limits:
                owner, sub_texts = [], []
                for i, t in enumerate(texts):
                    for s in windows(t, w, emb.count_tokens):
                        owner.append(i)
                        sub_texts.append(s)
                keys = [hashlib.sha256(s.encode()).hexdigest() for s in sub_texts]
                todo = sorted({k: s for k, s in zip(keys, sub_texts, strict=True) if k not in cache}.items())
                for start in range(0, len(todo), 128):
                    part = todo[start:start + 128]
                    for (k, _), v in zip(part, emb.embed([s for _, s in part]), strict=True):
                        cache[k] = v
                subs[w] = (np.array(owner), np.vstack([cache[k] for k in keys]))
            VEC_CACHE.write_bytes(pickle.dumps(cache))
            for q in conv.questions:
                if q.category not in (1, 2, 3, 4) or not q.evidence:
                    continue
                qv = emb.embed([q.question])[0]
                dense_by: dict[str, np.ndarray] = {"full": full @ qv}
                for w, (owner, mat) in subs.items():
                    best = np.full(len(ids), -1.0, dtype=np.float32)
                    np.maximum.at(best, owner, mat @ qv)
                    dense_by[f"sub{w}"] = best
                    dense_by[f"max{w}"] = np.maximum(best, dense_by["full"])
                ranked_lex = cat.lexical_search(q.question, 1000)
                lex_all = dict(ranked_lex)
                terms = query_terms(q.question)
                for name in variants:
                    d = dense_by[name]
                    top_dense = np.argsort(-d)[:100]
                    pool = sorted({c for c, _ in ranked_lex[:100]} | {ids[i] for i in top_dense})
                    pos = {c: i for i, c in enumerate(ids)}
                    dense = {c: float(d[pos[c]]) for c in pool}
                    rel = fuse("hybrid", [lex_all.get(c, 0.0) for c in pool], [dense[c] for c in pool],
                               [coverage(terms, rows[c].text) for c in pool])
                    fused = dict(zip(pool, rel.tolist(), strict=True))
                    for mode, sc in (("hybrid", fused), ("dense", dense)):
                        order = sorted(pool, key=lambda c: (-sc[c], c))[:max(KS)]
                        units = [turn_ids(rows[c].text) for c in order]
                        scores[f"{mode}:{name}"][str(q.category)].append(
                            {f"r@{k}": metrics.evidence_recall(units, q.evidence, k) for k in KS})
        print(f"{conv.sample_id} done {time.time() - started:.0f}s", file=sys.stderr, flush=True)
    out: dict[str, Any] = {"limits": limits, "date": dt.datetime.now(dt.UTC).isoformat()}
    for label, by_cat in scores.items():
        pooled = [r for rows_ in by_cat.values() for r in rows_]
        out[label] = {f"r@{k}": round(float(np.mean([r[f"r@{k}"] for r in pooled])), 4) for k in KS}
        out[label]["n"] = len(pooled)
    (ROOT / "results" / "subvector_experiment.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [64, 128])
