"""Prefetch: the memories relevant to this turn, as one bounded block for a system prompt.

    [RELEVANT_LEARNED_MEMORY]
    - (2026-11-20, Memory/coffee.md) I drink a double espresso, no sugar.
    [/RELEVANT_LEARNED_MEMORY]

Choosing entries. Prefetch asks recall's question (one search, recall's rule: recall.rank_query)
with the turn as the query and shows what recall would return, in recall's order, leaving out:
- hits that are *weak*: their answer's cosine to the turn is below the embedder's weak bar
  (calibration.py). Cosine, because it has a fixed scale: recall's fused relevance is scaled
  per query (its best hit is always about 1), so a bar on it would never give an empty block.
  Every hit is weak when the turn names what no note mentions (recall.unknown_names), or asks a
  price that none of its first hits states (question.unstated_price), unless the turn asks for
  something to be done (question.asks_for_work: "Write a short explainer on the Nile dispute",
  "only when hasDiscount is true; fix the JSX"): a task names what it is about, which the vault
  need not mention, and what the vault holds on the rest of it is still context.
  A question about what no note mentions ("how did I configure Terraform?") has nothing to hold;
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
  which says where else it appears (newest first). The entry shows, in the place of the first, the
  one that says more, and of copies in the same words the newest dated: a task list carried forward
  showed its first day's copy and due date. One changed word ("on Slack" / "on Discord") is another entry,
  and so is a page about a subject that shows more than the line it repeats (its definition beside
  "I consider myself a [[secular buddhist]]": `_twin`).
Each entry shows the part of the note that ranked it (every chunk is judged by its answer
sentence, so that is the part that answers): the sentence that answers (the best window) when
there is one, else that chunk cut around the turn's words, with the day the note was stated and
its path. An entity's own note comes before its mentions because recall ranks it first: its title
and aliases count twice for BM25, and a daily note's line that reaches the turn only through a
`[[link]]` is not an answer (windows.py).

No block: when nothing passes, `block` is the empty string (not an empty marker pair), so a
caller can always do `system = base + result.block` without adding noise.

Rehearsal: prefetch does not rehearse what it shows unless asked (`touch=True`). It runs on every turn whether
or not the model uses what it is handed; rehearsing that would make anything vaguely topical self-reinforcing
(shown -> stronger -> shown again) and write to the vault on every turn. Explicit `recall` is the retrieval
that counts.

Staged memories. Prefetching a user's turn also refreshes the expiry of staged memories the turn is about:
their cosine to the turn reaches the weak bar (so synonyms and paraphrase count, unlike a keyword hook on a
slug), plus pointer turns ("keep that", "save it"), which refresh the newest staged memory. A refresh only
ever extends `expires` to now + staged_ttl, through the one write path with compare-and-swap."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from ..index.embedders import embed_query
from ..markers import DATA_LINE, neutralise
from ..repeats import adds_nothing, is_repeat
from ..search.decay import about_a_subject
from ..search.filters import NoteFilter, eligible
from ..search.question import asks_for_work
from ..search.ranking import Candidate, Ranked, is_weak
from ..search.rules import DEFAULT_RULES, ReadRules
from ..search.search import no_word_of_its_own
from ..search.workspace import Workspace
from ..text import holds_a_url, item_text, says_something, says_too_little
from ..vault.fields import heading_day
from .edits import rehearse
from .entries import MIN_TAIL, PrefetchEntry, entry_text, first_entry_cap, leads_in, oneline, says_its_answer, shorten
from .recall import Ranking, rank_query
from .staging import refresh_staged_memories

OPEN = "[RELEVANT_LEARNED_MEMORY]"
CLOSE = "[/RELEVANT_LEARNED_MEMORY]"

_WS = re.compile(r"\s+")


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


def render_block(
    entries: Sequence[PrefetchEntry],
    budget: int,
    entry_cap: int = 400,
    rules: ReadRules = DEFAULT_RULES,
    *,
    first_cap: int | None = None,
) -> tuple[str, list[PrefetchEntry]]:
    """Pack entries (best first) into the block; stops at the first that no longer fits.

    The whole block, markers and newlines included, is at most `budget` characters, and
    each entry's text at most `entry_cap` (its line adds where the text comes from: a vault's
    long paths and headings take room from the block, not from what each entry says), the first's
    at most `first_cap` when it read on in its note (`present` gave it that room); the
    block is "" when not even one entry fits. Entries are never skipped to make room for
    lower-scored ones, so the block always shows a prefix of `entries`.
    """
    frame = len(OPEN) + 1 + len(DATA_LINE) + 1 + len(CLOSE)  # "OPEN\n" + "DATA_LINE\n" + lines + "CLOSE"
    lines: list[str] = []
    shown: list[PrefetchEntry] = []
    used = frame
    for entry in entries:
        entry = replace(entry, merged=tuple(neutralise(p) for p in entry.merged))  # file names are a note's too
        cap = first_cap if not lines and first_cap is not None else entry_cap
        room = min(cap + entry.label_length(rules), budget - used - 1)  # -1: the line's own "\n"
        rendered = entry._render(room, rules, cap) if room > 0 else None
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
    read_on = False
    rules = ws.read_rules
    reads_on_in = first_entry_cap(budget, cfg.prefetch_entry_cap, rules)  # the first entry's room, reading on
    if allow != set():
        got = rank_query(ws, query, now=now, allow=allow, qvec=qvec, decay=decay, judge=True)
        if got.silent and asks_for_work(query):
            got = replace(got, unknown=[], unstated_price=False)

        def day_parts(part: Candidate) -> list[str]:
            # the day's note; of a note whose headings state several days (a diary), the day's parts
            chunks = [c for c in ws.catalog.chunks_of(part.node_id) if c.chunk_id != part.chunk.chunk_id]
            days, day = {c.chunk_id: heading_day(c.heading) for c in chunks}, heading_day(part.chunk.heading)
            if len({*days.values(), day} - {None}) > 1:
                chunks = [c for c in chunks if days[c.chunk_id] == day]
            return [oneline(c.body) for c in chunks if says_something(c.body)]

        def note_parts(part: Candidate) -> tuple[list[str], int]:
            chunks = ws.catalog.chunks_of(part.node_id)
            at = next((i for i, c in enumerate(chunks) if c.chunk_id == part.chunk.chunk_id), None)
            return ([part.chunk.body], 0) if at is None else ([c.body for c in chunks], at)

        def presented(first_cap: int, first_only: bool = False) -> tuple[list[PrefetchEntry], list[KeptOut], bool]:
            return present(
                query,
                got,
                cfg.prefetch_entry_cap,
                first_cap=first_cap,
                decay=decay,
                day_parts=day_parts,
                note_parts=note_parts,
                rules=rules,
                first_only=first_only,
            )

        entries, kept_out, read_on = presented(reads_on_in)
    first_cap = reads_on_in if read_on else None
    block, shown = render_block(entries, budget, cfg.prefetch_entry_cap, rules, first_cap=first_cap)
    spare = budget - len(block)
    if shown and spare >= (1 if read_on else MIN_TAIL) and not entries[0].merged:
        # the room the entries below leave goes to the first, which may have been cut: read again in
        # it, kept when it shows more and every line it showed (stops 77, 79); one that did not read
        # on, only when a line's start fits (the pool's blocks are full to a few characters)
        more = len(shown[0].text) + spare
        again = presented(more, first_only=True)[0][:1]
        if again and again[0].path == entries[0].path:
            fuller, shown_again = render_block(
                [replace(entries[0], text=again[0].text), *entries[1:]],
                budget,
                cfg.prefetch_entry_cap,
                rules,
                first_cap=more,
            )
            if _shows_more(shown, shown_again):
                block, shown = fuller, shown_again
    result = PrefetchResult(block, shown, budget, relevant=len(entries), kept_out=kept_out)
    if kept_out:  # invisible by nature: the review note counts it (keptout.py)
        ws.kept_out_log().record(now, query, [(k.node_id, k.path, k.strength) for k in kept_out])
    if refresh_staged and not cfg.read_only:
        result.refreshed = refresh_staged_memories(ws, text, qvec, now=now, threshold=ws.calibration.weak)
    if touch and shown and not cfg.read_only:
        rehearse(ws, [e.node_id for e in shown], now=now)
    return result


def _twin(
    kept: Sequence[tuple[PrefetchEntry, str, Ranked]],
    new: tuple[PrefetchEntry, str, Ranked],
    rules: ReadRules = DEFAULT_RULES,
) -> int | None:
    """The place of the entry above that this one repeats in the same words (repeats.is_repeat), if
    any. A note about a subject (decay.about_a_subject: a page, not a day's log) says what it says
    of its subject around its answer: when either entry is one, what they show must repeat too, not
    only what they state (stop 72: `flancian`'s page on secular buddhism, its definition and the
    names the turn asked for, was one entry with the page on the dharma, whose "I sometimes consider
    myself a [[secular buddhist]]" its answer repeats, and shown as that page). A day's other lines
    around a line it repeats are the day's other business. Nothing repeats without `rules.merge_repeats`."""
    if not rules.merge_repeats:
        return None
    entry, said, r = new
    day = r.state.stated.day()
    for i, (e, other, o) in enumerate(kept):
        days = (o.state.stated.day(), day)
        if not is_repeat(other, said, days):
            continue
        if (about_a_subject(o.state) or about_a_subject(r.state)) and not is_repeat(e.text, entry.text, days):
            continue
        return i
    return None


def present(
    query: str,
    got: Ranking,
    cap: int,
    *,
    first_cap: int | None = None,
    decay: bool = True,
    day_parts: Callable[[Candidate], list[str]] | None = None,
    note_parts: Callable[[Candidate], tuple[list[str], int]] | None = None,
    rules: ReadRules = DEFAULT_RULES,
    first_only: bool = False,
) -> tuple[list[PrefetchEntry], list[KeptOut], bool]:
    """Stage 6, present (a block): recall's order, without weak hits, superseded or staged notes,
    lines that say nothing (an answer with no word of its own, an entry that is a way to other pages:
    text.says_too_little; the first entry, read on in its note, is judged by what it shows, not by a
    first line of links), repeats (merged into the entry above them: `_twin`) and dormant notes
    (returned apart: what decay kept out), unless the turn cues them (`_shows`).
    `day_parts`: the other parts of a note stated on a day the turn names that say something: its
    entry shows them after the part that answers, whole when it fits the entry's room, else read on
    from its answer in that room, as a first entry reads on.
    `note_parts`: the bodies of a note's parts in order and which is the candidate's, where the
    first entry reads on (`rules.first_entry_fills`), in `first_cap` characters (`first_entry_cap`;
    None: `cap`), and where any other entry reads on when its note fits its room whole
    (`_fits_whole`), and an answer that leads in at its part's end is read with what it introduces.
    Returns the entries, what decay kept out, and whether the first entry read on in its note
    (render_block gives it `first_cap` then); `first_only`: the first entry alone, in `first_cap`,
    without what merges into it (prefetch gives it the room the entries below leave)."""
    admitted = _admitted(got)
    # what the live candidates were found, when they were saved, to state differently (rules.keeps_replaced_out)
    contradicted: dict[str, float] = {}
    for o in admitted:
        if o.dormant:
            continue
        for n in o.state.conflicts_with:
            contradicted[n] = max(contradicted.get(n, 0.0), o.score)
    kept: list[tuple[PrefetchEntry, str, Ranked]] = []
    out: list[KeptOut] = []
    read_on = False
    for r in admitted:
        part = says_its_answer(r.cand)
        # the first entry reads on in its note when the note is about a subject, not a day's log
        # (nor a day's part of a note kept as a diary: fields.heading_day)
        about = rules.first_entry_fills and about_a_subject(r.state) and heading_day(part.chunk.heading) is None
        fill = about and not kept
        room = first_cap if (fill or first_only) and first_cap is not None else cap  # and more room to read on in
        whole = about and not fill and part.answer_text is not None  # read on if its room holds the note
        leads = leads_in(part.answer_text or "")  # what its answer introduces may open the next part
        parts = note_parts(part) if note_parts is not None and (fill or whole or leads) else None  # read once
        if whole and parts is not None:
            fill = _fits_whole(parts[0], room)
        shown = entry_text(part, query, room, rules, fill=fill, note=parts if fill or leads else None)
        if r.cand.on_day and day_parts is not None:  # the turn asks for the day: its note, what answers first
            # the part whole when it fits its room, else read on from its answer in its room
            all_of_it = oneline(part.chunk.body)
            fits = len(all_of_it) <= room or not says_something(shown)
            first = all_of_it if fits else entry_text(part, query, room, rules, fill=True)
            shown = " … ".join(x for x in (first, *day_parts(part)) if says_something(x))
        said = part.answer_text or shown  # what the note states: repeats are judged on it, not the context
        if fill and not says_something(said):  # its note read on from the first line: judged by what that says
            said = shown
        pointer = not says_something(said) or says_too_little(shown)
        if pointer and rules.titled_pointers and note_parts is not None:
            titled = _titled_pointer(got.notes[r.node_id].title, (parts or note_parts(part))[0], room)
            shown, said, pointer = (titled, titled, False) if titled is not None else (shown, said, True)
        elif not pointer and no_word_of_its_own(part.chunk, got.notes[r.node_id]):
            pointer = True
        if pointer:
            continue
        if decay and r.dormant and not _shows(r, contradicted, rules):
            out.append(KeptOut(r.node_id, r.path, round(r.strength, 6), round(r.cand.answer_similarity, 6)))
            continue
        entry = _entry(r, part, shown, got, room)
        twin = None if r.cand.on_day else _twin(kept, (entry, said, r), rules)
        if twin is None:  # a named day's note is its own entry
            read_on = read_on or fill  # the first entry, read on in its note
            kept.append((entry, said, r))
            if first_only:
                break
        else:
            kept[twin] = _merged(kept[twin], (entry, said, r))
    # where else, newest first (undated last): as the entry itself, the latest says most
    days = {r.path: r.state.stated.day() for r in got.ranked}
    newest = [
        replace(e, merged=tuple(sorted(e.merged, key=lambda p: days[p] or dt.date.min, reverse=True)))
        for e, _, _ in kept
    ]
    return newest, out, read_on


def _shows_more(before: Sequence[PrefetchEntry], after: Sequence[PrefetchEntry]) -> bool:
    """Whether `after` shows the same entries as `before`, its first with more text and every line it
    showed: the packing of a note's lines is greedy (entries.answering_lines), so more room can take
    a line in place of another, and a block given more room must not show less."""
    if [e.path for e in after] != [e.path for e in before]:
        return False
    old, new = before[0].text, after[0].text
    return len(new) > len(old) and all(piece.rstrip("… ") in new for piece in old.split(" … "))


def _fits_whole(bodies: Sequence[str], room: int) -> bool:
    """Whether a note's parts, on one line each, fit in an entry's `room`: its entry then reads it as
    the first entry reads on (stop 61: `flancian`'s pull-request page, 274 characters, was the second
    entry and showed its first two sentences, not "A [[github]] concept, not core to [[git]] proper.")."""
    used = 0
    for body in bodies:  # a long note is known not to fit by its first parts: the rest is not read
        used += len(oneline(body)) + 1
        if used > room:
            return False
    return True


def _titled_pointer(title: str, bodies: Sequence[str], room: int) -> str | None:
    """A note that does nothing but point elsewhere (every line of it says too little: a bookmark,
    `- [[go]] https://www.stadt-land-gnuss.ch/blog/marronicake-ein-klassiker` under "# marroni
    cake"), as an entry (`rules.titled_pointers`): its lines after its title, which says what they
    point at ("marroni cake: [[go]] https://…"). None when the note says more (a day's `- [[1:1]]
    with [[Josie Wittwer]]` among its other lines) or the title adds nothing (a date). A title of one
    word is enough when the note saves a web page, what the turn asks for ("Amadeo: … [[twitter]]
    https://…", stop 82); a note that only leads to others ("Piglia: [[301]] [[Ricardo Piglia]]") needs two."""
    lines = [item_text(ln) for b in bodies for ln in b.splitlines()]
    whole = " ".join(ln for ln in lines if ln and not ln.startswith("#"))
    if not whole or (says_something(whole) and not says_too_little(whole)):
        return None
    titled = shorten(f"{oneline(title)}: {whole}", room)
    return titled if says_something(titled) and (holds_a_url(whole) or not says_too_little(titled)) else None


def _admitted(got: Ranking) -> list[Ranked]:
    """Recall's order without weak hits, staged memories and notes a successor replaces here
    (`Ranked.replaced`, ranking.successors_first; a person may link only the new note: `supersedes`
    on it counts as `superseded_by` on the old). A successor that says nothing of what the old note
    answers replaces nothing here: a garden note superseded by a memory of where the shed key now
    hangs still says what grows in the north bed."""
    return [
        r
        for i, r in enumerate(got.ranked)
        if not (is_weak(r, got.bar_for(i == 0)) or r.state.status == "staged" or r.replaced)
    ]


def _shows(r: Ranked, contradicted: Mapping[str, float], rules: ReadRules) -> bool:
    """Whether a dormant note is shown: the turn cues it (`rules.shows_cued_dormant`) and no live note
    that answers the turn nearly as well (`rules.keeps_replaced_out`, a share of its relevance) names
    it in `conflicts_with`. `contradicted`: the best relevance of a live note naming each."""
    bar = rules.keeps_replaced_out
    replaced = bar is not None and r.node_id in contradicted and contradicted[r.node_id] >= bar * r.score
    return rules.shows_cued_dormant and r.reactivated and not replaced


def _successors(r: Ranked, got: Ranking) -> list[str]:
    """The notes the vault says supersede `r` (its `superseded_by`, and any candidate whose
    `supersedes` names it), by file name as a wikilink resolves them, as far as the candidates know
    them; by identity otherwise."""
    ids = list(r.state.superseded_by) + [o.node_id for o in got.ranked if r.node_id in o.state.supersedes]
    return list(dict.fromkeys(PurePosixPath(got.notes[i].path).stem if i in got.notes else i for i in ids))


def _entry(r: Ranked, part: Candidate, shown: str, got: Ranking, cap: int) -> PrefetchEntry:
    day = heading_day(part.chunk.heading) or r.state.stated.day()  # a diary's part: its heading's day
    later = _successors(r, got)  # shown for what its successors do not answer: it says it has them
    return PrefetchEntry(
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
        change="superseded by " + ", ".join(f"[[{t}]]" for t in later) if later else "",
    )


def _merged(
    above: tuple[PrefetchEntry, str, Ranked], new: tuple[PrefetchEntry, str, Ranked]
) -> tuple[PrefetchEntry, str, Ranked]:
    """An entry above and the one that repeats it, as one entry, in the place of the one above. It
    shows the one that says more: a repeat whose words hold all of the one above and more
    (`repeats.adds_nothing`), or that shows all the one above shows and more (a page whose answer
    is a line of another's), is shown in its place. One statement in several notes in the same words
    (both ways) is shown from the newest: the last time the vault says it (a task list
    carried forward shows today's copy, not the first day's). The note of a day the turn names
    stays (its copies become part of it).

    Until stop 56 any repeat dated later was shown in the place of the one above, the words of one
    being all words of the other either way: `dexter`'s blog plan ("I discussed the idea of a
    product and development blog with [[Josie Wittwer]] in our [[1:1]] today. … She also asked me
    to send her a list of other companies …") was shown as its day's log line "- [[1:1]] with [[Josie
    Wittwer]]", "also in Blog"."""
    e, other, o = above
    entry, said, r = new
    day, older = r.state.stated.day(), o.state.stated.day()
    if not o.cand.on_day and adds_nothing(other, said, (older, day)):
        says_more = not adds_nothing(said, other, (day, older))
        above_shows, it_shows = e.text, entry.text
        shows_more = adds_nothing(above_shows, it_shows, (older, day)) and not adds_nothing(
            it_shows, above_shows, (day, older)
        )
        if says_more or shows_more or day is not None and (older is None or day > older):
            return replace(entry, merged=(*e.merged, e.path)), said, r
    return replace(e, merged=(*e.merged, r.path)), other, o


__all__ = [
    "CLOSE",
    "OPEN",
    "KeptOut",
    "PrefetchEntry",
    "PrefetchResult",
    "prefetch",
    "present",
    "render_block",
    "says_something",
    "shorten",
]
