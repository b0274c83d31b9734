"""Which note a person or a model means: the one resolver every command that takes a note uses.

A target may be:
- a node_id (`3f2a9c1b7d4e5f60`), or `path:<vault path>`, the index's identity of a note
  that has no node_id of its own;
- a vault path, with or without `.md` (`People/Maya Chen`, `People/Maya Chen.md`);
- a note's name as Obsidian's quick switcher matches it: its file name, its `title`, or one
  of its `aliases`, ignoring case (`maya chen`, `Maya`);
- a `[[wikilink]]`, with `#Heading` and `|shown text` parts (`[[Maya Chen#Projects|Maya]]`);
  the heading is returned with the note.

Paths are untrusted: `..`, absolute paths and symlinks out of the vault are refused
(notefile.safe_path). A name that fits several notes equally well is an error that lists
them (a write must not guess); one that fits none lists the nearest names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from .errors import ConfigError, NoteError, NoteNotFoundError, VaultMemoryError
from .notefile import file_node_id, read_note, safe_path
from .text import folder_setting
from .vault import walk_notes
from .workspace import Workspace

_LINK = re.compile(r"^!?\[\[(.+?)\]\]$")
MAX_SUGGESTIONS = 5


@dataclass(frozen=True)
class Target:
    """A resolved note: its vault path, the heading a link pointed into, and how it was found."""

    path: str
    heading: str = ""
    how: str = "path"  # node_id | path | file name | title | alias


class AmbiguousTargetError(ConfigError):
    """A name fits several notes equally well."""


def split_link(target: str) -> tuple[str, str]:
    """(note part, heading) of a target, unwrapping `[[...]]` and dropping a `|shown text` part."""
    text = target.strip()
    m = _LINK.match(text)
    if m:
        text = m.group(1)
        text = text.split("|", 1)[0]
        if "#" in text:
            text, heading = text.split("#", 1)
            return text.strip(), heading.strip().lstrip("^")
    return text.strip(), ""


def _looks_like_path(target: str) -> bool:
    return "/" in target or "\\" in target or target.lower().endswith(".md") or target.startswith(".")


def _has_id(ws: Workspace, rel: str, node_id: str) -> bool:
    try:
        return file_node_id(read_note(ws.vault, rel)) == node_id
    except (NoteError, OSError):
        return False


def _by_id(ws: Workspace, target: str) -> str | None:
    row = None
    try:
        row = ws.catalog.note_by_id(target)
    except VaultMemoryError:
        pass
    if row is not None and (not row.id_in_file or _has_id(ws, row.path, target)):
        return row.path
    # Not indexed yet (the index is written by another process, or stale): look where the
    # agent's memories live before giving up.
    places = walk_notes(ws.vault, ws.rules, folder_setting(ws.config.staging_folder, "staging_folder")).notes
    places += walk_notes(ws.vault, ws.rules, folder_setting(ws.config.memory_folder, "memory_folder",
                                                             allow_root=True), recursive=False).notes
    return next((rel for rel in places if _has_id(ws, rel, target)), None)


def _by_path(ws: Workspace, target: str) -> str | None:
    for cand in [target] if target.lower().endswith(".md") else [target, target + ".md"]:
        full = safe_path(ws.vault, cand)  # raises UnsafePathError for '..', absolute, symlink out
        if full.is_file():
            clean = full.relative_to(ws.vault).as_posix()
            if not ws.rules.is_note(clean):
                raise NoteError(clean, "not a note vault-memory manages (not .md, or in an ignored/dot folder)")
            return clean
    return None


class Names:
    """Every note's names as Obsidian's quick switcher and its links see them.

    casefolded name -> [(rank, path, how)]: file names and vault paths (without `.md`) rank
    0, titles 1, aliases 2. A link may also name a note by the end of its path
    (`[[deep/Note]]`).
    """

    def __init__(self, rows: Iterable[tuple[str, str, str, Sequence[str]]], extra_paths: Iterable[str] = ()) -> None:
        self.table: dict[str, list[tuple[int, str, str]]] = {}
        self.notes: dict[str, tuple[str, str]] = {}  # path -> (node_id, title) of the indexed notes
        out = self.table
        for node_id, path, title, aliases in rows:
            self.notes[path] = (node_id, title)
            stem = PurePosixPath(path).stem
            out.setdefault(stem.casefold(), []).append((0, path, "file name"))
            out.setdefault(path[:-3].casefold() if path.lower().endswith(".md") else path.casefold(),
                           []).append((0, path, "path"))
            if title and title.casefold() != stem.casefold():
                out.setdefault(title.casefold(), []).append((1, path, "title"))
            for alias in aliases:
                out.setdefault(alias.casefold(), []).append((2, path, "alias"))
        for rel in extra_paths:
            out.setdefault(PurePosixPath(rel).stem.casefold(), []).append((0, rel, "file name"))

    def lookup(self, name: str) -> list[tuple[int, str, str]]:
        """(rank, path, how) of every note this name fits, the best rank only."""
        key = name.strip().casefold().removesuffix(".md")
        hits = self.table.get(key, [])
        if not hits and "/" in key:
            hits = [(r, p, h) for k, v in self.table.items() if k.endswith("/" + key) for r, p, h in v if h == "path"]
        if not hits:
            return []
        best = min(r for r, _, _ in hits)
        return [(r, p, h) for r, p, h in hits if r == best]

    def paths(self, name: str) -> list[str]:
        """The notes a link text names, nearest the vault root first (more than one: ambiguous)."""
        return sorted({p for _, p, _ in self.lookup(name)}, key=lambda p: (p.count("/"), p))

    def near(self, name: str) -> list[str]:
        """Paths of the notes whose names are closest to `name` (for "did you mean")."""
        key = name.strip().casefold().removesuffix(".md")
        close = difflib.get_close_matches(key, list(self.table), n=MAX_SUGGESTIONS, cutoff=0.6)
        return list(dict.fromkeys(sorted({p for _, p, _ in self.table[k]})[0] for k in close))


def names(ws: Workspace) -> Names:
    """The Names of the indexed notes (or, before anything is indexed, the vault's file names)."""
    try:
        rows = ws.catalog.name_rows()
    except VaultMemoryError:
        rows = []
    return Names(rows, () if rows else walk_notes(ws.vault, ws.rules).notes)


def resolve_target(ws: Workspace, target: str) -> Target:
    """The note `target` names (see the module docstring), or a NoteNotFoundError listing near names."""
    raw = target
    name, heading = split_link(target)
    if not name:
        raise ConfigError("no note given; pass a title, a [[link]], a vault path or a node_id")
    if name.startswith("path:"):
        found = _by_path(ws, name[len("path:"):])
        if found:
            return Target(found, heading, "path")
        raise NoteNotFoundError(raw, "no note at this path (it may have been moved or deleted)")
    if not _looks_like_path(name):
        found = _by_id(ws, name)
        if found:
            return Target(found, heading, "node_id")
    found = _by_path(ws, name)
    if found:
        return Target(found, heading, "path")
    table = names(ws)
    hits = table.lookup(name)
    if hits:
        paths = table.paths(name)
        if len(paths) > 1:
            listed = ", ".join(paths[:MAX_SUGGESTIONS])
            raise AmbiguousTargetError(f"{raw!r} names {len(paths)} notes: {listed}; give the vault path instead")
        how = next(h for _, p, h in hits if p == paths[0])
        return Target(paths[0], heading, how)
    near = table.near(name)
    hint = f"near matches: {'; '.join(near)}" if near else "no note has a similar name"
    raise NoteNotFoundError(raw, f"no note by this title, alias, path or node_id ({hint}); "
                                 "`vault-memory recall` finds notes by what they say")


def resolve_note(ws: Workspace, target: str) -> str:
    """The vault path of the note `target` names (resolve_target without the heading)."""
    return resolve_target(ws, target).path


__all__ = ["AmbiguousTargetError", "Names", "Target", "names", "resolve_note", "resolve_target", "split_link"]
