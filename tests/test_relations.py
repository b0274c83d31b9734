"""Relations as Obsidian links, read as links or as the node_ids older vaults hold."""

from __future__ import annotations

import datetime as dt
from pathlib import Path, PurePosixPath

import pytest
import yaml

from tests.conftest import NOW, MemoryFactory
from vault_memory.internals import internals
from vault_memory.lifecycle.linking import link_names, link_text, stems
from vault_memory.lifecycle.relations import relation_values
from vault_memory.memory import Memory
from vault_memory.vault.notefile import parse_note, read_note

DAY = dt.timedelta(days=1)
SLACK = "We use Slack for the team chat."
DISCORD = "We use Discord for the team chat now."


@pytest.mark.parametrize(
    ("yaml_text", "values"),
    [
        ("supersedes: ['[[Old note]]', 3e9a0b7c1d2f4a55]", ["[[Old note]]", "3e9a0b7c1d2f4a55"]),
        ("supersedes: [[Old note]]", ["[[Old note]]"]),  # unquoted: YAML reads a list in a list
        ('supersedes:\n  - [[Old note]]\n  - "[[Other|shown]]"', ["[[Old note]]", "[[Other|shown]]"]),
        ("supersedes: 3e9a0b7c1d2f4a55", ["3e9a0b7c1d2f4a55"]),
        ("supersedes:", []),
    ],
)
def test_relation_values_reads_every_way_yaml_holds_them(yaml_text: str, values: list[str]) -> None:
    assert relation_values(yaml.safe_load(yaml_text)["supersedes"]) == values


def test_link_text_is_the_shortest_unique_form() -> None:
    taken = stems(["Memory/Team chat.md", "Notes/team chat.md", "People/Maya Chen.md"])
    assert link_text("People/Maya Chen.md", taken) == "[[Maya Chen]]"
    assert link_text("Memory/Team chat.md", taken) == "[[Memory/Team chat]]"  # another note has the name
    assert link_text("People/Maya Chen.md", taken, "Maya") == "[[Maya Chen|Maya]]"
    assert link_text("People/Maya Chen.md", taken, "Maya", table=True) == "[[Maya Chen\\|Maya]]"
    assert link_names("[[Memory/Team chat|x]]", "Team chat") and not link_names("Team chat", "Team chat")


def put(vault: Path, rel: str, text: str) -> None:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


BACKGROUND = [
    "The car tyres are in the shed.",
    "Grandma likes orchids.",
    "The dentist is on Main Street.",
    "Piano lessons are on Wednesday.",
    "The boiler pressure should be 1.5 bar.",
    "Our landlord is called Jo.",
    "The bike lock code is 4711.",
]


@pytest.fixture()
def mem(make_memory: MemoryFactory, tmp_path: Path) -> Memory:
    vault = tmp_path / "v"
    for i, text in enumerate(BACKGROUND):
        put(vault, f"Background/bg{i}.md", f"---\ncreated: 2026-11-01\n---\n{text}\n")
    return make_memory(vault=vault)


def _fresh_old_pair(vault: Path, old_rel: str, new_rel: str, old_rel_value: str, new_rel_value: str) -> None:
    # The old note matches the query verbatim and is the fresher: only the relation puts the new one first.
    put(
        vault,
        old_rel,
        f"---\nnode_id: 3e9a0b7c1d2f4a55\ncreated: {(NOW - DAY).isoformat()}\n"
        f"superseded_by: {old_rel_value}\n---\n{SLACK}\n",
    )
    put(
        vault,
        new_rel,
        f"---\nnode_id: 5b1f0c0e9a2d4c7e\ncreated: {(NOW - 30 * DAY).isoformat()}\n"
        f"supersedes: {new_rel_value}\n---\n{DISCORD}\n",
    )


@pytest.mark.parametrize(
    ("old_value", "new_value"),
    [
        ("[5b1f0c0e9a2d4c7e]", "[3e9a0b7c1d2f4a55]"),  # a vault written before links: hex ids
        ("['[[Team chat now]]']", "['[[team chat]]']"),  # what vault-memory writes now
        ("[[Team chat now]]", "[[team chat]]"),  # typed by hand, unquoted
        ("", "['[[Notes/team chat|the old one]]']"),  # only one side recorded, with a path and shown text
    ],
)
def test_a_superseded_note_ranks_below_its_successor(mem: Memory, old_value: str, new_value: str) -> None:
    _fresh_old_pair(internals(mem).vault, "Notes/team chat.md", "Memory/Team chat now.md", old_value, new_value)
    mem.index()
    hits = mem.recall(SLACK, now=NOW, touch=False)
    assert [h.node_id for h in hits[:2]] == ["5b1f0c0e9a2d4c7e", "3e9a0b7c1d2f4a55"]
    if old_value:
        assert hits[1].superseded_by == ["5b1f0c0e9a2d4c7e"]  # identities, whatever the file holds


def test_control_without_a_relation_the_old_note_wins(mem: Memory) -> None:
    _fresh_old_pair(internals(mem).vault, "Notes/team chat.md", "Memory/Team chat now.md", "[]", "[]")
    mem.index()
    assert mem.recall(SLACK, now=NOW, touch=False)[0].node_id == "3e9a0b7c1d2f4a55"


def test_an_old_vault_with_hex_ids_keeps_working_and_gains_links(mem: Memory) -> None:
    """A note linked by id before: a new supersession adds a link beside the id, never rewrites it."""
    vault = internals(mem).vault
    _fresh_old_pair(vault, "Notes/team chat.md", "Memory/Team chat now.md", "[5b1f0c0e9a2d4c7e]", "[3e9a0b7c1d2f4a55]")
    mem.index()
    # the old ids still resolve wherever a note is named
    assert mem.pin("5b1f0c0e9a2d4c7e").path == "Memory/Team chat now.md"
    sm = mem.stage("We use Matrix for the team chat since December.", title="Team chat matrix", now=NOW)
    [done] = mem.commit([sm.node_id], supersedes="[[Team chat now]]", now=NOW).committed
    assert done.supersedes == ["5b1f0c0e9a2d4c7e"]
    newer = read_note(vault, "Memory/Team chat now.md").meta
    assert newer["superseded_by"] == ["[[Team chat matrix]]"]
    assert newer["supersedes"] == ["3e9a0b7c1d2f4a55"]  # the human's (older) value is untouched
    review = mem.review(NOW, write=False)
    pairs = {(s.old_path, s.new_path) for s in review.superseded}
    assert pairs == {
        ("Notes/team chat.md", "Memory/Team chat now.md"),
        ("Memory/Team chat now.md", "Memory/Team chat matrix.md"),
    }


def test_commit_supersedes_writes_clickable_links_on_both_sides(mem: Memory) -> None:
    put(internals(mem).vault, "Notes/Standup.md", "---\ncreated: 2026-10-01\n---\nStandups are at 9:30.\n")
    mem.index()
    sm = mem.stage("Standups moved to ten o'clock from December.", now=NOW)
    [done] = mem.commit([sm.node_id], supersedes="Standup", now=NOW).committed
    new = parse_note(done.path, (internals(mem).vault / done.path).read_bytes())
    assert new.meta["supersedes"] == ["[[Standup]]"]
    raw_old = (internals(mem).vault / "Notes/Standup.md").read_text(encoding="utf-8")
    assert "superseded_by: ['[[Standups moved to ten o''clock from December]]']\n" in raw_old
    assert raw_old.endswith("Standups are at 9:30.\n")  # the person's body is untouched
    assert done.path == "Memory/Standups moved to ten o'clock from December.md"


GARDEN = (
    "---\ncreated: 2026-10-01\n---\n# Garden\n\nThe spare key of the garden shed is under the blue pot.\n\n"
    "## Beds\n- North bed: garlic planted in October, then beans in spring.\n- South bed: tomatoes.\n"
)


def test_a_successor_moves_its_predecessor_down_only_for_what_it_replaces(mem: Memory) -> None:
    """Issue 38: a memory of where the shed key hangs, committed as superseding the garden note,
    replaces one line of it. Asked where the key is, the memory comes first and the garden note
    stays out of the block; asked what grows in the north bed, which the memory does not answer,
    the garden note keeps its place and its entry, which says it has a successor (before, it fell
    below the weak memory in recall and was never shown)."""
    put(internals(mem).vault, "Areas/Garden.md", GARDEN)
    mem.index()
    garden = mem.recall("garden shed key blue pot", now=NOW, touch=False)[0]
    assert garden.path == "Areas/Garden.md"
    done = mem.remember("The shed key now hangs on the hook by the door.", now=NOW, supersedes=garden.node_id)
    later = NOW + dt.timedelta(minutes=5)

    key = mem.recall("where does the shed key hang", now=later, touch=False)
    assert [h.path for h in key[:2]] == [done.path, "Areas/Garden.md"]
    shown = mem.prefetch("where does the shed key hang", now=later, refresh_staged=False)
    assert shown.entries[0].path == done.path
    assert "Areas/Garden.md" not in [e.path for e in shown.entries]
    undecayed = mem.prefetch("where does the shed key hang", now=later, refresh_staged=False, decay=False)
    assert "Areas/Garden.md" not in [e.path for e in undecayed.entries]  # replaced, with decay off too

    beds = mem.recall("north bed garlic", now=later, touch=False, explain=True)
    assert beds[0].path == "Areas/Garden.md" and not beds[0].weak
    assert all(h.weak for h in beds if h.path == done.path)  # the memory answers nothing here
    assert f"superseded by {done.path}: keeps its place" in beds[0].explain["moved"]
    block = mem.prefetch("north bed garlic", now=later, refresh_staged=False)
    assert block.entries[0].path == "Areas/Garden.md"
    assert "garlic" in block.entries[0].text
    stem = PurePosixPath(done.path).stem
    assert f"(2026-10-01; superseded by [[{stem}]], Areas/Garden.md > Beds) North bed: garlic" in block.block
