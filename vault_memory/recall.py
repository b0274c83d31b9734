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
from .errors import VectorStoreUnavailableError
from .filters import NoteFilter, eligible
from .ranking import Mode, Ranked, change_label, rank
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
    #: when other hits answer the same question with other statements: "newest of 2 statements",
    #: or "older: newer statement (2024-11-30) is #1" (issue 14); "" otherwise
    change: str = ""
    #: how it was ranked, when asked for (`recall(..., explain=True)`): see `explain_hit`
    explain: dict[str, Any] | None = None

    def to_dict(self, *, with_text: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_text:
            out.pop("text")
        if self.explain is None:
            out.pop("explain")
        return out


def to_hit(query: str, r: Ranked, note: NoteRow) -> Hit:
    c, state = r.cand, r.state
    stated = state.stated.when
    date = (stated.isoformat() if state.stated.exact else stated.date().isoformat()) if stated is not None else None
    return Hit(
        path=note.path,
        node_id=note.node_id,
        title=note.title,
        heading=c.chunk.heading,
        snippet=snippet(c.chunk.text, query),
        score=round(r.score, 6),
        relevance=round(c.relevance, 6),
        similarity=round(c.similarity, 6),
        strength=round(r.strength, 6),
        tier=state.tier,
        pinned=state.pinned,
        dormant=r.dormant,
        reactivated=r.reactivated,
        superseded_by=list(state.superseded_by),
        chunk_id=c.chunk.chunk_id,
        text=c.chunk.text,
        date=date,
    )


def recall(
    ws: Workspace,
    query: str,
    k: int = 5,
    *,
    mode: Mode = "hybrid",
    decay: bool = True,
    now: dt.datetime | None = None,
    touch: bool = True,
    granularity: Granularity = "note",
    include_staged: bool = False,
    filters: NoteFilter | None = None,
    explain: bool = False,
) -> list[Hit]:
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
        cands = searcher.search(
            query,
            mode=mode,
            granularity=granularity,
            with_similarity=similarity,
            candidates=pool,
            exclude_prefixes=exclude,
            allow=allow,
            windows=ws.window_scorer() if mode != "bm25" else None,
        )
    except VectorStoreUnavailableError as exc:  # the server died mid-run
        ws.lexical_only(exc)
        lexical_only = True
        cands = Searcher(ws.catalog, None, ws.embedder).search(
            query, mode="bm25", granularity=granularity, candidates=pool, exclude_prefixes=exclude, allow=allow
        )
    notes = ws.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    cands = [c for c in cands if c.node_id in notes]  # a watcher may have re-identified one meanwhile
    notes = with_identities(ws, notes)  # `supersedes: ['[[Old]]']` -> identities, which ranking compares
    head = cands[: 4 * k + 20]
    vectors = searcher.vectors_of([c.chunk for c in head]) if decay else None
    ranked = rank(cands, notes, model=ws.decay, now=now, decay=decay, k=k, vectors=vectors)
    hits = [to_hit(query, r, notes[r.node_id]) for r in ranked]
    for h in hits:
        h.lexical_only = lexical_only
    mark_changes(hits, ranked)
    if explain:
        for i, (h, r) in enumerate(zip(hits, ranked, strict=True), 1):
            h.explain = explain_hit(i, r, hits, ranked, mode=mode, decay=decay)
    if touch and not ws.config.read_only:
        from .edits import rehearse  # the write path: not imported by a recall that writes nothing

        used = used_hits(ws, hits)
        written = set(rehearse(ws, [h.node_id for h in used], now=now))
        for h in used:
            h.rehearsed = h.path in written
    return hits


def mark_changes(hits: list[Hit], ranked: list[Ranked]) -> None:
    """Mark hits that answer the same question with other statements (ranking.change_label): the
    newest says so, an older one points at the newer one above it, so the agent need not guess."""
    pos = {r.node_id: i for i, r in enumerate(ranked)}
    for i, (h, r) in enumerate(zip(hits, ranked, strict=True)):
        others = [(pos[o] + 1, day_of(hits[pos[o]].date)) for o in r.same_question if o in pos]
        h.change = change_label(i + 1, day_of(h.date), others)


def day_of(date: str | None) -> str | None:
    return date[:10] if date else None


def explain_hit(
    place: int, r: Ranked, hits: list[Hit], ranked: list[Ranked], *, mode: Mode, decay: bool
) -> dict[str, Any]:
    """How one hit was ranked: the parts of its relevance, its decay facts, and why it moved."""
    c, st = r.cand, r.state
    path_of = {x.node_id: h.path for x, h in zip(ranked, hits, strict=True)}
    why = list(r.moves)
    if r.relevance_rank and r.relevance_rank < place and not r.moves:
        why.append(
            f"moved below #{place - 1}: "
            + ("a later statement of the same question ranks first" if r.same_question else "its successor ranks first")
        )
    for s in st.superseded_by:
        why.append(f"superseded by {path_of.get(s, s)}: never ranked above it")
    return {
        "place": place,
        "relevance_rank": r.relevance_rank,
        "mode": mode,
        "bm25": round(c.lexical, 4),
        "dense": round(c.similarity, 4),
        "window": None if c.window is None else {"text": c.window.text, "similarity": round(c.window.similarity, 4)},
        "coverage": None if c.coverage is None else round(c.coverage, 4),
        "relevance": round(c.relevance, 4),
        "decay": decay,
        "strength": round(r.strength, 4),
        "tier": st.tier,
        "pinned": st.pinned,
        "stated": None
        if st.stated.when is None
        else {"when": day_of(st.stated.when.isoformat()), "source": st.stated.source},
        "dormant": r.dormant,
        "reactivated": r.reactivated,
        "same_question": [path_of[n] for n in r.same_question if n in path_of],
        "moved": why,
    }


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
    from .edits import memory_folder

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


__all__ = ["Hit", "explain_hit", "mark_changes", "recall", "to_hit", "used_hits"]
