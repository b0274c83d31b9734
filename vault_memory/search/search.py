"""Relevance search over the index: lexical and dense candidates, fused (ranking.fuse),
aggregated to notes or chunks. No decay and no writes: ranking.rank orders what this finds.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Literal

import numpy as np

from ..errors import EmbedderError
from ..index.catalog import Catalog, ChunkRow, chunk_owner
from ..index.embedders import Embedder, embed_query
from ..index.vectorstore import VectorStore
from ..text import says_something
from .ranking import Candidate, Mode, Window, coverage, fuse, query_terms, relevance_order

log = logging.getLogger(__name__)

Granularity = Literal["note", "chunk"]
ExactVectors = Callable[[], tuple[list[str], np.ndarray]]
#: chunks (most relevant first), the query's vector and text -> chunk id -> its best
#: answer window (windows.WindowScorer; None: chunks are scored whole, as before issue 14)
WindowScorer = Callable[[Sequence[ChunkRow], np.ndarray, str], Mapping[str, Window]]
#: How many of the most relevant chunks get their answer windows scored (see windows.py). 30 chunks
#: gave updates_hard what 50 gave (20 loses a statement; bench same_question's replay, last in
#: 0adc436^; same_fact replaced it); how many sentences each: windows.WINDOWS_PER_CHUNK.
WINDOW_CANDIDATES = 30
#: For the ids `ExactVectors` returned (the same list object: another process may change the
#: vectors between two calls, so these are asked of one snapshot): each row's note as an
#: integer code, and note -> code ...
ExactOwners = Callable[[Sequence[str]], tuple[np.ndarray, dict[str, int]]]
#: ... and chunk id -> row
ExactRows = Callable[[Sequence[str]], Mapping[str, int]]
#: A filtered dense search on a store scores the allowed chunks exactly up to this many (loading
#: 20k cached vectors takes ~30 ms); more, and the store is over-asked (at most ALLOWED_OVERFETCH_MAX).
ALLOWED_EXACT = 20_000
ALLOWED_OVERFETCH_MAX = 5_000


def _wide(candidates: int) -> int:
    """How far down a side's ranking search looks past its first `candidates` chunks."""
    return max(1000, 10 * candidates)


def first_of(ranked: Sequence[tuple[str, float]], n: int) -> list[tuple[str, float]]:
    """The head of one side's ranked chunks that holds its `n` best notes: every chunk up to the
    first chunk of an (n + 1)-th note, so a side offers n *notes* however many chunks each has (100
    chunks of SciFact's abstracts were 57-64 notes: `recall -k 100` returned 64 hits in bm25 mode)."""
    seen: set[str] = set()
    for i, (cid, _) in enumerate(ranked):
        seen.add(chunk_owner(cid))
        if len(seen) > n:
            return list(ranked[:i])
    return list(ranked)


def _top(ids: Sequence[str], sims: np.ndarray, n: int, rows: np.ndarray | None) -> list[tuple[str, float]]:
    """The n best (id, similarity), best first; `rows` restricts to those positions."""
    if rows is not None:
        sims, index = sims[rows], rows
    else:
        index = np.arange(len(ids))
    n = min(n, len(sims))
    if n <= 0:
        return []
    top = np.argpartition(-sims, n - 1)[:n]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(ids[int(index[i])], float(sims[i])) for i in top]


class Searcher:
    """Relevance only: no decay, no writes."""

    def __init__(
        self,
        catalog: Catalog,
        store: VectorStore | None,
        embedder: Embedder,
        *,
        exact: ExactVectors | None = None,
        owners: ExactOwners | None = None,
        rows: ExactRows | None = None,
    ) -> None:
        """Dense candidates come from `store` (ANN), else from `exact` (all vectors, e.g. a
        cache kept by Memory), else from the catalog's vectors loaded here. `owners` gives
        each exact row's note as an integer code (and the codes), for filtered searches;
        `rows` each chunk id's row, so a candidate's vector is read from memory, not SQLite."""
        self.catalog = catalog
        self.store = store
        self.embedder = embedder
        self.exact = exact
        self.owners = owners
        self.rows = rows

    @property
    def has_dense(self) -> bool:
        """False when neither a store nor exact vectors can answer (lexical fallback)."""
        return self.store is not None or self.exact is not None

    def _dense(self, qvec: np.ndarray, n: int, allow: AbstractSet[str] | None = None) -> list[tuple[str, float]]:
        if self.store is not None:
            return self.store.query(qvec, n) if allow is None else self._dense_allowed(qvec, n, allow)
        # Exact search over the catalog's vectors.
        if self.exact is None:
            self.exact = functools.cache(self.catalog.all_chunk_vectors)
        ids, mat = self.exact()
        if not ids:
            return []
        rows = None
        if allow is not None:  # only the allowed notes' chunks compete (filters.py)
            if self.owners is not None:  # ~1 ms at 26k chunks, against 10-25 ms testing each chunk id
                codes, index = self.owners(ids)
                wanted = np.fromiter((index[a] for a in allow if a in index), dtype=np.int64)
                rows = np.isin(codes, wanted).nonzero()[0]
            else:
                rows = np.fromiter((chunk_owner(c) in allow for c in ids), dtype=bool, count=len(ids)).nonzero()[0]
            if not rows.size:
                return []
        return _top(ids, mat @ qvec, n, rows)

    def _dense_allowed(self, qvec: np.ndarray, n: int, allow: AbstractSet[str]) -> list[tuple[str, float]]:
        """Dense search restricted to some notes when the vectors live in a store (ANN or a server).

        The store keeps no note metadata, so the allowed chunks are scored exactly from the
        catalog's cached vectors when there are at most ALLOWED_EXACT of them; beyond that the
        store is asked for more neighbours in proportion to how selective the filter is.
        """
        hashes = self.catalog.chunk_hashes_of_notes(sorted(allow))
        if not hashes:
            return []
        if len(hashes) <= ALLOWED_EXACT:
            vecs = self.catalog.get_vectors(sorted(set(hashes.values())))
            ids = [c for c, h in hashes.items() if h in vecs]
            if not ids:
                return []
            return _top(ids, np.vstack([vecs[hashes[c]] for c in ids]) @ qvec, n, None)
        assert self.store is not None
        share = len(hashes) / max(1, self.catalog.chunk_count())
        found = self.store.query(qvec, min(ALLOWED_OVERFETCH_MAX, int(n / max(share, 1e-6)) * 2))
        return [(c, s) for c, s in found if chunk_owner(c) in allow][:n]

    def _cosines(self, pool: Sequence[str], chunks: Mapping[str, ChunkRow], qvec: np.ndarray) -> dict[str, float]:
        """chunk id -> cosine to the query, for the pool's chunks that have a vector (`vectors_of`:
        the same float32 rows in memory or in the catalog, so the same bits either way)."""
        vecs = self.vectors_of([chunks[c] for c in pool])
        return {c: float(vecs[chunks[c].text_hash] @ qvec) for c in pool if chunks[c].text_hash in vecs}

    def vectors_of(self, chunks: Sequence[ChunkRow]) -> dict[str, np.ndarray]:
        """text hash -> vector of these chunks (those that have one): from the exact vectors in
        memory when this searcher has them, else from the catalog."""
        if self.exact is not None and self.rows is not None:
            ids, mat = self.exact()
            rows = self.rows(ids)
            return {c.text_hash: mat[rows[c.chunk_id]] for c in chunks if c.chunk_id in rows}
        return self.catalog.get_vectors([c.text_hash for c in chunks])

    def neighbours(self, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        """For each row of `vectors` (e.g. a note's own chunk vectors, related.py), its n nearest
        chunks as (chunk id, cosine), best first: one matrix product in exact mode."""
        if self.store is not None:
            return [self.store.query(v, n) for v in vectors]
        if self.exact is None:
            self.exact = functools.cache(self.catalog.all_chunk_vectors)
        ids, mat = self.exact()
        if not ids or not len(vectors):
            return [[] for _ in vectors]
        sims = mat @ np.asarray(vectors, dtype=mat.dtype).T
        return [_top(ids, sims[:, j], n, None) for j in range(sims.shape[1])]

    def search(
        self,
        query: str,
        *,
        mode: Mode = "hybrid",
        granularity: Granularity = "note",
        candidates: int = 100,
        exclude_prefixes: Sequence[str] = (),
        with_similarity: bool = True,
        allow: AbstractSet[str] | None = None,
        windows: WindowScorer | None = None,
        qvec: np.ndarray | None = None,
        need: int | None = None,
        on_day: AbstractSet[str] = frozenset(),
    ) -> list[Candidate]:
        """The best candidate per note (or per chunk, `granularity="chunk"`), most relevant first.

        `allow`: a note-id allowlist (filters.py): only those notes are candidates, on both
        sides, so the candidates are the best *eligible* ones however selective the filter.
        With `windows`, the WINDOW_CANDIDATES most relevant chunks are also scored by their
        best answer window (the sentence that answers the query): their dense side becomes
        max(cosine to the chunk, cosine to that window) and relevance is fused again, so a
        fact stated among other talk is judged by the fact, not by how much talk surrounds it
        (in bm25 mode relevance stays BM25's; the windows still say which sentence answers).
        `qvec`: the query's vector when the caller has it (prefetch embeds a turn once).
        `need`: how many notes the caller will show (recall's k): when the pool's chunks hold fewer,
        notes beyond the pool follow it (`first_of`, Candidate.beyond).
        `on_day`: the notes stated on a day the query names (days.py): their chunks are candidates
        whether or not either side found them (placed on the pool's scale, changing no score in it),
        marked `Candidate.on_day`, which relevance order puts first.
        """
        lexical_wide: dict[str, float] = {}
        ranked_lex: list[tuple[str, float]] = []
        ranked_dense: list[tuple[str, float]] = []
        if mode in ("hybrid", "bm25"):
            # FTS5 scores every match before it sorts, so asking for 10x the candidates costs about
            # the same as asking for them, and gives the BM25 of most dense candidates for free.
            ranked_lex = self.catalog.lexical_search(query, _wide(candidates), allow)
            lexical_wide = dict(ranked_lex)
        if mode in ("hybrid", "dense"):
            qvec = embed_query(self.embedder, query) if qvec is None else qvec
            ranked_dense = self._dense(qvec, candidates, allow)
        elif with_similarity and qvec is None:
            # Lexical-only candidates still need a cosine: dormancy and reactivation are judged on it.
            try:
                qvec = embed_query(self.embedder, query)
            except EmbedderError as exc:
                log.warning("no query vector (%s): dormant notes cannot be reactivated in this recall", exc)
        # The pool: each side's first `candidates` chunks, on which relevance is scaled (`core`). When
        # it holds fewer notes than the caller `need`s (a note has several chunks), each side adds the
        # chunks of its next notes (`first_of`): they rank after the pool and change no score in it,
        # so the first n of any k are the same, and asking for more costs only when more are needed.
        lexical = dict(ranked_lex[:candidates])
        dense = dict(ranked_dense[:candidates])
        core = set(lexical) | set(dense)
        if granularity == "note" and need and len({chunk_owner(c) for c in core}) < min(need, candidates):
            if ranked_dense and qvec is not None:  # as far down as the lexical side looks
                ranked_dense = self._dense(qvec, _wide(candidates), allow)
            lexical = dict(first_of(ranked_lex, candidates))
            dense = dict(first_of(ranked_dense, candidates))
        day_chunks = set(self.catalog.chunk_ids_of(sorted(on_day))) if on_day else set()
        pool = sorted(set(lexical) | set(dense) | day_chunks)
        chunks = self.catalog.chunks_by_ids(pool)
        pool = [c for c in pool if c in chunks]
        if qvec is not None:
            # Exact cosine from the catalog's cached vectors, for every candidate: fusion sees real
            # numbers instead of "absent", and scores do not depend on which store (embedded, a
            # server, none) found the candidates or on its float arithmetic.
            dense = self._cosines(pool, chunks, qvec)
        if mode == "hybrid":
            # ... and BM25 for the dense side's candidates (0 beyond the wide lexical list).
            lexical.update({c: lexical_wide[c] for c in pool if c not in lexical and c in lexical_wide})
        notes = self.catalog.notes_by_ids(sorted({chunks[c].node_id for c in pool}))
        pool = [
            c
            for c in pool
            if chunks[c].node_id in notes
            and (allow is None or chunks[c].node_id in allow)
            and not any(notes[chunks[c].node_id].path.startswith(p) for p in exclude_prefixes)
        ]
        terms = query_terms(query)
        if mode == "bm25":
            pool = [c for c in pool if c in lexical or c in day_chunks]
        elif mode == "dense":
            pool = [c for c in pool if c in dense or c in day_chunks]
        lex = [lexical.get(c, 0.0) for c in pool]
        cover = None
        if mode == "hybrid":
            # Coverage weighs min-max scaled BM25, which is exactly 0 at the pool's lowest score
            # (every dense-only candidate): there it changes nothing and is not computed.
            scale = [s for c, s in zip(pool, lex, strict=True) if c in core] or lex
            lo, hi = min(scale, default=0.0), max(scale, default=0.0)
            skip = hi - lo >= 1e-12  # else minmax makes every BM25 1 (ranking.minmax)
            cover = [
                1.0 if skip and s <= lo else coverage(terms, chunks[c].text) for c, s in zip(pool, lex, strict=True)
            ]
        scaled_on = np.fromiter((c in core for c in pool), dtype=bool, count=len(pool))
        fused = fuse(mode, lex, [dense.get(c, 0.0) for c in pool], cover, scaled_on=scaled_on)
        found: Mapping[str, Window] = {}
        if windows is not None and qvec is not None and pool:  # bm25: found, not fused (fuse ignores them)
            top = np.argsort(-fused, kind="stable")[:WINDOW_CANDIDATES]
            found = windows([chunks[pool[i]] for i in top.tolist()], qvec, query)
            if found:
                answer = [
                    max(dense.get(c, 0.0), found[c].similarity) if c in found else dense.get(c, 0.0) for c in pool
                ]
                fused = fuse(mode, lex, answer, cover, scaled_on=scaled_on)
        best: dict[str, Candidate] = {}
        closest: dict[str, Candidate] = {}  # note -> its chunk that answers closest (answer_similarity)
        says: dict[str, bool] = {}  # chunk id -> says something: asked only between a note's chunks

        def said(c: Candidate) -> bool:
            if c.chunk.chunk_id not in says:
                says[c.chunk.chunk_id] = says_something(c.chunk.body)
            return says[c.chunk.chunk_id]

        for i, (cid, rel) in enumerate(zip(pool, fused.tolist(), strict=True)):
            ch = chunks[cid]
            key = ch.node_id if granularity == "note" else cid
            cand = Candidate(
                key,
                ch.node_id,
                ch,
                rel,
                dense.get(cid, 0.0),
                lexical.get(cid, 0.0),
                terms,
                coverage=cover[i] if cover is not None else None,
                window=found.get(cid),
                beyond=not scaled_on[i],
                path=notes[ch.node_id].path,
                on_day=ch.node_id in on_day,
            )
            if key not in best:
                best[key] = closest[key] = cand
                continue
            # A note is ranked by its chunks in the pool, by those that say something of their own
            # (text.says_something: not only links and dates, which the heading path every chunk
            # carries makes the best BM25 match for a daily note's name: "what did I do on the
            # weekend of October 17" found `[[2026-10-15]] · [[2026-10-19]]`, not the day's log),
            # then by relevance; the part prefetch shows of it (`closest`) says something too.
            b, c = best[key], closest[key]
            if (not cand.beyond, said(cand), cand.relevance) > (not b.beyond, said(b), b.relevance):
                best[key] = cand
            if (said(cand), cand.answer_similarity) > (said(c), c.answer_similarity):
                closest[key] = cand
        for key, cand in best.items():
            if closest[key] is not cand:
                best[key] = replace(cand, closest=closest[key])
        return sorted(best.values(), key=relevance_order)


__all__ = [
    "WINDOW_CANDIDATES",
    "ExactOwners",
    "ExactRows",
    "ExactVectors",
    "Granularity",
    "Searcher",
    "WindowScorer",
    "first_of",
]
