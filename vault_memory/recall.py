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
from .edits import rehearse
from .errors import VectorStoreUnavailableError
from .ranking import Mode, Ranked, rank
from .search import Granularity, Searcher
from .text import snippet
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
    date: str | None = None

    def to_dict(self, *, with_text: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_text:
            out.pop("text")
        return out


def to_hit(query: str, r: Ranked, note: NoteRow) -> Hit:
    c, state = r.cand, r.state
    anchor = state.anchor.isoformat() if state.anchor is not None else None
    return Hit(path=note.path, node_id=note.node_id, title=note.title, heading=c.chunk.heading,
               snippet=snippet(c.chunk.text, query), score=round(r.score, 6), relevance=round(c.relevance, 6),
               similarity=round(c.similarity, 6), strength=round(r.strength, 6), tier=state.tier,
               pinned=state.pinned, dormant=r.dormant, reactivated=r.reactivated,
               superseded_by=list(state.superseded_by), chunk_id=c.chunk.chunk_id, text=c.chunk.text,
               date=anchor)


def recall(ws: Workspace, query: str, k: int = 5, *, mode: Mode = "hybrid", decay: bool = True,
           now: dt.datetime | None = None, touch: bool = True, granularity: Granularity = "note",
           include_staged: bool = False) -> list[Hit]:
    """See `Memory.recall`."""
    if not query.strip():
        return []
    now = now or ws.clock()
    searcher = ws.searcher()
    if not searcher.has_dense and mode != "bm25":
        mode = "bm25"  # the server is unreachable and lexical fallback is on
    exclude = () if include_staged else (ws.config.staging_folder.rstrip("/") + "/",)
    pool = max(100, 4 * k)
    try:
        cands = searcher.search(query, mode=mode, granularity=granularity, with_similarity=decay,
                                candidates=pool, exclude_prefixes=exclude)
    except VectorStoreUnavailableError as exc:  # the server died mid-run
        ws.lexical_only(exc)
        cands = Searcher(ws.catalog, None, ws.embedder).search(
            query, mode="bm25", granularity=granularity, candidates=pool, exclude_prefixes=exclude)
    notes = ws.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    head = cands[: 4 * k + 20]
    vectors = ws.catalog.get_vectors([c.chunk.text_hash for c in head]) if decay else None
    ranked = rank(cands, notes, model=ws.decay, now=now, decay=decay, k=k, vectors=vectors)
    hits = [to_hit(query, r, notes[r.node_id]) for r in ranked]
    if touch and not ws.config.read_only:
        rehearse(ws, [h.node_id for h in hits], now=now)
    return hits


__all__ = ["Hit", "recall", "to_hit"]
