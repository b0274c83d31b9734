"""Calibrating prefetch's minimum score on LoCoMo (real multi-session chats).

Prefetch admits a memory when the cosine of the turn to it (scaled by freshness) reaches
`prefetch_min_score`. For a threshold t this reports, per embedder:

- `hit`: share of questions for which at least one evidence turn scores >= t (what the block
  should contain),
- `noise`: mean number of non-evidence turns of the same conversation scoring >= t,
- `false_block_other_chat`: share of another conversation's questions that would get a
  non-empty block (a hard case: all LoCoMo chats are about family, hobbies and work),
- `false_block_generic`: the same for generic chat and coding turns ("how do I exit vim?").

    python -m bench prefetch_threshold [--conversations 2] [--embedders minilm,fake] [--quick]

The turns of a conversation are the memories. Quick mode: the fake embedder only.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from vault_memory.index.embedders import make_embedder

from ..harness import Result, RunOptions, log, table

THRESHOLDS = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]
GENERIC = [
    "hello, how are you today?",
    "thanks, that's all for now",
    "can you write a python function that reverses a list?",
    "what's 17 times 23?",
    "fix the typo in this sentence: teh cat sat",
    "summarise the following article for me",
    "translate 'good morning' into French",
    "what time is it in Tokyo?",
    "explain how a hash map works",
    "ok",
    "please continue",
    "write a haiku about autumn",
    "how do I exit vim?",
    "what does HTTP 418 mean?",
]


def turns_of(conv: dict[str, Any]) -> list[tuple[str, str]]:
    c = conv["conversation"]
    out = []
    for key in sorted(
        (k for k in c if k.startswith("session_") and not k.endswith("date_time")), key=lambda k: int(k.split("_")[1])
    ):
        for t in c[key]:
            out.append((t["dia_id"], f"{t['speaker']}: {t['text']}"))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conversations", type=int, default=None, help="LoCoMo conversations (2)")
    parser.add_argument("--embedders", default=None, help='comma list ("minilm,fake"; "fake" with --quick)')


def run(opts: RunOptions) -> Result:
    res = Result("prefetch_threshold", opts)
    n_conv = int(opts.extra.get("conversations") or 2)
    specs = str(opts.extra.get("embedders") or ("fake" if opts.quick else "minilm,fake")).split(",")
    data = json.loads((opts.data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[:n_conv]
    res.params.update(conversations=len(data), embedders=specs, thresholds=THRESHOLDS, embedder=",".join(specs))
    results: dict[str, Any] = {"thresholds": THRESHOLDS, "conversations": len(data), "embedders": {}}
    for spec in specs:
        emb = make_embedder(spec)
        t0 = time.perf_counter()
        per: dict[float, dict[str, list[float]]] = {
            t: {"hit": [], "noise": [], "false": [], "generic": []} for t in THRESHOLDS
        }
        for i, conv in enumerate(data):
            turns = turns_of(conv)
            ids = [d for d, _ in turns]
            mat = emb.embed([t for _, t in turns])
            qa = [q for q in conv["qa"] if q.get("evidence") and "answer" in q]
            qv = emb.embed([q["question"] for q in qa])
            sims = qv @ mat.T
            others = [q["question"] for j, c in enumerate(data) if j != i for q in c["qa"][:60]]
            ov = emb.embed(others) @ mat.T
            gv = emb.embed(GENERIC) @ mat.T
            for t in THRESHOLDS:
                for row, q in zip(sims, qa, strict=True):
                    ev = {e for e in q["evidence"] if e in ids}
                    if not ev:
                        continue
                    evs = [row[ids.index(e)] for e in ev]
                    per[t]["hit"].append(float(max(evs) >= t))
                    noise = sum(1 for d, s in zip(ids, row, strict=True) if d not in ev and s >= t)
                    per[t]["noise"].append(float(noise))
                per[t]["false"].extend(float(r.max() >= t) for r in ov)
                per[t]["generic"].extend(float(r.max() >= t) for r in gv)
        results["embedders"][spec] = {
            str(t): {
                "hit": round(float(np.mean(v["hit"])), 3),
                "noise": round(float(np.mean(v["noise"])), 2),
                "false_block_other_chat": round(float(np.mean(v["false"])), 3),
                "false_block_generic": round(float(np.mean(v["generic"])), 3),
            }
            for t, v in per.items()
        }
        results["embedders"][spec]["seconds"] = round(time.perf_counter() - t0, 1)
        for t in THRESHOLDS:
            log(f"{spec} {t} {results['embedders'][spec][str(t)]}")
    res.results.update(results)
    for spec in specs:
        rows = [
            [
                t,
                *(
                    results["embedders"][spec][str(t)][k]
                    for k in ("hit", "noise", "false_block_other_chat", "false_block_generic")
                ),
            ]
            for t in THRESHOLDS
        ]
        res.markdown += [
            f"{spec}:",
            "",
            *table(["threshold", "hit", "noise", "false block (other chat)", "false block (generic)"], rows),
            "",
        ]
    return res
