"""Relations between notes (`supersedes`, `superseded_by`, `conflicts_with`): written as links, read as either.

New relations are written as Obsidian list properties of wikilinks,

    supersedes: ['[[Team chat]]']

so the graph, the backlinks pane and Bases see them and a person can click them. Values
written before (hex node_ids: `supersedes: [3e9a0b7c1d2f4a55]`), paths and `[[links]]`
typed by hand are all read, through resolve.py, so an existing vault keeps working.

Ranking compares identities (a note's node_id, or `path:<rel>` for a note without one):
`with_identities` translates link values into those identities on the catalog rows recall
ranks, so ranking.py never sees a link.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from .catalog import NoteRow
from .errors import VaultMemoryError
from .resolve import resolve_target
from .workspace import Workspace

log = logging.getLogger(__name__)

RELATION_KEYS = ("supersedes", "superseded_by", "conflicts_with")
_LINK = re.compile(r"^!?\[\[([^\[\]]+)\]\]$")


def relation_values(value: Any) -> list[str]:
    """The entries of a relation property, whatever YAML made of them.

    `['[[A]]', b]` (quoted links, ids), `[[A]]` unquoted (YAML reads a list holding a list),
    a block list of such items, or one scalar. An unquoted `[[A]]` item comes back as the
    link `[[A]]`, so it reads the way Obsidian shows it.
    """
    if value is None:
        return []
    items = value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    for item in items:
        if isinstance(item, (list, tuple)):
            while isinstance(item, (list, tuple)) and len(item) == 1:
                item = item[0]  # `[[A]]` unquoted is a list in a list (one more level in a block list)
            if isinstance(item, str) and item.strip():
                out.append(f"[[{item.strip()}]]")
            continue
        if item is None or isinstance(item, (dict, bool)):
            continue
        text = str(item).strip()
        if text:
            out.append(text)
    return out


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


class Identities:
    """Which note each relation value names, as an index identity (node_id or `path:<rel>`).

    Plain values (node_ids written before links) are identities already and are kept as
    they are; `[[links]]` and paths are resolved through resolve.py, once per value.
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._memo: dict[str, str | None] = {}

    def path_of(self, value: str) -> str | None:
        """The vault path of the note `value` names, or None (a dangling link, an unknown id)."""
        try:
            return resolve_target(self.ws, value).path
        except (VaultMemoryError, ValueError, OSError):
            return None

    def of(self, value: str) -> str | None:
        if value in self._memo:
            return self._memo[value]
        out: str | None = value
        if is_link(value) or "/" in value or value.lower().endswith(".md"):
            rel = self.path_of(value)
            row = None
            if rel is not None:
                try:
                    row = self.ws.catalog.note_by_path(rel)
                except VaultMemoryError:
                    row = None
            out = row.node_id if row is not None else None
        self._memo[value] = out
        return out

    def row(self, value: str) -> NoteRow | None:
        """The catalog row of the note `value` names, or None."""
        ident = self.of(value)
        if ident is None:
            return None
        try:
            return self.ws.catalog.note_by_id(ident)
        except VaultMemoryError:
            return None

    def all(self, values: Iterable[str]) -> list[str]:
        """Identities of the values that name a note, in order, once each (dangling links left out)."""
        out: list[str] = []
        for v in values:
            ident = self.of(v)
            if ident is not None and ident not in out:
                out.append(ident)
        return out


def _needs_translation(meta: Mapping[str, Any]) -> bool:
    return any(is_link(v) or "/" in v for key in RELATION_KEYS for v in relation_values(meta.get(key)))


def with_identities(ws: Workspace, rows: Mapping[str, NoteRow]) -> dict[str, NoteRow]:
    """The rows with `supersedes` / `superseded_by` / `conflicts_with` given as identities, for ranking.

    Only rows holding links (or paths) are copied and translated; rows with node_id
    relations, or none, are passed through untouched, so a vault without links pays nothing.
    """
    ids: Identities | None = None
    out = dict(rows)
    for key, row in rows.items():
        if not _needs_translation(row.meta):
            continue
        ids = ids or Identities(ws)
        meta = dict(row.meta)
        for rel_key in RELATION_KEYS:
            if rel_key in meta:
                meta[rel_key] = ids.all(relation_values(meta[rel_key]))
        out[key] = replace(row, meta=meta)
    return out


__all__ = [
    "RELATION_KEYS",
    "Identities",
    "is_link",
    "link_names",
    "link_text",
    "note_stems",
    "relation_values",
    "stems",
    "with_identities",
]
