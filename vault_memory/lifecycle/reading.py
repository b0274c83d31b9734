"""Reading a note: the whole of it, one heading's section, or a range of its lines.

    note = read(ws, "[[Danube Bike Trip#Gear]]")          # the Gear section
    note = read(ws, "Ines", lines="1:20")                   # an alias, its first 20 lines

The note is found by the one resolver (resolve.py: node_id, path, title, alias, file name,
`[[link#heading|text]]`). Line numbers are the body's (line 1 is the first line after the
frontmatter), whether the whole note or a section is read, so a range can be asked for again.
A section runs from its heading to the next heading of the same or a higher level. A long
read stops at `max_chars` on a line boundary and says where to go on (`next_line`).

Reading writes nothing: it is not a rehearsal (recall, which found the note, already was one),
and a read-only tool can be called freely by a client. Private notes (`private: true`) and
files that are not notes (ignored folders, `.obsidian/`, `.trash/`, non-Markdown) are never
returned.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..errors import ConfigError, NoteError, NoteNotFoundError, VaultMemoryError
from ..search.workspace import Workspace
from ..vault.fields import parse_bool, parse_list, parse_time
from ..vault.markdown import Heading, extract_info, headings, strip_comments
from ..vault.notefile import ParsedNote, file_node_id, read_note
from .resolve import resolve_target

OUTLINE_MAX = 100  # headings listed in `outline`
_LINES = re.compile(r"^\s*(\d*)\s*(?:[:\-]\s*(\d*))?\s*$")
_NON_WORD = re.compile(r"[^\w]+")


@dataclass
class NoteText:
    """What `read` returns: the note's identity and dates, and the text read."""

    path: str
    node_id: str
    title: str
    heading: str  # the section read ("" for the whole note)
    text: str
    start_line: int  # first body line returned (1-based; 0 when the note is empty)
    end_line: int  # last body line returned
    line_count: int  # lines in the whole body
    truncated: bool = False  # stopped at max_chars: continue with lines="<next_line>:"
    next_line: int | None = None
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # wikilink targets the note (or section) contains
    outline: list[dict[str, Any]] = field(default_factory=list)  # [{heading, level, line}] of the whole note
    created: str | None = None  # frontmatter `created`
    stated: str | None = None  # when it was stated (fields.stated_time): date, or time when the note gives one
    last_accessed: str | None = None  # last rehearsal (recall, commit, a recorded edit)
    modified: str | None = None  # the file's modification time
    pinned: bool = False
    superseded_by: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_lines(value: str | tuple[int | None, int | None] | None) -> tuple[int, int | None] | None:
    """`"40:80"`, `"40:"` (to the end), `":20"` (the first 20), `"40"` (from 40 on), or a tuple; 1-based, inclusive."""
    if value is None:
        return None
    if isinstance(value, tuple):
        start, end = value
    else:
        m = _LINES.match(str(value))
        if not m or not (m.group(1) or m.group(2)):
            raise ConfigError(f"lines {value!r} is not a line range; give e.g. 40:80, 40: (to the end) or :20")
        start = int(m.group(1)) if m.group(1) else None
        end = int(m.group(2)) if m.group(2) else None
    first = 1 if start is None else int(start)
    if first < 1 or (end is not None and int(end) < first):
        raise ConfigError(f"lines {value!r}: line numbers start at 1 and the range must not run backwards")
    return first, None if end is None else int(end)


def _norm_heading(text: str) -> str:
    # Obsidian drops characters such as ':' '#' '|' from heading links; compare words only.
    return " ".join(_NON_WORD.sub(" ", text.casefold()).split())


def find_section(marks: list[Heading], heading: str, total: int) -> tuple[Heading, int, int]:
    """(heading, first line, end line exclusive) of the section `heading` names, 0-based.

    `Parent#Child` (a nested Obsidian link) picks the Child under Parent. Raises
    NoteNotFoundError listing the note's headings when none matches.
    """
    parts = [p for p in (_norm_heading(x) for x in heading.split("#")) if p]
    want = parts[-1] if parts else ""
    matches = [i for i, h in enumerate(marks) if _norm_heading(h.text) == want]
    if len(parts) > 1:  # prefer one whose ancestors match the earlier parts

        def ancestors(i: int) -> list[str]:
            out, level = [], marks[i].level
            for h in reversed(marks[:i]):
                if h.level < level:
                    out.append(_norm_heading(h.text))
                    level = h.level
            return out

        matches = [i for i in matches if set(parts[:-1]) <= set(ancestors(i))] or matches
    if not matches:
        listed = "; ".join(h.text for h in marks[:20]) or "it has none"
        raise NoteNotFoundError(heading, f"no such heading in this note (its headings: {listed})")
    i = matches[0]
    end = next((h.line for h in marks[i + 1 :] if h.level <= marks[i].level), total)
    return marks[i], marks[i].line, end


def _block(lines: list[str], block_id: str) -> tuple[int, int] | None:
    """The paragraph or item ending in ` ^block_id` (an Obsidian block reference), 0-based, end exclusive."""
    suffix = f"^{block_id}"
    for i, line in enumerate(lines):
        if line.rstrip().endswith(suffix) and (line.rstrip() == suffix or line.rstrip()[-len(suffix) - 1].isspace()):
            start = i
            while start > 0 and lines[start - 1].strip() and not lines[start].lstrip().startswith(("-", "*", "+")):
                start -= 1
            return start, i + 1
    return None


def _iso(value: Any) -> str | None:
    when = parse_time(value)
    return when.isoformat() if when is not None else None


def check_readable(ws: Workspace, note: ParsedNote, *, everything: bool = False) -> None:
    """NoteNotFoundError for what vault-memory never reads out: private notes (unless the person asks
    for `everything`, from the CLI) and non-notes."""
    if not ws.rules.is_note(note.path):
        raise NoteError(
            note.path, "not a note vault-memory manages: " + (ws.rules.why_not_a_note(note.path) or "an ignored path")
        )
    if parse_bool(note.meta.get("private")) and not everything:
        raise NoteNotFoundError(
            note.path, "is private (`private: true`): vault-memory never reads it out (`vault-memory read --all` does)"
        )


def read(
    ws: Workspace,
    target: str,
    *,
    heading: str | None = None,
    lines: str | tuple[int | None, int | None] | None = None,
    max_chars: int | None = None,
    everything: bool = False,
) -> NoteText:
    """See the module docstring. `heading` overrides a `#heading` in the target. What recall never
    shows, read does not show either: `%%` and `<!-- -->` comments (blanked, so line numbers stay the note's)
    and private notes; `everything=True` (the CLI's `read --all`, for the person) shows both."""
    found = resolve_target(ws, target)
    section = (heading if heading is not None else found.heading).strip()
    span = parse_lines(lines)
    # read-only: a note whose YAML is broken is read as the index reads it (notefile.lenient_properties)
    note = read_note(ws.vault, found.path, max_bytes=ws.config.max_note_bytes, lenient=True)
    check_readable(ws, note, everything=everything)
    # Comments out of everything read shows, headings included: the section's name, the outline and
    # the "no such heading" message list them (issue 41: `## Grinder %%safe code 4711%%`).
    body = note.body if everything else strip_comments(note.body)
    body_lines = body.split("\n")
    if body_lines and body_lines[-1] == "":
        body_lines.pop()  # the newline that ends the last line is not a line of its own
    total = len(body_lines)
    marks = headings(body)
    lo, hi, shown = 0, total, ""
    if section:
        try:
            mark, lo, hi = find_section(marks, section, total)
            shown = mark.text
        except NoteNotFoundError:
            block = _block(body_lines, section.lstrip("^"))  # [[Note#^id]]: a block reference
            if block is None:
                raise
            (lo, hi), shown = block, "^" + section.lstrip("^")
    if span is not None:
        first, last = span[0] - 1, (span[1] if span[1] is not None else total)
        if first >= hi or last <= lo:
            where = f"section {shown!r} spans" if section else "the note has"
            raise ConfigError(
                f"lines {span[0]}:{span[1] or ''} are outside what can be read: {where} "
                f"lines {lo + 1 if hi else 0}-{hi}"
            )
        lo, hi = max(lo, first), min(hi, last)
    picked = body_lines[lo:hi]
    truncated, next_line = False, None
    if max_chars is not None:
        used, keep = 0, 0
        for line in picked:
            if used + len(line) + 1 > max_chars and keep:
                break
            used += len(line) + 1
            keep += 1
        if keep < len(picked):
            truncated, next_line = True, lo + keep + 1
            picked = picked[:keep]
            if len(picked) == 1 and len(picked[0]) > max_chars:  # one enormous line: cut it
                picked = [picked[0][:max_chars]]
    text = "\n".join(picked)
    whole = extract_info(note.meta, note.body, PurePosixPath(note.path).stem)
    links = whole.links if (lo, hi) == (0, total) else extract_info({}, text, "").links
    try:
        row = ws.catalog.note_by_path(note.path)
    except VaultMemoryError:
        row = None
    node_id = file_node_id(note) or (row.node_id if row is not None else f"path:{note.path}")
    state = ws.decay.state(note.meta, note.path)
    stated = state.stated.when
    return NoteText(
        path=note.path,
        node_id=node_id,
        title=whole.title,
        heading=shown,
        text=text,
        start_line=lo + 1 if picked else 0,
        end_line=lo + len(picked),
        line_count=total,
        truncated=truncated,
        next_line=next_line,
        tags=list(whole.tags),
        aliases=list(whole.aliases),
        links=list(links),
        outline=[{"heading": h.text, "level": h.level, "line": h.line + 1} for h in marks[:OUTLINE_MAX]],
        created=_iso(note.meta.get("created")),
        stated=(stated.isoformat() if state.stated.exact else stated.date().isoformat()) if stated else None,
        last_accessed=_iso(note.meta.get("last_accessed")),
        modified=dt.datetime.fromtimestamp(note.mtime, tz=dt.UTC).isoformat(timespec="seconds") if note.mtime else None,
        pinned=state.pinned,
        superseded_by=list(parse_list(note.meta.get("superseded_by"))),
    )


__all__ = ["NoteText", "check_readable", "find_section", "parse_lines", "read"]
