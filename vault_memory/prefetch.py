"""Prefetch: the memories relevant to this turn, as one bounded block for a system prompt.

    [RELEVANT_LEARNED_MEMORY]
    - (2026-11-20, Memory/coffee.md) I drink a double espresso, no sugar.
    [/RELEVANT_LEARNED_MEMORY]

Choosing entries. The score is *decayed absolute relevance*: the cosine of the turn to a
note's best chunk, times `1 - w + w * strength` (w = STRENGTH_WEIGHT, 0.15). Cosine is
used because it is the one relevance number with a fixed scale: the fused relevance that
recall ranks by is min-max normalised per query (its top hit is always ~1.0, so a minimum on
it would never give an empty block) and BM25 grows with corpus size and query length.
Candidates are therefore the turn's nearest chunks (dense search): lexical search could add
nothing that passes the gate. Entries below `prefetch_min_score` are cut (by score, never
by position); what remains is shown best first, one entry per note, near-duplicates
merged, until the budget is used. Dormant notes stay out unless the turn matches them as closely as
recall's reactivation rule demands; superseded and staged memories always stay out.

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
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .catalog import ChunkRow, NoteRow
from .decay import parse_bool, parse_time, state_from_meta
from .embedders import Embedder, Vectors
from .errors import ConcurrentEditError, NoteError, VectorStoreUnavailableError
from .indexer import sha256
from .markdown import chunk_body
from .notefile import read_note, safe_path, write_note
from .recall import Searcher, snippet

if TYPE_CHECKING:
    from .memory import Memory

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

# A turn that points at what was just said instead of naming it ("keep that", "save it",
# "don't forget this"): it refreshes the newest staged memory. A false positive only
# extends one expiry, so a small closed list of verbs is enough.
_POINTER = re.compile(
    r"\b(?:keep|save|store|remember|commit|record|write|note|stage|don'?t\s+forget|do\s+not\s+forget)"
    r"\b[^.?!\n]{0,24}?\b(?:that|this|it|these|those|them)\b",
    re.IGNORECASE,
)
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

    def line(self, room: int) -> str | None:
        """This entry as one line of at most `room` characters, or None if it cannot fit usefully."""
        rendered = self._render(room)
        return None if rendered is None else rendered[0]

    def _render(self, room: int) -> tuple[str, str] | None:
        """(line, the text it shows), or None."""
        where = self.path + (f" > {self.heading}" if self.heading and self.heading != self.title else "")
        where = _oneline(where)
        date = self.date or "undated"
        fixed = len(f"- ({date}, ) ")
        max_where = room - fixed - MIN_ENTRY_TEXT
        if max_where < 8:
            return None
        if len(where) > max_where:  # very long paths keep their end: the file name
            where = "…" + where[-(max_where - 1):]
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
        return {"block": self.block, "chars": len(self.block), "budget": self.budget, "relevant": self.relevant,
                "entries": [e.to_dict() for e in self.entries], "refreshed": list(self.refreshed)}


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


def render_block(entries: Sequence[PrefetchEntry], budget: int,
                 entry_cap: int = 400) -> tuple[str, list[PrefetchEntry]]:
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


def is_pointer(text: str) -> bool:
    """Whether the turn points at something just said ("keep that", "save it")."""
    return _POINTER.search(text) is not None


def fit_query(text: str, embedder: Embedder) -> str:
    """The turn on one line, cut (keeping its start) to what the embedder accepts."""
    text = _WS.sub(" ", text).strip()
    limit = embedder.max_tokens
    if embedder.count_tokens(text) <= limit:
        return text
    words = text.split(" ")
    lo, hi = 1, len(words)
    while lo < hi:  # the longest prefix of words that fits
        mid = (lo + hi + 1) // 2
        if embedder.count_tokens(" ".join(words[:mid])) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


class _Remembered:
    """An embedder that answers one known text from memory: the turn is embedded once."""

    def __init__(self, inner: Embedder, text: str, vector: np.ndarray) -> None:
        self.inner, self.text, self.vector = inner, text, vector
        self.identity, self.dim, self.max_tokens = inner.identity, inner.dim, inner.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if list(texts) == [self.text]:
            return self.vector[None, :]
        return self.inner.embed(texts)


# -- the edge: one call against a Memory ------------------------------------------------

def prefetch(mem: Memory, text: str, *, budget: int | None = None, now: dt.datetime | None = None,
             refresh_staged: bool = True, touch: bool = False) -> PrefetchResult:
    """See `Memory.prefetch`."""
    cfg = mem.config
    budget = cfg.prefetch_budget if budget is None else int(budget)
    now = now or mem.clock()
    query = fit_query(text, mem.embedder) if text.strip() else ""
    if not query:
        return PrefetchResult("", [], budget)
    qvec = np.asarray(mem.embedder.embed([query])[0], dtype=np.float32)
    staged_prefix = cfg.staging_folder.strip("/") + "/"

    # Dense candidates only: admission is on cosine, so the nearest chunks *are* the best
    # candidates; BM25 cannot admit anything (no absolute scale) and costs O(matching
    # documents) per query (~100 ms on 10k notes), which the turn should not pay.
    embedder = _Remembered(mem.embedder, query, qvec)
    pool = min(200, max(30, budget // 40))
    try:
        cands = mem.searcher(embedder).search(
            query, mode="dense", granularity="chunk", candidates=pool, exclude_prefixes=(staged_prefix,))
    except VectorStoreUnavailableError as exc:  # a Chroma server went away: exact search over the catalog
        mem._store_unavailable(exc)
        cands = Searcher(mem.catalog, None, embedder).search(
            query, mode="dense", granularity="chunk", candidates=pool, exclude_prefixes=(staged_prefix,))
    notes = mem.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    best: dict[str, tuple[float, Any, NoteRow, float, bool]] = {}
    for c in cands:
        note = notes[c.node_id]
        state = state_from_meta(note.meta, note.mtime)
        if state.status == "staged" or state.superseded_by:
            continue
        strength = mem.decay.strength(state, now)
        reactivated = False
        if mem.decay.dormant(state, now):
            if c.similarity < mem.decay.reactivation_threshold(strength):
                continue  # the same rule as recall: the longer forgotten, the closer the cue must be
            reactivated = True
        score = decayed(c.similarity, strength)
        if score < cfg.prefetch_min_score:
            continue
        held = best.get(c.node_id)
        if held is None or (-score, c.key) < (-held[0], held[1].key):  # its best chunk; ties by chunk id
            best[c.node_id] = (score, c, note, strength, reactivated)
    ranked = sorted(best.values(), key=lambda t: (-t[0], t[2].node_id))

    entries = _merge_duplicates(mem, query, ranked, cfg.prefetch_entry_cap)
    block, shown = render_block(entries, budget, cfg.prefetch_entry_cap)
    result = PrefetchResult(block, shown, budget, relevant=len(ranked))
    if refresh_staged and not cfg.read_only:
        result.refreshed = refresh_staged_memories(mem, text, qvec, now=now)
    if touch and shown and not cfg.read_only:
        mem.rehearse([e.node_id for e in shown], now=now)
    return result


def _chunk_body(chunk: ChunkRow) -> str:
    """The chunk's text without the heading-path line the indexer puts first (when it has one)."""
    if chunk.heading and chunk.text.startswith(chunk.heading + "\n"):
        return chunk.text[len(chunk.heading) + 1:]
    return chunk.text


def _merge_duplicates(mem: Memory, query: str, ranked: Sequence[tuple[float, Any, NoteRow, float, bool]],
                      cap: int) -> list[PrefetchEntry]:
    chunks: list[ChunkRow] = [t[1].chunk for t in ranked]
    vecs = mem.catalog.get_vectors(sorted({c.text_hash for c in chunks})) if chunks else {}
    kept: list[tuple[PrefetchEntry, ChunkRow]] = []
    for score, cand, note, strength, reactivated in ranked:
        chunk: ChunkRow = cand.chunk
        body = snippet("\n" + _chunk_body(chunk), query, width=cap)  # "\n": snippet drops a first line
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
            node_id=note.node_id, path=note.path, title=note.title, heading=chunk.heading,
            date=entry_date(note.meta, note.mtime), text=shorten(body, cap), score=round(score, 6),
            similarity=round(cand.similarity, 6), strength=round(strength, 6), reactivated=reactivated)
        kept.append((entry, chunk))
    return [e for e, _ in kept]


# -- staged memories ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Staged:
    path: str
    meta: dict[str, Any]
    mtime: float
    similarity: float


def _staged_files(mem: Memory) -> list[tuple[str, float]]:
    """(path, mtime) of the notes in the staging folder, from disk: the folder is the truth."""
    folder = mem.config.staging_folder.strip("/")
    try:
        root = safe_path(mem.vault, folder)
    except NoteError:
        return []
    if not root.is_dir():
        return []
    out: list[tuple[str, float]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, mem.vault).replace(os.sep, "/")
        dirnames[:] = [d for d in dirnames if not mem.rules.ignored(f"{rel_dir}/{d}", is_dir=True)]
        for name in filenames:
            rel = f"{rel_dir}/{name}"
            full = os.path.join(dirpath, name)
            if mem.rules.is_note(rel) and not os.path.islink(full):
                try:
                    out.append((rel, os.stat(full).st_mtime))
                except OSError:
                    continue
    return sorted(out)


def _max_similarity(vectors: Sequence[np.ndarray], qvec: np.ndarray) -> float:
    return max((float(v @ qvec) for v in vectors), default=0.0)


def _staged_memories(mem: Memory, qvec: np.ndarray) -> list[_Staged]:
    """Every staged memory with its similarity to the turn.

    Fast path: the index already has the note as it is on disk (same mtime), so its meta and
    chunk vectors come from the catalog. Otherwise (staged a moment ago, index written by
    another process) the file is read, chunked like the indexer does, and embedded.
    """
    out: list[_Staged] = []
    emb = mem.embedder
    for rel, mtime in _staged_files(mem):
        row = mem.catalog.note_by_path(rel)
        if row is not None and row.mtime == mtime:
            chunks = mem.catalog.chunks_of(row.node_id)
            vecs = mem.catalog.get_vectors([c.text_hash for c in chunks])
            if len(vecs) == len({c.text_hash for c in chunks}):
                out.append(_Staged(rel, row.meta, mtime, _max_similarity(list(vecs.values()), qvec)))
                continue
        try:
            note = read_note(mem.vault, rel)
        except (NoteError, OSError):
            continue
        texts = [c.text for c in chunk_body(note.body, max_tokens=emb.max_tokens, count_tokens=emb.count_tokens)
                 if c.text.strip()]
        cached = mem.catalog.get_vectors([sha256(t) for t in texts])
        missing = [t for t in texts if sha256(t) not in cached]
        fresh = list(emb.embed(missing)) if missing else []
        out.append(_Staged(rel, note.meta, note.mtime, _max_similarity([*cached.values(), *fresh], qvec)))
    return out


def refresh_staged_memories(mem: Memory, text: str, qvec: np.ndarray, *, now: dt.datetime,
                            threshold: float | None = None) -> list[str]:
    """Extend `expires` of the staged memories this turn is about; returns their paths."""
    cfg = mem.config
    threshold = cfg.prefetch_staged_similarity if threshold is None else threshold
    new_expiry = (now + dt.timedelta(days=cfg.staged_ttl_days)).replace(microsecond=0)
    staged = []
    for sm in _staged_memories(mem, qvec):
        state = state_from_meta(sm.meta, sm.mtime)
        if not state.pinned and state.expires is not None:  # pinned or no `expires`: it does not expire
            staged.append(sm)
    chosen = {sm.path for sm in staged if sm.similarity >= threshold}
    if staged and is_pointer(text):
        def created(sm: _Staged) -> tuple[dt.datetime, str]:
            when = parse_time(sm.meta.get("created")) or dt.datetime.fromtimestamp(sm.mtime, tz=dt.UTC)
            return when, sm.path

        chosen.add(max(staged, key=created).path)
    refreshed: list[str] = []
    for rel in sorted(chosen):
        try:
            note = read_note(mem.vault, rel)  # the bytes the compare-and-swap is against
        except (NoteError, OSError):
            continue
        current = parse_time(note.meta.get("expires"))
        if current is None or current >= new_expiry or parse_bool(note.meta.get("pinned")):
            continue  # only ever extend, and never give a non-expiring note an expiry
        try:
            new = write_note(mem.vault, rel, expected_hash=note.file_hash, set_fields={"expires": new_expiry})
        except ConcurrentEditError:
            continue  # edited meanwhile: the human's edit wins; the next turn can refresh it
        except (NoteError, ValueError, OSError) as exc:
            log.warning("could not refresh the expiry of staged memory %s: %s", rel, exc)
            continue
        refreshed.append(rel)
        row = mem.catalog.note_by_path(rel)
        if row is not None:
            mem._refresh_row(row, new)
    return refreshed
