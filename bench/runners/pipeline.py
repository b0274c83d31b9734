"""Indexing pipeline throughput against the bare embedder, in one process, same run.

`python -m bench pipeline [--notes 400] [--repeats 3]` (MiniLM by default; `--quick`: 40 notes, fake
embedder). The benchmark target: a first index runs at >= 90% of the bare embedder's throughput.

Method. A synthetic vault (bench/data/synth.py) is indexed once with a recording wrapper around the
embedder (warm-up: loads the model, imports Chroma); that records every `embed` call the indexer
makes, i.e. exactly the unique chunk texts it embeds, sliced and ordered as it slices them (waves of
~WAVE_CHUNKS chunks, each sorted by length and cut into EMBED_SLICE texts per call). The recorded
texts are checked against an independent chunking of the vault (parse_note + chunk_body with the
embedder's max_tokens and tokenizer, as Indexer.chunk_note does). Then, per repeat (bare and
pipeline in ABBA order, so a steady drift in machine load falls on both alike):

- bare: the same embedder instance replays the recorded calls (same texts, same batching);
- pipeline: `Memory.index()` on a fresh index folder (fresh catalog, so an empty vector cache: it
  embeds everything), the embedder wrapped only to time its calls;
- bare, one call: all unique texts in a single `embed` call (the embedder's own sort and batching
  over the whole set), to show whether the indexer's slicing itself costs anything.

Throughput ratio = bare seconds / pipeline seconds, per repeat (adjacent runs), median reported.
Also reported, immune to load changes between runs: the pipeline run's own embed time / its total.
One more pipeline run under cProfile gives the per-phase breakdown of the overhead.
"""

from __future__ import annotations

import cProfile
import dataclasses
import os
import pstats
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vault_memory.internals import internals

from .. import metrics
from ..data.synth import build_synth
from ..harness import Result, RunOptions, cache_key, index_report, log, table

TARGET = 0.90


class Timed:
    """Wraps an embedder: times (and records) `embed` and `count_tokens`; everything else passes through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []
        self.embed_seconds = 0.0
        self.count_seconds = 0.0
        self.count_calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> Any:
        t = time.perf_counter()
        out = self.inner.embed(texts)
        self.embed_seconds += time.perf_counter() - t
        self.calls.append(list(texts))
        return out

    def count_tokens(self, text: str) -> int:
        t = time.perf_counter()
        n: int = self.inner.count_tokens(text)
        self.count_seconds += time.perf_counter() - t
        self.count_calls += 1
        return n


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _wipe(index_dir: Path) -> None:
    from vault_memory.index.vectorstore import VectorStore

    VectorStore.destroy(index_dir / "chroma")  # also forgets Chroma's cached client for the folder
    shutil.rmtree(index_dir, ignore_errors=True)


def pipeline_once(
    vault: Path, index_dir: Path, embedder: Any, profile: cProfile.Profile | None = None
) -> dict[str, Any]:
    """A first index of `vault` into a fresh `index_dir`; timings and what the embedder was asked."""
    from vault_memory import Config, Memory

    _wipe(index_dir)
    timed = Timed(embedder)
    cfg = Config(vault=vault, index_dir=index_dir, embedder="fake", read_only=True)
    if profile is not None:
        profile.enable()
    t0 = time.perf_counter()
    with Memory(cfg, embedder=timed) as mem:
        t1 = time.perf_counter()
        rep = mem.index(progress=None)
        t2 = time.perf_counter()
        chunks = internals(mem).catalog.chunk_count()
        stored = internals(mem).store.count() if internals(mem).store is not None else None
    t3 = time.perf_counter()
    if profile is not None:
        profile.disable()
    _wipe(index_dir)
    return {
        "index_s": t2 - t1,
        "open_index_close_s": (t1 - t0) + (t2 - t1) + (t3 - t2),
        "embed_s": timed.embed_seconds,
        "count_tokens_s": timed.count_seconds,
        "count_tokens_calls": timed.count_calls,
        "calls": timed.calls,
        "report": index_report(rep),
        "chunks": chunks,
        "store_count": stored,
    }


def independent_chunk_texts(vault: Path, embedder: Any) -> list[str]:
    """Every chunk text of the vault, chunked as Indexer.chunk_note does, without the indexer."""
    from vault_memory.vault.markdown import chunk_body
    from vault_memory.vault.notefile import parse_note
    from vault_memory.vault.walk import IgnoreRules, iter_note_paths

    texts: list[str] = []
    for rel in iter_note_paths(vault, IgnoreRules.for_vault(vault)):
        full = vault / rel
        note = parse_note(rel, full.read_bytes(), full.stat().st_mtime)
        texts += [
            c.text for c in chunk_body(note.body, max_tokens=embedder.max_tokens, count_tokens=embedder.count_tokens)
        ]
    return texts


# (label, file suffix, function names): cumulative time under cProfile. Phases nest (chunk includes
# count_tokens; catalog commits are separate from the statements they commit).
PHASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Memory.index() total", "memory.py", ("index",)),
    ("embedder.embed (model)", "runners/pipeline.py", ("embed",)),
    ("scan: read, hash, parse notes", "indexer.py", ("scan",)),
    ("plan", "indexer.py", ("plan",)),
    ("chunk: chunk_note (incl. count_tokens)", "indexer.py", ("chunk_note",)),
    ("  of which count_tokens (tokenizer)", "runners/pipeline.py", ("count_tokens",)),
    ("note rows: note_row / extract_info", "indexer.py", ("note_row",)),
    ("catalog: put_vectors (vector cache)", "catalog.py", ("put_vectors",)),
    ("catalog: cached_hashes + get_vectors", "catalog.py", ("cached_hashes", "get_vectors")),
    ("catalog: upsert_note + replace_chunks (rows, FTS5)", "catalog.py", ("upsert_note", "replace_chunks")),
    ("catalog: commits (transaction)", "catalog.py", ("transaction",)),
    ("catalog: prune_vectors", "catalog.py", ("prune_vectors",)),
    ("chroma: open (open_store)", "vectorstore.py", ("open_store",)),
    ("chroma: upsert/delete (HNSW + its SQLite)", "vectorstore.py", ("upsert", "delete")),
    ("chroma: count/ids (resync check)", "vectorstore.py", ("count", "ids")),
)


def profile_phases(prof: cProfile.Profile, top: int = 15) -> dict[str, Any]:
    st = pstats.Stats(prof)
    raw: dict[Any, Any] = st.stats  # type: ignore[attr-defined]
    phases: dict[str, float] = {}
    for label, suffix, names in PHASES:
        total = 0.0
        for (file, _line, func), (_cc, _nc, _tt, ct, _callers) in raw.items():
            if func in names and file.endswith(suffix):
                total += ct
        phases[label] = round(total, 3)
    rows = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    by_tottime = [
        {
            "function": f"{Path(f).name}:{line}({func})",
            "calls": nc,
            "tottime_s": round(tt, 3),
            "cumtime_s": round(ct, 3),
        }
        for (f, line, func), (_cc, nc, tt, ct, _callers) in rows
    ]
    return {"phases_s": phases, "top_by_tottime": by_tottime}


def run(opts: RunOptions) -> Result:
    from vault_memory.index.embedders import MINILM_MAX_BATCH_TOKENS, make_embedder
    from vault_memory.index.indexer import EMBED_SLICE, WAVE_CHUNKS

    opts = dataclasses.replace(opts, embedder=opts.embedder_name)
    res = Result("pipeline", opts)
    n_notes = int(opts.extra.get("notes") or (40 if opts.quick else 400))
    repeats = int(opts.extra.get("repeats") or (2 if opts.quick else 3))
    vault = opts.cache / "vaults" / cache_key("synth", str(n_notes), "pipeline")
    index_dir = opts.cache / "index" / cache_key("pipeline", str(n_notes), opts.embedder_name, "run")
    synth = build_synth(vault, n_notes)
    res.params.update(
        notes=n_notes,
        words=synth.words,
        repeats=repeats,
        wave_chunks=WAVE_CHUNKS,
        embed_slice=EMBED_SLICE,
        load_at_start=_load(),
    )
    emb = make_embedder(opts.embedder_name)

    # Warm-up pipeline run: loads the model and Chroma, and records the indexer's embed calls.
    t = time.perf_counter()
    warm = pipeline_once(vault, index_dir, emb)
    calls = warm["calls"]
    texts = [x for call in calls for x in call]
    log(
        f"pipeline: warm-up index of {n_notes} notes in {time.perf_counter() - t:.1f}s: "
        f"{warm['chunks']} chunks, {len(texts)} texts in {len(calls)} embed calls"
    )
    independent = independent_chunk_texts(vault, emb)
    unique = list(dict.fromkeys(independent))
    tokens = sum(emb.count_tokens(x) for x in unique)
    checks = {
        "recorded_texts_unique": len(texts) == len(set(texts)),
        "recorded_equals_independent_chunking": sorted(texts) == sorted(unique),
        "chunks_equal_independent": warm["chunks"] == len(independent),
        "texts_embedded_equals_unique": warm["report"].get("texts_embedded") == len(unique),
        "store_count_equals_chunks": warm["store_count"] == warm["chunks"],
    }
    if not all(checks.values()):
        log(f"pipeline: WARNING, consistency checks failed: {checks}")

    def bare() -> float:
        t0 = time.perf_counter()
        for call in calls:
            emb.embed(call)
        return time.perf_counter() - t0

    # The bare graph: session.run alone on batches tokenized and padded beforehand, at the settings
    # embed_speed found best (2 intra-op threads, no spinning): what the hardware allows this graph.
    bare_graph: Any = None
    if hasattr(emb, "chosen_graph"):
        from ..studies.embed_speed import graph_bytes, graph_runner, padded_batches, tokenizer

        ids = [e.ids for e in tokenizer().encode_batch(unique, add_special_tokens=True)]
        feeds = padded_batches(ids, emb.batch_size, MINILM_MAX_BATCH_TOKENS)
        # The embedder's own arrangement: one session on every core, or side-by-side sessions.
        graph_mode = "x2" if getattr(emb, "workers", 1) >= 2 else "plain"
        graph_fn = graph_runner(graph_bytes(emb.chosen_graph), feeds, graph_mode)
        graph_fn()  # warm-up

        def bare_graph() -> float:
            t0 = time.perf_counter()
            graph_fn()
            return time.perf_counter() - t0

    def bare_one() -> float:
        t0 = time.perf_counter()
        emb.embed(unique)
        return time.perf_counter() - t0

    runs: dict[str, list[float]] = {"bare": [], "pipeline": [], "pipeline_total": [], "bare_one_call": []}
    if bare_graph is not None:
        runs["bare_graph"] = []
    graph_ratios: list[float] = []
    inner: dict[str, list[float]] = {"embed_s": [], "count_tokens_s": [], "other_s": []}
    calls_same: list[bool] = []
    ratios: list[float] = []
    shares: list[float] = []
    for r in range(repeats):
        # ABBA order: a steady drift in machine load falls on both sides alike.
        if r % 2 == 0:
            runs["bare"].append(bare())
        p = pipeline_once(vault, index_dir, emb)
        if r % 2 == 1:
            runs["bare"].append(bare())
        runs["pipeline"].append(p["index_s"])
        runs["pipeline_total"].append(p["open_index_close_s"])
        inner["embed_s"].append(p["embed_s"])
        inner["count_tokens_s"].append(p["count_tokens_s"])
        inner["other_s"].append(p["index_s"] - p["embed_s"] - p["count_tokens_s"])
        calls_same.append(p["calls"] == calls)
        runs["bare_one_call"].append(bare_one())
        if bare_graph is not None:
            runs["bare_graph"].append(bare_graph())
            graph_ratios.append(runs["bare_graph"][-1] / runs["pipeline"][-1])
        ratios.append(runs["bare"][-1] / runs["pipeline"][-1])
        shares.append(p["embed_s"] / p["index_s"])
        log(
            f"pipeline: repeat {r + 1}/{repeats}: bare {runs['bare'][-1]:.2f}s, pipeline {runs['pipeline'][-1]:.2f}s "
            f"(embed {p['embed_s']:.2f}s), bare one call {runs['bare_one_call'][-1]:.2f}s, ratio {ratios[-1]:.3f}, "
            f"embed share of pipeline {shares[-1]:.3f}"
        )
    checks["pipeline_calls_identical_every_repeat"] = all(calls_same)

    prof = cProfile.Profile()
    profiled = pipeline_once(vault, index_dir, emb, profile=prof)
    prof_out = profile_phases(prof)
    prof_path = opts.cache / f"pipeline-{cache_key(opts.embedder_name)}{'-quick' if opts.quick else ''}.prof"
    prof.dump_stats(str(prof_path))

    def row(name: str, values: list[float]) -> dict[str, Any]:
        med = metrics.median(values)
        return {
            "name": name,
            "runs_s": [round(v, 3) for v in values],
            "median_s": round(med, 3),
            "chunks_per_s": round(len(unique) / med, 2),
            "tokens_per_s": round(tokens / med, 1),
        }

    rows = {
        "bare": row("bare embedder, the indexer's embed calls replayed", runs["bare"]),
        "pipeline": row("pipeline: Memory.index(), fresh index", runs["pipeline"]),
        "pipeline_total": row("pipeline incl. Memory open + close", runs["pipeline_total"]),
        "bare_one_call": row("bare embedder, all unique texts in one call", runs["bare_one_call"]),
    }
    if bare_graph is not None:
        rows["bare_graph"] = row(
            f"bare graph ({emb.chosen_graph}): session.run on pre-tokenized batches, "
            + ("2 sessions x 1 thread" if graph_mode == "x2" else "2 threads"),
            runs["bare_graph"],
        )
    ratio = metrics.median(ratios)
    med_inner = {k: round(metrics.median(v), 3) for k, v in inner.items()}
    res.results.update(
        workload={
            "notes": n_notes,
            "chunks": warm["chunks"],
            "unique_texts": len(unique),
            "tokens": tokens,
            "embed_calls": len(calls),
            "count_tokens_calls_per_index": warm["count_tokens_calls"],
        },
        checks=checks,
        variants=rows,
        ratio_pipeline_over_bare={
            "per_repeat": [round(x, 4) for x in ratios],
            "median": round(ratio, 4),
            "of_medians": round(rows["bare"]["median_s"] / rows["pipeline"]["median_s"], 4),
            "target": TARGET,
            "meets_target": ratio >= TARGET,
        },
        # Load-immune: the same pipeline run's own embed time over its total (no second run involved).
        embed_share_of_pipeline={
            "per_repeat": [round(x, 4) for x in shares],
            "median": round(metrics.median(shares), 4),
        },
        ratio_pipeline_over_bare_graph=(
            {
                "per_repeat": [round(x, 4) for x in graph_ratios],
                "median": round(metrics.median(graph_ratios), 4),
                "target": TARGET,
                "meets_target": metrics.median(graph_ratios) >= TARGET,
            }
            if graph_ratios
            else None
        ),
        ratio_indexer_slicing_over_one_call=round(
            metrics.median([b / o for b, o in zip(runs["bare_one_call"], runs["bare"], strict=True)]), 4
        ),
        pipeline_inside_median_s=med_inner,
        profile={"index_s_under_profile": round(profiled["index_s"], 3), **prof_out, "stats_file": str(prof_path)},
        load_at_end=_load(),
    )

    fake = opts.embedder_name.startswith("fake")
    # The fake embedder costs next to nothing, so its ratio measures only the pipeline's own cost.
    verdict = "not applicable with fake vectors" if fake else ("met" if ratio >= TARGET else "NOT met")
    phases = prof_out["phases_s"]
    total = phases.get("Memory.index() total") or 1.0
    md = [
        f"Synthetic vault of {n_notes} notes ({synth.words:,} words): {warm['chunks']} chunks, {len(unique)} unique "
        f"texts, {tokens:,} tokens (with [CLS]/[SEP]); the indexer embeds them in {len(calls)} calls "
        f"(waves of ~{WAVE_CHUNKS} chunks, {EMBED_SLICE} texts per call). One process, one embedder instance; "
        f"per repeat: bare (the indexer's calls replayed), pipeline (`Memory.index()` into a fresh index folder, "
        f"so every text is embedded), bare one call. Median of {repeats}. Load {res.params['load_at_start']} at "
        f"start, {res.results['load_at_end']} at end (2 cores shared with other jobs).",
        "",
        *table(
            ["variant", "median s", "runs s", "chunks/s", "tokens/s"],
            [
                [
                    v["name"],
                    v["median_s"],
                    ", ".join(f"{x:.2f}" for x in v["runs_s"]),
                    v["chunks_per_s"],
                    v["tokens_per_s"],
                ]
                for v in rows.values()
            ],
        ),
        "",
        f"**Pipeline / bare throughput: {ratio:.3f}** (median of per-repeat ratios "
        f"{', '.join(f'{x:.3f}' for x in ratios)}; target >= {TARGET:.2f}: {verdict}). "
        f"The indexer's slicing against one big call: "
        f"{res.results['ratio_indexer_slicing_over_one_call']:.3f} (one-call seconds / sliced seconds).",
        "",
        *(
            [
                f"**Pipeline / bare graph: {metrics.median(graph_ratios):.3f}** (per repeat "
                f"{', '.join(f'{x:.3f}' for x in graph_ratios)}; target >= {TARGET:.2f}): the first index's "
                "throughput against `session.run` alone on the same texts, tokenized and padded beforehand.",
                "",
            ]
            if graph_ratios
            else []
        ),
        f"Inside `Memory.index()` (median, unprofiled): embed {med_inner['embed_s']} s, tokenizer calls while "
        f"chunking {med_inner['count_tokens_s']} s ({warm['count_tokens_calls']:,} calls), everything else "
        f"{med_inner['other_s']} s. Embed time over the same run's total, immune to load drift between runs: "
        f"**{metrics.median(shares):.3f}** (per repeat {', '.join(f'{x:.3f}' for x in shares)}): the throughput "
        "ratio the pipeline would reach if its embed calls ran exactly as fast as the bare ones.",
        "",
        f"Phases of one profiled `Memory.index()` (cProfile, {profiled['index_s']:.2f} s; cumulative, phases nest):",
        "",
        *table(
            ["phase", "s", "share of index()"], [[label, s, f"{100 * s / total:.1f}%"] for label, s in phases.items()]
        ),
    ]
    if not all(checks.values()):
        md += ["", f"**Consistency checks failed:** {checks}"]
    res.markdown += md
    return res
