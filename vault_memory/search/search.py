"""Relevance search over the index, the read path's first three stages (docs/ranking.md):

    Searcher.pool   the candidate pool: each side's best chunks (BM25, dense), a named day's notes
    score           relevance: BM25 weighted by coverage and cosine fused, then answer sentences
    pick            each note's candidate (its best chunk) and the part a block shows of it

No decay and no writes: ranking.order orders what this finds. The numbers and switches are the
read path's rules (rules.py).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ..errors import EmbedderError
from ..index.catalog import Catalog, ChunkRow, NoteRow, chunk_owner
from ..index.embedders import Embedder, embed_query
from ..index.vectorstore import VectorStore
from ..text import beyond_its_name, holds_a_url, points_elsewhere, says_something
from .ranking import Candidate, Mode, Window, coverage, fuse, query_terms, relevance_order
from .rules import DEFAULT_RULES, ReadRules
from .wholes import dense_side, whole_cosines

log = logging.getLogger(__name__)

Granularity = Literal["note", "chunk"]
ExactVectors = Callable[[], tuple[list[str], np.ndarray]]
#: chunks (most relevant first), the query's vector and text, and how many of the first chunks may
#: embed a sentence the index does not hold -> chunk id -> its best answer window
#: (windows.WindowScorer; None: chunks are scored whole, as before issue 14)
WindowScorer = Callable[[Sequence[ChunkRow], np.ndarray, str, int], Mapping[str, Window]]
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
        candidates: int | None = None,
        exclude_prefixes: Sequence[str] = (),
        with_similarity: bool = True,
        allow: AbstractSet[str] | None = None,
        windows: WindowScorer | None = None,
        qvec: np.ndarray | None = None,
        need: int | None = None,
        on_day: AbstractSet[str] = frozenset(),
        day_sections: AbstractSet[str] = frozenset(),
        rules: ReadRules = DEFAULT_RULES,
    ) -> list[Candidate]:
        """The best candidate per note (or per chunk, `granularity="chunk"`), most relevant first:
        the first three stages of the read path, `pick(score(pool(...)))`.

        `allow`: a note-id allowlist (filters.py): only those notes are candidates, on both
        sides, so the candidates are the best *eligible* ones however selective the filter.
        `windows`: score the most relevant chunks also by their best answer sentence (`score`).
        `qvec`: the query's vector when the caller has it (prefetch embeds a turn once).
        `need`: how many notes the caller will show (recall's k): when the pool's chunks hold fewer,
        notes beyond the pool follow it (`first_of`, Candidate.beyond).
        `on_day`: the notes stated on a day the query names (days.py): their chunks are candidates
        whether or not either side found them (placed on the pool's scale, changing no score in it),
        marked `Candidate.on_day`, which relevance order puts first. `day_sections`: likewise the
        chunks a heading states on such a day (fields.heading_day: a diary kept in one note).
        `candidates`: per side (default `rules.candidates`).
        """
        found = self.pool(
            query,
            mode=mode,
            granularity=granularity,
            candidates=rules.candidates if candidates is None else candidates,
            exclude_prefixes=exclude_prefixes,
            with_similarity=with_similarity,
            allow=allow,
            qvec=qvec,
            need=need,
            on_day=on_day,
            day_sections=day_sections,
        )
        if rules.whole_note and found.qvec is not None and mode != "bm25":  # each note as a whole (wholes.py)
            found = replace(found, whole=whole_cosines(self.catalog, found, self.exact, self.owners))
        return pick(found, score(found, rules, windows), granularity, rules)

    def pool(
        self,
        query: str,
        *,
        mode: Mode,
        granularity: Granularity,
        candidates: int,
        exclude_prefixes: Sequence[str] = (),
        with_similarity: bool = True,
        allow: AbstractSet[str] | None = None,
        qvec: np.ndarray | None = None,
        need: int | None = None,
        on_day: AbstractSet[str] = frozenset(),
        day_sections: AbstractSet[str] = frozenset(),
    ) -> Pool:
        """Stage 1, the candidate pool: each side's first `candidates` chunks (BM25 and dense), the
        chunks of the notes stated on a day the query names and those a heading states on it
        (`day_sections`), and, when those hold fewer notes than the caller `need`s, each side's next
        notes (`first_of`: they rank after the pool and change no score in it, so the first n of any
        k are the same). Each candidate gets both sides' real scores: the exact cosine from the
        cached vectors, and BM25 from the same query's wide list."""
        ranked_lex, ranked_dense, qvec = self._sides(query, mode, candidates, allow, qvec, with_similarity)
        lexical, dense, core = self._heads(
            ranked_lex, ranked_dense, qvec, candidates, allow, need if granularity == "note" else None
        )
        day_chunks = frozenset(self.catalog.chunk_ids_of(sorted(on_day))) | day_sections if on_day else day_sections
        ids = sorted(set(lexical) | set(dense) | day_chunks)
        chunks = self.catalog.chunks_by_ids(ids)
        ids = [c for c in ids if c in chunks]
        if qvec is not None:
            # Exact cosine from the catalog's cached vectors, for every candidate: fusion sees real
            # numbers instead of "absent", and scores do not depend on which store (embedded, a
            # server, none) found the candidates or on its float arithmetic.
            dense = self._cosines(ids, chunks, qvec)
        if mode == "hybrid":
            # ... and BM25 for the dense side's candidates (0 beyond the wide lexical list).
            wide = dict(ranked_lex)
            lexical.update({c: wide[c] for c in ids if c not in lexical and c in wide})
        notes = self.catalog.notes_by_ids(sorted({chunks[c].node_id for c in ids}))
        ids = _eligible(ids, chunks, notes, allow, exclude_prefixes)
        if mode != "hybrid":  # one side alone: its own candidates, and the named days'
            side = lexical if mode == "bm25" else dense
            ids = [c for c in ids if c in side or c in day_chunks]
        return Pool(
            query, mode, ids, chunks, notes, lexical, dense, core, frozenset(on_day), qvec, frozenset(day_sections)
        )

    def _heads(
        self,
        ranked_lex: list[tuple[str, float]],
        ranked_dense: list[tuple[str, float]],
        qvec: np.ndarray | None,
        candidates: int,
        allow: AbstractSet[str] | None,
        need: int | None,
    ) -> tuple[dict[str, float], dict[str, float], frozenset[str]]:
        """Each side's first `candidates` chunks, and the pool proper they make (`core`, on which
        relevance is scaled). When it holds fewer notes than `need`, each side also offers the chunks
        of its next notes (`first_of`), the dense side asked as far down as the lexical side looks."""
        lexical = dict(ranked_lex[:candidates])
        dense = dict(ranked_dense[:candidates])
        core = frozenset(lexical) | frozenset(dense)
        if need and len({chunk_owner(c) for c in core}) < min(need, candidates):
            if ranked_dense and qvec is not None:
                ranked_dense = self._dense(qvec, _wide(candidates), allow)
            lexical = dict(first_of(ranked_lex, candidates))
            dense = dict(first_of(ranked_dense, candidates))
        return lexical, dense, core

    def _sides(
        self,
        query: str,
        mode: Mode,
        candidates: int,
        allow: AbstractSet[str] | None,
        qvec: np.ndarray | None,
        with_similarity: bool,
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]], np.ndarray | None]:
        """Each side's ranked chunks (BM25 as far down as `_wide`, dense `candidates`) and the query's
        vector (None when it was not needed or could not be had)."""
        ranked_lex: list[tuple[str, float]] = []
        ranked_dense: list[tuple[str, float]] = []
        if mode in ("hybrid", "bm25"):
            # FTS5 scores every match before it sorts, so asking for 10x the candidates costs about
            # the same as asking for them, and gives the BM25 of most dense candidates for free.
            ranked_lex = self.catalog.lexical_search(query, _wide(candidates), allow)
        if mode in ("hybrid", "dense"):
            qvec = embed_query(self.embedder, query) if qvec is None else qvec
            ranked_dense = self._dense(qvec, candidates, allow)
        elif with_similarity and qvec is None:
            # Lexical-only candidates still need a cosine: dormancy and reactivation are judged on it.
            try:
                qvec = embed_query(self.embedder, query)
            except EmbedderError as exc:
                log.warning("no query vector (%s): dormant notes cannot be reactivated in this recall", exc)
        return ranked_lex, ranked_dense, qvec


def _eligible(
    ids: Sequence[str],
    chunks: Mapping[str, ChunkRow],
    notes: Mapping[str, NoteRow],
    allow: AbstractSet[str] | None,
    exclude_prefixes: Sequence[str],
) -> list[str]:
    """The chunks whose note is in the catalog, allowed (filters.py) and not in an excluded folder."""
    return [
        c
        for c in ids
        if chunks[c].node_id in notes
        and (allow is None or chunks[c].node_id in allow)
        and not any(notes[chunks[c].node_id].path.startswith(p) for p in exclude_prefixes)
    ]


@dataclass(frozen=True)
class Pool:
    """Stage 1's result: the candidate chunks and each side's raw score of each."""

    query: str
    mode: Mode
    ids: list[str]  # candidate chunk ids, sorted
    chunks: Mapping[str, ChunkRow]
    notes: Mapping[str, NoteRow]
    lexical: dict[str, float]  # raw BM25 (absent: none)
    dense: dict[str, float]  # exact cosine (absent: no vector)
    core: frozenset[str]  # each side's first `candidates` chunks: relevance is scaled on them
    on_day: frozenset[str]  # notes stated on a day the query names
    qvec: np.ndarray | None
    day_sections: frozenset[str] = frozenset()  # chunks a heading states on a day the query names
    whole: Mapping[str, float] | None = None  # note id -> cosine to the note as a whole (wholes.py)

    @property
    def scaled_on(self) -> np.ndarray:
        return np.fromiter((c in self.core for c in self.ids), dtype=bool, count=len(self.ids))


@dataclass(frozen=True)
class Scored:
    """Stage 2's result: each candidate's relevance, aligned with `Pool.ids`."""

    relevance: list[float]  # fused, in [0, 1]
    coverage: list[float] | None  # share of the query's content words in each chunk (hybrid)
    windows: Mapping[str, Window]  # chunk id -> its best answer sentence, when one was scored


def score(pool: Pool, rules: ReadRules = DEFAULT_RULES, windows: WindowScorer | None = None) -> Scored:
    """Stage 2, score: relevance in [0, 1] of each candidate (ranking.fuse: BM25 weighted by the
    query's words a chunk covers, and cosine mixed with its note's whole: wholes.py), then every
    candidate is also scored by its best answer sentence (`windows`): a chunk's cosine becomes
    max(chunk, best sentence) and relevance is fused again, so a fact stated among other talk is
    judged by the fact, not by the talk around it (bm25 mode: BM25's; the sentences say which answers).
    A sentence the index does not hold yet is embedded for the `rules.embed_candidates` first only."""
    ids, mode, scaled_on = pool.ids, pool.mode, pool.scaled_on
    lex, cosines = [pool.lexical.get(c, 0.0) for c in ids], [pool.dense.get(c, 0.0) for c in ids]
    cover = _coverage(pool, lex, rules) if mode == "hybrid" and rules.coverage else None
    owners, weight = [pool.chunks[c].node_id for c in ids], _weights(pool, rules)
    dense = functools.partial(dense_side, owners=owners, whole=pool.whole or {}, share=rules.whole_note)
    fused = fuse(mode, lex, dense(cosines), cover, alpha=rules.fusion_alpha, scaled_on=scaled_on) * weight
    found: Mapping[str, Window] = {}
    if windows is not None and pool.qvec is not None and ids and rules.windows_per_chunk > 0:
        top = np.argsort(-fused, kind="stable")
        found = windows([pool.chunks[ids[i]] for i in top.tolist()], pool.qvec, pool.query, rules.embed_candidates)
        if found:
            answer = [max(cos, found[c].similarity) if c in found else cos for c, cos in zip(ids, cosines, strict=True)]
            fused = fuse(mode, lex, dense(answer), cover, alpha=rules.fusion_alpha, scaled_on=scaled_on) * weight
    return Scored(fused.tolist(), cover, found)


def _weights(pool: Pool, rules: ReadRules) -> np.ndarray:
    """What share of its relevance each candidate keeps: a chunk with no word of its own
    (`no_word_of_its_own`) keeps `rules.navigation_weight` of it; any other all of it."""
    if rules.navigation_weight == 1.0:
        return np.ones(len(pool.ids))
    says = (no_word_of_its_own(pool.chunks[c], pool.notes[pool.chunks[c].node_id]) for c in pool.ids)
    return np.fromiter((rules.navigation_weight if s else 1.0 for s in says), dtype=np.float64, count=len(pool.ids))


def no_word_of_its_own(chunk: ChunkRow, note: NoteRow) -> bool:
    """Whether a chunk has no word of its own: it only points at other pages (text.points_elsewhere:
    a README listing every how-to), or only says its name in a heading (text.beyond_its_name: "#
    Matrix", a page a link created). Recall weighs it as navigation; prefetch shows it in no block.
    A web page saved under a title that names it ("# Rodrigo Baraglia", `- https://twitter.com/
    encincovoy`) is a bookmark, as a link's text naming it is (text._bookmarks_read; stop 82)."""
    names = [*chunk.heading.split(" > "), note.title, note.path.rsplit("/", 1)[-1].removesuffix(".md")]
    body = beyond_its_name(chunk.body, names) if "#" in chunk.body else chunk.body
    # a page saved under a title that names it is a bookmark (judged only for a chunk that points elsewhere)
    return points_elsewhere(body) and not (holds_a_url(body) and says_something(note.title))


def _coverage(pool: Pool, lex: Sequence[float], rules: ReadRules = DEFAULT_RULES) -> list[float]:
    """Each candidate's coverage of the query's content words. Coverage weighs min-max scaled BM25,
    which is exactly 0 at the pool's lowest score (every dense-only candidate): there it changes
    nothing and is not computed."""
    terms = query_terms(pool.query)
    scale = [s for c, s in zip(pool.ids, lex, strict=True) if c in pool.core] or list(lex)
    lo, hi = min(scale, default=0.0), max(scale, default=0.0)
    skip = hi - lo >= 1e-12  # else minmax makes every BM25 1 (ranking.minmax)
    named = {} if not rules.names_count else {n: _names(r) for n, r in pool.notes.items()}
    return [
        1.0 if skip and s <= lo else coverage(terms, pool.chunks[c].text + named.get(pool.chunks[c].node_id, ""))
        for c, s in zip(pool.ids, lex, strict=True)
    ]


def _names(note: NoteRow) -> str:
    """What a note is called, as words a chunk of it covers: its title, aliases and file name
    (`Boiler.md` with `aliases: [heating]` is what "heating" asks for, whichever chunk answers)."""
    stem = note.path.rsplit("/", 1)[-1].removesuffix(".md")
    return "\n" + " ".join((note.title, *note.aliases, stem.replace("-", " ").replace("_", " ")))


def pick(
    pool: Pool, scored: Scored, granularity: Granularity = "note", rules: ReadRules = DEFAULT_RULES
) -> list[Candidate]:
    """Stage 3, pick: each note's candidate (or each chunk's, `granularity="chunk"`), in relevance
    order. A note is ranked by its chunks in the pool, by those that say something of their own
    (text.says_something: not only links and dates, which the heading path every chunk carries makes
    the best BM25 match for a daily note's name: "what did I do on the weekend of October 17" found
    `[[2026-10-15]] · [[2026-10-19]]`, not the day's log), then by relevance; a part a heading states
    on a day the query names (`Pool.day_sections`) before all of them: it is what the query asks for."""
    terms = query_terms(pool.query)
    says = _Says(rules.says_something_first)
    best: dict[str, Candidate] = {}
    scaled_on = pool.scaled_on
    for i, (cid, rel) in enumerate(zip(pool.ids, scored.relevance, strict=True)):
        ch = pool.chunks[cid]
        key = ch.node_id if granularity == "note" else cid
        cand = Candidate(
            key,
            ch.node_id,
            ch,
            rel,
            pool.dense.get(cid, 0.0),
            pool.lexical.get(cid, 0.0),
            terms,
            coverage=scored.coverage[i] if scored.coverage is not None else None,
            window=scored.windows.get(cid),
            beyond=not scaled_on[i],
            path=pool.notes[ch.node_id].path,
            on_day=ch.node_id in pool.on_day or cid in pool.day_sections,
        )
        if key not in best:
            best[key] = cand
            continue
        b = best[key]
        if (cand.on_day, not cand.beyond, says(cand), cand.relevance) > (b.on_day, not b.beyond, says(b), b.relevance):
            best[key] = cand
    return sorted(best.values(), key=relevance_order)


class _Says:
    """Whether a candidate's chunk says something of its own (asked only between a note's chunks,
    remembered per chunk); always True when the rule is off."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.memo: dict[str, bool] = {}

    def __call__(self, c: Candidate) -> bool:
        if not self.on:
            return True
        cid = c.chunk.chunk_id
        if cid not in self.memo:
            self.memo[cid] = says_something(c.chunk.body)
        return self.memo[cid]


__all__ = ["ExactOwners", "ExactRows", "ExactVectors", "Granularity", "Pool", "Scored", "Searcher", "WindowScorer"]
__all__ += ["first_of", "no_word_of_its_own", "pick", "score"]
