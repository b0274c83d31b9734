"""Warm recall latency, this tree against a baseline commit, on one index in one run.

`python -m bench warm_ab --baseline COMMIT [--size 10000] [--rounds 3]`. Uses the synthetic
vault and fake-vector index that `python -m bench scale --notes SIZE` builds. Each round runs
a fresh serving process per tree, alternating baseline and this tree, each on its own copy of
the index with the caches a process fills (window vectors, query vectors, the exact-vectors
file) removed, so both start alike. A process opens the index, reconciles, warms up each
mode on one question, then asks 100 questions it has not seen, interleaving bm25, dense and
hybrid per question (load hits every mode alike): `new` latencies. It then asks the same
100 again: `repeated` latencies (answer windows, chunk rows and query vectors cached).

Fake vectors (feature hashing) stand in for the model, so these times are the pipeline's.
A new question's dense and hybrid still include the fake embedder embedding the question and
its answer windows (the `embed ms` column): with MiniLM that part is the model's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .. import metrics
from ..data.synth import sample_queries
from ..harness import REPO, Result, RunOptions, cache_key, compile_tree, log, table
from ..runners.first_run import baseline_tree

MODES = ("bm25", "dense", "hybrid")
CACHES = ("windows.sqlite", "query-vectors.sqlite", "exact-vectors.bin")

WORKER = r"""
import json, sys, time, datetime as dt
from pathlib import Path
from vault_memory import Config, Memory
from vault_memory.index import embedders
args = json.loads(sys.stdin.read())
spent = [0.0]
real = embedders.FakeEmbedder.embed
def timed(self, texts):
    t = time.perf_counter()
    try:
        return real(self, texts)
    finally:
        spent[0] += time.perf_counter() - t
embedders.FakeEmbedder.embed = timed
now = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
cfg = Config(vault=Path(args["vault"]), index_dir=Path(args["index"]), embedder="fake:384",
             read_only=True)
out = {}
with Memory(cfg) as mem:
    mem.index(progress=None)
    qs = args["queries"]
    for mode in ("bm25", "dense", "hybrid"):
        mem.recall(args["warmup"], k=10, mode=mode, decay=True, now=now, touch=False)
    for phase in ("new", "repeated"):
        lat = {m: [] for m in ("bm25", "dense", "hybrid")}
        emb = {m: 0.0 for m in lat}
        for q in qs:
            for mode in lat:
                spent[0] = 0.0
                t = time.perf_counter()
                mem.recall(q, k=10, mode=mode, decay=True, now=now, touch=False)
                lat[mode].append((time.perf_counter() - t) * 1000)
                emb[mode] += spent[0] * 1000
        out[phase] = {"ms": lat, "embed_ms_mean": {m: emb[m] / len(qs) for m in lat}}
print(json.dumps(out))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", required=True, metavar="COMMIT", help="the commit to compare with")
    parser.add_argument("--size", type=int, default=10_000, help="notes in the synthetic vault (default 10000)")
    parser.add_argument("--rounds", type=int, default=3, help="serving processes per tree, alternating (default 3)")


def _serve(tree: Path, vault: Path, index: Path, scratch: Path, queries: list[str]) -> dict[str, Any]:
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(index, scratch, ignore=shutil.ignore_patterns("writer.lock", *CACHES))
    env = dict(os.environ, PYTHONPATH=str(tree))
    payload = json.dumps({"vault": str(vault), "index": str(scratch), "queries": queries[:-1], "warmup": queries[-1]})
    proc = subprocess.run(
        [sys.executable, "-P", "-c", WORKER], input=payload, capture_output=True, text=True, env=env, cwd=tree
    )
    if proc.returncode != 0:
        raise RuntimeError(f"serving worker ({tree}) failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run(opts: RunOptions) -> Result:
    opts = dataclasses.replace(opts, embedder="fake:384")  # what the index was built with; no model runs
    res = Result("warm_ab", opts)
    size = int(opts.extra.get("size") or 10_000)
    rounds = int(opts.extra.get("rounds") or 3)
    commit = str(opts.extra["baseline"])
    vault = opts.cache / "vaults" / cache_key("synth", str(size))
    index = opts.cache / "index" / cache_key("synth", str(size), "fake:384", "scale")
    if not (index / "catalog.sqlite").is_file() or not vault.is_dir():
        raise RuntimeError(f"no fake-vector index at {index}: run `python -m bench scale --notes {size}` first")
    trees = {f"baseline {commit}": baseline_tree(commit, opts.cache), "this tree": REPO}
    for tree in trees.values():
        compile_tree(tree)
    queries = sample_queries(101)
    res.params.update(
        size=size,
        rounds=rounds,
        queries=len(queries) - 1,
        trees={k: str(v) for k, v in trees.items()},
        load_at_start=[round(x, 2) for x in os.getloadavg()],
    )
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for r in range(rounds):
        for name, tree in trees.items():
            log(f"warm_ab: round {r + 1}/{rounds}: {name}")
            scratch = opts.cache / "warm_ab" / cache_key(name, str(size))
            runs[name].append(_serve(tree, vault, index, scratch, queries))
            shutil.rmtree(scratch, ignore_errors=True)
    summary: dict[str, Any] = {}
    for name, got in runs.items():
        summary[name] = {
            phase: {
                mode: {
                    "p50": round(metrics.median([x for g in got for x in g[phase]["ms"][mode]]), 2),
                    "p95": round(metrics.p95([x for g in got for x in g[phase]["ms"][mode]]), 2),
                    "embed_ms_mean": round(sum(g[phase]["embed_ms_mean"][mode] for g in got) / len(got), 2),
                }
                for mode in MODES
            }
            for phase in ("new", "repeated")
        }
    res.results.update(summary=summary, load_at_end=[round(x, 2) for x in os.getloadavg()])
    base, ours = summary[f"baseline {commit}"], summary["this tree"]
    rows = []
    for phase in ("new", "repeated"):
        for mode in MODES:
            b, o = base[phase][mode], ours[phase][mode]
            rows.append(
                [
                    phase,
                    mode,
                    f"{b['p50']} / {b['p95']}",
                    f"{o['p50']} / {o['p95']}",
                    round(o["p50"] / b["p50"], 2) if b["p50"] else "-",
                    f"{b['embed_ms_mean']} / {o['embed_ms_mean']}",
                ]
            )
    res.markdown = [
        f"Synthetic {size:,}-note vault, fake 384-d vectors; {rounds} serving processes per tree, alternating; "
        f"{len(queries) - 1} questions x 3 modes each, interleaved. Load {res.params['load_at_start']} at start, "
        f"{res.results['load_at_end']} at end.",
        "",
        *table(
            ["questions", "mode", f"{commit} p50 / p95 ms", "this tree p50 / p95 ms", "p50 ratio", "embed ms (mean)"],
            rows,
        ),
    ]
    res.write()
    return res
