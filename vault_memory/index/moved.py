"""A vault folder that moved keeps its index (issue 25).

The default index folder is named by a hash of the vault's absolute path (config.py), so a vault
moved or renamed would otherwise start a new index from nothing (keyword-only until embedded
again) and leave the old one behind, unused and unsaid. Every writer records the vault's path in
its catalog (`VAULT_KEY`). A vault opened with no index of its own looks beside it for an index
whose recorded vault folder no longer exists and whose notes are this vault's notes: exactly one
such index is adopted by renaming its folder (nothing is embedded again, the vault is never
written). A copy of a vault (the old folder still there) gets an index of its own, as before.

A copy is never a move (issue 40): the adopted index records its new vault at once (`adopt`), not
at the next write, so a vault renamed and renamed back, then copied, does not hand the copy the
original's index (its record still named the gone middle path); and an index whose folder is the
default index folder of a vault that exists beside its recorded path is that vault's, whatever
its record says (`_owned`).
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..errors import VaultMemoryError
from .lock import WriterLock

VAULT_KEY = "vault"  # catalog meta: the absolute path of the vault this index was built for
MATCH_SHARE = 0.9  # the share of the old index's notes that must be files of this vault
OWNER_LOOKS = 1000  # entries beside a gone vault's path looked at for the vault an index folder is named for


@dataclass(frozen=True)
class MovedIndex:
    """An index left behind by a vault that moved: its folder and the vault path it recorded."""

    index_dir: Path
    old_vault: str
    notes: int  # notes in its catalog
    found: int  # of them, files of the vault being opened


def _read(catalog: Path) -> tuple[str | None, list[str]]:
    """The recorded vault path and the note paths of a catalog, read without writing it."""
    try:
        db = sqlite3.connect(f"{catalog.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
    except (sqlite3.Error, OSError, ValueError):
        return None, []
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (VAULT_KEY,)).fetchone()
        paths = [p for (p,) in db.execute("SELECT path FROM notes")]
        return (row[0] if row else None), paths
    except sqlite3.Error:
        return None, []
    finally:
        db.close()


def find_moved(vault: Path, index_dir: Path, catalog_name: str) -> list[MovedIndex]:
    """Indexes beside `index_dir` (the cache folder) whose recorded vault is gone and whose notes
    are files of `vault`. Indexes of vaults that still exist are never candidates."""
    found: list[MovedIndex] = []
    try:
        siblings = sorted(p for p in index_dir.parent.iterdir() if p.is_dir() and p != index_dir)
    except OSError:
        return found
    for other in siblings:
        catalog = other / catalog_name
        if not catalog.is_file():
            continue
        old, paths = _read(catalog)
        if not old or not paths or Path(old) == vault or os.path.lexists(old) or _owned(other, Path(old)):
            continue
        here = sum(1 for p in paths if (vault / p).is_file())
        if here >= MATCH_SHARE * len(paths):
            found.append(MovedIndex(other, old, len(paths), here))
    return found


def _owned(index: Path, old: Path) -> bool:
    """Whether `index` is the default index folder of a vault that exists beside `old` (its recorded
    vault): a vault renamed back to the name its index folder carries, by a command that wrote
    nothing (before `adopt` recorded the new path, the record stayed at the middle name)."""
    from ..config import default_index_dir

    try:
        beside = [p for p in itertools.islice(old.parent.iterdir(), OWNER_LOOKS) if p.is_dir()]
    except OSError:
        return False
    return any(default_index_dir(p).name == index.name for p in beside)


def _record(index_dir: Path, catalog_name: str, vault: Path) -> None:
    """Write the vault's path into the adopted catalog now (what every writer records)."""
    try:
        db = sqlite3.connect(index_dir / catalog_name, timeout=5.0)
    except (sqlite3.Error, OSError):
        return
    try:
        with db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (VAULT_KEY, str(vault)))
    except sqlite3.Error:
        pass  # the next writer records it
    finally:
        db.close()


def adopt(moved: MovedIndex, index_dir: Path, vault: Path | None = None, catalog_name: str = "") -> str | None:
    """Rename the moved vault's index folder to `index_dir`, recording `vault` in its catalog; None
    when done, else why not."""
    lock = WriterLock(moved.index_dir)
    try:
        if not lock.try_acquire():
            return f"process {lock.holder_pid()} is using it"
        lock.release()
        if index_dir.exists():
            index_dir.rmdir()  # an empty folder left by an earlier look (anything in it: OSError)
        moved.index_dir.rename(index_dir)
    except (OSError, VaultMemoryError) as exc:
        return str(exc)
    if vault is not None and catalog_name:
        _record(index_dir, catalog_name, vault)
    return None
