"""Prefetch: the memories relevant to this turn, as one bounded block for a system prompt.

    [RELEVANT_LEARNED_MEMORY]
    - (2026-11-20, Memory/coffee.md) I drink a double espresso, no sugar.
    [/RELEVANT_LEARNED_MEMORY]

Choosing entries. The score is *decayed absolute relevance*: the cosine of the turn to a
note's best chunk (or to its best answer window, when higher: windows.py, so a fact is not
judged by the talk around it), times `1 - w + w * strength` (w = STRENGTH_WEIGHT, 0.15). Cosine is
used because it is the one relevance number with a fixed scale: the fused relevance that
recall ranks by is min-max normalised per query (its top hit is always ~1.0, so a minimum on
it would never give an empty block) and BM25 grows with corpus size and query length.
Candidates are therefore the turn's nearest chunks (dense search): lexical search could add
nothing that passes the gate. Entries below `prefetch_min_score` are cut (by score, never
by position); what remains is shown best first, one entry per note, near-duplicates
merged, until the budget is used. Dormant notes stay out unless the turn matches them as closely as
recall's reactivation rule demands; superseded and staged memories always stay out.

The current statement (issue 14). When an admitted note is a fact, the other notes that
recall's ranking says answer the same question follow it into the block, even below the
bar, stated later first and marked ("stated 2024-03-02; older: newer statement (2024-11-20)
is #1"): the newest statement is shown whenever an older one is (`with_statements`).

No block: when nothing passes, `block` is the empty string (not an empty marker pair),
so a caller can always do `system = base + result.block` without adding noise.

Rehearsal: prefetch does not rehearse what it shows unless asked (`touch=True`). It runs
on every turn whether or not the model uses what it is handed; rehearsing that would make
anything vaguely topical self-reinforcing (shown -> stronger -> shown again) and write
to the vault on every turn. Explicit `recall` is the retrieval that counts.

Staged memories. Prefetching a user's turn also refreshes the expiry of staged memories
the turn is about: dense similarity of the turn to the staged memory's text (so synonyms
and paraphrase count, unlike a keyword hook on a slug), plus pointer turns ("keep that",
"save it") which refresh the newest staged memory. A refresh only ever extends `expires`
to now + staged_ttl, through the one write path with compare-and-swap.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from .catalog import ChunkRow, NoteRow
from .decay import MemoryState, is_episodic
from .edits import rehearse
from .embedders import Embedder, Vectors, embed_query
from .errors import VectorStoreUnavailableError
from .fields import parse_time
from .filters import NoteFilter, eligible
from .ranking import Candidate, Ranked, change_label, freshness, rank
from .relations import with_identities
from .search import Searcher
from .staging import refresh_staged_memories
from .text import snippet
from .windows import chunk_body
from .workspace import Workspace

log = logging.getLogger(__name__)

OPEN = "[RELEVANT_LEARNED_MEMORY]"
CLOSE = "[/RELEVANT_LEARNED_MEMORY]"
#: Two entries whose chunk vectors are at least this close, or whose word sets overlap at
#: least DUPLICATE_JACCARD, say the same thing: the lower-scored one is merged into the other.
DUPLICATE_SIMILARITY = 0.92
DUPLICATE_JACCARD = 0.8
#: How much freshness counts in the prefetch score: a note at strength 0 keeps 85 % of its cosine.
#: Enough that the fresher of two statements on one subject is shown first (and a faded
#: borderline match is cut first), too little to let a fresh weak match pass a strong old one.
STRENGTH_WEIGHT = 0.15
#: An entry shortened to fit the budget must keep at least this much text, or it is not shown.
MIN_ENTRY_TEXT = 40

_WS = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class PrefetchEntry:
    """One memory in the block."""

    node_id: str
    path: str
    title: str
    heading: str
    date: str | None  # YYYY-MM-DD: created, else a frontmatter date, else last rehearsal, else mtime
    text: str  # what the block shows (the relevant part of the best chunk)
    score: float  # decayed absolute relevance: the cut and the order
    similarity: float  # cosine of the turn to the best chunk
    strength: float
    reactivated: bool = False
    merged: tuple[str, ...] = ()  # paths of near-duplicates folded into this entry
    #: when another entry answers the same question with a different statement: "newest of 2
    #: statements" or "older: a newer statement (2024-11-30) is above" (issue 14)
    change: str = ""

    def line(self, room: int) -> str | None:
        """This entry as one line of at most `room` characters, or None if it cannot fit usefully."""
        rendered = self._render(room)
        return None if rendered is None else rendered[0]

    def _render(self, room: int) -> tuple[str, str] | None:
        """(line, the text it shows), or None."""
        where = self.path + (f" > {self.heading}" if self.heading and self.heading != self.title else "")
        where = _oneline(where)
        date = self.date or "undated"
        if self.change:  # another entry states something else for the same question
            date = f"stated {date}; {self.change}"

        fixed = len(f"- ({date}, ) ")
        max_where = room - fixed - MIN_ENTRY_TEXT
        if max_where < 8:
            return None
        if len(where) > max_where:  # very long paths keep their end: the file name
            where = "…" + where[-(max_where - 1) :]
        prefix = f"- ({date}, {where}) "
        full = _oneline(self.text)
        text = shorten(full, room - len(prefix))
        if len(text) < MIN_ENTRY_TEXT and text != full:
            return None
        return prefix + text, text

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["merged"] = list(self.merged)
        return out


@dataclass
class PrefetchResult:
    """The block to put in a system prompt, and what is in it."""

    block: str  # "" when nothing is relevant enough
    entries: list[PrefetchEntry]  # the entries shown, best first
    budget: int
    relevant: int = 0  # notes that passed the minimum score (shown or not)
    refreshed: list[str] = field(default_factory=list)  # staged memories whose expiry was extended

    def __str__(self) -> str:
        return self.block

    def to_dict(self) -> dict[str, Any]:
        return {
            "block": self.block,
            "chars": len(self.block),
            "budget": self.budget,
            "relevant": self.relevant,
            "entries": [e.to_dict() for e in self.entries],
            "refreshed": list(self.refreshed),
        }


@dataclass(frozen=True)
class _Pick:
    """A note admitted to the block, with the chunk that admitted it."""

    score: float
    cand: Candidate
    note: NoteRow
    strength: float
    reactivated: bool
    stated: MemoryState
    same_question: tuple[str, ...] = ()


# -- pure parts ---------------------------------------------------------------------


def _oneline(text: str) -> str:
    # One entry per line, and a note cannot close (or reopen) the block from inside it.
    text = text.replace(CLOSE, "(/RELEVANT_LEARNED_MEMORY)").replace(OPEN, "(RELEVANT_LEARNED_MEMORY)")
    return _WS.sub(" ", text).strip()


def shorten(text: str, width: int) -> str:
    """`text` on one line in at most `width` characters, cut on a word boundary with "…"."""
    text = _oneline(text)
    if len(text) <= width:
        return text
    if width <= 1:
        return ""
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def render_block(
    entries: Sequence[PrefetchEntry], budget: int, entry_cap: int = 400
) -> tuple[str, list[PrefetchEntry]]:
    """Pack entries (best first) into the block; stops at the first that no longer fits.

    The whole block, markers and newlines included, is at most `budget` characters, and
    each entry's line at most `entry_cap`; the block is "" when not even one entry fits.
    Entries are never skipped to make room for lower-scored ones, so the block always
    shows a prefix of `entries`.
    """
    frame = len(OPEN) + 1 + len(CLOSE)  # "OPEN\n" + lines + "CLOSE"
    lines: list[str] = []
    shown: list[PrefetchEntry] = []
    used = frame
    for entry in entries:
        room = min(entry_cap, budget - used - 1)  # -1: the line's own "\n"
        rendered = entry._render(room) if room > 0 else None
        if rendered is None:
            break
        line, text = rendered
        lines.append(line)
        shown.append(replace(entry, text=text))  # the entry as shown (possibly shortened)
        used += len(line) + 1
    if not lines:
        return "", []
    return OPEN + "\n" + "".join(f"{ln}\n" for ln in lines) + CLOSE, shown


def decayed(similarity: float, strength: float, weight: float = STRENGTH_WEIGHT) -> float:
    """The prefetch score: cosine scaled by freshness; a fresh note keeps its cosine."""
    return similarity * (1.0 - weight + weight * strength)


def stated_day(state: MemoryState) -> str | None:
    """When the note was stated (fields.stated_time: the note's own dates, a daily note's
    file name, our `stated` key, then the file time), to the day."""
    day = state.stated.day()
    return day.isoformat() if day is not None else None


def entry_date(meta: dict[str, Any], mtime: float) -> str | None:
    """When the memory was stated: created, a frontmatter date, the last rehearsal, the mtime."""
    for key in ("created", "date", "last_accessed"):
        when = parse_time(meta.get(key))
        if when is not None:
            return when.astimezone(dt.UTC).date().isoformat()
    if mtime:
        return dt.datetime.fromtimestamp(mtime, tz=dt.UTC).date().isoformat()
    return None


def _jaccard(a: str, b: str) -> float:
    wa, wb = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def one_line(text: str) -> str:
    """The turn on one line (embedded whole: embedders.embed_query takes any length)."""
    return _WS.sub(" ", text).strip()


class _Remembered:
    """An embedder that answers one known text from memory: the turn is embedded once."""

    def __init__(self, inner: Embedder, text: str, vector: np.ndarray) -> None:
        self.inner, self.text, self.vector = inner, text, vector
        self.identity, self.dim, self.max_tokens = inner.identity, inner.dim, inner.max_tokens

    def count_tokens(self, text: str) -> int:
        # Its own text "fits": embed_query then asks for it whole, and gets the vector it has.
        return 1 if text == self.text else self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if list(texts) == [self.text]:
            return self.vector[None, :]
        return self.inner.embed(texts)


# -- the edge: one call against a Memory ------------------------------------------------


def prefetch(
    ws: Workspace,
    text: str,
    *,
    budget: int | None = None,
    now: dt.datetime | None = None,
    refresh_staged: bool = True,
    touch: bool = False,
    filters: NoteFilter | None = None,
) -> PrefetchResult:
    """See `Memory.prefetch`. `filters` restrict the candidates before admission (filters.py)."""
    cfg = ws.config
    budget = cfg.prefetch_budget if budget is None else int(budget)
    now = now or ws.clock()
    query = one_line(text)
    if not query:
        return PrefetchResult("", [], budget)
    qvec = embed_query(ws.embedder, query)
    staged_prefix = cfg.staging_folder.strip("/") + "/"

    # Dense candidates only: admission is on cosine, so the nearest chunks *are* the best
    # candidates; BM25 cannot admit anything (no absolute scale) and costs O(matching
    # documents) per query (~100 ms on 10k notes), which the turn should not pay.
    embedder = _Remembered(ws.embedder, query, qvec)
    pool = min(200, max(30, budget // 40))
    allow = eligible(ws, filters)
    try:
        cands = ws.searcher(embedder).search(
            query,
            mode="dense",
            granularity="chunk",
            candidates=pool,
            exclude_prefixes=(staged_prefix,),
            allow=allow,
            windows=ws.window_scorer(),
        )
    except VectorStoreUnavailableError as exc:  # a Chroma server went away: exact search over the catalog
        ws.lexical_only(exc)
        cands = Searcher(ws.catalog, None, embedder).search(
            query, mode="dense", granularity="chunk", candidates=pool, exclude_prefixes=(staged_prefix,), allow=allow
        )
    notes = ws.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    best: dict[str, _Pick] = {}
    for c in cands:
        note = notes.get(c.node_id)
        if note is None:
            continue  # a watcher re-identified or removed it since the search
        state = ws.decay.state(note.meta, note.mtime, note.path)
        if state.status == "staged" or state.superseded_by:
            continue
        # the same gate as recall: the longer forgotten, the closer the cue must be. Both judge
        # the answer (the chunk's best window when it has one), not the talk around it.
        gate = ws.decay.gate(state, now, c.answer_similarity)
        if not gate.admitted:
            continue
        score = decayed(c.answer_similarity, gate.strength)
        held = best.get(c.node_id)
        if held is None or (-score, c.key) < (-held.score, held.cand.key):  # its best chunk; ties by chunk id
            best[c.node_id] = _Pick(score, c, note, gate.strength, gate.reactivated, state)
    picks = sorted(best.values(), key=lambda t: (-t.score, t.note.node_id))
    ranked = with_statements(ws, query, picks, cfg.prefetch_min_score, now, embedder, staged_prefix, allow)

    entries = mark_changes(
        _merge_duplicates(ws, query, ranked, cfg.prefetch_entry_cap), {p.note.node_id: p.same_question for p in ranked}
    )
    block, shown = render_block(entries, budget, cfg.prefetch_entry_cap)
    result = PrefetchResult(block, shown, budget, relevant=len(ranked))
    if refresh_staged and not cfg.read_only:
        result.refreshed = refresh_staged_memories(ws, text, qvec, now=now)
    if touch and shown and not cfg.read_only:
        rehearse(ws, [e.node_id for e in shown], now=now)
    return result


#: Prefetch shows the statements of a question as recall's top RECALL_K groups them.
RECALL_K = 5


def recall_groups(
    ws: Workspace,
    query: str,
    now: dt.datetime,
    embedder: Embedder,
    staged_prefix: str,
    allow: AbstractSet[str] | None = None,
) -> tuple[dict[str, tuple[str, ...]], dict[str, Ranked]]:
    """What recall (hybrid, decay on, k=RECALL_K) would say answers the same question:
    node id -> the others of its group, and the ranked notes that are in a group."""
    cands = ws.searcher(embedder).search(
        query,
        mode="hybrid",
        granularity="note",
        candidates=100,
        exclude_prefixes=(staged_prefix,),
        allow=allow,
        windows=ws.window_scorer(),
    )
    # Only the head is ranked: the k come from it unless nearly all of it is dormant (then the
    # groups are merely smaller), and ranking every candidate's decay state would double the turn's cost.
    head = cands[: 4 * RECALL_K + 20]
    notes = with_identities(ws, ws.catalog.notes_by_ids(sorted({c.node_id for c in head})))
    head = [c for c in head if c.node_id in notes]
    vectors = ws.catalog.get_vectors([c.chunk.text_hash for c in head])
    ranked = rank(head, notes, model=ws.decay, now=now, decay=True, k=RECALL_K, vectors=vectors)
    grouped = {r.node_id: r for r in ranked if r.same_question}
    return {n: r.same_question for n, r in grouped.items()}, grouped


def with_statements(
    ws: Workspace,
    query: str,
    picks: Sequence[_Pick],
    min_score: float,
    now: dt.datetime,
    embedder: Embedder,
    staged_prefix: str,
    allow: AbstractSet[str] | None = None,
) -> list[_Pick]:
    """The admitted notes (score >= `min_score`), best first, each followed by the other
    statements of the question it answers, stated later first (issue 14).

    Which notes answer the same question is recall's call (`recall_groups`: the same
    candidates, relevance and rule as `recall` with its default k), asked only when a
    fact (not an episodic record) is admitted. A group brings its members in even below the
    bar, so the newest statement is shown whenever an older one is, and is shown first.
    """
    admitted = [p for p in picks if p.score >= min_score]
    if not any(not is_episodic(p.stated) for p in admitted):
        return admitted
    groups, grouped = recall_groups(ws, query, now, embedder, staged_prefix, allow)
    by_id = {p.note.node_id: p for p in picks}
    placed: set[str] = set()
    out: list[_Pick] = []
    for a in admitted:
        if a.note.node_id in placed:
            continue
        members = [a.note.node_id, *[m for m in groups.get(a.note.node_id, ()) if m not in placed]]
        group: list[_Pick] = []
        for m in members:
            pick = by_id.get(m) or _companion(ws, grouped[m], now)
            if pick is not None:
                group.append(pick)
        placed.update(p.note.node_id for p in group)
        ids = [p.note.node_id for p in group]
        for p in sorted(group, key=lambda p: freshness(p.stated, p.strength), reverse=True):
            out.append(replace(p, same_question=tuple(i for i in ids if i != p.note.node_id)))
    return out


def _companion(ws: Workspace, r: Ranked, now: dt.datetime) -> _Pick | None:
    """A statement recall grouped with an admitted note, as a pick (None: prefetch may not show it:
    staged, superseded, or dormant by prefetch's own gate, which takes no word cue)."""
    note = ws.catalog.notes_by_ids([r.node_id]).get(r.node_id)
    if note is None or r.state.status == "staged" or r.state.superseded_by:
        return None
    gate = ws.decay.gate(r.state, now, r.cand.answer_similarity)
    if not gate.admitted:
        return None
    return _Pick(
        decayed(r.cand.answer_similarity, gate.strength), r.cand, note, gate.strength, gate.reactivated, r.state
    )


def mark_changes(entries: list[PrefetchEntry], groups: dict[str, tuple[str, ...]]) -> list[PrefetchEntry]:
    """Mark the entries that answer the same question with other statements (ranking.change_label)."""
    pos = {e.node_id: i for i, e in enumerate(entries)}
    out = list(entries)
    for i, e in enumerate(entries):
        others = [(pos[o] + 1, entries[pos[o]].date) for o in groups.get(e.node_id, ()) if o in pos]
        out[i] = replace(e, change=change_label(i + 1, e.date, others))
    return out


def _merge_duplicates(ws: Workspace, query: str, ranked: Sequence[_Pick], cap: int) -> list[PrefetchEntry]:
    chunks: list[ChunkRow] = [t.cand.chunk for t in ranked]
    vecs = ws.catalog.get_vectors(sorted({c.text_hash for c in chunks})) if chunks else {}
    kept: list[tuple[PrefetchEntry, ChunkRow]] = []
    for pick in ranked:
        score, cand, note, strength, reactivated = pick.score, pick.cand, pick.note, pick.strength, pick.reactivated
        chunk: ChunkRow = cand.chunk
        body = snippet("\n" + chunk_body(chunk), query, width=cap)  # "\n": snippet drops a first line
        # The sentence that answers, when the chunk has one: the statement is what the agent
        # needs, and a short entry leaves room for the other statements of the same question.
        shown = cand.window.text if cand.window is not None else body
        twin = None
        for i, (other, other_chunk) in enumerate(kept):
            va, vb = vecs.get(chunk.text_hash), vecs.get(other_chunk.text_hash)
            same = chunk.text_hash == other_chunk.text_hash
            close = va is not None and vb is not None and float(va @ vb) >= DUPLICATE_SIMILARITY
            if same or close or _jaccard(body, other.text) >= DUPLICATE_JACCARD:
                twin = i
                break
        if twin is not None:
            other, other_chunk = kept[twin]
            kept[twin] = (replace(other, merged=(*other.merged, note.path)), other_chunk)
            continue
        entry = PrefetchEntry(
            node_id=note.node_id,
            path=note.path,
            title=note.title,
            heading=chunk.heading,
            date=stated_day(pick.stated),
            text=shorten(shown, cap),
            score=round(score, 6),
            similarity=round(cand.similarity, 6),
            strength=round(strength, 6),
            reactivated=reactivated,
        )
        kept.append((entry, chunk))
    return [e for e, _ in kept]


__all__ = ["CLOSE", "OPEN", "PrefetchEntry", "PrefetchResult", "entry_date", "prefetch", "render_block", "shorten"]
