"""Warm prefetch latency on synthetic vaults, and MCP round-trip latency of `recall`.

    python -m bench prefetch_latency [--sizes 1000,10000] [--minilm-sizes 1000] [--queries 200] [--quick]

For each size: a vault of notes of ~150 words (plus 20 staged memories) is generated and
indexed with the FAKE embedder (indexing 10k notes with MiniLM takes 15-20 minutes here;
the fake one takes seconds and gives the same index shape, only 256-d instead of 384-d
vectors). Then, in one warm process: p50/p95 of `Memory.prefetch` (default budget, staged
refresh on, so the staging folder is read and embedded every turn) over topical turns
(10 consecutive words of a note, so the block is non-empty) and random-word turns.

The real embedder's query side is measured separately (MiniLM embedding one turn, warm),
and for `--minilm-sizes` the whole thing is also run on an index built with MiniLM, so the
end-to-end number is measured, not added up. The MCP round trip is measured against
`vault-memory mcp` as a subprocess over stdio on the largest fake vault.

Caches vaults and indexes under <cache>/prefetch. Quick mode: 200 notes, fake embedder only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ..data.synth import WORDS
from ..harness import Result, RunOptions, log, table

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
GEN_VERSION = "1"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "p50_ms": round(pct(ms, 0.5), 2),
        "p95_ms": round(pct(ms, 0.95), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
        "max_ms": round(max(ms), 2),
        "n": len(ms),
    }


def generate(root: Path, n: int, seed: int = 7) -> list[str]:
    """n notes of ~150 words with created dates over two years, and 20 staged memories; returns bodies."""
    marker = root / ".generated"
    rng = random.Random(seed)
    bodies = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(120, 180))]
        bodies.append(" ".join(words))
    if marker.is_file() and marker.read_text() == f"{GEN_VERSION}:{n}:{seed}":
        return bodies
    shutil.rmtree(root, ignore_errors=True)
    for i, body in enumerate(bodies):
        created = NOW - dt.timedelta(days=rng.randint(0, 730))
        tier = "short" if rng.random() < 0.2 else "long"
        title = " ".join(body.split()[:3]).capitalize()
        path = root / f"notes/{i // 500:03d}/note-{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nnode_id: n{i:07d}\ncreated: {created.isoformat()}\ntier: {tier}\n---\n# {title}\n\n{body}\n",
            encoding="utf-8",
        )
    staged = root / "Memory" / "Staged"
    staged.mkdir(parents=True, exist_ok=True)
    for j in range(20):
        text = " ".join(rng.choice(WORDS) for _ in range(20))
        (staged / f"staged-{j:02d}.md").write_text(
            f"---\nnode_id: s{j:07d}\nstatus: staged\ncreated: {(NOW - dt.timedelta(days=2)).isoformat()}\n"
            f"expires: {(NOW + dt.timedelta(days=5)).isoformat()}\n---\n# Staged {j}\n\n{text}\n",
            encoding="utf-8",
        )
    marker.write_text(f"{GEN_VERSION}:{n}:{seed}")
    return bodies


def turns(bodies: list[str], count: int, seed: int = 11) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        if i % 2 == 0:
            words = rng.choice(bodies).split()
            start = rng.randrange(0, max(1, len(words) - 10))
            out.append(("topical", " ".join(words[start : start + 10])))
        else:
            out.append(("random", " ".join(rng.sample(WORDS, rng.randint(3, 8)))))
    return out


def open_mem(vault: Path, index: Path, embedder: str) -> Any:
    from vault_memory import Config, Memory

    return Memory(Config(vault=vault, index_dir=index, embedder=embedder), clock=lambda: NOW)


def measure_prefetch(vault: Path, index: Path, embedder: str, bodies: list[str], queries: int) -> dict[str, Any]:
    with open_mem(vault, index, embedder) as mem:
        started = time.perf_counter()
        report = mem.index(progress=None)
        build = time.perf_counter() - started
        log(f"  index ({embedder}): {report.notes} notes, {report.chunks} chunks, {build:.1f} s")
        qs = turns(bodies, queries)
        for _, q in qs[:10]:  # warm-up: model load, caches, Chroma's HNSW in memory
            mem.prefetch(q, now=NOW, refresh_staged=False)
        times: dict[str, list[float]] = {"topical": [], "random": []}
        nonempty = {"topical": 0, "random": 0}
        chars = []
        for kind, q in qs:
            t0 = time.perf_counter()
            result = mem.prefetch(q, now=NOW)
            times[kind].append(time.perf_counter() - t0)
            if result.block:
                nonempty[kind] += 1
                chars.append(len(result.block))
        recall_times = []
        for _, q in qs[:50]:
            t0 = time.perf_counter()
            mem.recall(q, k=5, now=NOW, touch=False)
            recall_times.append(time.perf_counter() - t0)
    every = times["topical"] + times["random"]
    return {
        "embedder": embedder,
        "notes": report.notes,
        "chunks": report.chunks,
        "index_build_s": round(build, 1),
        "prefetch": summary(every),
        "prefetch_topical": summary(times["topical"]),
        "prefetch_random": summary(times["random"]),
        "nonempty_share": {k: round(v / max(1, len(times[k])), 2) for k, v in nonempty.items()},
        "mean_block_chars": round(statistics.fmean(chars), 1) if chars else 0,
        "recall_k5_no_touch": summary(recall_times),
    }


def measure_minilm_query(bodies: list[str], n: int = 100) -> dict[str, Any]:
    from vault_memory.index.embedders import make_embedder

    emb = make_embedder("minilm")
    qs = [q for _, q in turns(bodies, n, seed=5)]
    emb.embed(qs[:4])
    times = []
    for q in qs:
        t0 = time.perf_counter()
        emb.embed([q])
        times.append(time.perf_counter() - t0)
    return summary(times)


def measure_mcp(vault: Path, index: Path, bodies: list[str], calls: int) -> dict[str, Any]:
    import anyio
    from mcp import Client, StdioServerParameters

    exe = Path(sys.executable).parent / "vault-memory"
    cmd, prefix = (str(exe), []) if exe.exists() else (sys.executable, ["-m", "vault_memory"])
    params = StdioServerParameters(
        command=cmd, args=[*prefix, "--vault", str(vault), "--index-dir", str(index), "--embedder", "fake", "mcp"]
    )
    qs = [q for _, q in turns(bodies, calls, seed=13)]
    out: dict[str, Any] = {}

    async def run() -> None:
        t0 = time.perf_counter()
        async with Client(params, read_timeout_seconds=600) as client:
            await client.call_tool("status", {})
            out["startup_to_first_answer_s"] = round(time.perf_counter() - t0, 2)
            await client.call_tool("recall", {"query": qs[0]})  # waits for the start-up reconcile
            out["startup_reconcile_done_s"] = round(time.perf_counter() - t0, 2)
            for name, args in (
                ("recall", lambda q: {"query": q, "k": 5}),
                ("prefetch", lambda q: {"text": q, "budget": 1200}),
            ):
                times = []
                for q in qs:
                    s = time.perf_counter()
                    r = await client.call_tool(name, args(q))
                    times.append(time.perf_counter() - s)
                    assert not r.is_error, r.content
                out[name] = summary(times)

    anyio.run(run)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default=None, help="vault sizes, fake embedder (1000,10000; 200 with --quick)")
    parser.add_argument(
        "--minilm-sizes", default=None, help="also build these with MiniLM (1000; '' to skip, as --quick does)"
    )
    parser.add_argument("--queries", type=int, default=None, help="turns per size (200; 20 with --quick)")
    parser.add_argument("--mcp-calls", type=int, default=None, help="MCP round trips per tool (50; 5 with --quick)")


def run(opts: RunOptions) -> Result:
    res = Result("prefetch_latency", opts)
    ex = opts.extra
    sizes = [int(s) for s in str(ex.get("sizes") or ("200" if opts.quick else "1000,10000")).split(",") if s]
    minilm_spec = ex.get("minilm_sizes")
    minilm_sizes = [
        int(s) for s in str("" if opts.quick else "1000" if minilm_spec is None else minilm_spec).split(",") if s
    ]
    queries = int(ex.get("queries") or (20 if opts.quick else 200))
    mcp_calls = int(ex.get("mcp_calls") or (5 if opts.quick else 50))
    cache = opts.cache / "prefetch"
    res.params.update(
        sizes=sizes,
        minilm_sizes=minilm_sizes,
        queries=queries,
        mcp_calls=mcp_calls,
        note_words="120-180",
        budget=1200,
        embedder="fake (and minilm for minilm_sizes)",
    )
    results: dict[str, Any] = {"runs": []}
    bodies_by_size = {}
    for n in sizes:
        vault = cache / f"vault-{n}"
        bodies_by_size[n] = generate(vault, n)
        log(f"{n} notes, fake embedder")
        results["runs"].append(measure_prefetch(vault, cache / f"index-{n}-fake", "fake", bodies_by_size[n], queries))
        log(f"  {json.dumps(results['runs'][-1]['prefetch'])}")
    if not opts.quick:
        log("MiniLM: one turn embedded, warm")
        results["minilm_query_embed"] = measure_minilm_query(bodies_by_size[sizes[0]])
        log(f"  {json.dumps(results['minilm_query_embed'])}")
    for n in minilm_sizes:
        vault = cache / f"vault-{n}"
        bodies = bodies_by_size.get(n) or generate(vault, n)
        log(f"{n} notes, minilm embedder (building the index takes a while)")
        results["runs"].append(
            measure_prefetch(vault, cache / f"index-{n}-minilm", "minilm", bodies, min(queries, 100))
        )
        log(f"  {json.dumps(results['runs'][-1]['prefetch'])}")
    biggest = max(sizes)
    log(f"MCP round trip, {biggest} notes, fake embedder")
    results["mcp"] = {
        "notes": biggest,
        "embedder": "fake",
        **measure_mcp(cache / f"vault-{biggest}", cache / f"index-{biggest}-fake", bodies_by_size[biggest], mcp_calls),
    }
    log(f"  {json.dumps(results['mcp'])}")
    res.results.update(results)
    rows = [
        [r["notes"], r["embedder"], r["prefetch"]["p50_ms"], r["prefetch"]["p95_ms"], r["recall_k5_no_touch"]["p50_ms"]]
        for r in results["runs"]
    ]
    mcp = results["mcp"]
    res.markdown += [
        "Warm `Memory.prefetch` (default budget, staged refresh on, 20 staged memories), topical and random turns:",
        "",
        *table(["notes", "index built with", "prefetch p50 ms", "prefetch p95 ms", "recall k=5 p50 ms"], rows),
        "",
        f"MCP over stdio, {mcp['notes']} notes: recall p50 {mcp['recall']['p50_ms']} ms / p95 "
        f"{mcp['recall']['p95_ms']} ms; prefetch p50 {mcp['prefetch']['p50_ms']} ms; first answer "
        f"{mcp['startup_to_first_answer_s']} s after start.",
    ]
    return res
