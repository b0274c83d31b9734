"""Calibrate fusion and the decay ranking on real data, offline from one candidate dump.

`python -m bench.calibrate collect` runs every query once through the real pipeline
(hybrid candidates with their raw BM25 and cosine scores, and each note's strength at
`now`) and saves them to bench/.cache/calibrate/*.pkl; `python -m bench.calibrate sweep`
replays the fusion/decay variants over the dump and writes bench/results/calibrate.json.
This is how FUSION_ALPHA, STRENGTH_WEIGHT and reactivate_similarity were chosen.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import pickle
import sys
from collections import defaultdict
from typing import Any

from vault_memory.config import Config
from vault_memory.decay import DecayModel, state_from_meta
from vault_memory.memory import Memory

from .. import metrics
from ..data.datasets import build_locomo, build_scifact, load_scifact_qrels, turn_ids  # noqa: F401
from ..data.updates import build_updates
from ..harness import BENCH as ROOT
from ..harness import CACHE
from ..harness import DEFAULT_DATA as DATA

OUT = CACHE / "calibrate"


def _dump_queries(mem: Memory, queries: list[tuple[Any, str]], now: Any) -> list[dict[str, Any]]:
    searcher = mem.searcher()
    model = DecayModel()
    rows = []
    for qid, text in queries:
        cands = searcher.search(text, mode="hybrid", granularity="chunk", candidates=100)
        notes = mem.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
        vecs = mem.catalog.get_vectors([c.chunk.text_hash for c in cands])
        items = []
        for c in cands:
            note = notes[c.node_id]
            st = state_from_meta(note.meta, note.mtime)
            items.append({"chunk": c.chunk.chunk_id, "node": c.node_id, "path": note.path, "lex": c.lexical,
                          "cos": c.similarity, "strength": model.strength(st, now),
                          "superseded": bool(st.superseded_by), "turns": turn_ids(c.chunk.text), "text": c.chunk.text,
                          "vec": vecs[c.chunk.text_hash].astype("float16")})
        rows.append({"qid": qid, "query": text, "items": items})
    return rows


def collect() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    # LoCoMo
    convs = build_locomo(DATA, CACHE / "vaults" / "locomo-full")
    dump = []
    for conv in convs:
        cfg = Config(vault=conv.vault, index_dir=CACHE / "index" / "locomo-full-minilm" / conv.sample_id,
                     embedder="minilm", read_only=True)
        with Memory(cfg) as mem:
            mem.index()
            qs = [(q, q.question) for q in conv.questions if q.category in (1, 2, 3, 4) and q.evidence]
            now = conv.last_date + dt.timedelta(hours=1)
            for (q, _), row in zip(qs, _dump_queries(mem, qs, now), strict=True):
                row.update(category=q.category, evidence=list(q.evidence))
                dump.append(row)
        print(f"locomo {conv.sample_id}: {len(dump)}", file=sys.stderr)
    (OUT / "locomo.pkl").write_bytes(pickle.dumps(dump))
    # Update order
    bench = build_updates(CACHE / "vaults" / "updates-full")
    cfg = Config(vault=bench.vault, index_dir=CACHE / "index" / "updates-full-minilm", embedder="minilm",
                 read_only=True)
    with Memory(cfg) as mem:
        mem.index()
        rows = _dump_queries(mem, [(c, c.query) for c in bench.cases], bench.now)
    udump = [dict(r, statements=list(c.statements)) for c, r in zip(bench.cases, rows, strict=True)]
    for r in udump:
        r.pop("qid")
    (OUT / "updates.pkl").write_bytes(pickle.dumps(udump))
    # SciFact (only if its index is built: it takes ~20 min)
    sci_index = CACHE / "index" / "scifact-full-minilm"
    if (sci_index / "catalog.sqlite").exists():
        ds = build_scifact(DATA, CACHE / "vaults" / "scifact-full")
        cfg = Config(vault=ds.vault, index_dir=sci_index, embedder="minilm", read_only=True)
        with Memory(cfg) as mem:
            rows = _dump_queries(mem, list(ds.queries.items()), ds_now(ds))
        sdump = [dict(r, qrels=ds.qrels.get(r["qid"], {})) for r in rows]
        for r in sdump:
            for it in r["items"]:
                it["doc"] = ds.path_to_doc.get(it["path"], "")
        (OUT / "scifact.pkl").write_bytes(pickle.dumps(sdump))


def ds_now(ds: Any) -> Any:
    import datetime as dt

    from ..data.datasets import SCIFACT_CREATED

    return SCIFACT_CREATED + dt.timedelta(days=1)


# ---- replay -------------------------------------------------------------------------------------

def fuse(items: list[dict[str, Any]], method: str, alpha: float) -> list[float]:
    lex = [i["lex"] for i in items]
    cos = [i["cos"] for i in items]
    if method == "rrf":
        out = [0.0] * len(items)
        for scores in (lex, cos):
            order = sorted(range(len(items)), key=lambda j: -scores[j])
            for rank, j in enumerate(order, 1):
                out[j] += 1 / (60 + rank)
        top = max(out) if out else 1
        return [o / top for o in out]

    def mm(xs: list[float]) -> list[float]:
        lo, hi = min(xs), max(xs)
        return [1.0] * len(xs) if hi - lo < 1e-12 else [(x - lo) / (hi - lo) for x in xs]

    def zs(xs: list[float]) -> list[float]:
        m = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs)) or 1.0
        return [(x - m) / sd for x in xs]

    if not items:
        return []
    if method == "ours":  # what recall.py does: BM25 weighted by query-term coverage
        from vault_memory.ranking import coverage, query_terms

        terms = query_terms(QUERY[0])
        a = [x * coverage(terms, i["text"]) for x, i in zip(mm(lex), items, strict=True)]
        b = mm(cos)
    elif method == "convex":
        a, b = mm(lex), mm(cos)
    elif method == "zscore":
        a, b = zs(lex), zs(cos)
    else:  # "maxnorm": bm25 / max, cosine raw
        top = max(lex) or 1.0
        a, b = [x / top for x in lex], cos
    return [alpha * y + (1 - alpha) * x for x, y in zip(a, b, strict=True)]


def regroup(scored: list[tuple[float, dict[str, Any]]], theta: float, delta: float,
            top: int = 30) -> list[tuple[float, dict[str, Any]]]:
    """Among the top items, notes about the same subject (cosine >= theta, relevance within delta)
    trade places so the stronger (fresher) one comes first; the set of positions is unchanged."""
    import numpy as np

    from vault_memory.ranking import same_subject_order

    head = scored[:top]
    if len(head) < 2:
        return scored
    mat = np.vstack([it["vec"].astype("float32") for _, it in head])
    order = same_subject_order(mat, [score for score, _ in head], [it["strength"] for _, it in head],
                               [it["node"] for _, it in head], theta, delta)
    return [head[i] for i in order] + scored[top:]


def regroup_star(scored: list[tuple[float, dict[str, Any]]], theta: float, delta: float,
                 top: int = 10) -> list[tuple[float, dict[str, Any]]]:
    """Star groups (no chaining): each unassigned item, in relevance order, gathers the later
    unassigned items similar to it (cosine >= theta) and nearly as relevant (gap <= delta);
    each group's positions are refilled strongest first. Only the top `top` items move."""
    import numpy as np

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
        members = [i] + [j for j in range(i + 1, n) if not taken[j] and sims[i, j] >= theta
                         and head[i][0] - head[j][0] <= delta and head[i][1]["node"] != head[j][1]["node"]]
        for m in members:
            taken[m] = True
        if len(members) > 1:
            order = sorted(members, key=lambda m: (-head[m][1]["strength"], m))
            for pos, src in zip(members, order, strict=True):
                out[pos] = head[src]
    return out + scored[top:]


QUERY = [""]  # the query text of the row being replayed (for coverage)


def _full_cue(text: str) -> bool:
    """recall's Candidate.full_cue: the chunk holds every content word of a 2+ word query."""
    from vault_memory.ranking import is_full_cue, query_terms

    return is_full_cue(query_terms(QUERY[0]), text)


def ranked(items: list[dict[str, Any]], method: str, alpha: float, w: float, tau: float | None,
           dormant_below: float = 0.1, by: str = "chunk", theta: float | None = None,
           delta: float = 0.3, star: int | None = None,
           rising: tuple[float, float] | None = None, episodic: bool = False,
           full_cue: bool = False) -> list[dict[str, Any]]:
    """`episodic`: every note is labelled episodic (LoCoMo's transcripts), so none is regrouped."""
    rel = fuse(items, method, alpha)
    if rel:
        lo, hi = min(rel), max(rel)
        rel = [1.0] * len(rel) if hi - lo < 1e-12 else [(r - lo) / (hi - lo) for r in rel]
    scored = []
    for it, r in zip(items, rel, strict=True):
        if tau is not None and it["strength"] < dormant_below and it["cos"] < tau:
            continue
        if rising is not None and it["strength"] < dormant_below:
            need = min(0.5, rising[0] + rising[1] * math.log2(dormant_below / max(it["strength"], 1e-300)))
            if it["cos"] < need and not (full_cue and _full_cue(it["text"])):
                continue
        scored.append((((1 - w) * r + w * it["strength"]), it))
    scored.sort(key=lambda t: -t[0])
    if theta is not None and not episodic:
        if star == -1:  # what recall.py does: union of same-subject pairs inside the top k (k = 10)
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
        QUERY[0] = q["query"]
        units = [it["turns"] for it in ranked(q["items"], **kw)]
        per[q["category"]].append(metrics.evidence_recall(units, q["evidence"], 10))
        turns.append(metrics.recall_at_k(metrics.flatten_units(units[:10]), q["evidence"], 10))
    pooled = [x for v in per.values() for x in v]
    return {"r@10": round(sum(pooled) / len(pooled), 4), "r@10t": round(sum(turns) / len(turns), 4),
            **{f"c{c}": round(sum(v) / len(v), 4) for c, v in per.items()}}


def eval_updates(dump: list[dict[str, Any]], **kw: Any) -> dict[str, float]:
    newer = both = allin = 0
    for q in dump:
        QUERY[0] = q["query"]
        paths = [it["path"] for it in ranked(q["items"], by="note", **kw)]
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
        QUERY[0] = q["query"]
        docs = [it["doc"] for it in ranked(q["items"], by="note", **kw)]
        nd.append(metrics.ndcg_at_k(docs, q["qrels"], 10))
    return {"ndcg@10": round(sum(nd) / len(nd), 4)}


def _load() -> dict[str, list[dict[str, Any]]]:
    loaded = {name: pickle.loads((OUT / f"{name}.pkl").read_bytes())
              for name in ("locomo", "updates", "scifact") if (OUT / f"{name}.pkl").exists()}
    for q in loaded.get("locomo", []):
        q.setdefault("query", q["qid"].question)
    if "updates" in loaded:
        bench = build_updates(CACHE / "vaults" / "updates-full")
        for q, case in zip(loaded["updates"], bench.cases, strict=True):
            q.setdefault("query", case.query)
    if "scifact" in loaded:
        from ..data.datasets import read_jsonl

        texts = {str(r["_id"]): r["text"] for r in read_jsonl(DATA / "scifact" / "queries.jsonl")}
        for q in loaded["scifact"]:
            q.setdefault("query", texts.get(str(q["qid"]), ""))
    return loaded


def sweep() -> None:
    loaded = _load()
    evals = {"locomo": eval_locomo, "updates": eval_updates, "scifact": eval_scifact}
    results: dict[str, Any] = {}
    fusions = [("ours", 0.5), ("ours", 0.4), ("convex", 0.5), ("zscore", 0.5), ("maxnorm", 0.6), ("rrf", 0.5)]
    for name, dump in loaded.items():
        results[name] = {"fusion": {f"{m}:{a}": evals[name](dump, method=m, alpha=a, w=0.0, tau=None)
                                    for m, a in fusions}}
    ranking = {
        "relevance only": dict(w=0.0),
        "+0.1 x strength": dict(w=0.1),
        "+0.3 x strength": dict(w=0.3),
        "grouping across the top 30 (chains)": dict(w=0.0, theta=0.5, delta=0.3),
        "same-subject ordering inside the k (ours)": dict(w=0.0, theta=0.5, delta=0.3, star=-1),
        "... with transcripts labelled episodic (ours, LoCoMo)": dict(w=0.0, theta=0.5, delta=0.3, star=-1,
                                                                      episodic=True),
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
                for label, kw in ranking.items() if name == "locomo" or not kw.get("episodic")}
    if "locomo" in loaded:
        results["locomo"]["dormancy_flat_cosine"] = {
            str(tau): eval_locomo(loaded["locomo"], method="ours", alpha=0.5, w=0.0, tau=tau)["r@10"]
            for tau in (0.1, 0.2, 0.3, 0.4, 0.6)}
        results["locomo"]["dormancy_rising(0.1+0.12/half-life)"] = eval_locomo(
            loaded["locomo"], method="ours", alpha=0.5, w=0.0, tau=None, rising=(0.1, 0.12))["r@10"]
        results["locomo"]["dormancy_rising + every query word is a cue (ours)"] = eval_locomo(
            loaded["locomo"], method="ours", alpha=0.5, w=0.0, tau=None, rising=(0.1, 0.12), full_cue=True)["r@10"]
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "calibrate.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    {"collect": collect, "sweep": sweep}[sys.argv[1]]()
