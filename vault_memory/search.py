"""Relevance search over the index: lexical and dense candidates, fused (ranking.fuse),
aggregated to notes or chunks. No decay and no writes: ranking.rank orders what this finds.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from .catalog import Catalog
from .embedders import Embedder
from .errors import EmbedderError
from .ranking import Candidate, Mode, coverage, fuse, query_terms
from .vectorstore import VectorStore

log = logging.getLogger(__name__)

Granularity = Literal["note", "chunk"]
ExactVectors = Callable[[], tuple[list[str], np.ndarray]]


class Searcher:
    """Relevance only: no decay, no writes."""

    def __init__(self, catalog: Catalog, store: VectorStore | None, embedder: Embedder, *,
                 exact: ExactVectors | None = None) -> None:
        """Dense candidates come from `store` (ANN), else from `exact` (all vectors, e.g. a
        cache kept by Memory), else from the catalog's vectors loaded here."""
        self.catalog = catalog
        self.store = store
        self.embedder = embedder
        self.exact = exact

    @property
    def has_dense(self) -> bool:
        """False when neither a store nor exact vectors can answer (lexical fallback)."""
        return self.store is not None or self.exact is not None

    def _dense(self, qvec: np.ndarray, n: int) -> list[tuple[str, float]]:
        if self.store is not None:
            return self.store.query(qvec, n)
        # Exact search over the catalog's vectors.
        if self.exact is None:
            self.exact = functools.cache(self.catalog.all_chunk_vectors)
        ids, mat = self.exact()
        if not ids:
            return []
        sims = mat @ qvec
        n = min(n, len(ids))
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(ids[i], float(sims[i])) for i in top]

    def search(self, query: str, *, mode: Mode = "hybrid", granularity: Granularity = "note",
               candidates: int = 100, exclude_prefixes: Sequence[str] = (),
               with_similarity: bool = True) -> list[Candidate]:
        """The best candidate per note (or per chunk, `granularity="chunk"`), most relevant first."""
        lexical: dict[str, float] = {}
        dense: dict[str, float] = {}
        qvec: np.ndarray | None = None
        lexical_wide: dict[str, float] = {}
        if mode in ("hybrid", "bm25"):
            # FTS5 scores every match before it sorts, so asking for 10x the candidates costs about
            # the same as asking for them, and gives the BM25 of most dense candidates for free.
            ranked_lex = self.catalog.lexical_search(query, max(1000, 10 * candidates))
            lexical = dict(ranked_lex[:candidates])
            lexical_wide = dict(ranked_lex)
        if mode in ("hybrid", "dense"):
            qvec = self.embedder.embed([query])[0]
            dense = dict(self._dense(qvec, candidates))
        elif with_similarity:
            # Lexical-only candidates still need a cosine: dormancy and reactivation are judged on it.
            try:
                qvec = self.embedder.embed([query])[0]
            except EmbedderError as exc:
                log.warning("no query vector (%s): dormant notes cannot be reactivated in this recall", exc)
        pool = sorted(set(lexical) | set(dense))
        chunks = self.catalog.chunks_by_ids(pool)
        pool = [c for c in pool if c in chunks]
        if qvec is not None:
            # Exact cosine from the catalog's cached vectors, for every candidate: fusion sees real
            # numbers instead of "absent", and scores do not depend on which store (embedded, a
            # server, none) found the candidates or on its float arithmetic.
            vecs = self.catalog.get_vectors([chunks[c].text_hash for c in pool])
            dense = {c: float(vecs[chunks[c].text_hash] @ qvec) for c in pool if chunks[c].text_hash in vecs}
        if mode == "hybrid":
            # ... and BM25 for the dense side's candidates (0 beyond the wide lexical list).
            lexical.update({c: lexical_wide[c] for c in pool if c not in lexical and c in lexical_wide})
        notes = self.catalog.notes_by_ids(sorted({chunks[c].node_id for c in pool}))
        pool = [c for c in pool if chunks[c].node_id in notes
                and not any(notes[chunks[c].node_id].path.startswith(p) for p in exclude_prefixes)]
        terms = query_terms(query)
        if mode == "bm25":
            pool = [c for c in pool if c in lexical]
        elif mode == "dense":
            pool = [c for c in pool if c in dense]
        lex = [lexical.get(c, 0.0) for c in pool]
        cover = None
        if mode == "hybrid":
            # Coverage weighs min-max scaled BM25, which is exactly 0 at the pool's lowest score
            # (every dense-only candidate): there it changes nothing and is not computed.
            lo, hi = min(lex, default=0.0), max(lex, default=0.0)
            skip = hi - lo >= 1e-12  # else minmax makes every BM25 1 (ranking.minmax)
            cover = [1.0 if skip and s == lo else coverage(terms, chunks[c].text)
                     for c, s in zip(pool, lex, strict=True)]
        fused = fuse(mode, lex, [dense.get(c, 0.0) for c in pool], cover)
        best: dict[str, Candidate] = {}
        for cid, rel in zip(pool, fused.tolist(), strict=True):
            ch = chunks[cid]
            key = ch.node_id if granularity == "note" else cid
            cand = Candidate(key, ch.node_id, ch, rel, dense.get(cid, 0.0), lexical.get(cid, 0.0), terms)
            if key not in best or rel > best[key].relevance:
                best[key] = cand
        return sorted(best.values(), key=lambda c: (-c.relevance, c.key))


__all__ = ["ExactVectors", "Granularity", "Searcher"]
