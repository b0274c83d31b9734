"""The one resolver: a note by node_id, path, title, alias or [[wikilink#heading]], as Obsidian finds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MemoryFactory, write_notes
from vault_memory.errors import NoteNotFoundError, UnsafePathError
from vault_memory.internals import internals
from vault_memory.lifecycle.resolve import AmbiguousTargetError, resolve_target, split_link
from vault_memory.memory import Memory
from vault_memory.vault.notefile import read_note

NOTES = {
    "People/Maya Chen.md": "---\naliases: [Maya, MC]\nnode_id: maya0001\n---\n# Maya Chen\n\n## Projects\nAtlas.\n",
    "People/Mum.md": "# Mum\n\nCalls on Sundays.\n",
    "Projects/Project Atlas.md": "---\ntitle: Atlas (the project)\n---\nThe ingest service.\n",
    "Archive/Mum.md": "# Mum (old)\n\nAn older note.\n",
    "Inbox/quick idea.md": "A kite.\n",
}


@pytest.fixture()
def rmem(make_memory: MemoryFactory, tmp_path: Path) -> Memory:
    vault = write_notes(tmp_path / "rv", NOTES)
    mem = make_memory(vault=vault)
    mem.index()
    return mem


@pytest.mark.parametrize(("target", "path", "heading", "how"), [
    ("maya0001", "People/Maya Chen.md", "", "node_id"),
    ("People/Maya Chen", "People/Maya Chen.md", "", "path"),
    ("People/Maya Chen.md", "People/Maya Chen.md", "", "path"),
    ("maya chen", "People/Maya Chen.md", "", "file name"),
    ("Maya", "People/Maya Chen.md", "", "alias"),
    ("[[Maya Chen#Projects|her]]", "People/Maya Chen.md", "Projects", "file name"),
    ("[[MC]]", "People/Maya Chen.md", "", "alias"),
    ("Project Atlas", "Projects/Project Atlas.md", "", "file name"),
    ("atlas (the project)", "Projects/Project Atlas.md", "", "title"),
    ("path:Inbox/quick idea.md", "Inbox/quick idea.md", "", "path"),
    ("[[People/Mum]]", "People/Mum.md", "", "path"),
])  # fmt: skip
def test_resolves_like_obsidian(rmem: Memory, target: str, path: str, heading: str, how: str) -> None:
    got = resolve_target(internals(rmem), target)
    assert (got.path, got.heading, got.how) == (path, heading, how)


def test_ambiguous_and_unknown_names_say_what_to_do(rmem: Memory) -> None:
    with pytest.raises(AmbiguousTargetError, match="Archive/Mum.md, People/Mum.md") as amb:
        resolve_target(internals(rmem), "Mum")
    assert amb.value.exit_code == 2
    with pytest.raises(NoteNotFoundError, match="near matches: People/Maya Chen.md"):
        resolve_target(internals(rmem), "Maya Chenn")
    with pytest.raises(UnsafePathError):
        resolve_target(internals(rmem), "../outside.md")


def test_pin_takes_names_and_links(rmem: Memory) -> None:
    assert rmem.pin("[[Maya]]").path == "People/Maya Chen.md"
    assert rmem.pin("Project Atlas").path == "Projects/Project Atlas.md"
    assert rmem.unpin("People/Mum").path == "People/Mum.md"


def test_split_link() -> None:
    assert split_link("[[A#B|c]]") == ("A", "B")
    assert split_link("![[A#^block]]") == ("A", "block")
    assert split_link("  plain  ") == ("plain", "")


@pytest.mark.parametrize("name", ["y" * 300, "y" * 300 + ".md", "Folder/" + "y" * 300, "[[" + "y" * 300 + "]]"])
def test_a_name_longer_than_the_file_system_takes_is_not_found(rmem: Memory, name: str) -> None:
    """Issue 41: a 300-character name gave exit 8 (an I/O error: "File name too long") where 3 (no such
    note) is meant, from read, pin, related and every command that resolves a target."""
    for call in (rmem.read, rmem.pin, rmem.unpin, rmem.related):
        with pytest.raises(NoteNotFoundError) as err:
            call(name)
        assert err.value.exit_code == 3, call
    with pytest.raises(NoteNotFoundError, match="longer than the file system allows"):
        read_note(internals(rmem).vault, "y" * 300 + ".md")
