"""The agent's write path (stage, commit, discard, remember, pin, log) and decay end to end.

Library tests use `make_memory` (FakeEmbedder) over a fresh, empty vault so that every
similarity in them is one this file controls; CLI tests run the real typer app with
`--embedder fake --index-dir` and `--now`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import NOW, MemoryFactory, snapshot
from vault_memory.cli import app
from vault_memory.errors import (
    ConcurrentEditError,
    ConfigError,
    NoteError,
    NoteNotFoundError,
    UnsafePathError,
)
from vault_memory.index.calibration import FAKE
from vault_memory.index.calibration import save as save_calibration
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.memory import Memory
from vault_memory.search.decay import state_from_meta
from vault_memory.search.rules import DEFAULT_RULES
from vault_memory.vault import notefile
from vault_memory.vault.fields import parse_time
from vault_memory.vault.notefile import parse_note, read_note

REPO = Path(__file__).resolve().parent.parent
DAY = dt.timedelta(days=1)


# -- helpers ------------------------------------------------------------------------------


@pytest.fixture()
def empty_vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    root.mkdir()
    return root


@pytest.fixture()
def mem(make_memory: MemoryFactory, empty_vault: Path) -> Memory:
    return make_memory(vault=empty_vault)


def put(vault: Path, rel: str, text: str) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def note(vault: Path, rel: str, body: str, **meta: Any) -> Path:
    head = "".join(f"{k}: {v}\n" for k, v in meta.items())
    return put(vault, rel, (f"---\n{head}---\n" if meta else "") + body)


def meta_of(vault: Path, rel: str) -> dict[str, Any]:
    return read_note(vault, rel).meta


def staged_files(vault: Path) -> list[str]:
    root = vault / "Memory" / "Staged"
    return sorted(p.relative_to(vault).as_posix() for p in root.rglob("*.md")) if root.exists() else []


def iso(t: dt.datetime) -> str:
    return t.isoformat()


BACKGROUND = [
    "The car tyres are in the shed.",
    "Grandma likes orchids.",
    "The dentist is on Main Street.",
    "Piano lessons are on Wednesday.",
    "The boiler pressure should be 1.5 bar.",
    "Our landlord is called Jo.",
    "The bike lock code is 4711.",
    "The passport expires in 2029.",
    "The router admin page is at 192.168.1.1.",
    "Tomatoes need watering every evening.",
]


def background(vault: Path) -> None:
    """Unrelated recent notes: a vault is more than the two notes a test compares.

    Recall's relevance is min-max scaled among the candidates; with only two candidates
    the better one is 1.0 and the other 0.5 however close they are, which no real vault
    looks like.
    """
    for i, text in enumerate(BACKGROUND):
        note(vault, f"Background/bg{i}.md", text + "\n", created="2026-11-01")


SLACK = "We use Slack for the team chat."
DISCORD = "We use Discord for the team chat now."


# -- stage --------------------------------------------------------------------------------


def test_stage_writes_a_staged_note_that_recall_skips(mem: Memory, empty_vault: Path) -> None:
    sm = mem.stage(
        "Maya prefers short standups, ten minutes at most.",
        title="Standup length",
        tags=["#team", "meetings", "team"],
        now=NOW,
    )
    assert sm.path == "Memory/Staged/Standup length.md"  # the title is the file name; the id is in frontmatter
    raw = (empty_vault / sm.path).read_text(encoding="utf-8")
    assert raw == (
        "---\n"
        f"node_id: {sm.node_id}\n"
        "status: staged\n"
        "created: 2026-11-29T12:00:00+00:00\n"
        "expires: 2026-12-06T12:00:00+00:00\n"
        "tags: [team, meetings]\n"
        "---\n"
        "Maya prefers short standups, ten minutes at most.\n"  # no heading repeating the title
    )
    assert not sm.needs_review and sm.conflicts == []
    assert sm.expires == NOW + 7 * DAY
    # indexed right away, but out of normal recall
    row = internals(mem).catalog.note_by_id(sm.node_id)
    assert row is not None and row.path == sm.path
    assert mem.recall("standup length minutes", now=NOW, touch=False) == []
    assert [h.node_id for h in mem.recall("standup length minutes", now=NOW, touch=False, include_staged=True)] == [
        sm.node_id
    ]


def test_stage_default_title_and_heading(mem: Memory, empty_vault: Path) -> None:
    long = mem.stage(
        "The backup job runs nightly at two and keeps thirty daily snapshots on the NAS. Restores take an hour.",
        now=NOW,
    )
    # the whole first sentence, never cut with "…"; the file name is it, cut on a word when too long
    assert long.title == "The backup job runs nightly at two and keeps thirty daily snapshots on the NAS"
    assert long.path == "Memory/Staged/The backup job runs nightly at two and keeps thirty daily.md"
    assert meta_of(empty_vault, long.path)["title"] == long.title  # the full title, since the name is shorter
    assert (
        (empty_vault / long.path)
        .read_text(encoding="utf-8")
        .endswith(
            "---\nThe backup job runs nightly at two and keeps thirty daily snapshots on the NAS. "
            "Restores take an hour.\n"
        )
    )
    short = mem.stage("Tea, not coffee.", now=NOW)
    assert short.title == "Tea, not coffee" and short.path == "Memory/Staged/Tea, not coffee.md"
    assert "title" not in meta_of(empty_vault, short.path)  # the file name says it
    headed = mem.stage("# Printer\n\nThe office printer needs the blue cable.", now=NOW)
    assert headed.title == "Printer" and headed.text == "The office printer needs the blue cable."
    assert headed.path == "Memory/Staged/Printer.md"
    # a second memory with the same title gets " 2", not a hex suffix
    again = mem.stage("# Printer\n\nThe home printer uses USB.", now=NOW)
    assert again.path == "Memory/Staged/Printer 2.md" and again.title == "Printer"
    assert meta_of(empty_vault, again.path)["title"] == "Printer"


@pytest.mark.parametrize("bad", ["", "   \n\t"])
def test_stage_refuses_empty_text(mem: Memory, empty_vault: Path, bad: str) -> None:
    with pytest.raises(ConfigError):
        mem.stage(bad, now=NOW)
    assert snapshot(empty_vault) == {}


def test_stage_same_text_twice_is_one_memory(mem: Memory, empty_vault: Path) -> None:
    first = mem.stage("Parking is on level minus two.", now=NOW)
    again = mem.stage("  parking is on level   minus two. ", now=NOW + dt.timedelta(minutes=1))
    assert again.existing and again.node_id == first.node_id
    assert staged_files(empty_vault) == [first.path]


def test_stage_flags_conflict_with_a_committed_note(mem: Memory, empty_vault: Path) -> None:
    note(empty_vault, "Notes/team chat.md", f"# Team chat\n\n{SLACK}\n", created="2026-10-01")
    mem.index()
    old = internals(mem).catalog.note_by_path("Notes/team chat.md")
    assert old is not None
    sm = mem.stage(DISCORD, title="Team chat", now=NOW)
    assert sm.needs_review
    assert sm.conflicts_with == [old.node_id]
    assert sm.conflicts[0].similarity is not None and sm.conflicts[0].similarity >= internals(mem).calibration.conflict
    assert sm.conflicts[0].title == "Team chat" and sm.conflicts[0].path == "Notes/team chat.md"
    meta = meta_of(empty_vault, sm.path)
    # a link Obsidian's graph and backlinks read, and the file name does not clash with the old note's
    assert meta["needs_review"] is True and meta["conflicts_with"] == ["[[team chat]]"]
    assert sm.path == "Memory/Staged/Team chat 2.md"
    # read back from the file, the link is the same note
    [listed] = mem.staged(now=NOW)
    assert listed.conflicts_with == [old.node_id] and listed.conflicts[0].path == "Notes/team chat.md"
    # something unrelated is not flagged
    other = mem.stage("The dentist appointment is on Tuesday at nine.", title="Dentist", now=NOW)
    assert not other.needs_review and "needs_review" not in meta_of(empty_vault, other.path)


def test_conflicts_ignore_staged_memories_and_episodes(mem: Memory, empty_vault: Path) -> None:
    mem.log("We use Slack for the team chat, said Maya", now=NOW)
    mem.stage(SLACK, title="Team chat", now=NOW)
    sm = mem.stage(DISCORD, title="Team chat", now=NOW)
    assert not sm.needs_review, "only committed notes count as conflicts"


def test_stage_threshold_is_the_config_value(make_memory: MemoryFactory, empty_vault: Path) -> None:
    note(empty_vault, "team chat.md", f"# Team chat\n\n{SLACK}\n")
    strict = make_memory(vault=empty_vault, calibration=replace(FAKE, conflict=0.999))
    strict.index()
    assert not strict.stage(DISCORD, title="Team chat", now=NOW).needs_review


# -- commit -------------------------------------------------------------------------------


def test_commit_moves_to_memory_folder_and_keeps_human_edits(mem: Memory, empty_vault: Path) -> None:
    sm = mem.stage("The VPN needs the hardware key since March.", title="VPN", tags=["it"], now=NOW - 2 * DAY)
    path = empty_vault / sm.path
    # a human edits the staged note before it is committed: their bytes must survive
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("tags: [it]\n", 'tags: [it]\nsource: "chat with Maya"  # keep\n') + "\nAdded by hand.\n",
        encoding="utf-8",
    )
    report = mem.commit([sm.node_id], now=NOW)
    assert report.left == []
    [done] = report.committed
    assert done.node_id == sm.node_id and done.staged_path == sm.path
    assert done.path == "Memory/VPN.md" and done.tier == "short"
    assert not path.exists() and staged_files(empty_vault) == []
    raw = (empty_vault / done.path).read_text(encoding="utf-8")
    assert raw == (
        "---\n"
        f"node_id: {sm.node_id}\n"
        "created: 2026-11-27T12:00:00+00:00\n"
        "tags: [it]\n"
        'source: "chat with Maya"  # keep\n'
        "last_accessed: 2026-11-29T12:00:00+00:00\n"
        "tier: short\n"
        "---\n"
        "The VPN needs the hardware key since March.\n\nAdded by hand.\n"
    )
    row = internals(mem).catalog.note_by_id(sm.node_id)
    assert row is not None and row.path == done.path  # the index followed the move (same identity)
    hits = mem.recall("VPN hardware key", now=NOW, touch=False)
    assert [h.node_id for h in hits] == [sm.node_id]
    assert hits[0].strength == 1.0 and hits[0].tier == "short"


def test_a_commit_never_moves_a_last_use_back(mem: Memory, empty_vault: Path) -> None:
    """Owned times never move backwards on any path (issue 41): a draft whose `last_accessed` someone set
    ahead (a synced copy from a machine whose clock runs late) keeps it when committed."""
    sm = mem.stage("The boiler service is due in May.", title="Boiler", now=NOW - DAY)
    path = empty_vault / sm.path
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("---\n", "---\nlast_accessed: 2040-01-01T00:00:00+00:00\n", 1), encoding="utf-8")
    [done] = mem.commit([sm.node_id], now=NOW).committed
    assert parse_time(meta_of(empty_vault, done.path)["last_accessed"]) == dt.datetime(2040, 1, 1, tzinfo=dt.UTC)


def test_a_committed_memory_stays_short_however_often_it_is_used(mem: Memory, empty_vault: Path) -> None:
    sm = mem.stage("Backups live on the NAS under /volume1/backup.", title="Backups", now=NOW)
    [done] = mem.commit([sm.node_id], now=NOW).committed
    for day in range(4):  # each use a half-life after the last, so each is written (rehearse_below)
        mem.recall("backups NAS volume1", now=NOW + (day + 1) * 8 * DAY + dt.timedelta(hours=1))
    meta = meta_of(empty_vault, done.path)
    assert meta["tier"] == "short" and "rehearsal_days" not in meta
    assert "access_count" not in meta  # only the last use moves the curve
    assert parse_time(meta["last_accessed"]) == NOW + 32 * DAY + dt.timedelta(hours=1)


def test_an_earlier_versions_days_of_use_are_removed_on_the_next_rehearsal(mem: Memory, empty_vault: Path) -> None:
    path = empty_vault / "Memory" / "Wifi.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nnode_id: wifi0001\ntier: short\nrehearsal_days: 2\nlast_accessed: 2026-11-10T09:00:00+00:00\n"
        "mine: keep\n---\nThe wifi password is on the router's sticker.\n",
        encoding="utf-8",
    )
    mem.index()
    mem.recall("wifi password router sticker", now=NOW + DAY)
    meta = meta_of(empty_vault, "Memory/Wifi.md")
    assert "rehearsal_days" not in meta and meta["tier"] == "short" and meta["mine"] == "keep"
    assert parse_time(meta["last_accessed"]) == NOW + DAY and "access_count" not in meta


def test_commit_unknown_id_lists_what_is_staged(mem: Memory, empty_vault: Path) -> None:
    a = mem.stage("Alpha fact about the garden hose.", now=NOW)
    b = mem.stage("Beta fact about the bicycle lock.", now=NOW)
    before = snapshot(empty_vault)
    with pytest.raises(NoteNotFoundError) as err:
        mem.commit([a.node_id, "nope1234"], now=NOW)
    assert "nope1234" in str(err.value)
    assert a.node_id in str(err.value) and b.node_id in str(err.value)
    assert snapshot(empty_vault) == before, "an unknown id must stop the commit before anything is written"
    for sm in (a, b):
        mem.discard(sm.node_id)
    with pytest.raises(NoteNotFoundError, match="nothing is staged|in .trash"):
        mem.commit(["nope1234"], now=NOW)
    with pytest.raises(ConfigError):
        mem.commit([], now=NOW)


def test_commit_explains_committed_and_trashed_ids(mem: Memory) -> None:
    sm = mem.stage("Gamma fact about the kettle.", now=NOW)
    mem.commit([sm.node_id], now=NOW)
    with pytest.raises(NoteNotFoundError, match="already committed as Memory/"):
        mem.commit([sm.node_id], now=NOW)
    gone = mem.stage("Delta fact about the toaster.", now=NOW)
    mem.discard(gone.node_id)
    with pytest.raises(NoteNotFoundError, match=r"\.trash/"):
        mem.commit([gone.node_id], now=NOW)


def test_commit_by_staged_path_and_refuses_paths_outside(mem: Memory, empty_vault: Path) -> None:
    sm = mem.stage("Epsilon fact about the fridge.", now=NOW)
    report = mem.commit([sm.path], now=NOW)
    assert [c.node_id for c in report.committed] == [sm.node_id]
    for bad in ("../x.md", "/etc/passwd.md"):
        with pytest.raises(UnsafePathError):
            mem.commit([bad], now=NOW)


def test_commit_needs_review_by_id_clears_the_flag(mem: Memory, empty_vault: Path) -> None:
    note(empty_vault, "team chat.md", f"# Team chat\n\n{SLACK}\n")
    mem.index()
    sm = mem.stage(DISCORD, title="Team chat", now=NOW)
    assert sm.needs_review
    [done] = mem.commit([sm.node_id], now=NOW).committed
    meta = meta_of(empty_vault, done.path)
    assert "needs_review" not in meta and "status" not in meta and "expires" not in meta
    assert meta["conflicts_with"] == ["[[team chat]]"]  # kept as a record of the similarity
    assert done.conflicts[0].node_id == sm.conflicts_with[0]


def test_commit_all_commits_everything_not_flagged_and_says_why(mem: Memory, empty_vault: Path) -> None:
    note(empty_vault, "team chat.md", f"# Team chat\n\n{SLACK}\n")
    mem.index()
    ok1 = mem.stage("The router admin page is at 192.168.1.1.", now=NOW - DAY)
    ok2 = mem.stage("Grandma's birthday is on the fourth of May.", now=NOW)
    flagged = mem.stage(DISCORD, title="Team chat", now=NOW)
    expired = mem.stage("A stale idea nobody committed.", now=NOW - 10 * DAY)
    # a note a human dropped into the staging folder, without any frontmatter
    put(empty_vault, "Memory/Staged/by hand.md", "The spare key is under the blue pot.\n")
    # and one whose YAML is broken
    put(empty_vault, "Memory/Staged/broken.md", "---\ntitle: [unclosed\n---\nSomething.\n")
    report = mem.commit_all(now=NOW)

    committed = {c.staged_path: c for c in report.committed}
    assert set(committed) == {ok1.path, ok2.path, "Memory/Staged/by hand.md"}
    hand = committed["Memory/Staged/by hand.md"]
    assert hand.node_id and hand.path == "Memory/by hand.md"
    assert meta_of(empty_vault, "Memory/by hand.md")["node_id"] == hand.node_id

    left = {x.path: x for x in report.left}
    assert left[flagged.path].code == "needs_review"
    old_id = internals(mem).catalog.note_by_path("team chat.md").node_id  # type: ignore[union-attr]
    assert left[flagged.path].reason == f"needs_review: conflicts with {old_id} (Team chat)"
    [exp] = [x for x in report.left if x.code == "expired"]
    assert exp.node_id == expired.node_id and exp.path.startswith(".trash/") and "expired" in exp.reason
    assert left["Memory/Staged/broken.md"].code == "unreadable"
    assert len(report.left) == 3
    # nothing skipped silently: every staged file is either committed or listed as left
    assert sorted(staged_files(empty_vault)) == sorted([flagged.path, "Memory/Staged/broken.md"])
    assert (empty_vault / exp.path).is_file()
    assert report.to_dict()["left"][0]["reason"]
    # a second run commits nothing new and still reports what it leaves
    again = mem.commit_all(now=NOW)
    assert again.committed == [] and {x.code for x in again.left} == {"needs_review", "unreadable"}


def test_commit_all_on_nothing(mem: Memory) -> None:
    report = mem.commit_all(now=NOW)
    assert report.committed == [] and report.left == []


def test_commit_all_leaves_a_note_being_edited(mem: Memory, empty_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = mem.stage("Fact one about the heating schedule.", now=NOW)
    b = mem.stage("Fact two about the window cleaner.", now=NOW)
    real = notefile.write_note

    def racing(vault: Path, rel: str, **kw: Any) -> Any:
        if rel == a.path and kw.get("expected_hash"):
            p = vault / rel
            p.write_text(p.read_text(encoding="utf-8") + "human typing\n", encoding="utf-8")
        return real(vault, rel, **kw)

    monkeypatch.setattr("vault_memory.lifecycle.staging.write_note", racing)
    report = mem.commit_all(now=NOW)
    assert [c.node_id for c in report.committed] == [b.node_id]
    [left] = report.left
    assert left.node_id == a.node_id and left.code == "busy"
    assert (empty_vault / a.path).read_text(encoding="utf-8").endswith("human typing\n")


# -- supersession -------------------------------------------------------------------------


def test_supersedes_links_both_and_successor_ranks_first(mem: Memory, empty_vault: Path) -> None:
    # The old note matches the query verbatim and is fresh: without the link it ranks first.
    note(empty_vault, "team chat.md", f"# Team chat\n\n{SLACK}\n", created=iso(NOW - DAY))
    mem.index()
    old = internals(mem).catalog.note_by_path("team chat.md")
    assert old is not None
    sm = mem.stage(DISCORD, title="Team chat", now=NOW - DAY)
    query = "We use Slack for the team chat"
    # control: committed without a link, the old one wins this query
    control = mem.recall(query, now=NOW, touch=False, include_staged=True)
    assert [h.node_id for h in control[:2]] == [old.node_id, sm.node_id]

    assert old.node_id == "path:team chat.md"  # a human note without an id of its own, until now
    report = mem.commit([sm.node_id], supersedes=old.node_id, now=NOW)
    [done] = report.committed
    old_id = meta_of(empty_vault, "team chat.md")["node_id"]  # the link is state to keep: it gets one
    assert done.supersedes == [old_id]
    # both sides are links Obsidian shows and follows; the API still speaks identities
    assert done.path == "Memory/Team chat 2.md"  # "team chat" is taken (Obsidian's names ignore case)
    assert meta_of(empty_vault, done.path)["supersedes"] == ["[[team chat]]"]
    assert meta_of(empty_vault, "team chat.md")["superseded_by"] == ["[[Team chat 2]]"]
    assert (empty_vault / "team chat.md").read_text(encoding="utf-8").endswith(f"# Team chat\n\n{SLACK}\n")
    hits = mem.recall(query, now=NOW, touch=False)
    assert [h.node_id for h in hits[:2]] == [sm.node_id, old_id]
    assert hits[1].superseded_by == [sm.node_id]


def test_supersedes_by_path_and_refusals(mem: Memory, empty_vault: Path) -> None:
    note(empty_vault, "old.md", "# Old\n\nThe meeting room is B12.\n")
    mem.index()
    sm = mem.stage("The meeting room is C3 now.", now=NOW)
    other = mem.stage("The lunch break is at noon.", now=NOW)
    before = snapshot(empty_vault)
    with pytest.raises(ConfigError, match="staged"):
        mem.commit([sm.node_id], supersedes=other.node_id, now=NOW)
    with pytest.raises(NoteNotFoundError):
        mem.commit([sm.node_id], supersedes="no-such-note", now=NOW)
    with pytest.raises(UnsafePathError):
        mem.commit([sm.node_id], supersedes="../old.md", now=NOW)
    assert snapshot(empty_vault) == before
    [done] = mem.commit([sm.node_id], supersedes="old.md", now=NOW).committed
    old_meta = meta_of(empty_vault, "old.md")
    assert old_meta["superseded_by"] == ["[[The meeting room is C3 now]]"]
    assert done.supersedes == [old_meta["node_id"]]
    assert meta_of(empty_vault, done.path)["supersedes"] == ["[[old]]"]
    # a second successor is added, not replacing the first; named by title this time
    [second] = mem.commit([other.node_id], supersedes="Old", now=NOW).committed
    assert meta_of(empty_vault, "old.md")["superseded_by"] == [
        "[[The meeting room is C3 now]]",
        "[[The lunch break is at noon]]",
    ]
    assert second.supersedes == [old_meta["node_id"]]


def test_supersedes_is_undone_when_the_new_one_cannot_be_committed(
    mem: Memory, empty_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    note(empty_vault, "old.md", "# Old\n\nThe meeting room is B12.\n")
    mem.index()
    sm = mem.stage("The meeting room is C3 now.", now=NOW)
    real = notefile.move_note

    def busy(*a: Any, **kw: Any) -> Any:
        raise ConcurrentEditError(sm.path, "changed on disk")

    monkeypatch.setattr("vault_memory.lifecycle.staging.move_note", busy)
    report = mem.commit([sm.node_id], supersedes="old.md", now=NOW)
    monkeypatch.setattr("vault_memory.lifecycle.staging.move_note", real)
    assert report.committed == [] and report.left[0].code == "busy"
    assert "superseded_by" not in meta_of(empty_vault, "old.md")
    assert staged_files(empty_vault) == [sm.path]


# -- discard and expiry -------------------------------------------------------------------


def test_discard_moves_to_trash(mem: Memory, empty_vault: Path) -> None:
    sm = mem.stage("An idea that turned out wrong.", now=NOW)
    raw = (empty_vault / sm.path).read_bytes()
    where = mem.discard(sm.node_id)
    assert where == f".trash/{Path(sm.path).name}"
    assert not (empty_vault / sm.path).exists()
    trashed = read_note(empty_vault, where)
    assert trashed.meta["status"] == "discarded" and trashed.body == parse_note("x", raw).body
    assert internals(mem).catalog.note_by_id(sm.node_id) is None  # gone from the index, not from the disk
    with pytest.raises(NoteNotFoundError):
        mem.discard(sm.node_id)
    # same name again: the trash never overwrites
    sm2 = mem.stage("An idea that turned out wrong.", now=NOW)
    (empty_vault / sm2.path).rename(empty_vault / sm.path)
    assert mem.discard(sm2.node_id) == f".trash/{Path(sm.path).stem} (2).md"


def test_expired_staged_memories_go_to_trash_pinned_ones_stay(mem: Memory, empty_vault: Path) -> None:
    old = mem.stage("Expiring fact about the lawn mower.", now=NOW - 8 * DAY)
    keep = mem.stage("Pinned fact about the fuse box.", now=NOW - 8 * DAY)
    fresh = mem.stage("Fresh fact about the doorbell.", now=NOW - DAY)
    mem.pin(keep.node_id)
    listed = mem.staged(now=NOW)
    assert [s.node_id for s in listed] == [keep.node_id, fresh.node_id]
    assert listed[0].pinned and listed[0].expires is None
    trashed = empty_vault / ".trash" / Path(old.path).name
    assert trashed.is_file() and meta_of(empty_vault, f".trash/{trashed.name}")["status"] == "expired"
    assert internals(mem).catalog.note_by_id(old.node_id) is None
    # exactly at the expiry instant it is expired; one second before it is not
    edge = mem.stage("Edge fact about the attic.", now=NOW - 7 * DAY + dt.timedelta(seconds=1))
    assert edge.node_id in [s.node_id for s in mem.staged(now=NOW)]
    assert edge.node_id not in [s.node_id for s in mem.staged(now=NOW + dt.timedelta(seconds=1))]


def test_expiry_never_deletes(mem: Memory, empty_vault: Path) -> None:
    for i in range(3):
        mem.stage(f"Fact number {i} about the garage door.", now=NOW - 30 * DAY)
    before = {Path(k).name: v for k, v in snapshot(empty_vault).items()}
    assert mem.staged(now=NOW) == []
    after = {Path(k).name: v for k, v in snapshot(empty_vault).items() if k.startswith(".trash")}
    assert set(after) == set(before)
    for name, data in after.items():
        assert parse_note(name, data).body == parse_note(name, before[name]).body


# -- remember -----------------------------------------------------------------------------


def test_remember_commits_in_one_step(mem: Memory, empty_vault: Path) -> None:
    done = mem.remember("The cat gets fed at seven and at six.", tags=["home"], now=NOW)
    assert done.path.startswith("Memory/") and not done.path.startswith("Memory/Staged/")
    assert staged_files(empty_vault) == []
    meta = meta_of(empty_vault, done.path)
    assert meta["node_id"] == done.node_id and meta["tier"] == "short" and meta["tags"] == ["home"]
    assert [h.node_id for h in mem.recall("when does the cat get fed", now=NOW, touch=False)] == [done.node_id]


def test_remember_commits_a_conflict_and_reports_it(mem: Memory, empty_vault: Path) -> None:
    note(empty_vault, "team chat.md", f"# Team chat\n\n{SLACK}\n")
    mem.index()
    old = internals(mem).catalog.note_by_path("team chat.md")
    assert old is not None
    done = mem.remember(DISCORD, title="Team chat", now=NOW)
    assert not done.existing
    assert [c.node_id for c in done.conflicts] == [old.node_id]
    meta = meta_of(empty_vault, done.path)
    assert meta["conflicts_with"] == ["[[team chat]]"] and "needs_review" not in meta
    assert done.to_dict()["conflicts_with"] == [old.node_id]


def test_remember_same_text_rehearses_instead_of_copying(mem: Memory, empty_vault: Path) -> None:
    first = mem.remember("The wifi password is on the fridge.", now=NOW - 10 * DAY)
    files = sorted(snapshot(empty_vault))
    again = mem.remember("The WiFi password is on the fridge. ", now=NOW)
    assert again.existing and again.node_id == first.node_id and again.path == first.path
    assert sorted(snapshot(empty_vault)) == files
    meta = meta_of(empty_vault, first.path)
    assert meta["last_accessed"] == NOW and "access_count" not in meta


# -- pin ----------------------------------------------------------------------------------


def test_pin_and_unpin_by_id_and_path_touch_one_line(mem: Memory, empty_vault: Path) -> None:
    original = "---\ntitle: Fuse box   # the grey one\nnode_id: abc123\n---\nFuse box is behind the coats.\n"
    put(empty_vault, "House/fuse box.md", original)
    mem.index()
    res = mem.pin("abc123")
    assert res.path == "House/fuse box.md" and res.pinned and res.changed and res.node_id == "abc123"
    # one line written, and no time: our write is not evidence of when the note was stated
    assert (empty_vault / "House/fuse box.md").read_text(encoding="utf-8") == original.replace(
        "---\nFuse", "pinned: true\n---\nFuse"
    )
    assert not mem.pin("House/fuse box.md").changed
    assert not mem.pin("House/fuse box").changed  # .md may be left out
    row = internals(mem).catalog.note_by_id("abc123")
    assert row is not None and state_from_meta(row.meta).pinned  # the index followed
    assert mem.unpin("House/fuse box.md").changed
    assert (empty_vault / "House/fuse box.md").read_text(encoding="utf-8") == original  # back to its bytes


def test_a_pinned_note_is_used_without_a_write(mem: Memory, empty_vault: Path) -> None:
    text = "---\npinned: true\ncreated: 2026-01-02\n---\nFuse box is behind the coats.\n"
    put(empty_vault, "House/fuse box.md", text)
    mem.index()
    before = snapshot(empty_vault)
    hits = mem.recall("where is the fuse box", now=NOW)
    assert hits[0].path == "House/fuse box.md" and hits[0].strength == 1.0 and not hits[0].rehearsed
    assert snapshot(empty_vault) == before  # strength 1 either way: nothing to keep
    mem.unpin("House/fuse box.md")
    mem.recall("where is the fuse box", now=NOW)
    assert "last_accessed" in meta_of(empty_vault, "House/fuse box.md")  # let go: its use counts again


@pytest.mark.parametrize(
    "target", ["../outside.md", "/etc/passwd", "..\\outside.md", "C:\\Windows\\x.md", "House/../../outside.md"]
)
def test_pin_refuses_untrusted_paths(mem: Memory, empty_vault: Path, target: str) -> None:
    put(empty_vault.parent, "outside.md", "secret\n")
    before = (empty_vault.parent / "outside.md").read_bytes()
    with pytest.raises(UnsafePathError):
        mem.pin(target)
    assert (empty_vault.parent / "outside.md").read_bytes() == before


def test_pin_refuses_symlink_out_and_non_notes(mem: Memory, empty_vault: Path) -> None:
    put(empty_vault.parent, "outside.md", "secret\n")
    os.symlink(empty_vault.parent / "outside.md", empty_vault / "link.md")
    with pytest.raises(UnsafePathError):
        mem.pin("link.md")
    put(empty_vault, ".obsidian/workspace.md", "x\n")
    with pytest.raises(NoteError, match="not a note"):
        mem.pin(".obsidian/workspace.md")
    with pytest.raises(NoteNotFoundError):
        mem.pin("no-such-id")


def test_pin_finds_a_memory_the_index_has_not_seen(make_memory: MemoryFactory, empty_vault: Path) -> None:
    holder = make_memory(vault=empty_vault)
    internals(holder).hold_writer_lock()  # e.g. a watcher in another process
    other = make_memory(vault=empty_vault)
    done = other.remember("The plumber's number is in the blue folder.", now=NOW)
    assert internals(other).catalog.note_by_id(done.node_id) is None  # not indexed: the lock holder will do it
    assert other.pin(done.node_id).path == done.path
    holder.close()


# -- log ----------------------------------------------------------------------------------


def test_log_creates_and_appends_todays_note(mem: Memory, empty_vault: Path) -> None:
    t = dt.datetime(2026, 11, 29, 9, 5, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    rel = mem.log("Asked about the VPN", now=t)
    assert rel == "Memory/Episodes/2026-11-29.md"
    mem.log("Answered: hardware key\nthen closed the ticket", now=t + dt.timedelta(minutes=50))
    raw = (empty_vault / rel).read_text(encoding="utf-8")
    assert raw.startswith("---\ndate: 2026-11-29\n")
    assert read_note(empty_vault, rel).body == (
        "- 09:05 Asked about the VPN\n- 09:55 Answered: hardware key\n  then closed the ticket\n"
    )
    assert mem.log("Next day", now=t + DAY) == "Memory/Episodes/2026-11-30.md"
    # indexed as an ordinary note (dated by its `date:`)
    row = internals(mem).catalog.note_by_path(rel)
    assert row is not None and state_from_meta(row.meta).anchor_source == "property:date"


def test_log_keeps_human_content_and_retries_a_race(
    mem: Memory, empty_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rel = "Memory/Episodes/2026-11-29.md"
    put(empty_vault, rel, "---\ndate: 2026-11-29\nmood: fine\n---\nMorning notes by hand, no newline")
    real = notefile.write_note
    calls = {"n": 0}

    def racing(vault: Path, path: str, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:  # the human saves between our read and our write
            p = vault / path
            p.write_text(p.read_text(encoding="utf-8") + "\n- 11:59 typed by the human\n", encoding="utf-8")
        return real(vault, path, **kw)

    monkeypatch.setattr("vault_memory.lifecycle.edits.write_note", racing)
    mem.log("agent entry", now=NOW)
    assert calls["n"] == 2
    raw = (empty_vault / rel).read_bytes()  # (indexing then gave the note a node_id)
    assert _without(raw, ("node_id",)).decode() == (
        "---\ndate: 2026-11-29\nmood: fine\n---\nMorning notes by hand, no newline\n"
        "- 11:59 typed by the human\n- 12:00 agent entry\n"
    )


def test_log_refuses_empty(mem: Memory) -> None:
    with pytest.raises(ConfigError):
        mem.log("  ", now=NOW)


# -- read-only and the writer lock --------------------------------------------------------


def test_read_only_refuses_every_write(make_memory: MemoryFactory, empty_vault: Path) -> None:
    ro = make_memory(vault=empty_vault, read_only=True)
    calls: list[Callable[[], Any]] = [
        lambda: ro.stage("x fact", now=NOW),
        lambda: ro.remember("x fact", now=NOW),
        lambda: ro.commit(["x"], now=NOW),
        lambda: ro.commit_all(now=NOW),
        lambda: ro.discard("x"),
        lambda: ro.pin("x"),
        lambda: ro.unpin("x"),
        lambda: ro.log("x", now=NOW),
    ]
    for call in calls:
        with pytest.raises(ConfigError, match="read-only"):
            call()
    assert snapshot(empty_vault) == {}


def test_writes_while_another_process_holds_the_lock(make_memory: MemoryFactory, empty_vault: Path) -> None:
    holder = make_memory(vault=empty_vault)
    internals(holder).hold_writer_lock()
    agent = make_memory(vault=empty_vault)
    sm = agent.stage("Written while a watcher runs.", now=NOW)
    assert (empty_vault / sm.path).is_file()  # the vault is the truth; the index catches up
    assert [s.node_id for s in agent.staged(now=NOW)] == [sm.node_id]
    report = agent.commit_all(now=NOW)
    assert [c.node_id for c in report.committed] == [sm.node_id]
    holder.index()  # what the watcher would do
    row = internals(holder).catalog.note_by_id(sm.node_id)
    assert row is not None and row.path == report.committed[0].path
    holder.close()


# -- recall writes only what it owns ------------------------------------------------------


def _without(raw: bytes, keys: tuple[str, ...]) -> bytes:
    """The file without those keys' lines (and without a frontmatter block that held only them)."""
    out = b"".join(
        line for line in raw.splitlines(keepends=True) if not any(line.startswith(k.encode() + b":") for k in keys)
    )
    bom = b"\xef\xbb\xbf" if out.startswith(b"\xef\xbb\xbf") else b""
    return bom + out[len(bom) :].removeprefix(b"---\n---\n")


def test_recall_changes_only_last_accessed_and_drops_a_retired_count(
    make_memory: MemoryFactory, empty_vault: Path
) -> None:
    put(
        empty_vault,
        "a.md",
        "---\r\ntitle: 'Boiler'   # quoted\r\naccess_count: 4\r\nnode_id: n1\r\ndate: 2026-09-01\r\n---\r\n"
        "The boiler service is every October.\r\n",
    )
    # dated by its name: an undated note is not rehearsed (it has no age to restart)
    put(empty_vault, "2026-09-02.md", "\ufeffThe boiler pressure should read 1.5 bar.\n\n\n")
    put(empty_vault, "c.md", "Unrelated: the car tyres are in the shed.\n")
    mem = make_memory(vault=empty_vault, calibration=replace(FAKE, strong=0.0))
    mem.index()
    before = snapshot(empty_vault)
    used = []
    for query in ("boiler service October", "boiler pressure bar"):  # one note rehearsed by each
        hits = mem.recall(query, k=2, now=NOW)
        assert [h.rehearsed for h in hits] == [True, False]
        used.append(hits[0].path)
    assert sorted(used) == ["2026-09-02.md", "a.md"]
    after = snapshot(empty_vault)
    assert after["c.md"] == before["c.md"]
    # a first write also records the id; the retired access_count goes with our next write
    owned = ("last_accessed", "access_count", "node_id")
    for path in used:
        old, new = before[path], after[path]
        assert old != new
        assert _without(new, owned) == _without(old, owned)
        meta = read_note(empty_vault, path).meta
        assert meta["last_accessed"] == NOW
    assert "access_count" not in read_note(empty_vault, "a.md").meta
    assert b"access_count:" not in after["2026-09-02.md"]


def test_human_edit_between_read_and_write_is_never_lost(
    make_memory: MemoryFactory, empty_vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(empty_vault, "a.md", "The boiler service is every October.\n")
    mem = make_memory(vault=empty_vault)
    mem.index()
    human = b"---\nowner: me\n---\nThe boiler service moved to November.\n"
    real_read = notefile.read_note

    def read_then_human_saves(vault: Path, rel: str) -> Any:
        parsed = real_read(vault, rel)
        (vault / rel).write_bytes(human)
        return parsed

    monkeypatch.setattr("vault_memory.lifecycle.edits.read_note", read_then_human_saves)
    hits = mem.recall("boiler service", now=NOW)
    assert [h.path for h in hits] == ["a.md"]
    raw = (empty_vault / "a.md").read_bytes()
    assert b"The boiler service moved to November." in raw
    assert b"last_accessed" not in raw  # the rehearsal was dropped, the human's bytes stand


def test_index_rebuild_keeps_every_strength(make_memory: MemoryFactory, empty_vault: Path) -> None:
    note(empty_vault, "old.md", "Boiler: serviced in 2025.\n", created="2026-01-01")
    note(empty_vault, "short.md", "Boiler: the valve is stiff.\n", tier="short", created=iso(NOW - 5 * DAY))
    note(empty_vault, "pinned.md", "Boiler: manual in the drawer.\n", pinned="true", created="2020-01-01")
    note(empty_vault, "dated.md", "Boiler: pressure 1.5 bar.\n", date="2026-11-01")
    put(empty_vault, "plain.md", "Boiler: the plumber is Jo.\n")
    mem = make_memory(vault=empty_vault)
    mem.index()
    mem.recall("boiler valve", k=2, now=NOW - DAY)  # some rehearsal state in the files

    def strengths() -> dict[str, float]:
        return {
            r.path: internals(mem).decay.strength(state_from_meta(r.meta), NOW) for r in internals(mem).catalog.notes()
        }

    def recalled() -> dict[str, tuple[float, bool]]:
        return {h.path: (h.strength, h.dormant) for h in mem.recall("boiler", k=10, now=NOW, touch=False)}

    before, before_hits = strengths(), recalled()
    assert len(before) == 5 and len(set(before.values())) >= 4
    mem.index(rebuild=True)
    assert strengths() == before
    assert recalled() == before_hits
    # and from nothing at all (a new index folder, as after deleting the old one)
    fresh = make_memory(vault=empty_vault, index_dir=empty_vault.parent / "new-index")
    fresh.index()
    assert {
        r.path: internals(fresh).decay.strength(state_from_meta(r.meta), NOW) for r in internals(fresh).catalog.notes()
    } == before


# -- the CLI, end to end, with --now ------------------------------------------------------


class Cli:
    def __init__(self, vault: Path, index_dir: Path) -> None:
        self.base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
        self.index_dir = index_dir
        self.runner = CliRunner()

    def __call__(self, *args: str, ok: bool = True, env: dict[str, str] | None = None) -> Any:
        result = self.runner.invoke(app, [*self.base, *args], catch_exceptions=not ok, env=env)
        if ok:
            assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
        return result

    def json(self, *args: str, env: dict[str, str] | None = None) -> Any:
        return json.loads(self(*args, "--json", env=env).stdout)

    def hits(self, *args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """`recall ARGS --json`: its hits (the command prints {"hits": [...], "count": n})."""
        out = self.json("recall", *args, env=env)
        assert out["count"] == len(out["hits"])
        return list(out["hits"])


@pytest.fixture()
def cli(empty_vault: Path, tmp_path: Path) -> Cli:
    return Cli(empty_vault, tmp_path / "cli-index")


def at(t: dt.datetime) -> str:
    return t.isoformat()


def test_cli_newer_statement_ranks_first(cli: Cli, empty_vault: Path) -> None:
    background(empty_vault)
    note(empty_vault, "chat 2026-08.md", "# Team chat\n\nThe team chat is on Slack.\n", created="2026-08-01")
    note(empty_vault, "chat 2026-11.md", "# Team chat\n\nThe team chat is on Discord.\n", created="2026-11-20")
    hits = cli.hits("which app is the team chat on", "--now", at(NOW), "--no-touch")
    paths = [h["path"] for h in hits]
    assert paths[:2] == ["chat 2026-11.md", "chat 2026-08.md"]
    assert hits[0]["strength"] > hits[1]["strength"]
    # the same two notes with the dates swapped: the order follows the dates, not the words
    note(
        empty_vault,
        "chat 2026-08.md",
        "# Team chat\n\nThe team chat is on Slack.\n",
        created="2026-11-20",
        node_id=hits[1]["node_id"],
    )
    note(
        empty_vault,
        "chat 2026-11.md",
        "# Team chat\n\nThe team chat is on Discord.\n",
        created="2026-08-01",
        node_id=hits[0]["node_id"],
    )
    swapped = cli.hits("which app is the team chat on", "--now", at(NOW), "--no-touch")
    assert [h["path"] for h in swapped[:2]] == ["chat 2026-08.md", "chat 2026-11.md"]


def test_cli_newest_statement_stays_first_after_recall_rehearses_both(cli: Cli, empty_vault: Path) -> None:
    """Recall rehearses what it returns, so both statements end up equally strong: the order
    must come from when each was stated, not from strength."""
    background(empty_vault)
    note(empty_vault, "chat 2026-08.md", "# Team chat\n\nThe team chat app is on Slack.\n", created="2026-08-01")
    note(empty_vault, "chat 2026-11.md", "# Team chat\n\nThe team chat is on Discord.\n", created="2026-11-20")
    query = "which app is the team chat on"
    plain = cli.hits(query, "--now", at(NOW), "--no-touch", "--no-decay")
    assert [h["path"] for h in plain[:2]] == ["chat 2026-08.md", "chat 2026-11.md"]  # the older one matches better
    save_calibration(cli.index_dir, replace(FAKE, embedder=FakeEmbedder().identity, strong=0.0))
    for _ in range(3):  # both rehearsed, as an agent recalls each (recall rehearses its best hit)
        cli.hits("team chat app Slack", "--now", at(NOW))
        hits = cli.hits(query, "--now", at(NOW))
        assert [h["path"] for h in hits[:2]] == ["chat 2026-11.md", "chat 2026-08.md"]
    assert meta_of(empty_vault, "chat 2026-08.md")["last_accessed"] == NOW
    assert hits[1]["strength"] == 1.0 > hits[0]["strength"]  # the older one rehearsed: stronger, still second


def test_cli_transcripts_keep_relevance_order(cli: Cli, empty_vault: Path) -> None:
    """Freshness orders statements of a fact, not records: labelled transcripts stay in relevance order."""
    background(empty_vault)
    old = "# Team chat\n\nThe team chat app is on Slack.\n"
    new = "# Team chat\n\nThe team chat is on Discord.\n"
    note(empty_vault, "chat 2026-08.md", old, created="2026-08-01")
    note(empty_vault, "chat 2026-11.md", new, created="2026-11-20")
    query = "which app is the team chat on"
    plain = cli.hits(query, "--now", at(NOW), "--no-touch", "--no-decay")
    assert [h["path"] for h in plain[:2]] == ["chat 2026-08.md", "chat 2026-11.md"]  # the older one matches better
    decayed = cli.hits(query, "--now", at(NOW), "--no-touch")
    assert [h["path"] for h in decayed[:2]] == ["chat 2026-11.md", "chat 2026-08.md"]  # facts: newest first
    note(empty_vault, "chat 2026-08.md", old, created="2026-08-01", type="conversation", node_id=plain[0]["node_id"])
    note(empty_vault, "chat 2026-11.md", new, created="2026-11-20", type="Conversation", node_id=plain[1]["node_id"])
    records = cli.hits(query, "--now", at(NOW), "--no-touch")
    assert [h["path"] for h in records[:2]] == ["chat 2026-08.md", "chat 2026-11.md"]


def test_cli_every_query_word_is_a_cue_for_a_dormant_note(cli: Cli, empty_vault: Path) -> None:
    background(empty_vault)
    note(
        empty_vault,
        "spare key.md",
        "# Household\n\nThe spare key for the garden shed hangs behind the calendar "
        "in the kitchen, next to the bicycle pump, the torch and the old radio.\n",
        created="2023-01-01",
    )
    later = at(NOW + 30 * DAY)  # ~1,400 days on a 60-day half-life: deeply dormant
    hits = cli.hits("garden shed key", "--now", later, "--no-touch", "--explain")
    assert [h["path"] for h in hits][:1] == ["spare key.md"]
    assert hits[0]["dormant"] and hits[0]["reactivated"] and hits[0]["similarity"] < 0.5
    assert hits[0]["explain"]["cued_by"] == "every word of the query"  # --explain names the cue
    # a question's first hit is cued too, whatever words it holds (here two of them: shed, key)
    asked = cli.hits("where do I keep the hedge trimmer and the shed key?", "--now", later, "--no-touch", "--explain")
    assert asked[0]["path"] == "spare key.md" and asked[0]["reactivated"]
    assert asked[0]["explain"]["cued_by"] == "the first hit of a question"
    # not every word, and no question: a loose cue. Recall still finds it when asked (forgetting
    # decides what memory offers unasked, not what it finds: issue 24), marked dormant, not back
    query = "garden shed lawnmower hedge trimmer"
    loose = next(h for h in cli.hits(query, "--now", later, "--no-touch") if h["path"] == "spare key.md")
    assert loose["dormant"] and not loose["reactivated"]
    block = cli.json("prefetch", query, "--now", later, "--no-refresh-staged")
    assert "spare key.md" not in [e["path"] for e in block["entries"]]  # ... and prefetch leaves it out
    # (as kept out by decay when it would have been an entry, i.e. not weak for the turn)
    assert ("spare key.md" in [k["path"] for k in block["kept_out"]]) == (not loose["weak"])


def test_cli_old_pinned_note_still_comes_back(cli: Cli, empty_vault: Path) -> None:
    background(empty_vault)
    # long enough that the one-word query below is a loose match (cosine well under 0.62)
    note(
        empty_vault,
        "pinned.md",
        "# Alarm code\n\nThe house alarm code is written in the red notebook on the top shelf of the study.\n",
        created="2023-01-01",
    )
    note(
        empty_vault,
        "unpinned.md",
        "# Alarm battery\n\nThe house alarm battery was replaced by the electrician "
        "last spring, together with the smoke detectors in the hallway.\n",
        created="2023-01-01",
    )
    cli("index")
    assert "pinned" in cli("pin", "pinned.md").stdout
    hits = cli.hits("alarm", "--now", at(NOW), "-k", "2")
    by_path = {h["path"]: h for h in hits}
    assert by_path["pinned.md"]["pinned"] and by_path["pinned.md"]["strength"] == 1.0
    assert not by_path["pinned.md"]["dormant"] and by_path["unpinned.md"]["dormant"]  # found, marked forgotten
    block = cli.json("prefetch", "alarm", "--now", at(NOW), "--no-refresh-staged")
    assert "unpinned.md" not in [e["path"] for e in block["entries"]]  # a faded note is not offered unasked
    cli("unpin", "pinned.md")
    # a one-word loose match is not a use of the note: it was not rehearsed, and decays from 2023
    assert "last_accessed" not in meta_of(empty_vault, "pinned.md")
    later = at(NOW + 400 * DAY)  # 400 days of a 60-day half-life: strength < 0.01
    assert all(h["dormant"] for h in cli.hits("alarm", "--now", later, "-k", "2", "--no-touch"))  # both now


def test_cli_dormant_short_note_reactivates_on_a_near_verbatim_query(cli: Cli, empty_vault: Path) -> None:
    text = "The staging server password rotates every Monday morning at nine."
    # The fake embedder scores a one-word query ~0.5 against a short note: a calibration record
    # (as `vault-memory calibrate` saves one) with a higher clear-match bar keeps "loose" loose.
    save_calibration(cli.index_dir, replace(FAKE, embedder=FakeEmbedder().identity, strong=0.6))
    note(
        empty_vault, "Memory/password.md", f"# Password rotation\n\n{text}\n", tier="short", created=iso(NOW - 60 * DAY)
    )
    loose = "password"
    [found] = cli.hits(loose, "--now", at(NOW), "--no-touch")  # found when asked, marked forgotten ...
    assert found["path"] == "Memory/password.md" and found["dormant"] and not found["reactivated"]
    assert found["similarity"] < 0.62
    block = cli.json("prefetch", loose, "--now", at(NOW), "--no-refresh-staged")
    assert block["entries"] == [] and [k["path"] for k in block["kept_out"]] == ["Memory/password.md"]
    [hit] = cli.hits("staging server password rotates every Monday morning", "--now", at(NOW))
    assert hit["dormant"] and hit["reactivated"] and hit["similarity"] >= 0.62
    # reactivation is a rehearsal: the note is fresh again
    meta = meta_of(empty_vault, "Memory/password.md")
    assert meta["last_accessed"] == NOW and meta["reactivated"] == NOW and "access_count" not in meta
    [again] = cli.hits(loose, "--now", at(NOW + DAY), "--no-touch")
    assert not again["dormant"] and not again["reactivated"]


def test_cli_stage_commit_all_lists_what_it_left(cli: Cli, empty_vault: Path) -> None:
    note(empty_vault, "team chat.md", f"# Team chat\n\n{SLACK}\n")
    a = cli("stage", "The recycling goes out on Thursdays.", "--tag", "home", "--now", at(NOW)).stdout.strip()
    assert len(a) == 16 and (empty_vault / "Memory/Staged").is_dir()
    rec = cli.json("stage", DISCORD, "--title", "Team chat", "--now", at(NOW))
    assert rec["needs_review"] and rec["conflicts"][0]["title"] == "Team chat"
    b = rec["node_id"]
    c = cli("stage", "Stale idea", "--now", at(NOW - 9 * DAY))
    assert "staged" in c.stderr
    listing = cli("staged", "--now", at(NOW))
    assert "expired" in listing.stderr and a in listing.stdout and b in listing.stdout
    assert "needs_review: conflicts with" in listing.stdout
    assert sorted(x["node_id"] for x in cli.json("staged", "--now", at(NOW))["staged"]) == sorted([a, b])

    out = cli("commit", "--all", "--now", at(NOW)).stdout
    assert f"committed {a}" in out
    assert f"left      {b}  Team chat" in out and "needs_review: conflicts with" in out
    assert cli.json("commit", "--all", "--now", at(NOW)) == {
        "committed": [],
        "left": [
            {
                "node_id": b,
                "path": rec["path"],
                "title": "Team chat",
                "code": "needs_review",
                "reason": cli.json("staged", "--now", at(NOW))["staged"][0]["conflicts"]
                and f"needs_review: conflicts with {rec['conflicts_with'][0]} (Team chat)",
            }
        ],
    }
    old = rec["conflicts_with"][0]
    assert old == "path:team chat.md"  # the human note has no node_id yet; the path stands for it
    report = cli.json("commit", b, "--supersedes", old, "--now", at(NOW))
    old_id = meta_of(empty_vault, "team chat.md")["node_id"]
    assert report["committed"][0]["supersedes"] == [old_id] and report["left"] == []
    assert cli("staged").stdout.strip() == "nothing staged"
    hits = cli.hits("We use Slack for the team chat", "--now", at(NOW), "--no-touch")
    assert [h["node_id"] for h in hits[:2]] == [b, old_id]


@pytest.mark.slow
def test_cli_remember_discard_log_and_errors(cli: Cli, empty_vault: Path) -> None:
    nid = cli("remember", "The boiler manual is in the drawer.", "--now", at(NOW)).stdout.strip()
    assert meta_of(empty_vault, "Memory/The boiler manual is in the drawer.md")["node_id"] == nid
    again = cli.json("remember", "The boiler manual is in the drawer.", "--now", at(NOW + DAY))
    assert again["existing"] and again["node_id"] == nid
    x = cli("stage", "Throwaway", "--now", at(NOW)).stdout.strip()
    assert cli("discard", x).stdout.strip().startswith(".trash/")
    assert (
        cli("log", "Fixed the boiler", "--now", "2026-11-29T08:30:00+01:00").stdout.strip()
        == "Memory/Episodes/2026-11-29.md"
    )
    assert read_note(empty_vault, "Memory/Episodes/2026-11-29.md").body == "- 08:30 Fixed the boiler\n"
    assert (
        cli("pin", nid, "--json").stdout
        and meta_of(empty_vault, "Memory/The boiler manual is in the drawer.md")["pinned"] is True
    )

    assert isinstance(cli("pin", "../x.md", ok=False).exception, UnsafePathError)
    assert isinstance(cli("commit", "nope", ok=False).exception, NoteNotFoundError)
    assert isinstance(cli("commit", ok=False).exception, ConfigError)
    assert isinstance(cli("commit", "--all", nid, ok=False).exception, ConfigError)


@pytest.mark.slow
def test_cli_exit_codes_through_the_entry_point(empty_vault: Path, tmp_path: Path) -> None:
    # the console entry point (`vault-memory` = vault_memory.cli:run), where errors become exit codes
    base = [
        sys.executable,
        "-m",
        "vault_memory",
        "--vault",
        str(empty_vault),
        "--index-dir",
        str(tmp_path / "idx"),
        "--embedder",
        "fake",
    ]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], capture_output=True, text=True, cwd=REPO, timeout=120)

    assert run("pin", "/etc/passwd").returncode == 2
    missing = run("commit", "deadbeef")
    assert missing.returncode == 3 and "nothing is staged" in missing.stderr
    ok = run("stage", "A fact from a subprocess.", "--now", at(NOW))
    assert ok.returncode == 0 and len(ok.stdout.strip()) == 16
    data = yaml.safe_load(run("staged", "--json", "--now", at(NOW)).stdout)
    assert data["staged"][0]["node_id"] == ok.stdout.strip() and data["count"] == 1


@pytest.mark.parametrize("supersedes", [None, "Editor"])
def test_remember_writes_its_note_once_as_stage_then_commit_would_leave_it(
    make_memory: MemoryFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, supersedes: str | None
) -> None:
    """Issue 25: remember writes the new note once, into place (no draft in the staging folder to
    move and rewrite), and the file is byte for byte what stage then commit leave."""
    from vault_memory.lifecycle import staging

    made: dict[str, str] = {}
    calls: list[str] = []
    real_write, real_move = staging.write_note, staging.move_note
    monkeypatch.setattr(staging, "new_node_id", lambda: "feedc0de00000001")
    monkeypatch.setattr(staging, "write_note", lambda *a, **k: calls.append("write") or real_write(*a, **k))
    monkeypatch.setattr(staging, "move_note", lambda *a, **k: calls.append("move") or real_move(*a, **k))
    for name in ("once", "twice"):
        vault = tmp_path / name
        (vault / "Notes").mkdir(parents=True)
        (vault / "Notes" / "Editor.md").write_text("---\nnode_id: ed1tor0000000001\n---\nI use Vim.\n")
        mem = make_memory(vault=vault, index_dir=tmp_path / f"{name}-index")
        mem.index()
        calls.clear()
        text = "The user switched to Helix in November."
        if name == "once":
            done = mem.remember(text, supersedes=supersedes, now=NOW)
            assert calls == ["write"], calls  # the old note's link is written by edits, not here
            assert done.staged_path == "" and done.path.startswith("Memory/") and done.tier == "short"
        else:
            sm = mem.stage(text, now=NOW)
            done = mem.commit([sm.node_id], supersedes=supersedes, now=NOW).committed[0]
            assert calls == ["write", "write", "move"], calls
        assert not list((vault / "Memory" / "Staged").glob("*.md"))
        assert done.supersedes == (["ed1tor0000000001"] if supersedes else [])
        made[name] = (vault / done.path).read_text() + (vault / "Notes" / "Editor.md").read_text()
    assert made["once"] == made["twice"]


def test_recall_writes_a_use_only_once_the_note_has_lost_half_its_strength(
    make_memory: MemoryFactory, empty_vault: Path
) -> None:
    """Issue 39: rehearsal rewrote people's notes 747 times in the simulated year. A use is written
    only when it moves the note's curve by a half-life or more (ReadRules.rehearse_below): a note
    used again while still strong is left as it is (bench lifetime: 767 -> 355 files rewritten, the
    needed fact in the block unchanged)."""
    put(empty_vault, "boiler.md", "---\ndate: 2026-11-20\n---\nThe boiler service is every October.\n")
    mem = make_memory(vault=empty_vault, calibration=replace(FAKE, strong=0.0))
    mem.index()
    before = snapshot(empty_vault)
    [hit] = mem.recall("boiler service October", k=1, now=NOW)  # 9 days of a 60-day half-life
    assert hit.strength > 0.5 and not hit.rehearsed and snapshot(empty_vault) == before
    [hit] = mem.recall("boiler service October", k=1, now=NOW + 60 * DAY)
    assert hit.strength < 0.5 and hit.rehearsed
    assert read_note(empty_vault, "boiler.md").meta["last_accessed"] == NOW + 60 * DAY
    every = make_memory(
        vault=empty_vault,
        index_dir=empty_vault.parent / "i2",
        calibration=replace(FAKE, strong=0.0),
        rules=DEFAULT_RULES.but(rehearse_below=1.01),
    )
    every.index()
    [hit] = every.recall("boiler service October", k=1, now=NOW + 61 * DAY)
    assert hit.rehearsed  # the rule off: every clear use is written
