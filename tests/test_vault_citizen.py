"""A good citizen in a person's vault (issue 11): write only what must be kept, time from the text.

A git-tracked Obsidian-style vault is built here (templates, daily notes and their settings,
"Excluded files", a private note, `%% comments %%`, an Excalidraw drawing, a canvas, an
attachment, an empty Ctrl-N note) and used the way a new user would.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MemoryFactory
from vault_memory.internals import internals
from vault_memory.memory import Memory
from vault_memory.vault.fields import parse_time, stated_time
from vault_memory.vault.notefile import read_note
from vault_memory.vault.obsidian import date_from_name, date_in_name, read_settings
from vault_memory.vault.walk import IgnoreRules

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
EXE = str(Path(sys.executable).parent / "vault-memory")

FILES = {
    ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Archive/", "/secret-\\d+/"]}),
    ".obsidian/daily-notes.json": json.dumps(
        {"folder": "Daily Notes", "template": "Templates/Daily", "format": "YYYY-MM-DD"}
    ),
    ".obsidian/templates.json": json.dumps({"folder": "Templates"}),
    "Templates/Daily.md": "---\ndate: {{date}}\ntags: [daily]\n---\n# {{date:dddd, MMMM D, YYYY}}\n\n## Log\n- \n",
    "Templates/Person.md": "---\naliases: []\n---\n# {{title}}\n\nMet at: \n",
    "Daily Notes/2026-10-17.md": "---\ndate: 2026-10-17\ntags: [daily]\n---\n# Saturday\n\n## Log\n"
    "- 08:10 Planted garlic in the north bed.\n",
    "Daily Notes/2026-11-02.md": "# Monday\n\n## Log\n- Fixed the bike chain and oiled the gears.\n",
    "People/Maya Chen.md": "---\naliases: [Maya]\n---\n# Maya Chen\n\nMaya leads Project Atlas. She prefers written "
    "async updates over meetings.\n",
    "Areas/Shed.md": "# Shed\n\nThe shed holds the lawnmower and the bikes.\n"
    "%% private: the shed lock combination is 4471 %%\nOil the hinges in spring.\n",
    "Areas/Car.md": "# Car\n\nThe car tyres were changed to winter tyres in November.\n",
    "Areas/Diary.md": "---\nprivate: true\n---\n# Diary\n\nI am worried about the dentist appointment.\n",
    "Archive/Old plan.md": "# Old plan\n\nAn archived plan about the kayak trip.\n",
    "Inbox/secret-42.md": "# Secret\n\nThe kayak is stored at the marina.\n",
    "Inbox/Untitled.md": "",
    "Excalidraw/Board.excalidraw.md": "---\nexcalidraw-plugin: parsed\n---\n# Text Elements\nkayak drawing ^abc\n",
    "Board.canvas": json.dumps({"nodes": [], "edges": []}),
    "attachments/photo.png": "not really a png",
}


def git(vault: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True)
    return out.stdout


@pytest.fixture()
def ovault(tmp_path: Path) -> Path:
    """The Obsidian-style vault, committed to git, every file last changed in 2024."""
    vault = tmp_path / "ovault"
    old = dt.datetime(2024, 3, 5, 9, 0, tzinfo=dt.UTC).timestamp()
    for rel, text in FILES.items():
        path = vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (old, old))
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "vault")
    return vault


@pytest.fixture()
def omem(make_memory: MemoryFactory, ovault: Path, tmp_path: Path) -> Memory:
    return make_memory(vault=ovault, index_dir=tmp_path / "oindex")


def changed(vault: Path) -> list[str]:
    return sorted(
        line[3:].strip('"') for line in git(vault, "-c", "core.quotePath=false", "status", "--porcelain").splitlines()
    )


# -- writing only what must be kept ------------------------------------------------------


def test_index_writes_nothing_and_respects_obsidian(omem: Memory, ovault: Path) -> None:
    report = omem.index()
    assert changed(ovault) == []  # not one byte, not one mtime: git status is clean
    paths = {r.path for r in internals(omem).catalog.notes()}
    assert "People/Maya Chen.md" in paths and "Daily Notes/2026-11-02.md" in paths
    for gone in (
        "Templates/Daily.md",
        "Templates/Person.md",
        "Excalidraw/Board.excalidraw.md",
        "Archive/Old plan.md",
        "Inbox/secret-42.md",
        "Areas/Diary.md",
    ):
        assert gone not in paths, gone
    assert report.passed == {"Areas/Diary.md": "private: true (never indexed, recalled or prefetched)"}
    assert report.failures == {}  # `date: {{date}}` in a template is not read at all
    assert omem.index().counts["unchanged"] == len(paths)  # a second run settles


def test_weak_recalls_write_nothing_and_a_clear_one_rehearses_that_note_only(omem: Memory, ovault: Path) -> None:
    omem.index()
    # every one of these finds something (a note shares a word), none of them finds an answer
    for day, query in enumerate(
        [
            "bicycle holiday",
            "meeting notes",
            "kayak",
            "spring cleaning",
            "bike lights",
            "winter coat",
            "north sea ferry",
            "oil painting class",
            "garden party",
            "gears",
        ]
    ):
        hits = omem.recall(query, now=NOW + dt.timedelta(days=day))
        assert not any(h.rehearsed for h in hits)
    assert changed(ovault) == []
    # a clear answer from an undated note writes nothing either: it has no age (strength 1), and a
    # rehearsal would only start it fading (issue 21: rehearsal writes only where a ranking changes)
    hits = omem.recall(
        "who leads Project Atlas and prefers written async updates over meetings", now=NOW + dt.timedelta(days=30)
    )
    assert hits[0].path == "People/Maya Chen.md" and not hits[0].rehearsed and hits[0].strength == 1.0
    assert changed(ovault) == []
    # a dated note (a daily note's name) that clearly answers, and has lost half its strength (a
    # half-life since it was stated: ReadRules.rehearse_below), is rehearsed, and only it
    hits = omem.recall("fixed the bike chain and oiled the gears", now=NOW + dt.timedelta(days=40))
    assert hits[0].path == "Daily Notes/2026-11-02.md" and hits[0].rehearsed
    assert [h.path for h in hits if h.rehearsed] == ["Daily Notes/2026-11-02.md"]
    assert changed(ovault) == ["Daily Notes/2026-11-02.md"]
    note = read_note(ovault, "Daily Notes/2026-11-02.md")
    assert note.meta["node_id"] and "access_count" not in note.meta and "stated" not in note.meta


def test_templates_private_notes_and_comments_never_come_back(omem: Memory) -> None:
    omem.index()
    for query in ("date dddd MMMM title template", "shed lock combination 4471", "worried about the dentist", "kayak"):
        texts = " ".join(h.text + h.path for h in omem.recall(query, k=10, now=NOW, touch=False))
        block = omem.prefetch(query, now=NOW).block
        for secret in ("{{", "4471", "combination", "worried", "Templates/", "Diary", "kayak"):
            assert secret not in texts and secret not in block, (query, secret)
    hits = omem.recall("shed lawnmower bikes hinges", now=NOW, touch=False)
    shed = next(h for h in hits if h.path == "Areas/Shed.md")
    assert "Oil the hinges" in shed.text and "4471" not in shed.text


# -- time from the text --------------------------------------------------------------------


def test_where_a_note_gets_its_date() -> None:
    utc = dt.UTC
    assert stated_time({}).when is None and stated_time({}).source == "none"  # undated: no file time is read
    assert stated_time({"stated": dt.date(2023, 1, 2)}).when is None  # the retired key (an mtime's day) either
    assert stated_time({}, stem="2025-06-07").when == dt.datetime(2025, 6, 7, tzinfo=utc)
    both = stated_time({"created": dt.date(2023, 1, 1), "updated": "2024-02-02T10:00:00"}, "2022-01-01")
    assert both.source == "property:updated" and both.exact  # the latest of the note's own dates
    assert stated_time({"date": "[[2024-01-01]]"}).when == dt.datetime(2024, 1, 1, tzinfo=utc)
    assert stated_time({"date": [["2024-01-01"]]}).when == dt.datetime(2024, 1, 1, tzinfo=utc)  # unquoted link
    assert parse_time("2024-03-05T10:00:00") == dt.datetime(2024, 3, 5, 10, tzinfo=utc)  # naive: UTC, everywhere
    assert date_from_name("Tuesday 5 March 2024", "dddd D MMMM YYYY") == dt.date(2024, 3, 5)
    assert date_from_name("2024-03-05 meeting") is None  # not a daily note's name ...
    assert date_from_name("25-9-2025", "D-M-Y") == dt.date(2025, 9, 25)  # `Y`: moment's year, any digits
    # one whole date in a name dates the note whatever the daily-notes format says (a person's daily
    # notes named by another tool, or a vault whose settings folder was renamed or not synced) ...
    for stem, day in (("2024-03-05 meeting", (2024, 3, 5)), ("May 5th, 2022, Thursday", (2022, 5, 5))):
        assert stated_time({}, stem).when == dt.datetime(*day, tzinfo=utc) and date_in_name(stem) == dt.date(*day)
    assert date_in_name("Week of January 3rd, 2022 (02)") == dt.date(2022, 1, 3)
    assert date_in_name("2022_03_01") == dt.date(2022, 3, 1)  # Logseq's journals
    assert date_in_name("2022_03-01") is None and date_in_name("backup_2022_03_01") is None
    assert date_in_name("daily.journal.2022.03.01") == dt.date(2022, 3, 1)  # Dendron's journals
    assert date_in_name("2022.03-01") is None  # one separator throughout
    # the date keys other tools write: Hugo's `lastmod` is an edit's, a Notion export's and a blog's too
    hugo = stated_time({"date": "2021-01-01", "lastmod": "2022/01/02"})
    assert hugo.source == "property:lastmod" and hugo.edited and hugo.when == dt.datetime(2022, 1, 2, tzinfo=utc)
    assert stated_time({"Created time": "March 5, 2022 2:30 PM"}).when == dt.datetime(2022, 3, 5, 14, 30, tzinfo=utc)
    assert stated_time({"published": True}).when is None  # Obsidian Publish's flag is no date
    # ... a note with a date of its own is dated by it (a memory named for an appointment's day) ...
    assert stated_time({"created": dt.date(2026, 11, 29)}, "Dentist on 2026-12-03").when == dt.datetime(
        2026, 11, 29, tzinfo=utc
    )
    # ... and no name dates a note by a month without its day, a year, two dates, or its other numbers
    for stem in ("January 2022", "2022", "from 2024-01-01 to 2024-02-01", "Chapter 12, 2020", "answer_7e9ad7b4_1"):
        assert date_in_name(stem) is None and stated_time({}, stem).when is None, stem


def test_first_write_into_an_undated_note_records_no_time(omem: Memory, ovault: Path) -> None:
    omem.index()

    def view() -> list[tuple[str, str | None, float]]:
        return [(h.path, h.date, h.strength) for h in omem.recall("car tyres winter", now=NOW, touch=False)]

    before = view()
    assert before[0] == ("Areas/Car.md", None, 1.0)  # undated: no age, whatever its file time says
    sm = omem.stage("The car now has all-season tyres instead of winter tyres.", now=NOW)
    omem.commit([sm.node_id], supersedes="Areas/Car.md", now=NOW)  # our first write into the human note
    note = read_note(ovault, "Areas/Car.md")
    assert note.meta["superseded_by"] == ["[[The car now has all-season tyres instead of winter tyres]]"]
    assert "stated" not in note.meta and "last_accessed" not in note.meta
    after = [v for v in view() if v[0] == "Areas/Car.md"]
    assert after == [before[0]]


def test_scrambled_mtimes_change_no_ranking_or_strength(make_memory: MemoryFactory, tmp_path: Path) -> None:
    src = tmp_path / "a"
    notes = {
        f"n{i:02d}.md": f"# Note {i}\n\nThe garden {w} needs water and the shed needs paint {i}.\n"
        for i, w in enumerate(["rose", "tulip", "fern", "ivy", "moss", "oak", "ash", "elm"])
    }
    notes["dated.md"] = "---\ncreated: 2026-05-01\n---\n# Dated\n\nThe garden rose needs water in May.\n"
    notes["2026-06-02.md"] = "# June\n\nThe garden tulip needs water in June.\n"
    base = dt.datetime(2026, 9, 1, 12, 0, tzinfo=dt.UTC).timestamp()
    for i, (rel, text) in enumerate(sorted(notes.items())):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text, encoding="utf-8")
        os.utime(src / rel, (base + i, base + i))
    dst = tmp_path / "b"
    shutil.copytree(src, dst)
    for i, rel in enumerate(sorted(notes, reverse=True)):  # reverse name order, a second apart
        os.utime(dst / rel, (base + 60 + i, base + 60 + i))

    def views(vault: Path, index: str) -> list[list[tuple[str, str | None, float]]]:
        mem = make_memory(vault=vault, index_dir=tmp_path / index)
        mem.index()
        return [
            [(h.path, h.date, h.strength) for h in mem.recall(q, k=6, now=NOW, touch=False)]
            for q in ("garden needs water", "shed paint", "rose water", "tulip June")
        ]

    assert views(src, "ia") == views(dst, "ib")


# -- Obsidian's structure and ignore rules --------------------------------------------------


def test_ignore_patterns_have_gitignore_semantics(tmp_path: Path) -> None:
    rules = IgnoreRules(["Drafts/*.md", "!Drafts/keep.md", "/Top.md", "*.tmp.md", "Private/"])
    assert rules.ignored("Drafts/a.md") and not rules.ignored("Drafts/keep.md")
    assert not rules.ignored("Drafts/sub/deeper.md")  # `dir/*.md` does not reach into dir/sub/
    assert rules.ignored("Top.md") and not rules.ignored("sub/Top.md")  # a leading / anchors
    assert rules.ignored("x/y.tmp.md") and rules.ignored("Private/a/b.md") and rules.ignored(".obsidian/x.md")
    assert rules.is_note("notes/fine.md") and not rules.is_note("notes/photo.png")


def test_obsidian_settings_are_read(ovault: Path) -> None:
    s = read_settings(ovault)
    assert s.template_folders == ("Templates",) and s.template_files == ("Templates/Daily.md",)
    assert s.excludes("Archive/Old plan.md") and s.excludes("Inbox/secret-42.md") and not s.excludes("Inbox/a.md")
    assert s.excludes("Excalidraw/Board.excalidraw.md") and s.daily_folder == "Daily Notes"
    (ovault / ".obsidian/app.json").write_text("{not json", encoding="utf-8")
    assert read_settings(ovault).excluded == ()  # unreadable settings: not configured, no crash


def test_unreadable_note_is_warned_about_once(omem: Memory, ovault: Path, caplog: pytest.LogCaptureFixture) -> None:
    (ovault / "Inbox/broken.md").write_bytes(b"Caf\xe9 body\n")  # not UTF-8: unreadable until re-saved
    with caplog.at_level(logging.WARNING):
        omem.index()
    assert sum("broken.md" in r.getMessage() for r in caplog.records) == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        omem.index()
        omem.recall("anything", now=NOW, touch=False)
        info = omem.status()
    assert not any("broken.md" in r.getMessage() for r in caplog.records)
    assert "Inbox/broken.md" in info["failures"]  # still listed, every time
    (ovault / "Inbox/broken.md").write_bytes(b"Caf\xe9 body, changed\n")
    with caplog.at_level(logging.WARNING):
        omem.index()
    assert sum("broken.md" in r.getMessage() for r in caplog.records) == 1  # changed: said again


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_cli_first_index_leaves_git_clean(ovault: Path, tmp_path: Path) -> None:
    base = [EXE, "--vault", str(ovault), "--index-dir", str(tmp_path / "ci"), "--embedder", "fake"]
    out = subprocess.run([*base, "index"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for q in ("bicycle holiday", "winter coat", "garden party"):
        assert (
            subprocess.run(
                [*base, "recall", q, "--now", "2026-12-01T00:00:00+00:00"], capture_output=True, text=True, timeout=120
            ).returncode
            == 0
        )
    assert changed(ovault) == []


def test_a_renamed_obsidian_settings_folder_is_read(tmp_path: Path) -> None:
    """Obsidian lets a person rename its settings folder (Override config folder): a vault whose
    settings live in `.desktop/` has its daily-notes format and template folder read from there."""
    from vault_memory.vault.obsidian import read_settings, settings_dir

    (tmp_path / ".desktop").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".desktop" / "daily-notes.json").write_text('{"format": "MMMM Do, YYYY, dddd", "folder": "Daily"}')
    (tmp_path / ".desktop" / "templates.json").write_text('{"folder": "Templates"}')
    assert settings_dir(tmp_path) == tmp_path / ".desktop"
    got = read_settings(tmp_path)
    assert got.daily_format == "MMMM Do, YYYY, dddd" and got.template_folders == ("Templates",)
    (tmp_path / ".obsidian").mkdir()  # the usual folder wins when both are there
    assert settings_dir(tmp_path) == tmp_path / ".obsidian" and read_settings(tmp_path).daily_format == "YYYY-MM-DD"


def test_a_logseq_graph_is_read_as_logseq_keeps_it(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """A Logseq graph (`logseq/config.edn`): its journals, named `2022_03_01.md`, are dated by their
    names; `logseq/` (backups and old versions of pages, which say what a page no longer says) and
    the `:hidden` paths are no notes; a commented-out `:hidden` hides nothing."""
    from tests.conftest import write_notes

    graph = write_notes(
        tmp_path / "graph",
        {
            "journals/2022_03_01.md": "- Sold the car to a dealer in Gatineau for 9000 dollars\n",
            "pages/Car.md": "alias:: Civic\n\n- The car is a blue Honda Civic\n",
            "logseq/bak/pages/Car/2022-02-01T10_00_00.000Z.md": "- The car is still for sale at 11000 dollars\n",
            "logseq/version-files/base/pages/Car.md": "- The car is still for sale at 11000 dollars\n",
            "archived/Old car.md": "- The car is still for sale at 11000 dollars\n",
        },
    )
    (graph / "logseq" / "config.edn").write_text(
        ';; :hidden ["/pages"]\n{:meta/version 1\n :hidden ["/archived"]\n :journal/file-name-format "yyyy_MM_dd"}\n',
        encoding="utf-8",
    )
    rules = IgnoreRules.for_vault(graph)
    assert read_settings(graph).logseq_hidden == ("logseq", "archived")
    assert rules.is_note("pages/Car.md") and rules.is_note("journals/2022_03_01.md")
    assert "Logseq's own folder" in rules.why_not_a_note("logseq/bak/pages/Car/2022-02-01T10_00_00.000Z.md")
    assert ":hidden" in rules.why_not_a_note("archived/Old car.md")
    mem = make_memory(vault=graph, index_dir=tmp_path / "gindex")
    mem.index()
    hits = mem.recall("how much was the car for sale", k=10, now=NOW, touch=False)
    assert {h.path for h in hits} == {"journals/2022_03_01.md", "pages/Car.md"}
    assert next(h for h in hits if h.path.startswith("journals/")).date == "2022-03-01"
    # a folder that merely is named logseq, in a vault that is no Logseq graph, holds notes as any other
    (graph / "logseq" / "config.edn").unlink()
    assert IgnoreRules.for_vault(graph).is_note("logseq/bak/pages/Car/2022-02-01T10_00_00.000Z.md")
