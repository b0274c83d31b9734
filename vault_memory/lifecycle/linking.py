"""Links: the one module for `[[wikilink]]` syntax, read and written, and for linking mentions.

Reading and writing a link (`is_link`, `link_names`, `stems`, `link_text`: `[[Name]]` as
Obsidian writes it, the shortest path when possible) lives here, used by relations.py (the
supersession relations, stored as links), staging, review and the mentions below. Which note a
name means is resolve.py's (over names.py's table); the related-notes query is related.py's.

Links from what an agent writes to the notes it names: "Maya prefers written updates" ->
"[[Maya Chen|Maya]] prefers written updates", because Maya Chen's note has the alias Maya.

Conservative on purpose: a wrong link is worse than a missing one, since it puts a memory on
a person's graph and backlinks under the wrong note.

- **Which names.** A note's file name and title when they start with a capital letter (a
  proper name: "Maya Chen", "Project Atlas"; a file called "quick idea" is a scratch note,
  not a name), and every alias (a person chose it). A capitalised name matches with that
  capitalisation only ("Maya", never "maya"); a lower-case alias ("espresso") in any case.
- **Whole words**, the longest name first ("Atlas Runbook" before "Atlas"), each note once
  (its first mention).
- **Never** inside code, an existing link or a URL, a `#tag`; never to a note that only the
  name of a place in the vault ("Home", "Inbox", "Daily", "Templates", "Untitled"..., see
  GENERIC, and notes tagged `moc`/`index`/`dashboard`/`hub`), to a name shorter than 3
  characters, a name made of digits and punctuation (a daily note), or a name that two
  notes share (the link would guess).

`link_mentions` is pure; `mention_targets` builds its table from the index: the names only
(`Catalog.note_names`), kept only when they occur in the text. Measured on a synthetic 10k-note
catalog (2 busy cores): 0.15 s a memory, against 2 s when every row and every name was decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..errors import VaultMemoryError
from ..search.workspace import Workspace

MIN_CHARS = 3
# Names of places and scaffolding in a vault, not of things a memory talks about.
GENERIC = frozenset(
    """
home inbox index readme todo todos tasks task notes note untitled journal daily dashboard archive archives
templates template welcome start scratch scratchpad ideas idea misc log logs memory memories review projects
project people areas area resources reading meetings meeting work personal later someday draft drafts
attachments canvas map moc hub overview summary today yesterday tomorrow week month year staged episodes
""".split()
) | frozenset({"daily notes", "start here", "to do", "read later", "weekly review"})
STRUCTURAL_TAGS = frozenset({"moc", "index", "dashboard", "hub", "map-of-content"})

# Regions a link must never be put in: fenced code, code spans, links, URLs, tags, HTML.
_PROTECTED = re.compile(
    r"(?ms)^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$"  # fenced code block
    r"|(`+)(?:(?!\2).)+?\2"  # code span
    r"|!?\[\[[^\]\n]*\]\]"  # [[wikilink]] or ![[embed]]
    r"|!?\[[^\]\n]*\]\([^)\n]*\)"  # [markdown](link)
    r"|<[^>\n]+>"  # <https://autolink> or <html>
    r"|\b(?:https?|ftp|file|obsidian)://\S+"  # bare URL
    r"|(?<!\S)#[\w/-]+"  # #tag
)


_LINK = re.compile(r"^!?\[\[([^\[\]]+)\]\]$")


def is_link(value: str) -> bool:
    return _LINK.match(value.strip()) is not None


def link_names(value: str, stem: str) -> bool:
    """Whether the link `value` names a note by this file name (ignoring case, heading and shown text)."""
    m = _LINK.match(value.strip())
    if m is None:
        return False
    target = m.group(1).split("|", 1)[0].split("#", 1)[0].strip().removesuffix(".md")
    return target.casefold() == stem.casefold() or target.casefold().endswith("/" + stem.casefold())


def stems(paths: Iterable[str]) -> dict[str, list[str]]:
    """casefolded file name -> the paths with that name."""
    out: dict[str, list[str]] = {}
    for p in paths:
        name = p.rsplit("/", 1)[-1]
        out.setdefault((name[:-3] if name.lower().endswith(".md") else name).casefold(), []).append(p)
    return out


def link_text(rel: str, taken: Mapping[str, Sequence[str]], title: str = "", *, table: bool = False) -> str:
    """`[[Name]]` for the note at `rel`, as Obsidian writes it ("shortest path when possible").

    The file name alone when no other note has it (`taken`: `stems` of the vault's notes),
    else the path without `.md`; `|title` when the title reads differently from the file name.
    `table=True` escapes the `|` for a Markdown table cell.
    """
    pure = PurePosixPath(rel)
    others = [p for p in taken.get(pure.stem.casefold(), []) if p != rel]
    target = pure.stem if not others else rel.removesuffix(".md")
    shown = title.strip()
    bar = "\\|" if table else "|"
    if shown and shown != pure.stem and "]]" not in shown and "[[" not in shown:
        return f"[[{target}{bar}{shown.replace('|', '-')}]]"
    return f"[[{target}]]"


def note_stems(ws: Workspace, *, extra: Iterable[str] = ()) -> dict[str, list[str]]:
    """`stems` of every indexed note, plus `extra` paths (files on disk the index may not have yet)."""
    try:
        paths = list(ws.catalog.path_hashes())
    except VaultMemoryError:
        paths = []
    return stems(dict.fromkeys([*paths, *extra]))


@dataclass(frozen=True)
class Mention:
    """A name a memory may mention, and the note it means."""

    name: str  # as written in the note (file name, title or alias)
    path: str  # the note's vault path
    link: str  # the link target: file name, or path when another note has the same file name
    any_case: bool  # a lower-case alias: matches in any case


def _usable(name: str) -> bool:
    text = name.strip()
    if len(text) < MIN_CHARS or text.casefold() in GENERIC:
        return False
    if not re.search(r"[^\W\d_]", text):  # digits and punctuation only: a date, a number
        return False
    return "[" not in text and "]" not in text and "|" not in text and "\n" not in text


NameRow = tuple[str, str, tuple[str, ...], tuple[str, ...]]  # (path, title, aliases, tags): Catalog.note_names


def mentions_from_rows(
    rows: Iterable[NameRow], *, exclude_folders: Iterable[str] = (), text: str | None = None
) -> list[Mention]:
    """The names of these notes that a memory may link (module docstring), ambiguous ones left out.

    With `text`, only names that occur in it (ignoring case) are kept: at 10k notes building
    every Mention costs far more than the one memory needs.
    """
    folders = tuple(f.strip("/") + "/" for f in exclude_folders if f.strip("/"))
    rows = [r for r in rows if not r[0].startswith(folders)]
    taken = stems(r[0] for r in rows)
    folded = text.casefold() if text is not None else None
    by_name: dict[str, set[str]] = {}
    found: list[Mention] = []
    for path, title, aliases, tags in rows:
        stem = _stem(path)
        if folded is not None and not any(n.casefold() in folded for n in (stem, title, *aliases) if n):
            continue  # cheap first: at 10k notes almost every note is out here
        candidates = [(n, False) for n in (stem, title) if n and n[:1].isupper()]
        candidates += [(a, not any(c.isupper() for c in a)) for a in aliases]
        if {t.casefold() for t in tags} & STRUCTURAL_TAGS:
            continue
        target = link_text(path, taken)[2:-2]
        for name, any_case in candidates:
            name = re.sub(r"\s+", " ", name).strip()
            if not _usable(name):
                continue
            by_name.setdefault(name.casefold(), set()).add(path)
            found.append(Mention(name, path, target, any_case))
    out: dict[tuple[str, str], Mention] = {}
    for m in found:
        if len(by_name[m.name.casefold()]) == 1:  # a name two notes share would make the link a guess
            out.setdefault((m.name, m.path), m)
    return list(out.values())


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def _pattern(names: list[Mention]) -> re.Pattern[str]:
    parts = []
    for m in sorted(names, key=lambda m: (-len(m.name), m.name)):
        body = r"\s+".join(re.escape(w) for w in m.name.split(" "))
        parts.append(f"(?i:{body})" if m.any_case else body)
    return re.compile(r"(?<![\w\[|#])(?:" + "|".join(parts) + r")(?![\w\]])")


def link_mentions(text: str, mentions: Iterable[Mention]) -> str:
    """`text` with the first mention of each note turned into a link (rules: module docstring)."""
    folded = text.casefold()
    cands = [m for m in mentions if m.name.casefold() in folded]
    if not cands:
        return text
    rx = _pattern(cands)
    by_exact = {m.name: m for m in cands}
    by_fold = {m.name.casefold(): m for m in cands if m.any_case}
    # a note the text links already is not linked again
    present = {t.split("|", 1)[0].split("#", 1)[0].strip().casefold() for t in re.findall(r"\[\[([^\]\n]*)\]\]", text)}
    linked = {m.path for m in cands if m.link.casefold() in present or _stem(m.path).casefold() in present}

    def replace(seg: str) -> str:
        def one(match: re.Match[str]) -> str:
            said = match.group(0)
            flat = re.sub(r"\s+", " ", said)
            m = by_exact.get(flat) or by_fold.get(flat.casefold())
            if m is None or m.path in linked:
                return said
            linked.add(m.path)
            shown = "" if said == m.link else f"|{said}"  # `[[People/Maya Chen]]` would show the path
            return f"[[{m.link}{shown}]]"

        return rx.sub(one, seg)

    out: list[str] = []
    pos = 0
    for prot in _PROTECTED.finditer(text):
        out.append(replace(text[pos : prot.start()]))
        out.append(prot.group(0))
        pos = prot.end()
    out.append(replace(text[pos:]))
    return "".join(out)


def mention_targets(ws: Workspace, text: str | None = None, *, exclude_folders: Iterable[str] = ()) -> list[Mention]:
    """The linkable names of the indexed notes (those in `text`, if given; staging folder left out)."""
    try:
        rows = ws.catalog.note_names()
    except VaultMemoryError:
        return []
    return mentions_from_rows(rows, exclude_folders=[ws.config.staging_folder, *exclude_folders], text=text)


def link_for(ws: Workspace, text: str) -> str:
    """`text` with links to the notes it names, if the `autolink` setting is on."""
    if not ws.config.autolink:
        return text
    return link_mentions(text, mention_targets(ws, text))


__all__ = [
    "GENERIC",
    "Mention",
    "NameRow",
    "is_link",
    "link_for",
    "link_mentions",
    "link_names",
    "link_text",
    "mention_targets",
    "mentions_from_rows",
    "note_stems",
    "stems",
]
