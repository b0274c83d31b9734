"""Walking the vault: which files are notes, and which are not our business."""

from __future__ import annotations

import os
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from ..config import DEFAULT_MAX_NOTE_BYTES, IGNORE_FILE_NAME
from ..errors import StorageError, storage_message
from ..hashing import sha256_hex
from .obsidian import ObsidianSettings, read_settings
from .templates import NONE as NO_SCAFFOLDING
from .templates import Scaffolding, read_scaffolding


class IgnoreRules:
    """Which paths are not our business.

    Always: dot-files and dot-folders (`.obsidian/`, `.trash/`, `.git/`, our `.vm-tmp-*`).
    Obsidian's own settings (obsidian.py): template folders, the daily-notes template,
    "Excluded files", `*.excalidraw.md` drawings. Then gitignore-style patterns from the
    `ignore` setting and `.vaultmemoryignore`, with gitignore's semantics (negation with `!`,
    a leading `/` anchors, `dir/*.md` does not reach into `dir/sub/`), via `pathspec`.
    """

    def __init__(
        self,
        patterns: Iterable[str] = (),
        obsidian: ObsidianSettings | None = None,
        *,
        max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES,
        scaffolding: Scaffolding = NO_SCAFFOLDING,
    ) -> None:
        self.patterns = tuple(p.rstrip("\r\n") for p in patterns if p.strip() and not p.strip().startswith("#"))
        self.scaffolding = scaffolding  # the lines the vault's templates give a note: not text (templates.py)
        self.max_note_bytes = max_note_bytes  # a bigger file is passed over unread (stat before open)
        self.obsidian = obsidian or ObsidianSettings()
        self._spec = pathspec.GitIgnoreSpec.from_lines(self.patterns)

    @classmethod
    def for_vault(
        cls,
        vault: Path,
        extra: Iterable[str] = (),
        *,
        use_obsidian: bool = True,
        max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES,
    ) -> IgnoreRules:
        patterns = list(extra)
        ignore_file = vault / IGNORE_FILE_NAME
        if ignore_file.is_file():
            patterns.extend(ignore_file.read_text(encoding="utf-8", errors="replace").splitlines())
        settings = read_settings(vault) if use_obsidian else None
        scaffolding = read_scaffolding(vault, settings) if settings is not None else NO_SCAFFOLDING
        return cls(patterns, settings, max_note_bytes=max_note_bytes, scaffolding=scaffolding)

    def fingerprint(self) -> str:
        """Changes whenever these rules may decide a path differently (patterns, Obsidian's settings)."""
        return sha256_hex(repr((self.patterns, self.obsidian)))

    def ignored(self, rel: str, *, is_dir: bool = False) -> bool:
        if any(p.startswith(".") for p in rel.split("/")):
            return True
        if self.obsidian.excludes(rel, is_dir=is_dir):
            return True
        # (no patterns: nothing to match, and pathspec's normalising alone was a tenth of a no-op reconcile)
        return bool(self.patterns) and bool(self._spec.match_file(rel + "/" if is_dir else rel))

    def is_note(self, rel: str) -> bool:
        return rel.lower().endswith(".md") and not self.ignored(rel)

    def why_not_a_note(self, rel: str) -> str:
        """Why `rel` is not a note vault-memory manages, in words that name the rule ("" if it is one)."""
        if not rel.lower().endswith(".md"):
            return "not a Markdown (.md) file"
        if any(p.startswith(".") for p in rel.split("/")):
            return "in a dot-folder or a dot-file (never read)"
        why = self.obsidian.why_excluded(rel)
        if why:
            return why
        if self.patterns and self._spec.match_file(rel):
            return "ignored by a pattern of the `ignore` setting or .vaultmemoryignore"
        return ""


@dataclass
class NoteWalk:
    """The notes found under a folder, and what was passed over (reported, never followed)."""

    notes: list[str] = field(default_factory=list)  # vault-relative, '/'-separated, sorted
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why (symlinks)
    unreadable: dict[str, str] = field(default_factory=dict)  # folder -> why it could not be listed


def walk_notes(
    vault: Path, rules: IgnoreRules, under: str = "", *, recursive: bool = True, known: Container[str] = ()
) -> NoteWalk:
    """Every note under `under` (the whole vault by default): the one walker.

    One rule for symlinks: a symlink is never a note and a symlinked folder is never
    entered. Following links would index one file twice (under two paths and, before this
    rule, two ids), leave the vault, or loop; the link is reported in `skipped` instead
    (index its target, which is a note of its own if it is in the vault).
    os.scandir's entries carry their type, so a no-op reconcile of 10k notes costs no extra stat.

    A folder that cannot be listed is reported in `unreadable` (its notes are not "gone": the
    indexer keeps them as they were); the vault folder itself raises StorageError, since an
    empty answer would read as "every note was deleted".

    `known`: paths already found to be notes under these same rules (the indexer's stamps,
    while its rules fingerprint holds): taken without asking the rules again, which were most
    of walking 10k notes.
    """
    root = vault.resolve()
    walk = NoteWalk()
    prefix = "/".join(p for p in under.replace("\\", "/").split("/") if p not in ("", "."))
    if prefix and (".." in prefix.split("/") or rules.ignored(prefix, is_dir=True)):
        return walk
    start = root / prefix if prefix else root
    stack: list[tuple[str, str]] = [(str(start), prefix + "/" if prefix else "")]
    while stack:
        path, rel_dir = stack.pop()
        try:
            entries = list(os.scandir(path))
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone, or not a folder: nothing to walk
        except OSError as exc:
            if path == str(root):
                raise StorageError(storage_message(exc, "list the vault folder", root)) from None
            walk.unreadable[rel_dir.rstrip("/")] = f"cannot list this folder ({exc.strerror or exc})"
            continue
        for entry in entries:
            rel = rel_dir + entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                is_file = not is_link and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if recursive and not rules.ignored(rel, is_dir=True):
                    stack.append((entry.path, rel + "/"))
                continue
            if is_link:
                if rules.is_note(rel):
                    walk.skipped[rel] = _link_reason(Path(entry.path), root)
                continue
            if is_file and (rel in known or rules.is_note(rel)):
                walk.notes.append(rel)
    walk.notes.sort()
    return walk


def _link_reason(link: Path, root: Path) -> str:
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python 3.11)
        return "symlink that loops or dangles; not indexed (remove it or point it at a note)"
    if not target.is_relative_to(root):
        return "symlink leading outside the vault; not followed"
    rel = target.relative_to(root).as_posix()
    return f"symlink to {rel}; not indexed twice (the target is indexed as itself)"


def iter_note_paths(vault: Path, rules: IgnoreRules) -> Iterator[str]:
    """Vault-relative paths ('/'-separated) of every note, sorted (see `walk_notes`)."""
    return iter(walk_notes(vault, rules).notes)
