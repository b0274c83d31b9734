"""Conflict copies that sync clients and git leave beside a note: told apart by name, never given its identity.

    Syncthing      note.sync-conflict-20261201-101500-ABCDEF1.md   (the copy gets the *older* mtime)
    Dropbox        note (Jonas's conflicted copy 2026-12-01).md, note (conflicted copy 2026-12-01).md
    iCloud         note 2.md                                      (only beside note.md: also a real name)
    Obsidian Sync  note (conflict 2026-12-01 101500).md           (also what atomic.keep_beside writes)
    git mergetool  note_BASE_12345.md, note_LOCAL_…, note_REMOTE_…, note_BACKUP_…

Pure: names in, names out (the caller says which paths exist).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import PurePosixPath

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Syncthing", re.compile(r"^(?P<base>.+)\.sync-conflict-\d{8}-\d{6}(?:-[A-Z0-9]{7})?$")),
    ("Dropbox", re.compile(r"^(?P<base>.+) \((?:[^()]*'s )?conflicted copy(?: [^()]*)?\)$", re.IGNORECASE)),
    ("Obsidian Sync", re.compile(r"^(?P<base>.+) \(conflict(?: [^()]*)?\)$", re.IGNORECASE)),
    ("git", re.compile(r"^(?P<base>.+)_(?:BASE|LOCAL|REMOTE|BACKUP)_\d+$")),
    ("iCloud", re.compile(r"^(?P<base>.+) (?P<n>[2-9]|[1-9]\d)$")),
)


def conflict_copy(rel: str, exists: Collection[str] | None = None) -> tuple[str, str] | None:
    """(the live note's path, who made the copy) when `rel` is named as a conflict copy of it, else None.

    `exists`: the paths known to exist; a name that only *looks* like a copy (`Sprint 2.md` with no
    `Sprint.md` beside it) is a copy only if its live note exists. The iCloud pattern needs it."""
    p = PurePosixPath(rel)
    folder = "" if str(p.parent) == "." else f"{p.parent}/"
    for who, pattern in _PATTERNS:
        m = pattern.match(p.stem)
        if m is None:
            continue
        live = f"{folder}{m.group('base')}{p.suffix}"
        if exists is None and who != "iCloud":
            return live, who
        if exists is not None and live in exists:
            return live, who
    return None


def live_first(paths: Collection[str]) -> list[str]:
    """`paths` carrying one node_id, the live note first: names that are conflict copies of another of
    them go last, so the live note keeps the id whatever the mtimes say (Syncthing's copy is older)."""
    present = set(paths)
    return sorted(paths, key=lambda rel: (conflict_copy(rel, present) is not None, rel))


__all__ = ["conflict_copy", "live_first"]
