"""What a prefetch entry shows of its note: the part that answers the turn, and in it the lines that
answer, packed into the room an entry's text has, and the entry's line (prefetch.py chooses the
entries and packs them into the block; this says what each one's text is and how its line reads).

    PrefetchEntry             one entry: its note, its text, and its line ("- (date, path > headings) text")
    shorten(text, width)      one line, cut on a word with "…"; a note cannot close the block from inside it
    entry_text(part, ...)     the lines of the chunk that ranked the note that answer (answering_lines),
                              or a snippet; the block's first entry reads on in its note (note_units)
    answering_lines(...)      the answer, its list item or prose, the command that answers, its neighbours
    heading_shown(...)        the headings an entry's line names: not its title again, links as they read
    leads_in(text)            a line that ends with a colon: it promises what comes after it
    says_its_answer(part)     the part with its best line that says something as its answer, when a link scored best

Longer than 500 lines because `answering_lines` is one packing of one entry's room: the answer, its
code block, its neighbours, the part's scored lines, reading on, the line between two shown and the
tail all add to the same chosen lines under the same cap, and its docstring keeps the case each step
was made for; split into steps, each would take the whole state as arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from itertools import chain
from typing import Any

from ..markers import neutralise
from ..search.ranking import Candidate, coverage
from ..search.rules import DEFAULT_RULES, ReadRules
from ..text import names_anything, says_something, says_too_little, sentence_layout, snippet, unlink

_WS = re.compile(r"\s+")


def oneline(text: str) -> str:
    # One entry per line, and a note cannot close (or reopen) the block from inside it, in any form.
    text = neutralise(text)
    return _WS.sub(" ", text).strip()


def shorten(text: str, width: int) -> str:
    """`text` on one line in at most `width` characters, cut on a word boundary with "…", and not
    right after a colon: "If you see nodes that have a block beginning with go … Example:…" promised
    what the entry did not show (the bench's count of entries ending on a lead-in)."""
    text = oneline(text)
    if len(text) <= width:
        return text
    if width <= 1:
        return ""
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
        back = cut.rfind(" ")
        if cut.endswith(":") and back >= width // 2:  # not on a promise: "Example:…"
            cut = cut[:back]
    return cut.rstrip() + "…"


@dataclass(frozen=True)
class PrefetchEntry:
    """One memory in the block."""

    node_id: str
    path: str
    title: str
    heading: str
    date: str | None  # YYYY-MM-DD its note (fields.stated_time) or part (fields.heading_day) was stated; None: undated
    text: str  # what the block shows (the sentence that answers, else the relevant part of the chunk)
    score: float  # recall's relevance (the order)
    similarity: float  # cosine of the turn to the answer (what the weak bar is judged on)
    strength: float
    reactivated: bool = False
    merged: tuple[str, ...] = ()  # paths of the notes that state the same thing (shown as "also in")
    #: what the vault records about it and another entry: "superseded by #1" ... (ranking.change_label)
    change: str = ""

    def line(self, room: int, rules: ReadRules = DEFAULT_RULES) -> str | None:
        """This entry as one line of at most `room` characters, or None if it cannot fit usefully."""
        rendered = self._render(room, rules)
        return None if rendered is None else rendered[0]

    def _where(self, rules: ReadRules = DEFAULT_RULES) -> tuple[str, str, str]:
        """What its line says of where the text comes from: (date, path and headings, "also in …")."""
        heading = heading_shown(self.heading, self.title)
        where = oneline(self.path + (f" > {heading}" if heading else ""))
        date = self.date or "undated"
        if self.change:
            date = f"{date}; {self.change}"
        also = ""
        if self.merged:
            names = [p.rsplit("/", 1)[-1].removesuffix(".md") for p in self.merged[: rules.also_shown]]
            more = len(self.merged) - len(names)
            also = "; also in " + ", ".join(names) + (f" and {more} more" if more else "")
        return date, where, also

    def label_length(self, rules: ReadRules = DEFAULT_RULES) -> int:
        """How long its line's "- (date, where) " is, before any text: what an entry's cap does not count."""
        date, where, also = self._where(rules)
        return len(f"- ({date}, {where}{also}) ")

    def _render(self, room: int, rules: ReadRules = DEFAULT_RULES, cap: int | None = None) -> tuple[str, str] | None:
        """(line, the text it shows), or None: a line of at most `room` characters, with at least
        `rules.min_entry_text` and at most `cap` characters of its text, and at most
        `rules.also_shown` of the other notes it is in. Shortened to a link and
        nothing of its own ("https://codesandbox.io/s/objective-bas-…", the first line of a draft
        the budget reached last), or to a link and a word ("- Bought https://www.amazon.de/Way-…":
        text.says_too_little), it is no entry: a part that says nothing is never one."""
        date, where, also = self._where(rules)
        fixed = len(f"- ({date}, {also}) ")
        max_where = room - fixed - rules.min_entry_text
        if max_where < 8 and also:  # no room to say where else: drop that first
            also, fixed = "", len(f"- ({date}, ) ")
            max_where = room - fixed - rules.min_entry_text
        if max_where < 8:
            return None
        if len(where) > max_where:  # very long paths keep their end: the file name
            where = "…" + where[-(max_where - 1) :]
        prefix = f"- ({date}, {where}{also}) "
        full = oneline(self.text)
        text = shorten(full, room - len(prefix) if cap is None else min(cap, room - len(prefix)))
        cut = text.removesuffix("…")
        if text != full and (len(text) < rules.min_entry_text or not says_something(cut) or says_too_little(cut)):
            return None
        return prefix + text, text

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["merged"] = list(self.merged)
        return out


def entry_text(
    part: Candidate,
    query: str,
    cap: int,
    rules: ReadRules = DEFAULT_RULES,
    *,
    fill: bool = False,
    note: tuple[Sequence[str], int] | None = None,
) -> str:
    """What an entry shows of the part that ranked its note: its lines that answer the turn,
    in note order, at most `cap` characters (`answering_lines`; `fill`: and the rest of its note in
    the room they leave, from its first line: `note` is the bodies of the note's parts in order and
    which of them is this part, else the part alone is read on in), when it states a sentence that
    answers; else the chunk cut around the turn's words (snippet drops a first line: "\\n" keeps the
    chunk's). A property line read with its note's title ("Sam Tupy: Birthday: March 26th",
    windows.about) is shown so, with one other line, unless the entry reads on (`fill`): then it
    is read on from its line like any answer, and a person's card shows the rest of its properties
    ("Interests: Reading Learning Xbox Switch", what "help me brainstorm a gift for him" needs).
    An answer that leads in ("… you can just truncate both of them at once:") and ends its part is
    shown with what it introduces, which opens the note's next part (`note`; stop 61). The first
    entry reads on from its part's first line when no sentence of it answers (stop 68: a reading
    list's part was its lead-in line alone, "Books that have been recommended to me and/or I intend
    to read:", and the entry showed that line and none of the books, which opened the next part)."""
    answer = part.answer_text
    body = part.chunk.body
    reads_on = fill and note is not None  # the first entry: it reads on even when no sentence answers
    units, layout = sentence_layout(body)
    sentences = [s for s, _ in units]
    # cut around the turn's words, as the part reads: a list's items without their "- " (stop 79: a
    # Logseq journal's entry read "- Emotional regulation: - Early Morning: - Morning:"); a part
    # with no sentence at all, as written
    as_read = "\n".join(sentences) or body
    if answer is None and not reads_on:
        return snippet("\n" + as_read, query, width=cap)
    if answer is None:  # no sentence answers: it reads on from its part's first line
        answer = next((s for s in sentences if s.strip()), None)
        if answer is None:
            return snippet("\n" + as_read, query, width=cap)
    others = part.window.others if part.window is not None else ()
    line = answer
    if answer not in sentences and fill:  # a property read with its note's title: read on from its line
        line = next((s for s in sentences if answer.endswith(": " + s)), answer)
    if line not in sentences:  # a property read with its note's title (windows.about)
        return " … ".join([answer, *[w for w in others if w in sentences][:1]])
    at, within = sentences.index(line), None
    introduce_to = None
    # the first entry reads on in its note; an answer that leads in and ends its part reads what it
    # introduces, which opens the note's next part
    if note is not None and (fill or _ends_leading_in(units, at)):
        units, layout, offset = note_units(note[0], note[1], (units, layout))
        at, within = at + offset, (offset, offset + len(sentences))
        introduce_to = None if fill else len(units)
    return answering_lines(
        units,
        at,
        others,
        cap,
        rules,
        fill=fill,
        within=within,
        terms=part.terms,
        layout=layout,
        introduce_to=introduce_to,
    )


def _ends_leading_in(units: Sequence[tuple[str, int]], at: int) -> bool:
    """Whether line `at` leads in and is its part's last line: what it introduces is in the next part."""
    code, fences = _code_blocks(units)
    return _leads_in(at, units, code) and _line_after(at, len(units), fences) is None


def says_its_answer(part: Candidate) -> Candidate:
    """The candidate with, as the sentence that answers, its best window that says something: a
    line of links that scored best ("- [Braces and parentheses should be used consistently with
    arrow functions](https://sonarqube…)") points at a page; the sentence under it that says how
    the owner configured that rule is what the note states."""
    w = part.window
    if w is None or says_something(w.text):
        return part
    other = next((o for o in w.others if says_something(o)), None)
    if other is None:
        return part
    rest = tuple(o for o in w.others if o != other)
    return replace(part, window=replace(w, text=other, others=(w.text, *rest)))


def note_units(
    bodies: Sequence[str], k: int, mine: tuple[list[tuple[str, int]], list[tuple[int, bool]]]
) -> tuple[list[tuple[str, int]], list[tuple[int, bool]], int]:
    """The sentence units of a note's parts in order and their layout (text.sentence_layout), part
    `k`'s being `mine`, numbered so no two parts share a unit; and where part `k`'s first sentence
    is among them."""
    out: list[tuple[str, int]] = []
    layout: list[tuple[int, bool]] = []
    offset = 0
    for j, b in enumerate(bodies):
        units, shapes = mine if j == k else sentence_layout(b)
        if j == k:
            offset = len(out)
        base = (out[-1][1] + 1) if out else 0
        out += [(s, u + base) for s, u in units]
        layout += shapes
    return out, layout, offset


def answering_lines(
    units: Sequence[tuple[str, int]],
    at: int,
    others: Sequence[str],
    cap: int,
    rules: ReadRules = DEFAULT_RULES,
    *,
    fill: bool = False,
    within: tuple[int, int] | None = None,
    terms: frozenset[str] = frozenset(),
    layout: Sequence[tuple[int, bool]] | None = None,
    introduce_to: int | None = None,
) -> str:
    """The lines of a part that answer, packed by what answers most into `cap` characters and shown in
    note order (" … " where lines are left out between two):

    1. the sentence that answers (`at`), with the items indented under it when it is a list item
       that has some (`rules.answer_children`: an outline's bullet is read with its sub-bullets, as a
       lead-in with what it introduces, below);
    2. a code block: a how-to's answer is its command ("what should I call to generate a UUID"
       showed the note's first lines, not `gen_random_uuid()`). The one whose lines and lead-in (the
       line before its fence) hold the most of the turn's words (`terms`), the nearest after the
       answer on a tie, then the nearest before it: "make the Phoenix port configurable from the
       command line, falling back to 4000" wants the block led in by "Alternatively, you can allow
       it to be configurable from the command line…", not the `port: 4444` right after the answer.
       Blocks that hold as many of its words come too, nearest first, as room allows (stop 59:
       "push the staging branch up to the Heroku staging app" showed `$ git push heroku staging`,
       led in by "you cannot simply run", and not `$ git push heroku staging:master` below it);
    3. `rules.context_sentences` neighbours in its list item or paragraph, each side: the best
       sentence is often next to the fact ("Flights booked: 12-16 March." above "Hotel:: Casa do
       Príncipe"), but a log's next item is another statement;
    4. the part's other sentences scored for the turn (`others`, best first);
    5. with `fill` (the block's first entry: `rules.first_entry_fills`), the other code blocks,
       nearest first (stop 60: a how-to often shows what fails before what works, and the turn's
       words echo the failure: "set a CSS custom property from our SCSS variable; the output has
       the variable name in it literally" chose the block that shows the problem, and the prose
       read on from the first line filled the room before `#{$primary-action}`), then the rest of
       the part from its first line; when `units` are the whole note's, the part being `within` (its
       first and past-last sentence), the rest of the note from its first line (stop 54: nearest
       lines first before, which read a list of state parks from the item that ranked it, #5, and
       never reached the part above it whose "#1: Glendalough: My favorite" the turn needed).
       Reading on takes the lines that say something first, then, in the room they leave, the lines
       that only name or point (stop 60: `flancian`'s utopia page lists the works as `[[Thomas More's
       Utopia]]`, `[[Huxley]] [[The Island]]`, and a bookmark's saved link is the resource the turn
       asks for); a day's navigation (`[[2026-11-04]] · [[2026-11-08]]`) names nothing and never comes.

    A line that says nothing of its own (text.says_something: a `[source](https://…)` link, a
    `[[go]] https://…` pointer) is shown only as the answer or a line of code: among the others, or
    reading on, it took the room of what the note says (a Netlify how-to showed its first paragraph
    and its source link, not the `YARN_VERSION` sentence between them).

    (The whole list item or paragraph, when it fitted, came second until stop 49; with the first
    entry reading on, it moved nothing on any set, the team's labelled real vault included.)

    A line that leads in ("Instead I just use fstab and mount/unmount as needed:", "Start the day by
    taking a look at:") comes with what it introduces, in order, from its first line (`layout`, each
    sentence's indent and whether it is a list item: `_introduced`): before, `flancian`'s autofs
    note was shown up to "as needed:" and not the fstab line under it that the turn needed. When
    what it introduces does not fit, the lead-in is not shown either, unless it is the answer
    (stop 57: "… allowing you to write a test like this:" ended a how-to's entry without the test).

    A code block's lines are shown as one unbroken run: from its first line, never a line left out
    because it did not fit and a shorter one after it shown ("const nextConfig = {; {; }," was all a
    Next.js how-to's entry showed of its `async redirects()`). A line of code of two words or more
    that a block already shown holds is passed over (stop 61: a how-to that shows a failing block and
    then the same lines with one mended showed the setup lines twice and ran out of room before
    `be_within`, the mended line).

    The room the lines leave goes first to a line that is alone between two of them, the shortest
    first (stop 61: a journal's item "[[fluorescing flower]] told me about [[whipping privilege]]" and
    "[[buy]] books as per the above" were shown with " … " between them, where "[[ben chase]]
    recommended [[so you want to talk about race]]", the book the turn asked for, was; a longer
    passage between two lines is left out: in a chat it is other talk, and it pushed the entries
    below out of the block); then to the part's next sentence, cut on a word.
    """
    unit = units[at][1]
    code, fences = _code_blocks(units)
    pieces: list[list[int]] = [[at]]
    if code and rules.answer_code:
        blocks = list({id(b): b for b in code.values()}.values())
        near = [b for b in blocks if b[0] > at] + [b for b in blocks if b[-1] < at][::-1]
        held = [coverage(terms, _led_in(units, b, fences)) for b in near]
        most = max(held, default=0.0)
        # every block that holds the most, nearest first; the nearest alone when none holds a word
        best = [b for b, h in zip(near, held, strict=True) if h == most][: None if most > 0 else 1]
        if at in code:  # the answer is a line of code: its own block first, whole from its first line
            best = [code[at], *best]
        pieces += [[i] for b in best for i in b]  # line by line: its first lines when not all fit
    n = rules.context_sentences
    pieces += [[i] for d in range(1, n + 1) for i in (at - d, at + d) if 0 <= i < len(units) and units[i][1] == unit]
    lo, hi = within if within is not None else (0, len(units))
    by_text = {s: i for i, (s, _) in enumerate(units[lo:hi], start=lo)}

    def says(i: int) -> bool:  # a line worth room of its own: code, or a line that says something
        return i in code or says_something(units[i][0])

    pieces += [[by_text[w]] for w in others if w in by_text and says(by_text[w])]
    if fill:
        if code and rules.answer_code:  # a how-to's other commands before its prose, nearest first
            pieces += [[i] for b in near if all(b is not c for c in best) for i in b]
        pieces += [[i] for i in range(len(units)) if says(i)]
        # then, in the room left, the lines that only name or point: a list of [[works]], a link saved
        pieces += [[i] for i in range(len(units)) if not says(i) and names_anything(units[i][0])]
    chosen: set[int] = set()
    repeats: set[int] = set()  # code lines a block shown already holds: passed over, not shown twice

    def repeated(i: int) -> bool:  # a line of code, of two words or more, that another block shown holds
        text = units[i][0].strip()
        return (
            i in code
            and i != at
            and len(_WORDS.findall(text)) >= 2
            and any(j in code and code[j] is not code[i] and units[j][0].strip() == text for j in chosen)
        )

    def take(piece: Sequence[int]) -> bool:  # shown, if it fits (True when it already is)
        nonlocal chosen
        more = [i for i in piece if i not in chosen and i not in fences and i not in repeats]
        repeats.update(i for i in more if repeated(i))
        more = [i for i in more if i not in repeats]
        grown = chosen | set(more)
        if more and not (all(_runs_on(i, code, grown | repeats, at) for i in more) and _length(units, grown) <= cap):
            return False
        chosen = grown
        return True

    def introduces(i: int) -> bool:  # a lead-in, or the answer with items indented under it
        if _leads_in(i, units, code):
            return True
        if not rules.answer_children or i != at or layout is None:
            return False
        return _has_children(i, units, layout, code, fences)

    for piece in pieces:
        if take(piece) and layout is not None and introduces(piece[-1]):
            # what it introduces comes next, in order: a list is read from its first item
            for j in _introduced(piece[-1], units, layout, code, fences, introduce_to or hi):
                if not take([j]):
                    break
    # a line that leads in, shown without the line after it (what it introduces did not fit, or is
    # in a part the entry does not read), promises what the entry lacks: it goes, unless it answers
    for i in sorted(chosen, reverse=True):
        if i != at and i not in code and _leads_in(i, units, code):
            nxt = _line_after(i, len(units), fences)
            if nxt is not None and nxt not in chosen:
                chosen.discard(i)
    # the room left goes first to the line between two lines shown, the shortest first: a reader
    # reads it, and a list's next item is often what the turn needs (one line, not a passage: in a
    # chat, what lies between two lines shown is other talk; a line that says and names nothing, a
    # day's navigation, is still not shown)
    between: list[int] = []
    order = sorted(chosen)
    for a, b in zip(order, order[1:], strict=False):
        gap = [j for j in range(a + 1, b) if j not in fences]
        if len(gap) == 1 and gap[0] not in repeats and (says(gap[0]) or names_anything(units[gap[0]][0])):
            between += gap
    for j in sorted(between, key=lambda j: len(units[j][0])):
        grown = chosen | {j}
        if _length(units, grown) <= cap and _runs_on(j, code, grown | repeats, at):
            chosen = grown
    if not chosen:  # not even the answer fits: it is shown cut (prefetch.shorten)
        return units[at][0]
    shown = _joined(units, sorted(chosen), code)
    # the room left goes to the part's next sentence, cut on a word ("…"), as a reader reads on,
    # unless it would stop on a colon ("Five books looks interesting:…"): a lead-in without its list
    after = _line_after(max(chosen), len(units), fences)
    room = cap - len(shown) - 1
    if after is not None and units[after][1] == unit and room >= MIN_TAIL and after - 1 in chosen and says(after):
        tail = units[after][0]
        cut = tail if len(tail) <= room else tail[: tail.rfind(" ", 0, room - 1)].rstrip() + "…"
        if not cut.removesuffix("…").endswith(":"):  # a tail that stops on a lead-in promises what it lacks
            shown += " " + cut
    return shown


#: What `answering_lines` counts as a word of a line of code (a repeated `end` or `});` is shown again).
_WORDS = re.compile(r"\w+")

#: The next sentence is shown in part only when this much room is left for it.
MIN_TAIL = 40


def _line_after(i: int, n: int, fences: set[int]) -> int | None:
    """The unit after `i` that a reader sees next (a code fence is not one), of `n`; None at the end."""
    return next((j for j in range(i + 1, n) if j not in fences), None)


def leads_in(text: str) -> bool:
    """Whether a line of text leads in ("Instead I just use fstab and mount/unmount as needed:"): it
    ends with a colon. Shown alone, it promises what the entry does not hold."""
    return text.rstrip().endswith(":")


def _leads_in(i: int, units: Sequence[tuple[str, int]], code: Mapping[int, list[int]]) -> bool:
    """Whether line `i` leads in (`leads_in`): a line of text, not code."""
    return i not in code and leads_in(units[i][0])


def _has_children(
    i: int,
    units: Sequence[tuple[str, int]],
    layout: Sequence[tuple[int, bool]],
    code: Mapping[int, list[int]],
    fences: set[int],
) -> bool:
    """Whether line `i` is a list item with items indented under it (an outline's bullet with its
    sub-bullets; `_introduced` reads them as a lead-in's list)."""
    nxt = _line_after(i, len(units), fences)
    return layout[i][1] and nxt is not None and nxt not in code and layout[nxt][0] > layout[i][0] and layout[nxt][1]


def _introduced(
    lead: int,
    units: Sequence[tuple[str, int]],
    layout: Sequence[tuple[int, bool]],
    code: Mapping[int, list[int]],
    fences: set[int],
    end: int,
) -> Iterator[int]:
    """The lines a lead-in introduces, in order, up to the part's `end` (read lazily: the caller
    stops when they no longer fit): a code block right after it; else the list after it (the items
    indented under it, or, written at its own depth, the items that follow it, to the first line of
    prose back at its depth or a line out of the list); else the paragraph after it."""
    after = (j for j in range(lead + 1, end) if j not in fences)
    first = next(after, None)
    if first is None:
        return
    if first in code:
        yield from code[first]
        return
    depth, item = layout[lead]
    prose = not (item or layout[first][1])
    floor = depth + 1 if layout[first][0] > depth else depth
    for j in chain((first,), after):
        d, is_item = layout[j]
        if prose and units[j][1] != units[first][1]:
            return
        if not prose and (d < floor or (d <= depth and not is_item and j not in code)):
            return
        yield j


def _code_blocks(units: Sequence[tuple[str, int]]) -> tuple[dict[int, list[int]], set[int]]:
    """(sentence index -> the indexes of the fenced code block it is a line of, the fence lines)."""
    blocks: dict[int, list[int]] = {}
    fences: set[int] = set()
    inside: list[int] | None = None
    for i, (s, _) in enumerate(units):
        if s.startswith(("```", "~~~")):
            fences.add(i)
            inside = [] if inside is None else None
            continue
        if inside is not None:
            inside.append(i)
            blocks[i] = inside
    return {i: b for i, b in blocks.items() if b}, fences


def _led_in(units: Sequence[tuple[str, int]], block: Sequence[int], fences: set[int]) -> str:
    """A code block's lines and the line before its fence, which says what it is for."""
    lead = block[0] - 1
    while lead in fences:
        lead -= 1
    return " ".join(units[i][0] for i in ([lead] if lead >= 0 else []) + list(block))


def _runs_on(i: int, code: Mapping[int, list[int]], shown: set[int], at: int) -> bool:
    """Whether line `i` may be shown with `shown`: a line of prose always; a code line when it is the
    answer, its block's first line, or next to a line of its block that is shown."""
    block = code.get(i)
    if block is None or i == at or i == block[0]:
        return True
    return any(j in shown and code.get(j) is block for j in (i - 1, i + 1))


def _length(units: Sequence[tuple[str, int]], chosen: set[int]) -> int:
    return sum(len(units[i][0]) + 3 for i in chosen)


def _joined(units: Sequence[tuple[str, int]], chosen: Sequence[int], code: Mapping[int, list[int]]) -> str:
    """The chosen lines in order: a block's lines next to each other joined by "; ", a line next to the
    one before it by a space, and " … " wherever lines are left out, a block's repeated lines too."""
    out = ""
    for k, i in enumerate(chosen):
        if k:
            near = i == chosen[k - 1] + 1
            out += ("; " if i in code and code.get(chosen[k - 1]) is code[i] else " ") if near else " … "
        out += units[i][0]
    return out


def heading_shown(heading: str, title: str) -> str:
    """The headings an entry's line names after its path: without a first heading that is the
    note's title (the path names the note), links as they read. A template's daily note says
    "July 13th, 2022, Wednesday > [[Daily Pages]] > [[Evening Review]] > [[Journal]]" under
    "July 13th, 2022, Wednesday.md": its line says "Daily Pages > Evening Review > Journal", and
    the 40 characters go to what the note says."""
    parts = [unlink(p).strip() for p in heading.split(" > ")] if heading else []
    if parts and parts[0] == unlink(title).strip():
        parts = parts[1:]
    return " > ".join(p for p in parts if p)


def first_entry_cap(budget: int, entry_cap: int, rules: ReadRules = DEFAULT_RULES) -> int:
    """The cap of the block's first entry when it reads on in a note about a subject (`rules.first_entry_fills`):
    `rules.first_entry_share` of the budget, or the entry cap when that is more."""
    return max(entry_cap, int(budget * rules.first_entry_share)) if rules.first_entry_fills else entry_cap


__all__ = [
    "PrefetchEntry",
    "answering_lines",
    "entry_text",
    "first_entry_cap",
    "heading_shown",
    "leads_in",
    "oneline",
    "says_its_answer",
    "shorten",
]
