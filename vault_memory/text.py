"""Pure helpers for the text of an agent's memory: titles, file names, tags, folders.

No I/O: what a memory is called, where its file goes and how its body reads are
decided here from strings, so they can be tested with strings.

Longer than 500 lines because how a body reads (its sentences, hard-wrapped lines joined, table
rows with their header, what only points elsewhere, the snippet around a query's words) is one
reading the index, recall and the block share, each part a few pure functions over strings.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from .errors import ConfigError

TITLE_CHARS = 200  # a default title is the text's first sentence; only a runaway sentence is cut (on a word)
NAME_CHARS = 60  # a file name is the title, cut on a word boundary when longer than this
_WS = re.compile(r"\s+")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$")
# Characters a file name may not hold: Windows and macOS refuse \ / : * ? " < > |, and Obsidian's links
# break on # ^ [ ] | (a heading, a block, the link's own brackets, the alias separator).
_NAME_BAD = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]+')
_RESERVED = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
)  # Windows device names
# Abbreviations whose period does not end a sentence ("Dr. Chen", "e.g. tea").
_ABBREV = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "sr",
        "jr",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "approx",
        "no",
        "fig",
        "mt",
        "ft",
        "inc",
        "ltd",
        "co",
    }
)
# Words a cut file name should not end on.
_DANGLING = frozenset(
    "a an the of to for with and or nor but so in on at by from as into onto than that which who "
    "instead about over under after before while when where because if".split()
)
_LINK = re.compile(r"\[\[([^\[\]|\n]*)(?:\|([^\[\]\n]*))?\]\]")
_MD_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_TAG_BAD = re.compile(r"[\s,#\[\]{}]+")


# Characters str.splitlines() (and so the frontmatter editor and most editors) take as a line break.
_LINE_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def plain_text(value: str, what: str) -> str:
    """A memory's text, title, tag or log line as a note can hold it: every kind of line break
    (CR, U+2028, U+2029, NEL, VT, FF, the C0 separators) becomes a newline; a NUL, or bytes that are
    not UTF-8, are refused, naming where they are (a Markdown file cannot carry them)."""
    at = value.find("\x00")
    if at >= 0:
        raise ConfigError(
            f"the {what} contains a NUL character (U+0000) at position {at + 1}; remove it (a note cannot hold one)"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: bytes that were not UTF-8 (e.g. from argv)
        raise ConfigError(
            f"the {what} is not valid text at position {exc.start + 1} (bytes that are not UTF-8); pass it as UTF-8"
        ) from None
    return _LINE_BREAKS.sub("\n", value)


def norm(text: str) -> str:
    """Whitespace collapsed and case folded: what "the same text" means for retries."""
    return _WS.sub(" ", text).strip().casefold()


def split_title(body: str) -> tuple[str, str]:
    """(first H1 text or "", the body without that heading line)."""
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        m = _H1.match(line.strip())
        if m:
            return m.group(1).strip(), "\n".join(lines[i + 1 :]).strip()
        break
    return "", body.strip()


def unlink(text: str) -> str:
    """The text as it reads: `[[Maya Chen|Maya]]` -> Maya, `[[Maya Chen]]` -> Maya Chen, `[a](url)` -> a."""

    def shown(m: re.Match[str]) -> str:
        if m.group(2) is not None:
            return m.group(2)
        target = m.group(1)
        return target.split("#", 1)[0].rsplit("/", 1)[-1] or target.lstrip("#")

    return _MD_LINK.sub(lambda m: m.group(1), _LINK.sub(shown, text))


_SENTENCE_END = re.compile(r"(?<=[.!?…])([\"')\]]*)\s+")
_TABLE_RULE = re.compile(r"\|?(?:\s*:?-+:?\s*\|)+\s*(?::?-+:?\s*)?")  # |---|:--:| under a header
_EMBED_OR_LINK = re.compile(r"!?\[\[[^\]]*\]\]")
_DATES_AND_TIMES = re.compile(r"\b\d{1,4}(?:[-./:]\d{1,4})*(?:\s*(?:am|pm))?\b", re.I)
_LETTERS = re.compile(r"[^\W\d_]{2,}")


_BREAK = re.compile(r"<br\s*/?>", re.I)


def _cells(line: str) -> list[str]:
    """A table row's cells; a `<br>` in one (how Markdown writes a line break in a cell) reads as a space."""
    return [_BREAK.sub(" ", c).strip() for c in line.strip().strip("|").split("|")]


_KEY_MARK = re.compile(r"#|\*\*|__|[*_](?=\w)")


def _keys_and_values(header: list[str], below: list[str]) -> bool:
    """Whether a table of two columns lists keys and their values, its header row being one of them
    or naming no value: `| #address | 6646 Londerry Dr. |` over `| #phone | 470-776-8762 |` (a people
    template, `aneal`, stop 79) read "#address: #phone; 6646 Londerry Dr.: 470-776-8762". So it is
    when the header's second cell is empty, or when the header's first cell and every row's first
    cell start with the same mark (`#`, `**`) or all end with ":"."""
    if len(header) != 2:
        return False
    if not header[1]:
        return True
    firsts = [header[0]]
    for line in below:
        line = line.strip()
        if not line.startswith("|"):
            break
        cells = _cells(line)
        if len(cells) != 2:
            return False
        firsts.append(cells[0])
    if len(firsts) < 2:
        return False
    if all(f.endswith(":") for f in firsts):
        return True
    marks = [_KEY_MARK.match(f) for f in firsts]
    return all(m is not None for m in marks) and len({m.group(0) for m in marks if m is not None}) == 1


def split_sentences(body: str) -> list[str]:
    """The sentences of a text, in order: each line is split at sentence ends (list markers,
    quote marks and heading marks dropped); a line of a fenced code block is one sentence, as
    written (stop 60: `--exclude-database=…`, `# frozen_string_literal: true`). The unit a fact is
    stated in (windows.py).

    A Markdown table row is one sentence that names its columns: under `| Part | What |`, the
    row `| GPU | RTX 3060 12 GB |` reads "Part: GPU; What: RTX 3060 12 GB". A row alone does not
    say what its cells are, and "| model | recall@10 |" alone says nothing (the header and the
    `|---|` rule are not sentences of their own). This is how a table is read, not a rule of the
    read path: switched off (a row read as its cells, the header a sentence too) it changed nothing
    on any data set `bench ablate` runs (issue 37)."""
    return [s for s, _ in sentence_units(body)]


_LIST_ITEM = re.compile(r"(?:[-*+]|\d+[.)])\s")
_NUMBERED = re.compile(r"\d+[.)]\s+")


def item_text(line: str) -> str:
    """A line as its text reads: stripped, without its list marker ("- ", "* ", "1. ", "2) ")."""
    line = line.lstrip()
    m = _LIST_ITEM.match(line)
    return (line[m.end() :] if m else line).strip()


_CODE_RULE = re.compile(r"[-=+_|*~#\s]{3,}")


def sentence_units(body: str) -> list[tuple[str, int]]:
    """split_sentences(body), each sentence with the number of the part of the text it is in: each
    list item, heading and table is a part of its own, and so is the text between them. A log's
    items are each a statement ("- 08:10 Booked flights to Lisbon." and "- 13:00 Lunch with [[Jonas
    Weber]]."); lines of prose, blank lines between them or not, read together ("Flights booked:
    12-16 March." and "Hotel:: Casa do Príncipe"; "Likes:: cycling" above "Jonas designs the Atlas
    dashboard."). What an entry shows around its answer (entries.entry_text)."""
    return _sentences(body, None)


def sentence_layout(body: str) -> tuple[list[tuple[str, int]], list[tuple[int, bool]]]:
    """sentence_units(body), read once, and for each of its sentences, in order: the indent of the
    line it starts on and whether that line is a list item. What says which lines a lead-in
    introduces ("Instead I just use fstab and mount/unmount as needed:" and the lines indented under
    it: entries.answering_lines). Only an entry asks for it: the sentences recall scores do not."""
    layout: list[tuple[int, bool]] = []
    return _sentences(body, layout), layout


def _sentences(body: str, layout: list[tuple[int, bool]] | None) -> list[tuple[str, int]]:
    """sentence_units(body); with `layout`, each sentence's (indent, list item) appended to it."""
    out: list[tuple[str, int]] = []
    lines = body.split("\n")
    header: list[str] | None = None
    unit, used, item, table = 0, False, False, False  # used: the part has a sentence; item: it is a list item
    keyed = False  # the table is a list of keys and their values (_keys_and_values)
    fence = False  # inside a fenced code block: each line is its own
    runs_on = ""  # the line before is prose whose last sentence runs on: its last word ("": it is not)

    def new_part(is_item: bool = False) -> None:
        nonlocal unit, used, item
        if used:
            unit, used = unit + 1, False
        item = is_item

    for i, raw in enumerate(lines):
        line = raw.strip()
        if fence and not line.startswith(("```", "~~~")):
            # a line of code is shown as written, one unit each: `--exclude-database="template*"`,
            # `# frozen_string_literal: true` and `> dump.sql` are not a list item, a heading or a
            # quote, and a command is not split where a sentence would end; a rule (psql's
            # `-----+-----` under a header) says nothing and is left out, as before
            if line and not _CODE_RULE.fullmatch(line):
                out.append((line, unit))
                if layout is not None:
                    spaced = raw.expandtabs(4)
                    layout.append((len(spaced) - len(spaced.lstrip()), False))
                used = True
            continue
        if line.startswith("|") and len(line) > 1:
            runs_on = ""
            if not table:
                new_part()
                table = True
            if _TABLE_RULE.fullmatch(line):
                continue
            cells = _cells(line)
            if i + 1 < len(lines) and _TABLE_RULE.fullmatch(lines[i + 1].strip()):
                header = cells  # the header row: said by every row below it
                keyed = _keys_and_values(cells, lines[i + 2 :])
                if not keyed:
                    continue
            if keyed and len(cells) == 2:  # "#phone: 470-776-8762"; a key without a value says nothing
                row = f"{cells[0]}: {cells[1]}" if cells[0] and cells[1] else ""
            else:
                names = header if header is not None and len(header) == len(cells) else [""] * len(cells)
                row = "; ".join(f"{h}: {c}" if h else c for h, c in zip(names, cells, strict=True) if c)
            if row:
                out.append((row, unit))
                if layout is not None:
                    layout.append((0, False))
                used = True
            continue
        if table:  # the table ended
            header, table, keyed = None, False, False
            new_part()
        if not line:
            runs_on = ""
            if item:  # a blank line ends a list item
                new_part()
            continue
        heading = line.startswith("#")
        listed = _LIST_ITEM.match(line) is not None
        if heading or listed:
            new_part(is_item=not heading)
            runs_on = ""
        is_fence = line.startswith(("```", "~~~"))
        fence = fence != is_fence
        prose = not (heading or is_fence or "::" in line)
        line = line.lstrip("-*>#").strip()
        # "1. South East Asia; …", "## 2. Configure": the number is the item's, or the heading's
        number = _NUMBERED.match(line) if listed or heading else None
        if number:
            line = line[number.end() :]
        if line:
            pieces = [s.strip() for s in _split_line(line) if s.strip()]
            if number and pieces:
                pieces[0] = f"{number.group(0).strip()} {pieces[0]}"
            if runs_on and prose and pieces and _goes_on(pieces[0], runs_on):
                out[-1] = (f"{out[-1][0]} {pieces.pop(0)}", out[-1][1])
            out += [(p, unit) for p in pieces]
            if layout is not None:
                spaced = raw.expandtabs(4)
                layout += [(len(spaced) - len(spaced.lstrip()), listed)] * len(pieces)
            used = True
        runs_on = line.rsplit(None, 1)[-1].lower() if prose and line and not _SENTENCE_ENDED.search(line) else ""
        if heading:  # the text under a heading is a part of its own
            new_part()
    return out


def _split_line(line: str) -> list[str]:
    """A line's sentences: split where one ends, but never inside a link: "[[Dr. Smith]]",
    "[[p.m.]]" and "[[E. C. B.]]" name one thing, and were sentences of their own ("[[Dr.",
    "Smith]] today."). A quote or bracket that closes after the end mark is the sentence's own
    (`"Information is power."` kept its opening quote and lost its closing one), and when the
    text goes on in lowercase after it, the mark ended only what the quote or bracket holds:
    "digital forests (or groves; or topiaries?) assembled out of many digital gardens." is one
    sentence, as is 'He asked "why not?" and left.'"""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(line):
        before = line[start : m.start()]  # up to the end mark: its closers may close the link it is in
        if before.count("[") > before.count("]"):  # inside a [[link]] or a [link](…)'s text
            continue
        if m.group(1) and line[m.end() : m.end() + 1].islower():  # "(… topiaries?) assembled"
            continue
        out.append(line[start : m.end(1)])
        start = m.end()
    out.append(line[start:])
    return out


def _goes_on(line: str, last_word: str) -> bool:
    """Whether `line` goes on with a sentence the line before left open (no sentence end): it starts
    in lowercase or with a mark that cannot open a statement (a code span, a Markdown link, a bracket
    or a quote; a [[wikilink]] often does), or the line before ended on a word no sentence ends on
    ("... turn on logging for" / "ActiveRecord."). A line that opens in capitals after a line of
    words is a statement of its own: notes are often written a thought a line, without full stops."""
    opens = line[:1].islower() or line[:1] in "`[(\"'*_" and not line.startswith("[[")
    return opens or last_word in _NO_END


#: Words no sentence ends on: articles, prepositions, conjunctions, auxiliaries.
_NO_END = frozenset(
    "a an the of to for in on at by with from into onto about via and or but nor as than that if "
    "is are was were be been being will would can could should may might must do does did has have had "
    "this these those your my our their its his her which who whose where when while".split()
)
_SENTENCE_ENDED = re.compile(r"[.!?…:;]['\")\]*_`]*$")


def without_links(text: str) -> str:
    """The text with its `[[wikilinks]]` and `![[embeds]]` taken out: what it says itself, not the
    names of the notes it points to."""
    return _EMBED_OR_LINK.sub(" ", text) if "[[" in text else text


_POINTERS = re.compile(r"!?\[[^\]\n]*\]\([^)\n]*\)|<?https?://[^\s>)\]]+>?|\bwww\.\S+")


@functools.lru_cache(maxsize=1 << 15)
def points_elsewhere(text: str) -> bool:
    """Whether a text only points at other pages: once its Markdown links to the vault's notes (with
    their text), URLs, dates and times are out, no word is left. A link to a page on the web is a
    bookmark, and its text says what it is (`_bookmarks_read`: "[International Stamps](https://…)").
    A README that lists every note (`- [Generate A UUID](postgres/generate-a-uuid.md)`) points
    elsewhere; a list of `[[wikilinks]]` names things
    (`1. [[Taylor St Pierre|Taylor]] 2. [[Jack Carlson]]`, the people a person leans on) and is
    content, unless what it names are only dates (`[[2026-11-04]] · [[2026-11-08]]`)."""
    own = _POINTERS.sub(" ", unlink(_MD_ONLY.sub(" ", _bookmarks_read(text))))
    return _LETTERS.search(_DATES_AND_TIMES.sub(" ", own)) is None


_MD_ONLY = re.compile(r"!?\[[^\]\n]*\]\((?!\s)[^)\n]*\)")


@functools.lru_cache(maxsize=1 << 15)
def names_anything(text: str) -> bool:
    """Whether a text names anything at all: once its dates and times are out, a word is left in it
    as it reads (a link's name, a URL's). A list of `[[works]]` or a saved link says nothing of its
    own (`says_something`) but names what a note is about; a day's navigation (`[[2026-11-04]] ·
    [[2026-11-08]]`) names nothing."""
    return _LETTERS.search(_DATES_AND_TIMES.sub(" ", unlink(text))) is not None


@functools.lru_cache(maxsize=1 << 15)
def says_something(text: str) -> bool:
    """Whether a text states anything of its own: once its links, dates and times are out, a word
    (two letters or more) is left. `[[2026-11-04]] · [[2026-11-08]]` is navigation, and so are a
    line of Markdown links (`- [Generate A UUID](postgres/generate-a-uuid.md)`: a README that lists
    every note) and bare URLs (`- [[go]] https://example.org/talk`): what points elsewhere says
    nothing of its own. (A link's text inside prose, "using [Homebrew](url) for a while", is gone
    too, but its sentence says something.)"""
    own = _own_text(text)
    first = _LETTERS.search(own)  # no date or time holds letters but am / pm: most texts end here
    if first is not None and first.group().lower() in ("am", "pm"):
        return _LETTERS.search(_DATES_AND_TIMES.sub(" ", own)) is not None
    return first is not None


def holds_a_url(text: str) -> bool:
    """Whether a text holds an address on the web ("https://…", "www.…"): a page it saves or points at."""
    return "://" in text or "www." in text


def _own_text(text: str) -> str:
    """The text without its wikilinks, embeds, Markdown links to notes (with their text) and URLs:
    what it says itself (`says_something`, `says_too_little`). A bookmark's text is its own
    (`_bookmarks_read`)."""
    own = _bookmarks_read(without_links(text))
    return _POINTERS.sub(" ", own) if "](" in own or holds_a_url(own) else own


#: A Markdown link to a page on the web (`[International Stamps](https://store.usps.com/…)`): a
#: bookmark, whose text says what it is; a link to another note of the vault is a way there (a
#: README's `[Generate A UUID](postgres/generate-a-uuid.md)`), and an image is no bookmark. Until
#: stop 80 both were ways elsewhere: a note of bookmarks ("[Web of Science](https://www-webofscience-
#: com.elib.tcd.ie/)") kept half its relevance and was no entry.
_WEB_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((?:https?://|www\.|mailto:)[^)\n]*\)")


def _bookmarks_read(text: str) -> str:
    """The text with each bookmark (`_WEB_LINK`) read as its text when that names it in two words or
    more ("[Web of Science](https://…)"); a word alone ("[source](https://…)", "[here](…)") only
    says where to look, and the link stays a way elsewhere."""

    def read(m: re.Match[str]) -> str:
        return f" {m.group(1)} " if len(_LETTERS.findall(m.group(1))) >= 2 else m.group(0)

    return _WEB_LINK.sub(read, text) if "](" in text else text


def says_too_little(text: str) -> bool:
    """Whether a text is a way to other pages rather than a statement: it holds a link (a
    `[[wikilink]]`, a Markdown link or a URL) and, once its links, URLs and dates are out, fewer than
    two words of its own are left. "A [[person]] on [[twitter]]: https://twitter.com/arghzero",
    "Document: https://flancia.org/go/agora-ea", "- [[1:1]] with [[Josie Wittwer]]": a block entry
    that says this little spends the agent's prompt on where to look (issue 39: a navigation entry
    is never one). A text that holds no link is never a pointer however short ("Nah", a command),
    and a property read with its note's title says enough ("Taylor St Pierre: Birthday: [[July
    22nd]]"). Stricter than `says_something` (one word), which judges a line of a note."""
    if "[[" not in text and "](" not in text and not holds_a_url(text):
        return False
    return len(_LETTERS.findall(_own_text(text))) < 2


def beyond_its_name(text: str, names: Iterable[str]) -> str:
    """The text without its headings that only say one of `names` (a note's title, its file name, its
    heading path): a note a link created and nobody filled in ("# Gmail", 15 % of one person's Foam
    garden) states nothing, however close its name is to the question. A line of text that says
    its note's name is what the note says: a memory "Prefers dark roast coffee" is kept in
    `Prefers dark roast coffee.md`, and is its own answer."""
    own = {n.strip().casefold() for n in names if n.strip()}

    def names_only(line: str) -> bool:
        line = line.strip()
        return line.startswith("#") and line.lstrip("#").strip().casefold() in own

    return "\n".join(ln for ln in text.split("\n") if not names_only(ln))


def _first_sentence(line: str) -> str:
    """The line up to the end of its first sentence ('.', '!' or '?' then a space), abbreviations aside."""
    for m in re.finditer(r"[.!?]+(?=\s)", line):
        before = line[: m.start()].rsplit(None, 1)
        word = before[-1].casefold() if before else ""
        if m.group() == "." and (word in _ABBREV or (len(word) == 1 and word.isalpha())):
            continue  # "Dr. Chen", "J. R. R. Tolkien"
        return line[: m.end()]
    return line


def default_title(text: str) -> str:
    """The text's first sentence, whole, on one line, without Markdown decoration or a final period.

    Never cut with an ellipsis: a title is what the memory is called. Only a first sentence
    longer than TITLE_CHARS is cut, on a word boundary.
    """
    line = next((ln for ln in text.split("\n") if ln.strip()), "")
    line = unlink(line)
    line = re.sub(r"^\s*(?:[>#]+|[-*+]|\d+[.)])\s+", "", line)  # a quote, heading or list marker
    line = re.sub(r"[*_`]+", "", line)
    title = _WS.sub(" ", _first_sentence(line)).strip()
    title = title.rstrip(".").rstrip() if not title.endswith("...") else title
    if len(title) > TITLE_CHARS:
        title = title[:TITLE_CHARS].rsplit(" ", 1)[0] or title[:TITLE_CHARS]
    return title or "Memory"


def _name_char(c: str) -> str:
    """`c`, or a space when its compatibility form is a character file names may not hold."""
    if c.isascii():
        return c
    folded = unicodedata.normalize("NFKC", c)
    return " " if folded != c and _NAME_BAD.search(folded) else c


def _hides(c: str) -> bool:
    """A leading character that would make the name hidden, or look hidden: a dot (or what normalises
    to one), a space, an invisible format character."""
    return c.isspace() or unicodedata.category(c) in ("Cf", "Zs") or unicodedata.normalize("NFKC", c).startswith(".")


def safe_file_name(name: str) -> bool:
    """Whether a generated file name is visible and ours: no leading dot, no separator, even after NFKC."""
    folded = unicodedata.normalize("NFKC", name)
    return bool(name) and not _hides(name[0]) and not any(c in folded for c in "/\\\x00") and folded not in (".", "..")


def note_name(title: str, max_chars: int = NAME_CHARS) -> str:
    """A file name (without `.md`) that reads like the title: what Obsidian shows as the note's name.

    Characters file systems or Obsidian's links refuse become spaces; a title longer than
    `max_chars` is cut on a word boundary (the full title goes into the frontmatter); no
    leading dot (a hidden file), no trailing dot or space (Windows), no device name.
    """
    # Judged after NFKC normalisation too: a fullwidth solidus or a one-dot leader is a separator or a
    # dot to some file system or sync client, so it is treated as one.
    name = "".join(_name_char(c) for c in unicodedata.normalize("NFC", unlink(title)))
    name = _WS.sub(" ", _NAME_BAD.sub(" ", name)).strip()
    while name and _hides(name[0]):  # ". . .x", "\u200b.x": never a hidden file
        name = name[1:]
    name = name.rstrip(". ")
    if len(name) > max_chars:
        head = name[: max_chars + 1]
        # Prefer the end of a clause ("…peanuts; check every menu" -> "…peanuts"), then a word.
        clause = max((head.rfind(p) for p in (";", ",", " - ", " – ", " — ", "(")), default=-1)
        if clause >= max_chars // 3:
            cut = head[:clause]
        else:
            cut = head.rsplit(" ", 1)[0] if " " in head else name[:max_chars]
        words = cut.rstrip(" .,;:-–—(").split(" ")
        while len(words) > 2 and words[-1].casefold() in _DANGLING:
            words.pop()  # "…instead of" reads cut off: end on a word that carries meaning
        name = " ".join(words).rstrip(" .,;:-–—(")
    if name.casefold() in _RESERVED:
        name += " (memory)"
    return name or "Memory"


def unique_name(name: str, taken: Iterable[str]) -> str:
    """`name`, or `name 2`, `name 3`, ... : the first one not in `taken` (compared ignoring case, as
    Obsidian's links and case-insensitive file systems do)."""
    used = {t.casefold() for t in taken}
    if name.casefold() not in used:
        return name
    n = 2
    while f"{name} {n}".casefold() in used:
        n += 1
    return f"{name} {n}"


def clean_input(text: str, title: str | None) -> tuple[str, str, bool]:
    """(title, text, title_given). A leading `# Heading` in the text serves as the title."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("the memory text is empty; give the fact to remember")
    text = plain_text(text, "memory text").strip()
    if title is not None:
        title = plain_text(title, "title")
    if title is None or not title.strip():
        heading, rest = split_title(text)
        if heading and rest:
            return heading, rest, False
        return default_title(text), text, False
    return _WS.sub(" ", title).strip(), text, True


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Tags without '#', spaces or brackets, each once; an empty one is an error, and so is one
    string where a list of tags belongs (its letters would become tags)."""
    if isinstance(tags, str):
        raise ConfigError(f"tags must be a list of tags, not one string (got {tags!r}); e.g. [{tags!r}]")
    out: list[str] = []
    for tag in tags:
        clean = _TAG_BAD.sub("-", plain_text(str(tag), f"tag {str(tag)!r}").strip().lstrip("#")).strip("-/")
        if not clean:
            raise ConfigError(f"tag {tag!r} is empty after removing '#' and spaces")
        if clean not in out:
            out.append(clean)
    return out


def memory_body(text: str) -> str:
    """The body of an agent memory: its text. The title lives in the file name (and `title:`),
    so the body does not repeat it as a heading."""
    return f"{text.strip()}\n"


def folder_setting(name: str, setting: str, *, allow_root: bool = False) -> str:
    """A configured vault folder as a clean relative path; ConfigError if it could leave the vault."""
    clean = "/".join(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))
    if not clean and not allow_root:
        raise ConfigError(f"{setting} is empty; set it to a folder inside the vault")
    if ".." in clean.split("/") or clean.startswith("."):
        raise ConfigError(f"{setting} {name!r} must be a plain folder inside the vault (no '..', no dot-folder)")
    return clean


def review_path(ws_config: Any) -> str:
    """The review note's vault path from the `review_note` setting ("" when it is off)."""
    raw = str(ws_config.review_note or "").strip()
    if not raw:
        return ""
    rel = folder_setting(raw, "review_note")
    if not rel.lower().endswith(".md"):
        raise ConfigError(f"review_note {raw!r} must be a Markdown file inside the vault (e.g. Memory/Review.md)")
    return rel


def ignore_pattern(ws_config: Any) -> list[str]:
    """The gitignore-style pattern that keeps the review note out of indexing and the watcher."""
    rel = review_path(ws_config)
    return ["/" + re.sub(r"([\\[\]*?!#])", r"\\\1", rel)] if rel else []


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def in_folder(rel: str, folder: str) -> bool:
    return rel.startswith(folder + "/")


_WORD = re.compile(r"\w+")


def _best_window_start(low: str, starts: list[int], terms: Iterable[str], width: int) -> int:
    """The first of `starts` whose window `low[s : s + width]` contains the most `terms`.

    A term is in the window at s when its first occurrence at or after s ends by s + width:
    one sorted search per term over all starts (numpy), instead of slicing 200 windows and
    searching each for every term (most of a hit's cost when recall returns ten)."""
    at = np.asarray(starts, dtype=np.int64)
    hits = np.zeros(len(at), dtype=np.int64)
    for t in terms:
        occ, i = [], low.find(t)
        while i >= 0:
            occ.append(i)
            i = low.find(t, i + 1)
        if not occ:
            continue
        found = np.asarray(occ + [len(low) + width + len(t)], dtype=np.int64)  # a sentinel past every window
        first = found[np.searchsorted(found, at)]
        hits += first + len(t) <= at + width
    return int(at[int(np.argmax(hits))])


def snippet(text: str, query: str, width: int = 240, *, terms: AbstractSet[str] | None = None) -> str:
    """The part of a chunk with the most query words, on word boundaries. `terms`: the query's
    content words (ranking.query_terms), when known: "the", "does" and "with" then choose nothing,
    and a chunk that shares no content word with the query (found by meaning alone) is shown from
    its start, where its answer usually is (issue 40: the quick start's answer line began
    "… 18 g in, 36 g out" and cut off the sentence that answers)."""
    lines = text.split("\n")
    body = " ".join(line.strip() for line in lines[1:] if line.strip()) if len(lines) > 1 else text.strip()
    body = body or text.strip()
    if len(body) <= width:
        return body
    terms = set(terms) if terms else {w for w in _WORD.findall(query.lower()) if len(w) > 2}
    best_start, best_hits = 0, -1
    positions = [m.start() for m in _WORD.finditer(body)]
    low = body.lower()
    if len(low) != len(body) or "\u03a3" in body:
        # Lower-casing changed lengths (İ) or depends on context (Σ at a word's end): then a slice
        # of the lower-cased body is not the lower-cased slice; lower each window as before.
        low = ""
    starts = positions[:: max(1, len(positions) // 200)]
    if low and starts:
        best_start = _best_window_start(low, starts, terms, width)
    for start in starts if not low else ():
        window = body[start : start + width].lower()
        hits = sum(1 for t in terms if t in window)
        if hits > best_hits:
            best_start, best_hits = start, hits
    # Up to 40 characters before the window for context, never pushing a word it holds past its end
    window = (low or body.lower())[best_start : best_start + width]
    last = max((best_start + window.rfind(t) + len(t) for t in terms if t in window), default=best_start)
    start = max(0, best_start - 40, last - width)
    if start:
        start = body.find(" ", start) + 1 or start
    piece = body[start : start + width]
    if start + width < len(body):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + piece


#: Words that name a person by their relation to the vault's owner ("my sister", "the user's dad"),
#: each to the one relation it names: "grandma" is "grandmother", "wife" is "partner".
RELATIONS: dict[str, str] = {
    word: kin
    for kin, words in {
        "mother": "mother mom mum",
        "father": "father dad",
        "parent": "parent",
        "sister": "sister",
        "brother": "brother",
        "sibling": "sibling",
        "partner": "partner wife husband spouse girlfriend boyfriend fiance fiancee",
        "son": "son",
        "daughter": "daughter",
        "child": "child children kid",
        "cousin": "cousin",
        "aunt": "aunt",
        "uncle": "uncle",
        "niece": "niece",
        "nephew": "nephew",
        "grandmother": "grandmother grandma",
        "grandfather": "grandfather grandpa",
        "grandparent": "grandparent",
        "friend": "friend",
        "colleague": "colleague coworker",
        "boss": "boss",
        "neighbour": "neighbour neighbor",
        "roommate": "roommate flatmate housemate",
    }.items()
    for word in words.split()
}
#: ... said of someone: "my sister", "the user's dad", "Maya's partner", not "Bad Neighbors" (a
#: title) or "the most amazing mom"; "Mom called" names her as a name does.
_WHOSE = frozenset({"my", "our", "your", "his", "her", "their"})
_CALLED = frozenset({"Mom", "Mum", "Dad"})
_NAMED = re.compile(r"([^\W\d_][\w-]*)(['\u2019]s)?")  # a word, and its "'s"
#: Any word of a relation, in one pass: most texts hold none.
_KIN = re.compile(r"(?<!\w)(?:" + "|".join(sorted(RELATIONS, key=len, reverse=True)) + r")s?(?!\w)", re.I)


#: The owner, as a text speaks of them: in the first person, or as an agent's memory does ("the user").
_OWNER = re.compile(
    r"(?<![\w'\u2019])(?:I|I['\u2019](?:m|ve|d|ll)|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Tt]he user(?:['\u2019]s)?)"
    r"(?![\w'\u2019])"
)


#: A text that opens with what someone said: "Tim said: …", "Maya Chen wrote: …" (after a heading line).
_SAID = re.compile(
    r"(?:[^\n]*\n)?[\W_]*((?:[Tt]he user)|[A-Z][\w'\u2019-]*(?: [A-Z][\w'\u2019-]*)?) "
    r"(?:said|says|wrote|writes|asked|asks|replied|replies|added):"
)


@functools.lru_cache(maxsize=4096)
def _people(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The relations a text names ("sister", "father") and the names it gives them ("sister Nora", "partner Alex's")."""
    if not _KIN.search(text):
        return frozenset(), frozenset()
    tokens = _NAMED.findall(text)  # (word, "'s" or "")
    rels: set[str] = set()
    names: set[str] = set()
    for i, (bare, _) in enumerate(tokens):
        word = bare.lower()
        word = word if word in RELATIONS or not word.endswith("s") else word[:-1]  # "parents", "kids"
        before, owner = tokens[i - 1] if i else ("", "")
        if word in RELATIONS and (before.lower() in _WHOSE or owner or bare in _CALLED):
            rels.add(RELATIONS[word])
            after = tokens[i + 1][0] if i + 1 < len(tokens) else ""
            if after[:1].isupper():
                names.add(after.lower())
    return frozenset(rels), frozenset(names)


def other_people(a: str, b: str) -> bool:
    """Whether two texts are known to be about different people: each names a relation of the
    owner's ("the user's dad", "my partner Alex") and they share neither a relation nor a name, or
    one names a relation and the name it goes by ("the user's sister Nora") and the other names
    neither, or one names a relation only as the owner's ("the user's dad upgraded the phone") and
    the other names none and speaks of the owner ("which phone do I carry", "The user retired a
    Galaxy S23"). "The car in the user's partner Alex's driveway is a Ford Focus now" is not about
    "the user's dad", nor "The user's sister Nora dropped the Korean classes" about what the owner
    learns; "Maya's sister Ines works as an architect" is about "Ines Okafor: Architect at a small
    studio", and "my sister", named by no name, may be the "Ines" of any other text. Read coarsely: "what
    did my dad give me" is not about "I got a watch for my birthday" (a question that speaks of the
    owner beside a relation was read as about both: "Remind me, what phone does my dad have" then
    was, and the owner's phones came back into its blocks, bench lifetime)."""
    if _said_by_another(a, b) or _said_by_another(b, a):
        return True
    (rel_a, names_a), (rel_b, names_b) = _people(a), _people(b)
    if rel_a == rel_b or rel_a & rel_b or names_a & names_b:
        return False
    if rel_a and rel_b:
        return True
    # one side names no relation: it is about someone else if the other gives a name it does not say,
    # or, naming the relation alone, if it speaks of the owner ("I", "my", "the user")
    named, plain = (names_a, b) if rel_a else (names_b, a)
    if named:
        return not named & _words(plain)
    return _OWNER.search(plain) is not None


@functools.lru_cache(maxsize=4096)
def said_by(text: str) -> str:
    """Who speaks in `text`, when it opens with what someone said ("Tim said: I'm learning German
    now"), lower case; "" when it does not, or when the owner does ("The user said: …")."""
    m = _SAID.match(text)
    return "" if m is None or _OWNER.fullmatch(m.group(1)) else m.group(1).lower()


def _said_by_another(speech: str, plain: str) -> bool:
    """`speech` is what someone else said ("Tim said: I'm learning German now": its "I" is Tim), and
    `plain` speaks of the owner (`_OWNER`) and does not name the speaker."""
    who = said_by(speech)
    return (
        bool(who)
        and not said_by(plain)
        and _OWNER.search(plain) is not None
        and not set(who.split()) & _words(plain)  # "Maya Chen said:" is named by "Maya"
    )


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """The words a text says, lower case (a query is asked of every candidate: remembered)."""
    return frozenset(w.lower() for w in _WORD.findall(text))


__all__ = [
    "said_by",
    "split_sentences",
    "without_links",
    "clean_input",
    "clean_tags",
    "default_title",
    "folder_setting",
    "ignore_pattern",
    "in_folder",
    "join",
    "memory_body",
    "norm",
    "other_people",
    "note_name",
    "review_path",
    "snippet",
    "split_title",
    "unique_name",
    "unlink",
]
