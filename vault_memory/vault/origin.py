"""Who changed a note: git, a sync client, or (by elimination) a person.

`watch` records a person's body edit as a use of the note (docs/memory-model.md). A change git
brought (pull, checkout, merge, rebase, reset, stash pop) or a sync client downloaded is no use,
whatever its size: recorded, it dirtied the tree after every small pull, two machines syncing by
git wrote into each other's pulls, and a pulled `last_accessed` in the future was moved back to
today (issue 41). What can be observed, and is:

- git's own state: an operation that changes the working tree writes files in the repository's
  git folder as it does (ORIG_HEAD before a merge, rebase or reset; HEAD and its reflog on a
  checkout or pull; the stash's ref and reflog on `stash pop`; FETCH_HEAD on a pull; MERGE_HEAD,
  `rebase-merge/` while one is in progress; `index.lock` while git writes). Their times are
  compared with when the change was seen (`GitState.touched_since`). The repository may hold the
  vault in a subfolder, or be a worktree (`.git` a file naming the git folder): both are found.
  The index itself is left out: `git status` rewrites it, and editors run that every few seconds.
- a sync client's temp file renamed onto the note (`sync_temp`): Syncthing, Resilio, Nextcloud
  and ownCloud download into one and rename it into place.
- many notes at once (the watcher's REHEARSE_MAX_BATCH).

What is not seen is a person's: a person's edit in the same moment as a git operation (a commit
within a few seconds of the save) is not recorded, the safe side.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: Files and folders in a git folder that an operation changing the working tree writes (or holds
#: while it runs). Relative to the worktree's git folder and to the common one.
GIT_STATE = (
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "AUTO_MERGE",
    "index.lock",
    "logs/HEAD",
    "refs/stash",
    "logs/refs/stash",
    "rebase-merge",
    "rebase-apply",
)
#: In progress while they exist, whatever their times (a merge stopped on a conflict, a rebase).
IN_PROGRESS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply", "index.lock")
#: A git operation writes its state files a moment before or after the notes it changes.
MARGIN_SECONDS = 2.0

_SYNC_TEMPS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\.syncthing\..+\.tmp$"), "Syncthing"),
    (re.compile(r"^~syncthing~.+\.tmp$"), "Syncthing"),
    (re.compile(r".+\.!sync$"), "Resilio Sync"),
    (re.compile(r"^\..+\.~[0-9a-f]+$"), "Nextcloud or ownCloud"),
)


def sync_temp(path: str) -> str | None:
    """The sync client whose download temp file this path is (the client renames it onto the note), or None."""
    name = path.rsplit("/", 1)[-1]
    return next((client for pattern, client in _SYNC_TEMPS if pattern.match(name)), None)


def git_dirs(vault: Path) -> tuple[Path, ...]:
    """The git folders of the repository holding `vault` (its own and, for a worktree, the common
    one), or () when it is in none. `.git` may be a folder or a file naming the folder."""
    for folder in (vault, *vault.parents):
        dot = folder / ".git"
        try:
            if dot.is_dir():
                gitdir = dot
            elif dot.is_file():
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    continue
                gitdir = (folder / text.removeprefix("gitdir:").strip()).resolve()
            else:
                continue
        except OSError:
            continue
        common = gitdir
        try:
            named = (gitdir / "commondir").read_text(encoding="utf-8").strip()
            common = (gitdir / named).resolve()
        except OSError:
            pass
        return (gitdir,) if common == gitdir else (gitdir, common)
    return ()


class GitState:
    """The git state of the repository a vault is in, looked at by `stat` when asked (a few calls)."""

    def __init__(self, vault: Path) -> None:
        self.dirs = git_dirs(vault)

    def touched_since(self, since: float) -> str | None:
        """What git wrote at or after `since` (wall-clock seconds, less MARGIN_SECONDS), or holds in
        progress now: the state file's name ("ORIG_HEAD", "logs/refs/stash", ...), or None."""
        after = since - MARGIN_SECONDS
        for gitdir in self.dirs:
            for name in GIT_STATE:
                try:
                    st = os.stat(gitdir / name)
                except OSError:
                    continue
                if name in IN_PROGRESS or st.st_mtime >= after:
                    return name
        return None


__all__ = ["GIT_STATE", "IN_PROGRESS", "MARGIN_SECONDS", "GitState", "git_dirs", "sync_temp"]
