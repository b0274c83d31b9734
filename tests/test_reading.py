"""read (a note, a section, lines), related (links, backlinks, meaning) and recent (latest activity)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tests.conftest import NOW, MemoryFactory, snapshot, write_notes
from vault_memory.errors import ConfigError, NoteError, NoteNotFoundError, UnsafePathError
from vault_memory.internals import internals
from vault_memory.lifecycle.reading import parse_lines
from vault_memory.memory import Memory

LONG = "\n".join(f"Line {i} of the long log." for i in range(1, 501))
NOTES = {
    "People/Maya Chen.md": (
        "---\naliases: [Maya, MC]\nnode_id: maya0001\ncreated: 2026-01-05\n---\n# Maya Chen\n\n"
        "Works on [[Project Atlas]].\n\n## Projects\n\nAtlas, the ingest service.\n\n"
        "### Atlas details\n\nRuns on Kafka. ^kafka1\n\n## Family\n\nTwo kids.\n"
    ),
    "Projects/Project Atlas.md": "---\ntitle: Atlas (the project)\n---\nThe ingest service [[Maya Chen|Maya]] runs.\n",
    "Projects/Kafka notes.md": "Kafka runs the ingest service for Atlas; partitions and consumers.\n",
    "Inbox/secret.md": "---\nprivate: true\n---\nThe safe code is 1234.\n",
    "Logs/long log.md": LONG + "\n",
    "Inbox/links to nowhere.md": "See [[No Such Note]] and [[Maya Chen#Family]].\n",
}


@pytest.fixture()
def rmem(make_memory: MemoryFactory, tmp_path: Path) -> Memory:
    vault = write_notes(tmp_path / "rv", NOTES)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}")
    mem = make_memory(vault=vault)
    mem.index()
    return mem


# -- read -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["Maya Chen", "maya", "MC", "People/Maya Chen", "People/Maya Chen.md", "maya0001", "[[Maya Chen|her]]"]
)
def test_read_finds_the_note_however_it_is_named(rmem: Memory, target: str) -> None:
    got = rmem.read(target)
    assert got.path == "People/Maya Chen.md" and got.node_id == "maya0001" and got.title == "Maya Chen"
    assert got.heading == "" and got.text.startswith("# Maya Chen") and got.text.endswith("Two kids.")
    assert (got.start_line, got.end_line, got.line_count) == (1, 15, 15) and not got.truncated
    assert got.aliases == ["Maya", "MC"] and got.links == ["Project Atlas"]
    assert got.created is not None and got.created.startswith("2026-01-05") and got.stated == "2026-01-05"
    assert [o["heading"] for o in got.outline] == ["Maya Chen", "Projects", "Atlas details", "Family"]


def test_read_one_section_by_link_or_heading(rmem: Memory) -> None:
    got = rmem.read("[[Maya Chen#Projects]]")
    assert got.heading == "Projects" and got.text.startswith("## Projects")
    assert "Runs on Kafka" in got.text and "Family" not in got.text  # subsections belong to it
    assert (got.start_line, got.end_line) == (5, 12)
    assert rmem.read("Maya", heading="family").text == "## Family\n\nTwo kids."  # case and punctuation ignored
    assert rmem.read("[[Maya Chen#Projects#Atlas details]]").heading == "Atlas details"  # nested link
    assert rmem.read("[[Maya Chen#^kafka1]]").text == "Runs on Kafka. ^kafka1"  # a block reference
    with pytest.raises(NoteNotFoundError, match="its headings: Maya Chen; Projects; Atlas details; Family"):
        rmem.read("[[Maya Chen#Hobbies]]")


def test_read_line_ranges_and_long_notes(rmem: Memory) -> None:
    assert parse_lines("40:80") == (40, 80) and parse_lines(":20") == (1, 20) and parse_lines("7") == (7, None)
    assert parse_lines("40-") == (40, None) and parse_lines((3, 4)) == (3, 4)
    for bad in ("a:b", "0:3", "9:3", ":"):
        with pytest.raises(ConfigError):
            parse_lines(bad)
    got = rmem.read("long log", lines="40:42")
    assert got.text == "Line 40 of the long log.\nLine 41 of the long log.\nLine 42 of the long log."
    assert (got.start_line, got.end_line, got.line_count) == (40, 42, 500)
    assert rmem.read("long log", lines="499:").text.endswith("Line 500 of the long log.")
    part = rmem.read("long log", max_chars=1000)
    assert part.truncated and part.next_line == part.end_line + 1 and len(part.text) <= 1000
    rest = rmem.read("long log", lines=f"{part.next_line}:", max_chars=10**6)
    assert part.text + "\n" + rest.text == LONG
    section = rmem.read("Maya Chen", heading="Projects", lines="1:6")  # lines inside a section: the overlap
    assert (section.start_line, section.end_line) == (5, 6)
    with pytest.raises(ConfigError, match="section 'Family' spans lines 13-15"):
        rmem.read("Maya Chen", heading="Family", lines="1:3")
    with pytest.raises(ConfigError, match="outside"):
        rmem.read("long log", lines="600:700")


def test_read_refuses_private_notes_and_non_notes(rmem: Memory) -> None:
    with pytest.raises(NoteNotFoundError, match="private"):
        rmem.read("Inbox/secret.md")
    with pytest.raises(NoteNotFoundError):
        rmem.read("secret")  # private notes are not indexed, so their names are unknown too
    with pytest.raises(NoteError, match="not a note"):
        rmem.read(".obsidian/app.json")
    for target in ("../outside.md", "/etc/passwd"):
        with pytest.raises(UnsafePathError):
            rmem.read(target)
    with pytest.raises(NoteNotFoundError, match="near matches: People/Maya Chen.md"):
        rmem.read("Maya Chenn")


def test_read_writes_nothing(rmem: Memory) -> None:
    before = snapshot(internals(rmem).vault)
    rmem.read("Maya")
    rmem.read("[[Maya Chen#Family]]")
    assert snapshot(internals(rmem).vault) == before


# -- related --------------------------------------------------------------------------------


def test_related_lists_links_backlinks_and_unresolved(rmem: Memory) -> None:
    got = rmem.related("Maya Chen")
    by_path = {r.path: r for r in got.related}
    atlas = by_path["Projects/Project Atlas.md"]
    assert atlas.linked and atlas.links_here and atlas.linked_from_here  # both ways
    assert atlas.reasons[:2] == ["links to this note", "linked from this note"]
    inbox = by_path["Inbox/links to nowhere.md"]  # [[Maya Chen#Family]] is a link to the note
    assert inbox.linked and inbox.links_here and not inbox.linked_from_here
    assert got.links_out == 1 and got.backlinks == 2 and got.unresolved == []
    assert "Inbox/secret.md" not in by_path  # private: never indexed, never related
    assert rmem.related("Inbox/links to nowhere.md").unresolved == ["No Such Note"]


def test_related_finds_unlinked_notes_by_meaning(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "sv"
    (vault / "a").mkdir(parents=True)
    (vault / "a" / "Sourdough.md").write_text("Sourdough starter: feed it flour and water every day. See [[Bread]].\n")
    (vault / "a" / "Bread.md").write_text("Bread baking notes.\n")
    (vault / "a" / "Starter care.md").write_text("Feed the sourdough starter flour and water every day.\n")
    (vault / "a" / "Tax.md").write_text("The tax return is due in July.\n")
    mem = make_memory(vault=vault)
    mem.index()
    before = snapshot(vault)
    got = mem.related("Sourdough", k=5)
    by_path = {r.path: r for r in got.related}
    care = by_path["a/Starter care.md"]
    assert not care.linked and care.similarity is not None and care.reasons[0].startswith("similar: ")
    assert by_path["a/Bread.md"].linked and "linked from this note" in by_path["a/Bread.md"].reasons
    assert got.related[0].path == "a/Starter care.md"  # most similar first
    assert snapshot(vault) == before  # the note's vectors came from the index: nothing written, nothing embedded


def test_related_on_the_sample_vault(make_memory: MemoryFactory) -> None:
    mem = make_memory()
    mem.index()
    got = mem.related("[[Danube Bike Trip]]")
    linked = {r.path for r in got.related if r.linked}
    assert {"People/Ines Okafor.md", "Preferences/Coffee.md", "Projects/Eris.md"} <= linked  # its backlinks
    assert any(not r.linked for r in got.related)


# -- recent --------------------------------------------------------------------------------


def test_recent_reads_activity_from_frontmatter(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "recent"
    files = {
        "Memory/Staged/draft.md": (
            "---\nnode_id: s1\nstatus: staged\ncreated: 2026-11-28T10:00:00+00:00\n---\nA draft.\n"
        ),
        "Memory/fresh.md": "---\nnode_id: m1\ncreated: 2026-11-27T09:00:00+00:00\n"
        "last_accessed: 2026-11-27T09:05:00+00:00\ntier: short\n---\nCommitted, never recalled.\n",
        "Memory/used.md": "---\nnode_id: m2\ncreated: 2026-10-01T09:00:00+00:00\n"
        "last_accessed: 2026-11-29T08:00:00+00:00\naccess_count: 3\n---\nRecalled this morning.\n",
        "Memory/old.md": "---\nnode_id: m3\ncreated: 2026-01-01T09:00:00+00:00\n---\nOld.\n",
        "Memory/Episodes/2026-11-26.md": "---\ndate: 2026-11-26\n---\n- 10:00 Fixed the VPN.\n",
        "Notes/human.md": "A person's note, never used by the agent.\n",
    }
    write_notes(vault, files)
    mem = make_memory(vault=vault)
    mem.index()
    got = [(r.path, r.event) for r in mem.recent(days=7, now=NOW)]
    assert got == [
        ("Memory/used.md", "used"),
        ("Memory/Staged/draft.md", "staged"),
        ("Memory/fresh.md", "used"),
        ("Memory/Episodes/2026-11-26.md", "logged"),
    ]
    assert [r.path for r in mem.recent(days=7, k=2, now=NOW)] == ["Memory/used.md", "Memory/Staged/draft.md"]
    assert "Memory/old.md" in [r.path for r in mem.recent(days=365, k=100, now=NOW)]
    assert mem.recent(days=1, now=NOW + dt.timedelta(days=30)) == []


def test_names_are_kept_until_a_name_changes(rmem: Memory) -> None:
    """Memory keeps the resolver's table of names (costly at 10k notes) until a path, title or alias changes."""
    assert rmem.read("MC").path == "People/Maya Chen.md"
    kept = internals(rmem).note_names()
    rmem.recall("kafka", touch=True)  # rehearsal: frontmatter only, names unchanged
    rmem.index()
    assert internals(rmem).note_names() is kept
    path = internals(rmem).vault / "People/Maya Chen.md"
    path.write_text(path.read_text(encoding="utf-8").replace("aliases: [Maya, MC]", "aliases: [Maya C]"))
    rmem.index()
    assert internals(rmem).note_names() is not kept
    assert rmem.read("Maya C").path == "People/Maya Chen.md"
    with pytest.raises(NoteNotFoundError):
        rmem.read("MC")
