"""Approximate (Chroma HNSW) vs exact (numpy brute force) nearest neighbours: recall@10 and latency.

Full mode, on the real MiniLM vectors of the SciFact index the scifact runner built
(bench/.cache/index/scifact-full-minilm; nothing is indexed here): 300 SciFact test queries are
embedded with the index's own embedder and searched

* in the live index (`internals(mem).store.query`, our HNSW settings, built incrementally by the indexer),
* in a temporary Chroma collection with Chroma's default HNSW settings (space cosine, M=16,
  ef_construction=100, ef_search=100) holding the same vectors,
* in a temporary collection with our settings built the same way (separates settings from
  build history),

against the exact top-10 over `Catalog.all_chunk_vectors()`. Queries are interleaved across
variants so machine load hits them alike; latencies are per-query medians/p95 of one run.
`--vectors N` adds a synthetic clustered set of N random 384-d vectors (default and ours): N/100
Gaussian clusters, points = centre + noise x N(0, I), normalised. At the default noise 0.9 the
clusters are well separated (easy); `--noise 3` makes it close to uniform random (a stress test
harder than real text embeddings) and skips the SciFact part.
Quick mode (CI): a 2,000-vector synthetic set only.

This is the only bench module besides embed_compare that imports chromadb directly (for the
temporary comparison collections).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory.internals import internals

from .. import metrics
from ..harness import Result, RunOptions, log, table

K = 10
OURS = {"space": "cosine", "ef_construction": 200, "ef_search": 200, "max_neighbors": 32}
DEFAULT = {"space": "cosine"}  # Chroma 1.x defaults: M (max_neighbors) 16, ef_construction 100, ef_search 100
TIE_EPS = 1e-5


def _normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    n = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.maximum(n, 1e-12)


def exact_topk(matn: np.ndarray, q: np.ndarray, k: int = K) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the k most cosine-similar rows (best first) and all similarities."""
    sims = matn @ q
    part = np.argpartition(-sims, k)[:k]
    return part[np.argsort(-sims[part], kind="stable")], sims


class TempCollection:
    """A throwaway embedded Chroma collection holding given vectors."""

    def __init__(self, root: Path, name: str, hnsw: dict[str, Any], ids: list[str], mat: np.ndarray) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(
            path=str(root / name), settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
        self.col = self.client.get_or_create_collection(
            name=name, embedding_function=None, configuration={"hnsw": dict(hnsw)}
        )
        t = time.perf_counter()
        for s in range(0, len(ids), 1000):
            self.col.add(ids=ids[s : s + 1000], embeddings=np.asarray(mat[s : s + 1000], dtype=np.float32))
        self.build_seconds = round(time.perf_counter() - t, 2)
        try:  # what Chroma actually applied (defaults filled in)
            cfg = self.col.configuration
            self.hnsw = dict(cfg.get("hnsw") or {}) if isinstance(cfg, dict) else str(cfg)
        except Exception as exc:  # pragma: no cover - API moved
            self.hnsw = repr(exc)

    def query(self, vec: np.ndarray, n: int) -> list[str]:
        res = self.col.query(query_embeddings=[np.asarray(vec, dtype=np.float32)], n_results=n, include=["distances"])
        return list(res["ids"][0])


def compare(
    ids: list[str], mat: np.ndarray, queries: np.ndarray, variants: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """recall@K (strict and tie-aware) and per-query latency of each variant vs exact search.

    `variants` maps a name to a function (vector, n) -> list of ids. Tie-aware: a returned id
    counts when its exact similarity reaches the K-th exact similarity (duplicate texts have
    identical vectors, so "the" exact top-10 is not unique).
    """
    matn = _normalise(mat)
    qn = _normalise(queries)
    pos = {cid: i for i, cid in enumerate(ids)}
    stats: dict[str, dict[str, list[float]]] = {
        name: {"strict": [], "ties": [], "ms": []} for name in ["exact-numpy", *variants]
    }
    for fn in variants.values():  # warm-up (first query loads the segment)
        fn(queries[0], K)
    for q, qv in zip(qn, queries, strict=True):
        t = time.perf_counter()
        top, sims = exact_topk(matn, q)
        stats["exact-numpy"]["ms"].append((time.perf_counter() - t) * 1000)
        truth = {ids[i] for i in top}
        kth = float(sims[top[-1]])
        stats["exact-numpy"]["strict"].append(1.0)
        stats["exact-numpy"]["ties"].append(1.0)
        for name, fn in variants.items():
            t = time.perf_counter()
            got = fn(qv, K)
            stats[name]["ms"].append((time.perf_counter() - t) * 1000)
            stats[name]["strict"].append(len(truth & set(got)) / K)
            ok = sum(1 for cid in got[:K] if cid in pos and sims[pos[cid]] >= kth - TIE_EPS)
            stats[name]["ties"].append(min(ok, K) / K)
    out: dict[str, dict[str, Any]] = {}
    for name, s in stats.items():
        strict = np.array(s["strict"])
        out[name] = {
            "recall_at_10": round(float(strict.mean()), 4),
            "recall_at_10_tie_aware": round(float(np.mean(s["ties"])), 4),
            "queries_below_1": int((strict < 1).sum()),
            "min_recall": round(float(strict.min()), 2),
            "ms_p50": round(metrics.median(s["ms"]), 3),
            "ms_p95": round(metrics.p95(s["ms"]), 3),
        }
    return out


def synthetic(
    n: int, n_queries: int, dim: int = 384, clusters: int | None = None, seed: int = 7, noise: float = 0.9
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Clustered random unit vectors (a Gaussian mixture) plus held-out queries from the same mixture."""
    rng = np.random.default_rng(seed)
    clusters = clusters or max(10, n // 100)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        c = centres[rng.integers(0, clusters, m)]
        return _normalise(c + noise * rng.standard_normal((m, dim)).astype(np.float32))

    mat = draw(n)
    return [f"v{i:07d}" for i in range(n)], mat, draw(n_queries)


def _rows(tag: str, n: int, cmp: dict[str, dict[str, Any]], build: dict[str, float]) -> list[list[Any]]:
    return [
        [
            tag,
            n,
            name,
            r["recall_at_10"],
            r["recall_at_10_tie_aware"],
            r["queries_below_1"],
            r["ms_p50"],
            r["ms_p95"],
            build.get(name),
        ]
        for name, r in cmp.items()
    ]


def _scifact(opts: RunOptions, tmp: Path, n_queries: int) -> tuple[dict[str, Any], list[list[Any]]] | None:
    from vault_memory import Config, Memory

    from ..data.datasets import load_scifact_qrels, read_jsonl

    vault = opts.cache / "vaults" / "scifact-full"
    index_dir = opts.cache / "index" / "scifact-full-minilm"
    if not (index_dir / "catalog.sqlite").is_file() or not vault.is_dir():
        log(f"ann: no SciFact index at {index_dir}; run `python -m bench scifact` first. Skipping the real-vector set.")
        return None
    cfg = Config(vault=vault, index_dir=index_dir, embedder="minilm", read_only=True)
    with Memory(cfg) as mem:
        t = time.perf_counter()
        ids, mat = internals(mem).catalog.all_chunk_vectors()
        load_s = time.perf_counter() - t  # what an exact (numpy) dense search would pay once per process
        store = internals(mem).store
        assert store is not None
        live_count = store.count()
        qrels = load_scifact_qrels(opts.data)
        texts = {q["_id"]: q["text"] for q in read_jsonl(opts.data / "scifact" / "queries.jsonl")}
        qtexts = [texts[qid] for qid in sorted(qrels, key=int) if qid in texts][:n_queries]
        t = time.perf_counter()
        queries = np.asarray(internals(mem).embedder.embed(qtexts), dtype=np.float32)
        embed_s = time.perf_counter() - t
        log(
            f"ann: scifact {len(ids)} chunk vectors ({live_count} in Chroma), {len(qtexts)} queries "
            f"embedded in {embed_s:.1f}s; building temporary collections"
        )
        default = TempCollection(tmp, "scifact-default", DEFAULT, ids, mat)
        ours = TempCollection(tmp, "scifact-ours", OURS, ids, mat)
        variants = {
            "live index (ours: M32 efc200 ef200)": lambda v, n: [c for c, _ in store.query(v, n)],
            "temp, Chroma default (M16 efc100 ef100)": default.query,
            "temp, ours (M32 efc200 ef200)": ours.query,
        }
        cmp = compare(ids, mat, queries, variants)
    build = {
        "temp, Chroma default (M16 efc100 ef100)": default.build_seconds,
        "temp, ours (M32 efc200 ef200)": ours.build_seconds,
    }
    info = {
        "chunks": len(ids),
        "chroma_rows": live_count,
        "queries": len(qtexts),
        "dim": int(mat.shape[1]),
        "query_embed_seconds": round(embed_s, 2),
        "build_seconds": build,
        "load_all_chunk_vectors_seconds": round(load_s, 3),
        "applied_hnsw": {"default": default.hnsw, "ours": ours.hnsw},
        "results": cmp,
    }
    return info, _rows("SciFact MiniLM", len(ids), cmp, build)


def _synthetic(tmp: Path, n: int, n_queries: int, noise: float) -> tuple[dict[str, Any], list[list[Any]]]:
    ids, mat, queries = synthetic(n, n_queries, noise=noise)
    log(f"ann: synthetic {n} clustered random vectors (noise {noise}); building temporary collections")
    default = TempCollection(tmp, f"synth{n}-default", DEFAULT, ids, mat)
    log(f"ann: default collection built in {default.build_seconds}s")
    ours = TempCollection(tmp, f"synth{n}-ours", OURS, ids, mat)
    log(f"ann: ours built in {ours.build_seconds}s")
    cmp = compare(
        ids,
        mat,
        queries,
        {"temp, Chroma default (M16 efc100 ef100)": default.query, "temp, ours (M32 efc200 ef200)": ours.query},
    )
    build = {
        "temp, Chroma default (M16 efc100 ef100)": default.build_seconds,
        "temp, ours (M32 efc200 ef200)": ours.build_seconds,
    }
    return (
        {
            "vectors": n,
            "queries": n_queries,
            "dim": 384,
            "noise": noise,
            "clusters": max(10, n // 100),
            "build_seconds": build,
            "applied_hnsw": {"default": default.hnsw, "ours": ours.hnsw},
            "results": cmp,
        },
        _rows(f"synthetic clustered (noise {noise})", n, cmp, build),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vectors", type=int, default=None, help="add a synthetic set of N vectors")
    parser.add_argument(
        "--noise",
        type=float,
        default=None,
        help="spread of the synthetic clusters (0.9 default; about 3-4 is near-uniform, hard); skips the SciFact part",
    )
    parser.add_argument("--queries", type=int, default=None, help="queries per set (300; 50 with --quick)")


def run(opts: RunOptions) -> Result:
    res = Result("ann", opts)
    n_queries = 50 if opts.quick else int(opts.extra.get("queries") or 300)
    synth_n = 2000 if opts.quick else int(opts.extra.get("vectors") or 0)
    noise = float(opts.extra.get("noise") or 0.9)
    skip_real = opts.extra.get("noise") is not None  # a stress run on synthetic data only
    res.params.update(
        k=K,
        queries=n_queries,
        ours=OURS,
        chroma_default="M16 efc100 ef100 (cosine)",
        synthetic_vectors=synth_n or None,
        synthetic_noise=noise if synth_n else None,
    )
    rows: list[list[Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="vm-ann-"))
    try:
        if not opts.quick and not skip_real:
            got = _scifact(opts, tmp, n_queries)
            if got:
                res.results["scifact"], r = got
                rows += r
        if synth_n:
            res.results["synthetic"], r = _synthetic(tmp, synth_n, n_queries, noise)
            rows += r
    finally:
        try:
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        except Exception:  # pragma: no cover
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    res.markdown += [
        f"Recall@{K} of Chroma's HNSW against exact numpy search over the same vectors, {n_queries} queries "
        "(queries interleaved across variants in one run; latency per query, single-threaded caller, "
        "machine under load from other benchmarks, so compare within the table). Tie-aware counts a hit "
        "whose exact similarity equals the 10th best (duplicate chunks).",
        "",
        *(
            [
                f"Loading every SciFact chunk vector from the catalog (`all_chunk_vectors()`) took "
                f"{res.results['scifact']['load_all_chunk_vectors_seconds']} s."
            ]
            if "scifact" in res.results
            else []
        ),
        "",
        *table(
            ["set", "vectors", "search", f"recall@{K}", "tie-aware", "queries < 1", "ms p50", "ms p95", "build s"], rows
        ),
    ]
    return res
