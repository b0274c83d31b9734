"""Chunking experiment on LoCoMo: does a general chunking change widen hybrid's lead?

For each variant, the 10 LoCoMo vaults are indexed with the real MiniLM embedder into
bench/.cache/chunkexp/<variant>/<conv>/ and evaluated with bm25 / dense / hybrid recall at chunk
granularity (evidence recall@5/10/25 per category 1-4 and pooled, plus the budget-fair
"R@k turns": the ranked chunks' turns in reading order, cut to the first k turns).

The variants are self-contained here (subclasses of the chunker that override how an oversized
block is split, and an optional overlap post-pass), patched into the indexer for the run, so the
experiment does not depend on what vault_memory/markdown.py currently does.

Nothing here knows about LoCoMo's D-markers or speakers; those are only used to score.

    .venv/bin/python -m bench.chunk_experiment [variant ...] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vault_memory import Config, Memory
from vault_memory import indexer as _indexer
from vault_memory import markdown as md
from vault_memory.notefile import parse_note

from . import metrics
from .datasets import build_locomo, turn_ids
from .harness import DEFAULT_DATA

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / ".cache"
OUT = REPO / "bench" / "results" / "chunk_experiment.json"
KS = (5, 10, 25)
CATEGORIES = (1, 2, 3, 4)
MODES = ("bm25", "dense", "hybrid")


# --------------------------------------------------------------------------- chunker variants


class SentenceChunker(md._Chunker):
    """The chunker as it was: an oversized paragraph is split on sentences, then words."""

    def split(self, unit: md._Unit) -> list[md._Unit]:
        sentences = (md._SENTENCE_END_RE, "sentences")
        lines = (md._LINE_END_RE, "lines")
        words = (md._SPACE_RE, "words")
        if unit.node is not None:
            kids = [c for c in unit.node.children if c.token.map and c.token.type != "inline"]
            if kids:
                tiles = self.tile(unit.start, unit.end, kids)
                if len(tiles) >= 2:
                    return tiles
                if tiles[0].node is not None:
                    return self.split(tiles[0])
            if unit.node.token.type in md._PROSE_BLOCKS:
                order = (sentences, words)
            else:
                order = (lines, words)
        elif unit.mode == "block":
            order = (lines, sentences, words)
        elif unit.mode in ("sentences", "lines"):
            order = (words,)
        else:
            order = ()
        for pattern, mode in order:
            pieces = self.split_text(unit.start, unit.end, pattern, mode)
            if len(pieces) >= 2:
                return pieces
        return []


class LineChunker(md._Chunker):
    """Candidate (a): an oversized prose paragraph made of several source lines (soft breaks)
    is split at line boundaries first; a line that is still too long goes to sentences, then
    words. Code and tables are unchanged (lines, then words)."""

    def split(self, unit: md._Unit) -> list[md._Unit]:
        sentences = (md._SENTENCE_END_RE, "sentences")
        lines = (md._LINE_END_RE, "lines")
        text_lines = (md._LINE_END_RE, "text_lines")
        words = (md._SPACE_RE, "words")
        if unit.node is not None:
            kids = [c for c in unit.node.children if c.token.map and c.token.type != "inline"]
            if kids:
                tiles = self.tile(unit.start, unit.end, kids)
                if len(tiles) >= 2:
                    return tiles
                if tiles[0].node is not None:
                    return self.split(tiles[0])
            if unit.node.token.type in md._PROSE_BLOCKS:
                order = (text_lines, sentences, words)
            else:
                order = (lines, words)
        elif unit.mode == "block":
            order = (lines, sentences, words)
        elif unit.mode == "text_lines":
            order = (sentences, words)
        elif unit.mode in ("sentences", "lines"):
            order = (words,)
        else:
            order = ()
        for pattern, mode in order:
            pieces = self.split_text(unit.start, unit.end, pattern, mode)
            if len(pieces) >= 2:
                return pieces
        return []


def _with_overlap(chunks: list[md.Chunk], lines: int, max_tokens: int,
                  count: Callable[[str], int]) -> list[md.Chunk]:
    """Candidate (c): prefix each chunk with the last `lines` content lines of the previous chunk
    of the same section, when the result still fits max_tokens (else fewer lines)."""
    out: list[md.Chunk] = []
    for i, c in enumerate(chunks):
        prev = chunks[i - 1] if i else None
        if prev is None or prev.heading != c.heading:
            out.append(c)
            continue
        header, _, content = c.text.partition("\n") if c.heading else ("", "", c.text)
        p_content = prev.text.partition("\n")[2] if prev.heading else prev.text
        tail = p_content.split("\n")
        text = c.text
        for n in range(min(lines, len(tail)), 0, -1):
            body = "\n".join(tail[-n:]) + "\n" + content
            cand = f"{header}\n{body}" if c.heading else body
            if count(cand) <= max_tokens:
                text = cand
                break
        out.append(md.Chunk(c.index, c.heading, text, c.start_line))
    return out


VARIANTS: dict[str, dict[str, Any]] = {
    "sent200": {"chunker": SentenceChunker, "target": 200, "overlap": 0},  # today's behaviour
    "lines200": {"chunker": LineChunker, "target": 200, "overlap": 0},
    "sent128": {"chunker": SentenceChunker, "target": 128, "overlap": 0},
    "lines128": {"chunker": LineChunker, "target": 128, "overlap": 0},
    "lines96": {"chunker": LineChunker, "target": 96, "overlap": 0},
    "lines64": {"chunker": LineChunker, "target": 64, "overlap": 0},
    "lines128ov1": {"chunker": LineChunker, "target": 128, "overlap": 1},
}


def make_chunk_body(spec: dict[str, Any]) -> Callable[..., list[md.Chunk]]:
    def chunk_body(body: str, *, max_tokens: int = 256, target_tokens: int = 200,
                   count_tokens: Callable[[str], int] | None = None) -> list[md.Chunk]:
        body = md._normalise(body)
        if not body.strip():
            return []
        count = count_tokens or md.approx_tokens
        chunks = spec["chunker"](body, max_tokens, min(spec["target"], max_tokens), count).run()
        if spec["overlap"]:
            chunks = _with_overlap(chunks, spec["overlap"], max_tokens, count)
        return chunks

    return chunk_body


# --------------------------------------------------------------------------- evaluation


def _summ(rows: list[dict[str, float]]) -> dict[str, Any]:
    keys = [f"r@{k}" for k in KS] + [f"r@{k}t" for k in KS]
    return {"n": len(rows), **{key: round(metrics.mean(r[key] for r in rows), 4) for key in keys}}


def run_variant(name: str, convs: list[Any]) -> dict[str, Any]:
    spec = VARIANTS[name]
    _indexer.chunk_body = make_chunk_body(spec)  # type: ignore[attr-defined]
    index_root = CACHE / "chunkexp" / name
    scores: dict[str, dict[int, list[dict[str, float]]]] = {m: defaultdict(list) for m in MODES}
    unit_turns: dict[str, list[int]] = defaultdict(list)
    per_q: dict[str, list[list[float]]] = defaultdict(list)  # mode -> [[r@10, r@10t], ...] in question order
    chunk_turns: list[int] = []
    n_chunks = 0
    t_index = t_query = 0.0
    for conv in convs:
        qs = [q for q in conv.questions if q.category in CATEGORIES and q.evidence]
        cfg = Config(vault=conv.vault, index_dir=index_root / conv.sample_id, embedder="minilm", read_only=True)
        with Memory(cfg) as mem:
            t = time.perf_counter()
            mem.index()
            t_index += time.perf_counter() - t
            t = time.perf_counter()
            for mode in MODES:
                for q in qs:
                    hits = mem.recall(q.question, k=max(KS), mode=mode, decay=False, touch=False,
                                      granularity="chunk")
                    units = [turn_ids(str(getattr(h, "text", "") or "")) for h in hits]
                    unit_turns[mode] += [len(u) for u in units]
                    flat = metrics.flatten_units(units)
                    row = {f"r@{k}": metrics.evidence_recall(units, q.evidence, k) for k in KS}
                    row.update({f"r@{k}t": metrics.recall_at_k(flat, q.evidence, k) for k in KS})
                    scores[mode][q.category].append(row)
                    per_q[mode].append([row["r@10"], row["r@10t"]])
            t_query += time.perf_counter() - t
        # Corpus-side unit size: chunk the vault's notes the same way and count turns per chunk.
        for path in sorted(conv.vault.rglob("*.md")):
            body = parse_note(path.name, path.read_bytes()).body
            chunks = _indexer.chunk_body(body, max_tokens=256, count_tokens=_count_tokens())
            n_chunks += len(chunks)
            chunk_turns += [len(turn_ids(c.text)) for c in chunks]
        print(f"  [{name}] {conv.sample_id}: {len(qs)} q, index {t_index:.0f}s, query {t_query:.0f}s",
              file=sys.stderr, flush=True)
    out: dict[str, Any] = {"spec": {"chunker": spec["chunker"].__name__, "target_tokens": spec["target"],
                                    "overlap_lines": spec["overlap"]},
                           "chunks": n_chunks, "turns_per_chunk_mean": round(metrics.mean(chunk_turns), 2),
                           "index_s": round(t_index, 1), "query_s": round(t_query, 1), "modes": {}}
    (index_root / "per_question.json").write_text(json.dumps(per_q) + "\n")
    for mode in MODES:
        by_cat: dict[str, Any] = {}
        pooled: list[dict[str, float]] = []
        for cat in CATEGORIES:
            rows = scores[mode].get(cat, [])
            pooled += rows
            by_cat[str(cat)] = _summ(rows)
        by_cat["pooled"] = _summ(pooled)
        out["modes"][mode] = {"recall": by_cat,
                              "turns_per_unit_mean": round(metrics.mean(unit_turns[mode]), 2)}
    return out


_COUNTER: list[Callable[[str], int]] = []


def _count_tokens() -> Callable[[str], int]:
    if not _COUNTER:
        from vault_memory.embedders import MiniLMEmbedder  # noqa: PLC0415

        _COUNTER.append(MiniLMEmbedder().count_tokens)
    return _COUNTER[0]


def table(results: dict[str, Any]) -> str:
    lines = ["| variant | chunks | turns/chunk | mode | R@5 | R@10 | R@25 | R@10 turns | R@25 turns | "
             "hyb−max R@10 | hyb−max R@10 turns |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        p = {m: r["modes"][m]["recall"]["pooled"] for m in MODES}
        best = max(p["bm25"]["r@10"], p["dense"]["r@10"])
        for m in MODES:
            c = p[m]
            best_t = max(p["bm25"]["r@10t"], p["dense"]["r@10t"])
            extra = (f"{p['hybrid']['r@10'] - best:+.3f} | {p['hybrid']['r@10t'] - best_t:+.3f}"
                     if m == "hybrid" else " | ")
            lines.append(f"| {name} | {r['chunks']} | {r['turns_per_chunk_mean']} | {m} | {c['r@5']:.3f} | "
                         f"{c['r@10']:.3f} | {c['r@25']:.3f} | {c['r@10t']:.3f} | {c['r@25t']:.3f} | {extra} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="*", default=list(VARIANTS))
    ap.add_argument("--data", type=Path, default=None)
    args = ap.parse_args()
    data = args.data or DEFAULT_DATA
    convs = build_locomo(data, CACHE / "vaults" / "locomo-full")
    results: dict[str, Any] = json.loads(OUT.read_text()) if OUT.exists() else {}
    for name in args.variants:
        t = time.perf_counter()
        results[name] = run_variant(name, convs)
        results[name]["wall_s"] = round(time.perf_counter() - t, 1)
        OUT.write_text(json.dumps(results, indent=2) + "\n")
        print(table({name: results[name]}), file=sys.stderr, flush=True)
    print(table(results))
    print(paired(list(results)))


def paired(names: list[str], base: str = "sent200", n_boot: int = 2000) -> str:
    """Paired bootstrap over questions: change of (hybrid - max(bm25, dense)) vs `base`, at R@10 and
    R@10 turns, with a 95 % interval. The max is taken over pooled means inside each resample."""
    import numpy as np  # noqa: PLC0415

    def load(name: str) -> dict[str, Any] | None:
        f = CACHE / "chunkexp" / name / "per_question.json"
        return {m: np.array(v) for m, v in json.loads(f.read_text()).items()} if f.exists() else None

    ref = load(base)
    if ref is None:
        return ""
    rng = np.random.default_rng(0)
    n = len(ref["hybrid"])
    idx = rng.integers(0, n, size=(n_boot, n))
    out = ["| variant | Δgap R@10 [95% CI] | Δgap R@10 turns [95% CI] | Δhybrid R@10 turns [95% CI] |",
           "|---|---|---|---|"]

    def gap(d: dict[str, Any], col: int) -> Any:
        h = d["hybrid"][:, col][idx].mean(1)
        b = np.maximum(d["bm25"][:, col][idx].mean(1), d["dense"][:, col][idx].mean(1))
        return h - b

    for name in names:
        d = load(name)
        if d is None or name == base or len(d["hybrid"]) != n:
            continue
        cells = []
        for col in (0, 1):
            diff = gap(d, col) - gap(ref, col)
            cells.append(f"{diff.mean():+.3f} [{np.percentile(diff, 2.5):+.3f}, {np.percentile(diff, 97.5):+.3f}]")
        h = d["hybrid"][:, 1][idx].mean(1) - ref["hybrid"][:, 1][idx].mean(1)
        cells.append(f"{h.mean():+.3f} [{np.percentile(h, 2.5):+.3f}, {np.percentile(h, 97.5):+.3f}]")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
