"""Walking the vault: which files are notes, and which are not our business."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from .config import IGNORE_FILE_NAME


class IgnoreRules:
    """Dot-folders and dot-files, `.trash/`, plus gitignore-style globs from config and `.vaultmemoryignore`."""

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self.patterns = tuple(p.strip() for p in patterns if p.strip() and not p.strip().startswith("#"))

    @classmethod
    def for_vault(cls, vault: Path, extra: Iterable[str] = ()) -> IgnoreRules:
        patterns = list(extra)
        ignore_file = vault / IGNORE_FILE_NAME
        if ignore_file.is_file():
            patterns.extend(ignore_file.read_text(encoding="utf-8", errors="replace").splitlines())
        return cls(patterns)

    def ignored(self, rel: str, *, is_dir: bool = False) -> bool:
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts):
            return True  # .obsidian/, .trash/, .git/, our own .vm-tmp-* files
        for pat in self.patterns:
            dir_only = pat.endswith("/")
            core = pat.rstrip("/").lstrip("/")
            if dir_only and not is_dir:
                # a file is ignored when one of its parent folders matches
                if any(fnmatch.fnmatch("/".join(parts[: i + 1]), core) or fnmatch.fnmatch(parts[i], core)
                       for i in range(len(parts) - 1)):
                    return True
                continue
            if "/" in core:
                if fnmatch.fnmatch(rel, core) or any(
                    fnmatch.fnmatch("/".join(parts[: i + 1]), core) for i in range(len(parts))
                ):
                    return True
            elif any(fnmatch.fnmatch(p, core) for p in parts):
                return True
        return False

    def is_note(self, rel: str) -> bool:
        return rel.lower().endswith(".md") and not self.ignored(rel)


def iter_note_paths(vault: Path, rules: IgnoreRules) -> Iterator[str]:
    """Vault-relative paths ('/'-separated) of every note, sorted; symlinks leaving the vault are not followed."""
    root = vault.resolve()
    found: list[str] = []
    # os.scandir's entries carry their type, so a no-op reconcile of 10k notes costs no extra stat per file.
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        path, rel_dir = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            rel = rel_dir + entry.name
            if entry.is_dir(follow_symlinks=False):
                if not rules.ignored(rel, is_dir=True):
                    stack.append((entry.path, rel + "/"))
                continue
            if not rules.is_note(rel):
                continue
            if entry.is_symlink():
                try:
                    target = Path(entry.path).resolve(strict=True)
                except OSError:
                    continue  # dangling link
                if not target.is_relative_to(root) or not target.is_file():
                    continue  # never follow a link out of the vault
            elif not entry.is_file(follow_symlinks=False):
                continue
            found.append(rel)
    found.sort()
    return iter(found)
