"""Calibrate fusion and the decay ranking on real data, offline from one candidate dump.

`python -m bench calibrate collect` runs every query once through the real pipeline
(hybrid candidates with their raw BM25 and cosine scores, and each note's strength at
`now`) and saves them to <cache>/calibrate/*.pkl; `python -m bench calibrate sweep`
replays the fusion/decay variants over the dump and writes results/calibrate.json.
This is how FUSION_ALPHA, the same-subject thresholds and reactivate_similarity were chosen.
The replay calls the library's own pieces (ranking.fuse, minmax, same_subject_order,
is_full_cue, DecayModel.reactivation_threshold); the alternatives it compares them with
(z-score, max-norm, RRF, strength mixing, star groups) are written here.
Quick mode: LoCoMo's quick slice and the small updates vault, fake embedder.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory import Config, Memory
from vault_memory.decay import DecayModel, state_from_meta
from vault_memory.ranking import coverage, is_full_cue, minmax, query_terms, same_subject_order
from vault_memory.ranking import fuse as library_fuse

from .. import metrics
from ..data.datasets import SCIFACT_CREATED, build_locomo, build_scifact, turn_ids
from ..data.updates import build_updates
from ..harness import Result, RunOptions, cache_key, log, table

DATASETS = ("locomo", "updates", "scifact")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "step",
        choices=("collect", "sweep"),
        help="collect: dump candidates (indexes are the runners' caches); sweep: replay them",
    )


def _dump_dir(opts: RunOptions) -> Path:
    return opts.cache / ("calibrate-quick" if opts.quick else "calibrate")


def _open(vault: Path, index_dir: Path, embedder: str) -> Memory:
    return Memory(Config(vault=vault, index_dir=index_dir, embedder=embedder, read_only=True))


def _dump_queries(mem: Memory, queries: list[tuple[str, str]], now: dt.datetime) -> list[dict[str, Any]]:
    searcher = mem.searcher()
    rows = []
    for qid, text in queries:
        cands = searcher.search(text, mode="hybrid", granularity="chunk", candidates=100)
        notes = mem.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
        vecs = mem.catalog.get_vectors([c.chunk.text_hash for c in cands])
        items = []
        for c in cands:
            note = notes[c.node_id]
            st = state_from_meta(note.meta, note.mtime)
            items.append(
                {
                    "chunk": c.chunk.chunk_id,
                    "node": c.node_id,
                    "path": note.path,
                    "lex": c.lexical,
                    "cos": c.similarity,
                    "strength": mem.decay.strength(st, now),
                    "superseded": bool(st.superseded_by),
                    "turns": turn_ids(c.chunk.text),
                    "text": c.chunk.text,
                    "vec": vecs[c.chunk.text_hash].astype("float16"),
                }
            )
        rows.append({"qid": qid, "query": text, "items": items})
    return rows


def collect(opts: RunOptions, res: Result) -> None:
    out = _dump_dir(opts)
    out.mkdir(parents=True, exist_ok=True)
    emb = opts.embedder_name
    counts: dict[str, int] = {}
    # LoCoMo: the locomo runner's vaults and indexes
    convs = build_locomo(opts.data, opts.cache / "vaults" / cache_key("locomo", opts.suffix), quick=opts.quick)
    index_root = opts.cache / "index" / cache_key("locomo", opts.suffix, emb)
    dump = []
    for conv in convs:
        with _open(conv.vault, index_root / conv.sample_id, emb) as mem:
            mem.index()
            qs = [q for q in conv.questions if q.category in (1, 2, 3, 4) and q.evidence]
            now = conv.last_date + dt.timedelta(hours=1)
            for q, row in zip(
                qs, _dump_queries(mem, [(f"{q.conv}:{q.index}", q.question) for q in qs], now), strict=True
            ):
                row.update(category=q.category, evidence=list(q.evidence))
                dump.append(row)
        log(f"calibrate: locomo {conv.sample_id}: {len(dump)}")
    (out / "locomo.pkl").write_bytes(pickle.dumps(dump))
    counts["locomo"] = len(dump)
    # Update order: the updates runner's vault and index
    bench = build_updates(opts.cache / "vaults" / cache_key("updates", opts.suffix), quick=opts.quick)
    with _open(bench.vault, opts.cache / "index" / cache_key("updates", opts.suffix, emb), emb) as mem:
        mem.index()
        rows = _dump_queries(mem, [(c.subject, c.query) for c in bench.cases], bench.now)
    udump = [dict(r, statements=list(c.statements)) for c, r in zip(bench.cases, rows, strict=True)]
    (out / "updates.pkl").write_bytes(pickle.dumps(udump))
    counts["updates"] = len(udump)
    # SciFact (only if the scifact runner's index is built: it takes ~20 min)
    sci_index = opts.cache / "index" / cache_key("scifact", opts.suffix, emb)
    if (sci_index / "catalog.sqlite").exists():
        ds = build_scifact(opts.data, opts.cache / "vaults" / cache_key("scifact", opts.suffix), quick=opts.quick)
        with _open(ds.vault, sci_index, emb) as mem:
            rows = _dump_queries(mem, list(ds.queries.items()), SCIFACT_CREATED + dt.timedelta(days=1))
        sdump = [dict(r, qrels=ds.qrels.get(r["qid"], {})) for r in rows]
        for r in sdump:
            for it in r["items"]:
                it["doc"] = ds.path_to_doc.get(it["path"], "")
        (out / "scifact.pkl").write_bytes(pickle.dumps(sdump))
        counts["scifact"] = len(sdump)
    res.params.update(dump_dir=str(out), candidates=100, granularity="chunk")
    res.results["queries_dumped"] = counts
    res.markdown += [f"Candidate dumps written to `{out}`:", "", *table(["dataset", "queries"], list(counts.items()))]


def fuse(items: list[dict[str, Any]], method: str, alpha: float, terms: frozenset[str]) -> list[float]:
    """Relevance of each candidate: the library's fusion ("ours": recall's hybrid formula, BM25
    weighted by query-term coverage; "convex": without coverage) or an alternative compared with it."""
    lex = [i["lex"] for i in items]
    cos = [i["cos"] for i in items]
    if not items:
        return []
    if method == "rrf":
        out = [0.0] * len(items)
        for scores in (lex, cos):
            order = sorted(range(len(items)), key=lambda j: -scores[j])
            for rank, j in enumerate(order, 1):
                out[j] += 1 / (60 + rank)
        top = max(out) if out else 1
        return [o / top for o in out]
    if method in ("ours", "convex"):
        cover = [coverage(terms, i["text"]) for i in items] if method == "ours" else None
        return library_fuse("hybrid", lex, cos, cover, alpha=alpha).tolist()

    def zs(xs: list[float]) -> list[float]:
        m = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)) or 1.0
        return [(x - m) / sd for x in xs]

    if method == "zscore":
        a, b = zs(lex), zs(cos)
    else:  # "maxnorm": bm25 / max, cosine raw
        top = max(lex) or 1.0
        a, b = [x / top for x in lex], cos
    return [alpha * y + (1 - alpha) * x for x, y in zip(a, b, strict=True)]


def regroup(
    scored: list[tuple[float, dict[str, Any]]], theta: float, delta: float, top: int = 30
) -> list[tuple[float, dict[str, Any]]]:
    """Among the top items, notes about the same subject (cosine >= theta, relevance within delta)
    trade places so the stronger (fresher) one comes first; the set of positions is unchanged."""
    head = scored[:top]
    if len(head) < 2:
        return scored
    mat = np.vstack([it["vec"].astype("float32") for _, it in head])
    order = same_subject_order(
        mat,
        [score for score, _ in head],
        [it["strength"] for _, it in head],
        [it["node"] for _, it in head],
        theta,
        delta,
    )
    return [head[i] for i in order] + scored[top:]


def regroup_star(
    scored: list[tuple[float, dict[str, Any]]], theta: float, delta: float, top: int = 10
) -> list[tuple[float, dict[str, Any]]]:
    """Star groups (no chaining): each unassigned item, in relevance order, gathers the later
    unassigned items similar to it (cosine >= theta) and nearly as relevant (gap <= delta);
    each group's positions are refilled strongest first. Only the top `top` items move."""
    head = scored[:top]
    n = len(head)
    if n < 2:
        return scored
    mat = np.vstack([it["vec"].astype("float32") for _, it in head])
    sims = mat @ mat.T
    taken = [False] * n
    out = list(head)
    for i in range(n):
        if taken[i]:
            continue
        members = [i] + [
            j
            for j in range(i + 1, n)
            if not taken[j]
            and sims[i, j] >= theta
            and head[i][0] - head[j][0] <= delta
            and head[i][1]["node"] != head[j][1]["node"]
        ]
        for m in members:
            taken[m] = True
        if len(members) > 1:
            order = sorted(members, key=lambda m: (-head[m][1]["strength"], m))
            for pos, src in zip(members, order, strict=True):
                out[pos] = head[src]
    return out + scored[top:]


def ranked(
    items: list[dict[str, Any]],
    query: str,
    method: str,
    alpha: float,
    w: float,
    tau: float | None,
    dormant_below: float = 0.1,
    by: str = "chunk",
    theta: float | None = None,
    delta: float = 0.3,
    star: int | None = None,
    rising: tuple[float, float] | None = None,
    episodic: bool = False,
    full_cue: bool = False,
) -> list[dict[str, Any]]:
    """`episodic`: every note is labelled episodic (LoCoMo's transcripts), so none is regrouped.
    `rising`: the library's reactivation rule with these (similarity, slope), capped at 0.5;
    `full_cue`: a chunk holding every content word of the query brings its note back too."""
    terms = query_terms(query)
    rel = minmax(fuse(items, method, alpha, terms)).tolist()
    gate = (
        DecayModel(
            dormant_below=dormant_below, reactivate_similarity=rising[0], reactivate_slope=rising[1], reactivate_cap=0.5
        )
        if rising is not None
        else None
    )
    scored = []
    for it, r in zip(items, rel, strict=True):
        if tau is not None and it["strength"] < dormant_below and it["cos"] < tau:
            continue
        if gate is not None and it["strength"] < dormant_below:
            if it["cos"] < gate.reactivation_threshold(it["strength"]) and not (
                full_cue and is_full_cue(terms, it["text"])
            ):
                continue
        scored.append((((1 - w) * r + w * it["strength"]), it))
    scored.sort(key=lambda t: -t[0])
    if theta is not None and not episodic:
        if star == -1:  # what recall does: union of same-subject pairs inside the top k (k = 10)
            scored = regroup(scored, theta, delta, top=10)
        elif star is None:
            scored = regroup(scored, theta, delta)
        else:
            scored = regroup_star(scored, theta, delta, star)
    if by == "note":
        seen: set[str] = set()
        out = []
        for _, it in scored:
            if it["node"] not in seen:
                seen.add(it["node"])
                out.append(it)
        return out
    return [it for _, it in scored]


def eval_locomo(dump: list[dict[str, Any]], **kw: Any) -> dict[str, float]:
    """Chunk-level evidence R@10 (pooled and per category) and `r@10t`, the evidence in the first
    10 turns of the ranking: the chunk metric cannot see order inside the top 10, this one can."""
    per: dict[int, list[float]] = defaultdict(list)
    turns: list[float] = []
    for q in dump:
        units = [it["turns"] for it in ranked(q["items"], q["query"], **kw)]
        per[q["category"]].append(metrics.evidence_recall(units, q["evidence"], 10))
        turns.append(metrics.recall_at_k(metrics.flatten_units(units[:10]), q["evidence"], 10))
    pooled = [x for v in per.values() for x in v]
    return {
        "r@10": round(sum(pooled) / len(pooled), 4),
        "r@10t": round(sum(turns) / len(turns), 4),
        **{f"c{c}": round(sum(v) / len(v), 4) for c, v in per.items()},
    }


def eval_updates(dump: list[dict[str, Any]], **kw: Any) -> dict[str, float]:
    newer = both = allin = 0
    for q in dump:
        paths = [it["path"] for it in ranked(q["items"], q["query"], by="note", **kw)]
        st = q["statements"]
        top5 = paths[:5]
        all_in = all(s in top5 for s in st)
        pos = [paths.index(s) if s in paths else 10**6 for s in st]
        first = pos[-1] == min(pos) and pos[-1] < 10**6
        newer += first
        allin += all_in
        both += first and all_in
    n = len(dump)
    return {"newer_first": round(newer / n, 4), "recall_all@5": round(allin / n, 4), "both": round(both / n, 4)}


def eval_scifact(dump: list[dict[str, Any]], **kw: Any) -> dict[str, float]:
    nd = []
    for q in dump:
        docs = [it["doc"] for it in ranked(q["items"], q["query"], by="note", **kw)]
        nd.append(metrics.ndcg_at_k(docs, q["qrels"], 10))
    return {"ndcg@10": round(sum(nd) / len(nd), 4)}


def load_dumps(dump_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """The dumps `collect` wrote (each row carries its query text)."""
    return {
        name: pickle.loads((dump_dir / f"{name}.pkl").read_bytes())
        for name in DATASETS
        if (dump_dir / f"{name}.pkl").exists()
    }


def sweep(opts: RunOptions, res: Result) -> None:
    dump_dir = _dump_dir(opts)
    loaded = load_dumps(dump_dir)
    if not loaded:
        raise FileNotFoundError(f"no candidate dumps in {dump_dir}; run `python -m bench calibrate collect` first")
    res.params.update(
        dump_dir=str(dump_dir),
        dumps={
            name: dt.datetime.fromtimestamp((dump_dir / f"{name}.pkl").stat().st_mtime, dt.UTC).isoformat(
                timespec="seconds"
            )
            for name in loaded
        },
    )
    evals = {"locomo": eval_locomo, "updates": eval_updates, "scifact": eval_scifact}
    results: dict[str, Any] = {}
    fusions = [("ours", 0.5), ("ours", 0.4), ("convex", 0.5), ("zscore", 0.5), ("maxnorm", 0.6), ("rrf", 0.5)]
    for name, dump in loaded.items():
        results[name] = {
            "fusion": {f"{m}:{a}": evals[name](dump, method=m, alpha=a, w=0.0, tau=None) for m, a in fusions}
        }
    ranking = {
        "relevance only": dict(w=0.0),
        "+0.1 x strength": dict(w=0.1),
        "+0.3 x strength": dict(w=0.3),
        "grouping across the top 30 (chains)": dict(w=0.0, theta=0.5, delta=0.3),
        "same-subject ordering inside the k (ours)": dict(w=0.0, theta=0.5, delta=0.3, star=-1),
        "... with transcripts labelled episodic (ours, LoCoMo)": dict(
            w=0.0, theta=0.5, delta=0.3, star=-1, episodic=True
        ),
    }
    # No band or cosine threshold separates restated facts from look-alike chat chunks: star
    # groups (no chaining) trade LoCoMo's turn order against newest-first (README "Ranking").
    for theta in (0.5, 0.6, 0.7):
        for delta in (0.05, 0.1, 0.2, 0.3):
            ranking[f"star groups, cosine {theta}, band {delta}"] = dict(w=0.0, theta=theta, delta=delta, star=10)
    for name in ("locomo", "updates"):
        if name in loaded:
            results[name]["ranking"] = {
                label: evals[name](loaded[name], method="ours", alpha=0.5, tau=None, **kw)
                for label, kw in ranking.items()
                if name == "locomo" or not kw.get("episodic")
            }
    if "locomo" in loaded:
        results["locomo"]["dormancy_flat_cosine"] = {
            str(tau): eval_locomo(loaded["locomo"], method="ours", alpha=0.5, w=0.0, tau=tau)["r@10"]
            for tau in (0.1, 0.2, 0.3, 0.4, 0.6)
        }
        results["locomo"]["dormancy_rising(0.1+0.12/half-life)"] = eval_locomo(
            loaded["locomo"], method="ours", alpha=0.5, w=0.0, tau=None, rising=(0.1, 0.12)
        )["r@10"]
        results["locomo"]["dormancy_rising + every query word is a cue (ours)"] = eval_locomo(
            loaded["locomo"], method="ours", alpha=0.5, w=0.0, tau=None, rising=(0.1, 0.12), full_cue=True
        )["r@10"]
    res.results.update(results)
    for name in ("updates", "locomo"):
        if "ranking" in results.get(name, {}):
            rows = [[label, *v.values()] for label, v in results[name]["ranking"].items()]
            keys = list(next(iter(results[name]["ranking"].values())))
            res.markdown += [f"{name}, ranking variants:", "", *table(["ranking", *keys], rows), ""]
    for name, r in results.items():
        rows = [[label, *v.values()] for label, v in r["fusion"].items()]
        res.markdown += [f"{name}, fusions:", "", *table(["fusion:alpha", *next(iter(r["fusion"].values()))], rows), ""]


def run(opts: RunOptions) -> Result:
    step = opts.extra.get("step", "sweep")
    res = Result("calibrate" if step == "sweep" else "calibrate_collect", opts)
    res.params["step"] = step
    (collect if step == "collect" else sweep)(opts, res)
    return res
