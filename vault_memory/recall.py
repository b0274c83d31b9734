"""Recall: relevance search (search.py), ranked with decay (ranking.py), rehearsed (edits.py).

    hits = recall(ws, "which editor do I use?", k=5, now=now)

Relevance is decided first; strength then reorders comparably relevant notes, dormant
notes drop out unless the query matches them strongly, and a superseded note never ranks
above its successor (ranking.rank). What recall returns is rehearsed unless `touch=False`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from .catalog import NoteRow
from .edits import memory_folder, rehearse
from .errors import VectorStoreUnavailableError
from .filters import NoteFilter, eligible
from .ranking import Mode, Ranked, rank
from .relations import with_identities
from .search import Granularity, Searcher
from .text import in_folder, snippet
from .workspace import Workspace


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
    date: str | None = None  # when the note was stated (fields.stated_time), ISO 8601
    rehearsed: bool = False  # this recall counted as a use of the note and wrote that back
    lexical_only: bool = False  # ranked by BM25 alone: vectors still being filled in, or the store unreachable

    def to_dict(self, *, with_text: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_text:
            out.pop("text")
        return out


def to_hit(query: str, r: Ranked, note: NoteRow) -> Hit:
    c, state = r.cand, r.state
    stated = state.stated.when
    date = (stated.isoformat() if state.stated.exact else stated.date().isoformat()) if stated is not None else None
    return Hit(path=note.path, node_id=note.node_id, title=note.title, heading=c.chunk.heading,
               snippet=snippet(c.chunk.text, query), score=round(r.score, 6), relevance=round(c.relevance, 6),
               similarity=round(c.similarity, 6), strength=round(r.strength, 6), tier=state.tier,
               pinned=state.pinned, dormant=r.dormant, reactivated=r.reactivated,
               superseded_by=list(state.superseded_by), chunk_id=c.chunk.chunk_id, text=c.chunk.text,
               date=date)


def recall(ws: Workspace, query: str, k: int = 5, *, mode: Mode = "hybrid", decay: bool = True,
           now: dt.datetime | None = None, touch: bool = True, granularity: Granularity = "note",
           include_staged: bool = False, filters: NoteFilter | None = None) -> list[Hit]:
    """See `Memory.recall`. `filters` restrict the candidates before ranking (filters.py)."""
    allow = eligible(ws, filters)
    if not query.strip() or allow == set():
        return []
    now = now or ws.clock()
    searcher = ws.searcher()
    lexical_only = False
    if not searcher.has_dense and mode != "bm25":
        mode, lexical_only = "bm25", True  # the server is unreachable and lexical fallback is on
    elif mode == "hybrid" and not ws.vectors().complete:
        # A first index writes every note before it embeds them: until all have vectors, rank
        # every note by BM25 rather than favour the ones embedded first.
        mode, lexical_only = "bm25", True
    exclude = () if include_staged else (ws.config.staging_folder.rstrip("/") + "/",)
    pool = max(100, 4 * k)
    try:
        # No chunk has a vector yet (the first seconds of a first index): no cosine to judge
        # dormancy by, so the query is not embedded and no model is loaded for this answer.
        similarity = decay and ws.vectors().embedded > 0
        cands = searcher.search(query, mode=mode, granularity=granularity, with_similarity=similarity,
                                candidates=pool, exclude_prefixes=exclude, allow=allow)
    except VectorStoreUnavailableError as exc:  # the server died mid-run
        ws.lexical_only(exc)
        lexical_only = True
        cands = Searcher(ws.catalog, None, ws.embedder).search(
            query, mode="bm25", granularity=granularity, candidates=pool, exclude_prefixes=exclude, allow=allow)
    notes = ws.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    cands = [c for c in cands if c.node_id in notes]  # a watcher may have re-identified one meanwhile
    notes = with_identities(ws, notes)  # `supersedes: ['[[Old]]']` -> identities, which ranking compares
    head = cands[: 4 * k + 20]
    vectors = ws.catalog.get_vectors([c.chunk.text_hash for c in head]) if decay else None
    ranked = rank(cands, notes, model=ws.decay, now=now, decay=decay, k=k, vectors=vectors)
    hits = [to_hit(query, r, notes[r.node_id]) for r in ranked]
    for h in hits:
        h.lexical_only = lexical_only
    if touch and not ws.config.read_only:
        used = used_hits(ws, hits)
        written = set(rehearse(ws, [h.node_id for h in used], now=now))
        for h in used:
            h.rehearsed = h.path in written
    return hits


def used_hits(ws: Workspace, hits: list[Hit]) -> list[Hit]:
    """The hits that clearly answered the query: the ones recall rehearses (`rehearse` policy).

    A note is rehearsed when it is among the best `rehearse_max_hits` hits whose cosine to the
    query reaches `rehearse_min_similarity` (an absolute scale, unlike fused relevance, whose
    top hit is always about 1), and the policy lets us write to it: `all`, or `memories`
    (notes in the memory folder only), or `none`. Everything returned is not everything used:
    rehearsing a weak fifth hit would write to a note nobody read.
    """
    cfg = ws.config
    if cfg.rehearse == "none":
        return []
    folder = memory_folder(ws)
    out: list[Hit] = []
    for h in hits:
        if len(out) >= cfg.rehearse_max_hits:
            break
        if h.similarity < cfg.rehearse_min_similarity:
            continue
        if cfg.rehearse == "memories" and not (not folder or in_folder(h.path, folder)):
            continue
        out.append(h)
    return out


__all__ = ["Hit", "recall", "to_hit", "used_hits"]
