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

The one resolver (issue 25: one module per concern for names and links): the table of names it
looks in is names.py's (pure, under the workspace); link syntax is linking.py's.
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, NoteError, NoteNotFoundError, VaultMemoryError
from ..search.workspace import Workspace
from ..text import folder_setting
from ..vault.names import MAX_SUGGESTIONS, Names
from ..vault.notefile import file_node_id, read_note, safe_path
from ..vault.walk import walk_notes

_LINK = re.compile(r"^!?\[\[(.+?)\]\]$")


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
    return None


def _by_id_on_disk(ws: Workspace, target: str) -> str | None:
    """Not indexed yet (the index is written by another process, or stale): look for the id where
    the agent's memories live. Reads every memory, so it is the last thing tried."""
    places = walk_notes(ws.vault, ws.rules, folder_setting(ws.config.staging_folder, "staging_folder")).notes
    places += walk_notes(
        ws.vault, ws.rules, folder_setting(ws.config.memory_folder, "memory_folder", allow_root=True), recursive=False
    ).notes
    return next((rel for rel in places if _has_id(ws, rel, target)), None)


def _is_file(path: Path) -> bool:
    """Whether a file is there; a name longer than the file system takes is no file (exit 3, not the
    I/O error 8 that a 300-character name gave)."""
    try:
        return path.is_file()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def _by_path(ws: Workspace, target: str) -> str | None:
    for cand in [target] if target.lower().endswith(".md") else [target, target + ".md"]:
        full = safe_path(ws.vault, cand)  # raises UnsafePathError for '..', absolute, symlink out
        if _is_file(full):
            clean = full.relative_to(ws.vault).as_posix()
            if not ws.rules.is_note(clean):
                raise NoteError(
                    clean, "not a note vault-memory manages: " + (ws.rules.why_not_a_note(clean) or "an ignored path")
                )
            return clean
    return None


def _unreadable(ws: Workspace, name: str) -> str | None:
    """The note the index could not read (bad bytes, bad YAML) whose file name or path is `name`:
    reading it then says why, instead of "no note by this title"."""
    try:
        failed = ws.catalog.failures()
    except VaultMemoryError:
        return None
    key = name.lower().removesuffix(".md")
    for rel in sorted(failed):
        stem = rel.removesuffix(".md").lower()
        if key in (stem, stem.rsplit("/", 1)[-1]) and _is_file(ws.vault / rel):
            return rel
    return None


def names(ws: Workspace) -> Names:
    """The Names of the indexed notes (or, before anything is indexed, the vault's file names)."""
    return ws.note_names()


def resolve_target(ws: Workspace, target: str) -> Target:
    """The note `target` names (see the module docstring), or a NoteNotFoundError listing near names."""
    raw = target
    name, heading = split_link(target)
    if not name:
        raise ConfigError("no note given; pass a title, a [[link]], a vault path or a node_id")
    if name.startswith("path:"):
        found = _by_path(ws, name[len("path:") :])
        if found:
            return Target(found, heading, "path")
        raise NoteNotFoundError(raw, "no note at this path (it may have been moved or deleted)")
    # A [[link]] names a note the way Obsidian reads it (path, file name, then title and alias);
    # a node_id is tried last for a link, so a link never costs the id lookup.
    link = _LINK.match(target.strip()) is not None
    if not link and not _looks_like_path(name):
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
    if link and not _looks_like_path(name):
        found = _by_id(ws, name)
        if found:
            return Target(found, heading, "node_id")
    found = None if _looks_like_path(name) or any(c.isspace() for c in name) else _by_id_on_disk(ws, name)
    if found:
        return Target(found, heading, "node_id")
    failed = _unreadable(ws, name)
    if failed:  # a note the index could not read has no title or alias: named by its file, it is that one
        return Target(failed, heading, "file name")
    near = table.near(name)
    hint = f"near matches: {'; '.join(near)}" if near else "no note has a similar name"
    raise NoteNotFoundError(
        raw,
        f"no note by this title, alias, path or node_id ({hint}); `vault-memory recall` finds notes by what they say",
    )


def resolve_note(ws: Workspace, target: str) -> str:
    """The vault path of the note `target` names (resolve_target without the heading)."""
    return resolve_target(ws, target).path


__all__ = [
    "AmbiguousTargetError",
    "Names",
    "Target",
    "names",
    "resolve_note",
    "resolve_target",
    "split_link",
]
