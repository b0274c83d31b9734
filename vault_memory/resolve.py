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


def _rows(ws: Workspace) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """(path, title, aliases, tags) of every indexed note (meta is not decoded: 10x cheaper at 10k notes)."""
    try:
        return ws.catalog.note_names()
    except VaultMemoryError:
        return []


Names = dict[str, list[tuple[int, str, str]]]


def _names(ws: Workspace) -> Names:
    """casefolded name -> [(rank, path, how)]: file names rank 0, titles 1, aliases 2 (as the switcher)."""
    out: Names = {}
    seen: set[str] = set()
    for path, title, aliases, _tags in _rows(ws):
        seen.add(path)
        stem = PurePosixPath(path).stem
        out.setdefault(stem.casefold(), []).append((0, path, "file name"))
        out.setdefault(path[:-3].casefold() if path.lower().endswith(".md") else path.casefold(),
                       []).append((0, path, "path"))
        if title and title.casefold() != stem.casefold():
            out.setdefault(title.casefold(), []).append((1, path, "title"))
        for alias in aliases:
            out.setdefault(alias.casefold(), []).append((2, path, "alias"))
    # Notes the index does not have yet (a fresh vault) are still found by their file names.
    for rel in walk_notes(ws.vault, ws.rules).notes if not seen else ():
        out.setdefault(PurePosixPath(rel).stem.casefold(), []).append((0, rel, "file name"))
    return out


class Resolver:
    """`resolve_target` for many targets: the table of note names is built once, on first need.

    A relation list or a review note names many notes; building the table reads every row
    of the catalog, so one Resolver serves them all (make a new one after writing).
    """

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._names: Names | None = None

    def names(self) -> Names:
        if self._names is None:
            self._names = _names(self.ws)
        return self._names

    def resolve(self, target: str) -> Target:
        """The note `target` names (see the module docstring), or a NoteNotFoundError listing near names."""
        ws, raw = self.ws, target
        name, heading = split_link(target)
        if not name:
            raise ConfigError("no note given; pass a title, a [[link]], a vault path or a node_id")
        if name.startswith("path:"):
            found = _by_path(ws, name[len("path:"):])
            if found:
                return Target(found, heading, "path")
            raise NoteNotFoundError(raw, "no note at this path (it may have been moved or deleted)")
        # A [[link]] names a note the way Obsidian reads it (path, file name, then title and
        # alias); a node_id is tried last, so a link never costs the id lookup's folder scan.
        link = _LINK.match(target.strip()) is not None
        if not link and not _looks_like_path(name):
            found = _by_id(ws, name)
            if found:
                return Target(found, heading, "node_id")
        found = _by_path(ws, name)
        if found:
            return Target(found, heading, "path")
        names = self.names()
        key = name.casefold().removesuffix(".md")
        hits = names.get(key, [])
        if not hits and "/" in key:  # a link may name a note by the end of its path: [[deep/Note]]
            hits = [(r, p, h) for k, v in names.items() if k.endswith("/" + key) for r, p, h in v if h == "path"]
        if hits:
            best = min(r for r, _, _ in hits)
            paths = sorted({p for r, p, _ in hits if r == best}, key=lambda p: (p.count("/"), p))
            if len(paths) > 1:
                listed = ", ".join(paths[:MAX_SUGGESTIONS])
                raise AmbiguousTargetError(f"{raw!r} names {len(paths)} notes: {listed}; give the vault path instead")
            how = next(h for r, p, h in hits if r == best and p == paths[0])
            return Target(paths[0], heading, how)
        if link and not _looks_like_path(name):
            found = _by_id(ws, name)
            if found:
                return Target(found, heading, "node_id")
        near = difflib.get_close_matches(key, list(names), n=MAX_SUGGESTIONS, cutoff=0.6)
        listed = "; ".join(f"{sorted({p for _, p, _ in names[k]})[0]}" for k in near)
        hint = f"near matches: {listed}" if near else "no note has a similar name"
        raise NoteNotFoundError(raw, f"no note by this title, alias, path or node_id ({hint}); "
                                     "`vault-memory recall` finds notes by what they say")


def resolve_target(ws: Workspace, target: str) -> Target:
    """The note `target` names (see the module docstring), or a NoteNotFoundError listing near names."""
    return Resolver(ws).resolve(target)


def resolve_note(ws: Workspace, target: str) -> str:
    """The vault path of the note `target` names (resolve_target without the heading)."""
    return resolve_target(ws, target).path


__all__ = ["AmbiguousTargetError", "Resolver", "Target", "resolve_note", "resolve_target", "split_link"]
