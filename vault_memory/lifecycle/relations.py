"""Relations between notes (`supersedes`, `superseded_by`, `conflicts_with`): written as links, read as either.

New relations are written as Obsidian list properties of wikilinks,

    supersedes: ['[[Team chat]]']

so the graph, the backlinks pane and Bases see them and a person can click them. Values
written before (hex node_ids: `supersedes: [3e9a0b7c1d2f4a55]`), paths and `[[links]]`
typed by hand are all read, through resolve.py, so an existing vault keeps working.

Ranking compares identities (a note's node_id, or `path:<rel>` for a note without one):
`with_identities` translates link values into those identities on the catalog rows recall
ranks, so ranking.py never sees a link.

One module per concern for names and links (issue 25): this one holds the supersession
relations only; the link syntax they are written in is linking.py's, which note a name means
resolve.py's, the related-notes query related.py's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..errors import VaultMemoryError
from ..index.catalog import NoteRow
from ..search.workspace import Workspace
from .linking import is_link
from .resolve import resolve_target

log = logging.getLogger(__name__)

RELATION_KEYS = ("supersedes", "superseded_by", "conflicts_with")


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
    "relation_values",
    "with_identities",
]
