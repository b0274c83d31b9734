"""A vault's template scaffolding: the lines its templates put into every note made from them.

A person's daily note made from a template carries the template's headings, checklists, buttons
and navigation ("### [[Morning Routine]]", "- [ ] Review YNAB", "- [ ] Stretch", a time-tracking
button block), and only a paragraph of its own. Indexed, that scaffolding made every daily note a
match for "morning", "review", "journal" or "checklist" (a person's vault: 234 of 240 daily notes
from one template), and its words diluted the note's own in every vector. So the index reads a
note without the lines its vault's templates give it: the chunker blanks them (`Scaffolding.strip`)
as it blanks `%% comments %%` and query blocks, lines kept as empty lines.

Which lines: every line of a template file (Obsidian's template folders and the daily-notes
template: obsidian.py), read as a whole-line pattern in which a template expression (Templater's
`<% ... %>`, core Templates' `{{date}}`) matches anything, a checkbox matches either state, and
surrounding spaces are ignored. A template's headings stay: they cut a note into its sections, and
blanked they joined a daily note's task list to its log ("when is Maya's birthday" met "Reply to
[[Maya Chen]]" and "Mum's birthday gift idea" in one chunk; bench real_vault). A template line
that says no word of its own (`# {{date}}`, `- [ ]`,
a lone expression) is no pattern: it would match a person's own lines. A fenced block (a Buttons
or Dataview block) goes only as a whole, when its opening line and every line in it are the
template's: blanking part of it would leave a fence open and turn the rest of the note into code.
Pure apart from `read_scaffolding`, which reads the template files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..hashing import sha256_hex
from .obsidian import MAX_TEMPLATE_BYTES, ObsidianSettings

_EXPRESSION = re.compile(r"<%.*?%>|\{\{.*?\}\}")
_CHECKBOX = re.compile(r"^((?:[-*+]|\d+[.)])\s+)\[[ xX]\]")  # a task, bulleted or numbered
_WORD = re.compile(r"[^\W\d_]{2,}")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s|$)")


def _normal(line: str) -> str:
    return _CHECKBOX.sub(r"\1[ ]", line.strip())


@dataclass(frozen=True)
class Scaffolding:
    """The whole-line patterns of a vault's templates (module docstring); empty: no templates."""

    exact: frozenset[str] = frozenset()  # template lines without expressions, normalised
    patterns: tuple[str, ...] = ()  # regex sources of the lines with expressions
    _rx: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> Scaffolding:
        exact: set[str] = set()
        patterns: set[str] = set()
        for raw in lines:
            line = _normal(raw)
            literal = _EXPRESSION.sub(" ", line)
            if not _WORD.search(literal):
                continue
            if literal == line:
                exact.add(line)
            else:
                parts = _EXPRESSION.split(line)
                patterns.add(".*?".join(re.escape(p) for p in parts))
        ordered = tuple(sorted(patterns))
        rx = re.compile("|".join(f"(?:{p})" for p in ordered)) if ordered else None
        return cls(frozenset(exact), ordered, rx)

    @property
    def identity(self) -> str:
        """Changes when the templates' lines do (the chunker's identity includes it)."""
        return sha256_hex(repr((sorted(self.exact), self.patterns)))[:16] if self else ""

    def __bool__(self) -> bool:
        return bool(self.exact or self.patterns)

    def matches(self, line: str) -> bool:
        """Whether a note's line is one of the templates' (module docstring)."""
        normal = _normal(line)
        if not normal:
            return False
        return normal in self.exact or (self._rx is not None and self._rx.fullmatch(normal) is not None)

    def strip(self, body: str) -> str:
        """`body` with the templates' lines blanked (kept as empty lines); fenced blocks only whole.
        A template's heading is kept (it cuts the note into sections) unless nothing is under it:
        the next line left with text is a heading of its level or above, or there is none (a weekly
        note's "## What Should I Change?" left unanswered). A heading with nothing under it is its
        section's text (markdown.chunk_body); a template's says nothing of this note."""
        if not self:
            return body
        lines = body.split("\n")
        out = list(lines)
        texts: list[tuple[int, int]] = []  # each line left with text: its index, its heading level (0: not one)
        i = 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if m is None:
                heading = _HEADING.match(lines[i])
                if self.matches(lines[i]) and not heading:
                    out[i] = ""
                elif lines[i].strip():
                    texts.append((i, len(heading.group(1)) if heading else 0))
                i += 1
                continue
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(m.group(1))), None)
            if end is None:  # an unclosed fence: code to the end, as CommonMark reads it
                texts += [(j, 0) for j in range(i, len(lines)) if lines[j].strip()]
                break
            inner = [ln for ln in lines[i + 1 : end] if ln.strip()]
            if self.matches(lines[i]) and all(self.matches(ln) for ln in inner):
                out[i : end + 1] = [""] * (end + 1 - i)
            else:
                texts += [(j, 0) for j in range(i, end + 1) if lines[j].strip()]
            i = end + 1
        after: int | None = None  # the heading level of the next line left with text (0: not one; None: none)
        for i, level in reversed(texts):  # from the end: a heading whose subheadings all went has nothing under it
            if level and self.matches(lines[i]) and (after is None or 0 < after <= level):
                out[i] = ""
                continue
            after = level
        return "\n".join(out)


NONE = Scaffolding()


def read_scaffolding(vault: Path, settings: ObsidianSettings) -> Scaffolding:
    """The scaffolding of the vault's templates (obsidian.py's template folders and files); NONE when
    it has none. Unreadable or oversized template files are passed over."""
    files: set[Path] = {vault / f for f in settings.template_files}
    for folder in settings.template_folders:
        root = vault / folder
        if root.is_dir():
            files.update(p for p in root.rglob("*.md") if p.is_file())
    lines: list[str] = []
    for path in sorted(files):
        try:
            if path.stat().st_size > MAX_TEMPLATE_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines += _body(text).split("\n")
    return Scaffolding.from_lines(lines) if lines else NONE


def _body(text: str) -> str:
    """A template's text without its frontmatter (its properties are the note's, not scaffolding)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end >= 0:
            return text[text.find("\n", end + 1) + 1 :] if text.find("\n", end + 1) >= 0 else ""
    return text


__all__ = ["MAX_TEMPLATE_BYTES", "NONE", "Scaffolding", "read_scaffolding"]
