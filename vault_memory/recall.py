"""Hybrid recall: lexical + dense candidates, fused, aggregated to notes, ranked with decay.

Relevance is decided first (fusion.py); strength then reorders comparably relevant
notes (see `rank`), dormant notes drop out unless the query matches them strongly,
and a superseded note never ranks above its successor.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import re
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from .catalog import Catalog, ChunkRow, NoteRow
from .decay import DecayModel, MemoryState, is_episodic, state_from_meta
from .embedders import Embedder
from .errors import EmbedderError
from .fusion import convex, normalise
from .vectorstore import VectorStore

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "bm25", "dense"]
Granularity = Literal["note", "chunk"]

# Measured on SciFact/LoCoMo/updates (bench/, README): see `rank` for the formula.
FUSION_ALPHA = 0.5  # dense weight in the convex fusion (LoCoMo R@10 flat over 0.4-0.6; see calibrate.json)
STRENGTH_WEIGHT = 0.0  # strength is not mixed into relevance: it orders same-subject notes (rank)
SAME_SUBJECT_COSINE = 0.5
RELEVANCE_BAND = 0.3
FULL_CUE_MIN_TERMS = 2  # a dormant chunk containing all of a query's (>= 2) content words comes back


@dataclass
class Hit:
    """One recalled note (or chunk)."""

    path: str
    node_id: str
    title: str
    heading: str
    snippet: str
    score: float
    relevance: float
    similarity: float
    strength: float
    tier: str
    pinned: bool
    dormant: bool
    reactivated: bool
    superseded_by: list[str] = field(default_factory=list)
    chunk_id: str = ""
    text: str = ""
    date: str | None = None

    def to_dict(self, *, with_text: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_text:
            out.pop("text")
        return out


@dataclass(frozen=True)
class Candidate:
    key: str  # note id, or chunk id at chunk granularity
    node_id: str
    chunk: ChunkRow
    relevance: float  # fused, in [0, 1]
    similarity: float  # exact cosine of the best chunk to the query
    lexical: float
    terms: frozenset[str] = frozenset()  # the query's content words (query_terms)

    @property
    def full_cue(self) -> bool:
        """The chunk contains every content word of a query of two or more: a specific cue.
        Computed on demand: only dormant candidates are asked."""
        return is_full_cue(self.terms, self.chunk.text)


class Searcher:
    """Relevance only: no decay, no writes."""

    def __init__(self, catalog: Catalog, store: VectorStore | None, embedder: Embedder, *,
                 exact: Callable[[], tuple[list[str], np.ndarray]] | None = None) -> None:
        """Dense candidates come from `store` (ANN), else from `exact` (all vectors, e.g. a
        cache kept by Memory), else from the catalog's vectors loaded here."""
        self.catalog = catalog
        self.store = store
        self.embedder = embedder
        self.exact = exact

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
        terms = frozenset(query_terms(query))
        if mode == "hybrid":
            # BM25 is scaled to [0, 1] among the candidates, which makes the best lexical match
            # worth 1 even when it only shares an everyday word with the query; weighting it by
            # the share of query terms the chunk contains keeps such matches from outranking a
            # clear semantic match (a paraphrase shares no words at all).
            lex = normalise({c: lexical.get(c, 0.0) for c in pool})
            lex = {c: v * coverage(terms, chunks[c].text) for c, v in lex.items()}
            fused = convex(lex, {c: dense.get(c, 0.0) for c in pool}, FUSION_ALPHA, prenormalised_lexical=True)
        elif mode == "bm25":
            fused = normalise({c: lexical[c] for c in pool if c in lexical})
        else:
            fused = normalise({c: dense[c] for c in pool if c in dense})
        best: dict[str, Candidate] = {}
        for cid, rel in fused.items():
            ch = chunks[cid]
            key = ch.node_id if granularity == "note" else cid
            cand = Candidate(key, ch.node_id, ch, rel, dense.get(cid, 0.0), lexical.get(cid, 0.0), terms)
            if key not in best or rel > best[key].relevance:
                best[key] = cand
        return sorted(best.values(), key=lambda c: (-c.relevance, c.key))


def rank(cands: Sequence[Candidate], notes: dict[str, NoteRow], *, model: DecayModel, now: dt.datetime,
         decay: bool, k: int,
         vectors: Mapping[str, np.ndarray] | None = None,
         same_subject: float = SAME_SUBJECT_COSINE, band: float = RELEVANCE_BAND,
         ) -> list[tuple[Candidate, MemoryState, float, float, bool, bool]]:
    """Decide relevance first, then let strength order what says the same thing.

    1. Dormant notes (strength < threshold, not pinned) drop out unless their best chunk's
       cosine to the query reaches `model.reactivation_threshold(strength)` (then they are
       `reactivated`): the longer a note has been forgotten, the closer the cue must be. A
       chunk containing every content word of a query of two or more words is a specific
       cue too (`Candidate.full_cue`): it comes back whatever its cosine.
    2. The k most relevant remaining notes are chosen by relevance alone, so decay never
       costs recall: a multiplicative decay factor buys recency with recall (FINDINGS.md).
    3. Among those k, notes about the same subject (best chunks' cosine >= `same_subject`)
       and comparably relevant (relevance within `band`) trade places so the fresher one
       (pinned, else stated later: `freshness`) comes first; a clearly better match is never moved
       below a weak fresh one. Notes labelled episodic (`type: conversation`, `log`,
       `meeting`..., decay.is_episodic) keep their places: a newer record does not update them.
    4. A superseded note never ranks above its successor.
    Chosen on bench/calibrate.py: see README "Ranking".
    """
    kept = []
    for c in cands:
        note = notes[c.node_id]
        state = state_from_meta(note.meta, note.mtime)
        strength = model.strength(state, now)
        dormant = model.dormant(state, now)
        reactivated = False
        if decay and dormant:
            if c.similarity < model.reactivation_threshold(strength) and not c.full_cue:
                continue
            reactivated = True
        kept.append((c, state, strength, c.relevance, dormant, reactivated))
    kept.sort(key=lambda t: (-t[3], t[0].key))
    top = kept[:k]
    if decay:
        if vectors is not None:
            fixed = [is_episodic(t[1]) for t in top]
            fresh = [freshness(t[1], t[2], notes[t[0].node_id].mtime) for t in top]
            top = _fresher_first(top, vectors, same_subject, band, fixed, fresh)
        top = _successors_first(top)
    return top


def freshness(state: MemoryState, strength: float, mtime: float) -> tuple[int, float, float]:
    """What decides between two statements of one subject: pinned first, then the one stated
    later (`created`, else `date`, else the file's mtime), then the stronger.

    Not strength first: recall rehearses every note it returns, so after one recall an old
    and a new statement are equally strong, and the order would fall back to relevance.
    """
    stated = state.stated.timestamp() if state.stated is not None else mtime
    return (int(state.pinned), stated, strength)


def _fresher_first(items: list[Any], vectors: Mapping[str, np.ndarray], same_subject: float,
                   band: float, fixed: Sequence[bool], fresh: Sequence[tuple[int, float, float]]) -> list[Any]:
    """Group same-subject, comparably relevant items; refill each group's positions freshest first."""
    keys = [t[0].chunk.text_hash for t in items]
    if len(items) < 2 or any(h not in vectors for h in keys):
        return items
    mat = np.vstack([vectors[h] for h in keys]).astype(np.float32)
    order = same_subject_order(mat, [t[3] for t in items], fresh,
                               [t[0].node_id for t in items], same_subject, band, fixed)
    return [items[i] for i in order]


def same_subject_order(vectors: np.ndarray, relevance: Sequence[float], freshness: Sequence[Any],
                       owners: Sequence[str], same_subject: float, band: float,
                       fixed: Sequence[bool] | None = None) -> list[int]:
    """The permutation `rank` applies (pure; bench/calibrate.py replays it).

    Items i < j (in relevance order) are about the same subject when their vectors' cosine is
    >= `same_subject`, their relevance differs by <= `band`, they belong to different notes
    and neither is `fixed` (episodic: it keeps its place); groups are the connected
    components, and each group's positions are refilled freshest first. Returns `order`
    such that output position p holds input item order[p].
    """
    n = len(relevance)
    sims = vectors @ vectors.T
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    fixed = fixed or [False] * n
    for i in range(n):
        for j in range(i + 1, n):
            if fixed[i] or fixed[j]:
                continue
            if sims[i, j] >= same_subject and relevance[i] - relevance[j] <= band and owners[i] != owners[j]:
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    order = list(range(n))
    for members in groups.values():
        if len(members) > 1:
            # freshest first (comparable keys: `freshness` tuples, or plain strengths in the
            # calibration replay); the sort is stable, so equals keep their relevance order
            for pos, src in zip(members, sorted(members, key=lambda m: freshness[m], reverse=True), strict=True):
                order[pos] = src
    return order


def _successors_first(items: list[Any]) -> list[Any]:
    """A superseded note never ranks above a successor that is also in the list."""
    order = list(items)
    changed = True
    guard = 0
    while changed and guard < len(order) ** 2 + 1:
        changed = False
        guard += 1
        pos = {t[0].node_id: i for i, t in enumerate(order)}
        for i, t in enumerate(order):
            succ = [pos[s] for s in t[1].superseded_by if s in pos and pos[s] > i]
            # a human may record the link only on the new note (`supersedes`)
            succ += [j for j, u in enumerate(order) if j > i and t[0].node_id in u[1].supersedes]
            if succ:
                j = max(succ)
                order.insert(j, order.pop(i))
                changed = True
                break
    return order


_WORD = re.compile(r"\w+")


def _stem(word: str) -> str:
    return word[:5]  # crude but symmetric; FTS5 does the real (porter) matching


def query_terms(query: str) -> set[str]:
    from .catalog import STOPWORDS

    return {_stem(w) for w in _WORD.findall(query.lower()) if w not in STOPWORDS and len(w) > 1}


def is_full_cue(terms: Set[str], text: str) -> bool:
    """Every content word of a query of two or more is in the text (rank's reactivation cue)."""
    return len(terms) >= FULL_CUE_MIN_TERMS and coverage(terms, text) >= 1.0


def coverage(terms: Set[str], text: str) -> float:
    """Share of the query's content terms that occur in the text."""
    if not terms:
        return 1.0
    words = {_stem(w) for w in _WORD.findall(text.lower())}
    return len(terms & words) / len(terms)


def snippet(text: str, query: str, width: int = 240) -> str:
    """The part of a chunk with the most query words, on word boundaries."""
    lines = text.split("\n")
    body = " ".join(line.strip() for line in lines[1:] if line.strip()) if len(lines) > 1 else text.strip()
    body = body or text.strip()
    if len(body) <= width:
        return body
    terms = {w for w in _WORD.findall(query.lower()) if len(w) > 2}
    best_start, best_hits = 0, -1
    positions = [m.start() for m in _WORD.finditer(body)]
    for start in positions[:: max(1, len(positions) // 200)]:
        window = body[start : start + width].lower()
        hits = sum(1 for t in terms if t in window)
        if hits > best_hits:
            best_start, best_hits = start, hits
    start = max(0, best_start - 40)
    if start:
        start = body.find(" ", start) + 1 or start
    piece = body[start : start + width]
    if start + width < len(body):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + piece
