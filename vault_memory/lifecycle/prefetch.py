"""Prefetch: the memories relevant to this turn, as one bounded block for a system prompt.

    [RELEVANT_LEARNED_MEMORY]
    - (2026-11-20, Memory/coffee.md) I drink a double espresso, no sugar.
    [/RELEVANT_LEARNED_MEMORY]

Choosing entries. Prefetch asks recall's question (one search, recall's rule: recall.rank_query)
with the turn as the query and shows what recall would return, in recall's order, leaving out:
- hits that are *weak*: their answer's cosine to the turn is below the embedder's weak bar
  (calibration.py). Cosine, because it has a fixed scale: recall's fused relevance is scaled
  per query (its best hit is always about 1), so a bar on it would never give an empty block;
- staged memories and superseded notes;
- dormant notes (decay.py: faded below the threshold), unless the turn cues them (ranking's
  reactivation rule) and no live note that answers the turn names them in `conflicts_with` (the
  newer memory that was found, when it was saved, to state the same thing differently): a faded
  statement does not come back beside what replaced it. What is left out this way is returned (`kept_out`) and
  logged for the review note;
- entries that say nothing of their own: a line that is only links or dates (a daily note's
  `[[2026-11-04]] · [[2026-11-08]]`);
- repeats: an entry that states what an entry above it states in the same words (repeats.is_repeat:
  the nine daily notes' "13:00 Lunch with [[Jonas Weber]].", or a task copied from day to day with
  its due date moved on, "Water plants 📅 2026-10-26" on the 25th) becomes part of that entry,
  which says where else it appears (newest first). The entry shows the newest dated copy, in the
  place of the first: a task list carried forward showed its first day's copy and due date. One
  changed word ("on Slack" / "on Discord") is another entry.
  An entry without a sentence that answers (a chunk scored whole: a daily log whose line reaches
  "dinner with Jonas" only through `[[Jonas Weber]]`) states what its sentence closest to the turn
  states: when an entry above already shows that sentence, it becomes part of that entry (the
  person's log line "13:00 Lunch with [[Jonas Weber]]." was four entries of one block).
Each entry shows the part of the note that answers the turn closest in meaning (`shown_part`):
the sentence that answers (the best window) when there is one, else that chunk cut around the
turn's words, with the day the note was stated and its path. An entity's
own note comes before its mentions because recall ranks it first: its title and aliases count
twice for BM25, and a daily note's line that reaches the turn only through a `[[link]]` is not
an answer (windows.py).

No block: when nothing passes, `block` is the empty string (not an empty marker pair), so a
caller can always do `system = base + result.block` without adding noise.

Rehearsal: prefetch does not rehearse what it shows unless asked (`touch=True`). It runs on
every turn whether or not the model uses what it is handed; rehearsing that would make
anything vaguely topical self-reinforcing (shown -> stronger -> shown again) and write to the
vault on every turn. Explicit `recall` is the retrieval that counts.

Staged memories. Prefetching a user's turn also refreshes the expiry of staged memories the
turn is about: their cosine to the turn reaches the weak bar (so synonyms and paraphrase
count, unlike a keyword hook on a slug), plus pointer turns ("keep that", "save it"), which
refresh the newest staged memory. A refresh only ever extends `expires` to now + staged_ttl,
through the one write path with compare-and-swap.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..index.embedders import embed_query
from ..markers import DATA_LINE, neutralise
from ..repeats import has_iso_date, is_repeat, words_of
from ..search.filters import NoteFilter, eligible
from ..search.ranking import Candidate, Ranked
from ..search.windows import MIN_WINDOW_WORDS, closest_window
from ..search.workspace import Workspace
from ..text import says_something, sentence_units, snippet, split_sentences
from .edits import rehearse
from .recall import Ranking, is_weak, rank_query
from .staging import refresh_staged_memories

OPEN = "[RELEVANT_LEARNED_MEMORY]"
CLOSE = "[/RELEVANT_LEARNED_MEMORY]"
#: An entry shortened to fit the budget must keep at least this much text, or it is not shown.
MIN_ENTRY_TEXT = 40
#: At most this many other paths are named in an entry's "also in".
ALSO_SHOWN = 2
#: Whether a dormant note the turn cues (ranking's reactivation rule) is shown. Off: a faded note is
#: only ever found by an explicit recall (bench lifetime: the stale share and what it costs).
SHOWS_CUED_DORMANT = True
#: Whether a dormant note the turn cues stays out when a live note that answers the turn names it
#: in `conflicts_with` (found when that newer memory was saved: it states the same thing differently).
#: Off: a replaced statement that has faded comes back beside what replaced it (bench lifetime:
#: stale entries 20 -> 8.8 per 100 turns; bench/results/lifetime-rules.md for the rules tried).
KEEPS_REPLACED_OUT = True

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class PrefetchEntry:
    """One memory in the block."""

    node_id: str
    path: str
    title: str
    heading: str
    date: str | None  # YYYY-MM-DD the note was stated (fields.stated_time); None: undated
    text: str  # what the block shows (the sentence that answers, else the relevant part of the chunk)
    score: float  # recall's relevance (the order)
    similarity: float  # cosine of the turn to the answer (what the weak bar is judged on)
    strength: float
    reactivated: bool = False
    merged: tuple[str, ...] = ()  # paths of the notes that state the same thing (shown as "also in")
    #: what the vault records about it and another entry: "superseded by #1" ... (ranking.change_label)
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
        if self.change:
            date = f"{date}; {self.change}"
        also = ""
        if self.merged:
            names = [p.rsplit("/", 1)[-1].removesuffix(".md") for p in self.merged[:ALSO_SHOWN]]
            more = len(self.merged) - len(names)
            also = "; also in " + ", ".join(names) + (f" and {more} more" if more else "")
        fixed = len(f"- ({date}, {also}) ")
        max_where = room - fixed - MIN_ENTRY_TEXT
        if max_where < 8 and also:  # no room to say where else: drop that first
            also, fixed = "", len(f"- ({date}, ) ")
            max_where = room - fixed - MIN_ENTRY_TEXT
        if max_where < 8:
            return None
        if len(where) > max_where:  # very long paths keep their end: the file name
            where = "…" + where[-(max_where - 1) :]
        prefix = f"- ({date}, {where}{also}) "
        full = _oneline(self.text)
        text = shorten(full, room - len(prefix))
        if len(text) < MIN_ENTRY_TEXT and text != full:
            return None
        return prefix + text, text

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["merged"] = list(self.merged)
        return out


@dataclass(frozen=True)
class KeptOut:
    """A note that answered the turn but was left out of the block because it is dormant."""

    node_id: str
    path: str
    strength: float
    similarity: float


@dataclass
class PrefetchResult:
    """The block to put in a system prompt, and what is in it."""

    block: str  # "" when nothing is relevant enough
    entries: list[PrefetchEntry]  # the entries shown, best first
    budget: int
    relevant: int = 0  # entries that passed (shown or not: the budget may cut the last)
    refreshed: list[str] = field(default_factory=list)  # staged memories whose expiry was extended
    #: notes that would have been entries but are dormant (forgotten): what decay kept out
    kept_out: list[KeptOut] = field(default_factory=list)

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
            "kept_out": [asdict(k) for k in self.kept_out],
        }


# -- pure parts ---------------------------------------------------------------------


def _oneline(text: str) -> str:
    # One entry per line, and a note cannot close (or reopen) the block from inside it, in any form.
    text = neutralise(text)
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
    frame = len(OPEN) + 1 + len(DATA_LINE) + 1 + len(CLOSE)  # "OPEN\n" + "DATA_LINE\n" + lines + "CLOSE"
    lines: list[str] = []
    shown: list[PrefetchEntry] = []
    used = frame
    for entry in entries:
        entry = replace(entry, merged=tuple(neutralise(p) for p in entry.merged))  # file names are a note's too
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
    return OPEN + "\n" + DATA_LINE + "\n" + "".join(f"{ln}\n" for ln in lines) + CLOSE, shown


def one_line(text: str) -> str:
    """The turn on one line (embedded whole: embedders.embed_query takes any length)."""
    return _WS.sub(" ", text).strip()


#: An entry shows the sentence that answers within its own part of the note (text.sentence_units:
#: its list item, or the prose around it): the whole part when it fits the entry's cap, else the
#: sentence with this many on each side. The best sentence is often next to the fact ("Flights
#: booked: 12-16 March." above "Hotel:: Casa do Príncipe"; bench real_vault: the needed fact in 33
#: of 39 blocks with the sentence alone), and in a short note's prose anywhere in it ("does Jonas
#: eat meat" answered by "Jonas designs the Atlas dashboard.", three sentences from "He is
#: vegetarian"; the whole part: needed fact 127 -> 131 of 147), but a log's next item is another
#: statement ("13:00 Lunch with [[Jonas Weber]]." was in 31 of 85 blocks, 4 after, each a log shown
#: whole; none of the 74 needed facts came from another item).
CONTEXT_SENTENCES = 1


def shown_part(cand: Candidate) -> Candidate:
    """The part of a note an entry shows: of the chunks the search found, the one that answers the
    turn closest in meaning (its cosine, or its best sentence's), which is not always the chunk
    that ranked the note ("what GPU is in the home server": the Software section, which names the
    GPU twice, ranks Home Lab; the Hardware table's row says which GPU; bench real_vault)."""
    closest = cand.closest
    return closest if closest is not None and closest.answer_similarity > cand.answer_similarity else cand


def entry_text(part: Candidate, query: str, cap: int) -> str:
    """What an entry shows of the note's closest part (shown_part): the sentence that answers, in its
    list item or prose, whole when that fits `cap`, else with its neighbours (CONTEXT_SENTENCES),
    when it states one; else the chunk cut around the turn's words (snippet drops a first line:
    "\\n" keeps the chunk's)."""
    answer = part.answer_text
    body = part.chunk.body
    if answer is None:
        return snippet("\n" + body, query, width=cap)
    units = sentence_units(body)
    sentences = [s for s, _ in units]
    if answer not in sentences:  # a property read with its note's title (windows.about)
        shown = [answer]
    else:
        at = sentences.index(answer)
        whole = [s for s, unit in units if unit == units[at][1]]
        if len(" ".join(whole)) <= cap:
            shown = whole
        else:
            shown = [
                s
                for s, unit in units[max(0, at - CONTEXT_SENTENCES) : at + CONTEXT_SENTENCES + 1]
                if unit == units[at][1]
            ]
    window = part.window
    also = [w for w in (window.others if window is not None else ()) if w not in shown][:1]
    return " ".join(shown) + "".join(f" … {w}" for w in also)


# -- the edge: one call against a Memory ------------------------------------------------


def prefetch(
    ws: Workspace,
    text: str,
    *,
    budget: int | None = None,
    now: dt.datetime | None = None,
    refresh_staged: bool = True,
    touch: bool = False,
    decay: bool = True,
    filters: NoteFilter | None = None,
) -> PrefetchResult:
    """See `Memory.prefetch`. `filters` restrict the candidates before ranking (filters.py)."""
    cfg = ws.config
    budget = cfg.prefetch_budget if budget is None else int(budget)
    now = now or ws.clock()
    query = one_line(text)
    if not query:
        return PrefetchResult("", [], budget)
    allow = eligible(ws, filters)
    qvec = embed_query(ws.embedder, query)  # once: the search and the staged refresh both use it
    entries: list[PrefetchEntry] = []
    kept_out: list[KeptOut] = []
    if allow != set():
        got = rank_query(ws, query, now=now, allow=allow, qvec=qvec, hide_dormant=False, decay=decay, judge=True)
        scorer = ws.window_scorer()

        def closest(part: Candidate) -> str | None:
            return closest_window(part.chunk.body, qvec, scorer.embedder, scorer.cache)

        def day_parts(part: Candidate) -> list[str]:
            rest = [c.body for c in ws.catalog.chunks_of(part.node_id) if c.chunk_id != part.chunk.chunk_id]
            return [_oneline(b) for b in [part.chunk.body, *rest] if says_something(b)]

        entries, kept_out = _entries(
            query, got, cfg.prefetch_entry_cap, decay=decay, closest=closest, day_parts=day_parts
        )
    block, shown = render_block(entries, budget, cfg.prefetch_entry_cap)
    result = PrefetchResult(block, shown, budget, relevant=len(entries), kept_out=kept_out)
    if kept_out:  # invisible by nature: the review note counts it (keptout.py)
        ws.kept_out_log().record(now, query, [(k.node_id, k.path, k.strength) for k in kept_out])
    if refresh_staged and not cfg.read_only:
        result.refreshed = refresh_staged_memories(ws, text, qvec, now=now, threshold=ws.calibration.weak)
    if touch and shown and not cfg.read_only:
        rehearse(ws, [e.node_id for e in shown], now=now)
    return result


@dataclass(frozen=True)
class _Sentence:
    """A sentence as repeats compare it: its words (repeats.words_of) and whether it holds a date."""

    text: str
    words: frozenset[str]
    dated: bool


@functools.lru_cache(maxsize=4096)
def _sentences_of(text: str) -> tuple[_Sentence, ...]:
    """The sentences of `text` (remembered: a long-lived process meets the same chunks again)."""
    return tuple(_Sentence(t, words_of(t), has_iso_date(t)) for t in split_sentences(text))


def _adds_nothing(s: _Sentence, day: dt.date | None, t: _Sentence, above_day: dt.date | None) -> bool:
    """Whether `s` adds no word to `t`, a sentence of MIN_WINDOW_WORDS words or more an entry above
    shows (repeats.is_repeat, dates counted from each note's day)."""
    if not s.words or len(t.words) < max(len(s.words), MIN_WINDOW_WORDS):
        return False
    return s.words <= t.words or (s.dated and t.dated and is_repeat(s.text, t.text, (day, above_day)))


def _twin(
    kept: Sequence[tuple[PrefetchEntry, str, Ranked]],
    part: Candidate,
    said: str,
    day: dt.date | None,
    closest: Callable[[Candidate], str | None] | None,
) -> tuple[int, bool] | None:
    """The entry above that this one repeats, if any, and whether the two statements are one in
    the same words (repeats.is_repeat). A chunk scored whole (no sentence shares the turn's words: "13:00 Lunch with
    [[Jonas Weber]]." reaches "dinner with Jonas" only through its link) states what its sentence
    closest in meaning to the turn states (`closest`); it repeats an entry above when that entry
    shows this sentence already (not the same words: False). Sentences are embedded only for a
    chunk one of whose sentences an entry above shows."""
    for i, (_, other, o) in enumerate(kept):
        if is_repeat(other, said, (o.state.stated.day(), day)):
            return i, True
    if part.answer_text is not None or closest is None or not kept:
        return None
    above = [(_sentences_of(e.text), o.state.stated.day()) for e, _, o in kept]
    mine = _sentences_of(part.chunk.body)
    if not any(_adds_nothing(s, day, t, d) for s in mine for ts, d in above for t in ts):
        return None
    best = closest(part)
    said_best = next((s for s in mine if s.text == best), None)
    if said_best is None:
        return None
    at = next((i for i, (ts, d) in enumerate(above) if any(_adds_nothing(said_best, day, t, d) for t in ts)), None)
    return None if at is None else (at, False)


def _entries(
    query: str,
    got: Ranking,
    cap: int,
    *,
    decay: bool = True,
    closest: Callable[[Candidate], str | None] | None = None,
    day_parts: Callable[[Candidate], list[str]] | None = None,
) -> tuple[list[PrefetchEntry], list[KeptOut]]:
    """Recall's order, without weak hits, superseded or staged notes, lines that say nothing,
    repeats (merged into the entry above them: `_twin`) and dormant notes (returned apart: what
    decay kept out), unless the turn cues them. `closest`: a chunk's sentence closest to the turn
    (windows.closest_window), for the repeats of chunks scored whole. `day_parts`: the parts of a
    note stated on a day the turn names that say something, the one that answers first: its entry."""
    replaced = {s for o in got.ranked for s in o.state.supersedes}  # a person may link only the new note

    def eligible(r: Ranked) -> bool:
        if is_weak(r, got.weak_below) or r.state.status == "staged":
            return False
        return not (r.state.superseded_by or r.node_id in replaced)

    # what the live candidates were found, when they were saved, to state differently (KEEPS_REPLACED_OUT)
    contradicted = {n for o in got.ranked if not o.dormant and eligible(o) for n in o.state.conflicts_with}
    kept: list[tuple[PrefetchEntry, str, Ranked]] = []
    out: list[KeptOut] = []
    for r in got.ranked:
        c, state = r.cand, r.state
        if not eligible(r):
            continue
        part = shown_part(c)
        shown = entry_text(part, query, cap)
        if c.on_day and day_parts is not None:  # the turn asks for the day: its note, the part that answers first
            shown = " … ".join(day_parts(part))
        said = part.answer_text or shown  # what the note states: repeats are judged on it, not the context
        if not says_something(said):
            continue
        comes_back = SHOWS_CUED_DORMANT and r.reactivated and not (KEEPS_REPLACED_OUT and r.node_id in contradicted)
        if decay and r.dormant and not comes_back:
            out.append(KeptOut(r.node_id, r.path, round(r.strength, 6), round(c.answer_similarity, 6)))
            continue
        day = state.stated.day()
        twin = None if c.on_day else _twin(kept, part, said, day, closest)  # a named day's note is its own entry
        entry = PrefetchEntry(
            node_id=r.node_id,
            path=r.path,
            title=got.notes[r.node_id].title,
            heading=part.chunk.heading,
            date=day.isoformat() if day is not None else None,
            text=shorten(shown, cap),
            score=round(r.score, 6),
            similarity=round(part.answer_similarity, 6),
            strength=round(r.strength, 6),
            reactivated=r.reactivated,
        )
        if twin is None:
            kept.append((entry, said, r))
            continue
        at, same = twin  # same: the same words (not a whole chunk sharing its closest sentence)
        e, other, o = kept[at]
        older = o.state.stated.day()
        if same and day is not None and (older is None or day > older) and not o.cand.on_day:
            # One statement in several notes is shown from the newest: the last time the vault says
            # it (a task list carried forward shows today's copy, not the first day's), in its place;
            # but the note of a day the turn names stays (its copies become part of it).
            kept[at] = (replace(entry, merged=(*e.merged, e.path)), said, r)
        else:
            kept[at] = (replace(e, merged=(*e.merged, r.path)), other, o)
    # where else, newest first (undated last): as the entry itself, the latest says most
    days = {r.path: r.state.stated.day() for r in got.ranked}
    newest = [
        replace(e, merged=tuple(sorted(e.merged, key=lambda p: days[p] or dt.date.min, reverse=True)))
        for e, _, _ in kept
    ]
    return newest, out


__all__ = [
    "CLOSE",
    "OPEN",
    "KeptOut",
    "PrefetchEntry",
    "PrefetchResult",
    "prefetch",
    "render_block",
    "says_something",
    "shorten",
]
