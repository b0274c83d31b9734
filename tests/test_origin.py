"""Who changed a note (vault/origin.py): git's state files, a sync client's temp file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from vault_memory.vault.origin import GIT_STATE, IN_PROGRESS, MARGIN_SECONDS, GitState, git_dirs, sync_temp


def test_the_git_folder_is_found_above_the_vault_as_a_folder_or_a_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    vault = repo / "notes" / "vault"
    vault.mkdir(parents=True)
    assert git_dirs(vault) == (repo / ".git",)  # a vault in a subfolder of the repository
    assert git_dirs(tmp_path) == ()
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n", encoding="utf-8")
    (repo / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n", encoding="utf-8")
    assert git_dirs(worktree) == ((repo / ".git" / "worktrees" / "wt").resolve(), (repo / ".git").resolve())
    (worktree / ".git").write_text("not a pointer\n", encoding="utf-8")
    assert git_dirs(worktree) == ()


@pytest.mark.parametrize("name", [n for n in GIT_STATE if "/" not in n or n.startswith("logs")])
def test_a_state_file_git_writes_marks_a_change_as_gits(tmp_path: Path, name: str) -> None:
    gitdir = tmp_path / ".git"
    gitdir.mkdir()
    (gitdir / "index").write_bytes(b"")  # `git status` rewrites the index: it alone says nothing
    state = GitState(tmp_path)
    assert state.touched_since(time.time()) is None
    target = gitdir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"")
    assert state.touched_since(time.time()) == name
    old = time.time() - 60
    os.utime(target, (old, old))
    in_progress = name in IN_PROGRESS
    assert (state.touched_since(time.time()) == name) == in_progress  # old: only an operation in progress counts
    assert state.touched_since(old + MARGIN_SECONDS - 0.5) == name  # within the margin of the change


@pytest.mark.parametrize(
    ("path", "client"),
    [
        ("Notes/.syncthing.Coffee.md.tmp", "Syncthing"),
        ("~syncthing~Coffee.md.tmp", "Syncthing"),
        ("Coffee.md.!sync", "Resilio Sync"),
        (".Coffee.md.~3f2a9c", "Nextcloud or ownCloud"),
        (".vm-tmp-0a1b2c.tmp", None),  # ours
        ("Coffee.md", None),
        (".Coffee.md.swp", None),  # an editor's
    ],
)
def test_a_sync_clients_temp_file_is_told_by_its_name(path: str, client: str | None) -> None:
    assert sync_temp(path) == client
