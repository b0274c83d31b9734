"""The review: gathered at `now`, written as a note Obsidian renders, never a memory, never eating an edit."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from tests.conftest import NOW, MemoryFactory
from vault_memory import watch
from vault_memory.cli import app
from vault_memory.config import Config
from vault_memory.index.calibration import FAKE
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.lifecycle.resolve import resolve_target
from vault_memory.memory import Memory
from vault_memory.review.review import content_hash
from vault_memory.vault.notefile import read_note

DAY = dt.timedelta(days=1)
COFFEE = (
    "Dark roast espresso, a double, first thing after I get up and before I open the laptop. Made on the "
    "Lelit Bianca at home, 18 g in, 36 g out, about 28 seconds."
)
DRAFT = (
    "Light roast filter coffee, first thing after I get up and before I open the laptop. Made on the "
    "Lelit Bianca at home, 18 g in, 36 g out, about 28 seconds."
)


# -- a structural check of the Mermaid we emit, after xychart.jison ----------------------------------

_NUM = r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)"
_STR = r'"[^"\n]*"'


def check_xychart(block: str) -> dict[str, Any]:
    """Raise AssertionError unless `block` (a mermaid fence's content) is an xychart the grammar accepts:
    an optional `%%{init: JSON}%%`, `xychart-beta`, then title / x-axis band / y-axis range / line rows,
    every line as long as the x-axis. Returns what it read."""
    lines = [ln.strip() for ln in block.strip().split("\n") if ln.strip()]
    out: dict[str, Any] = {"palette": [], "labels": [], "lines": []}
    if lines and lines[0].startswith("%%{"):
        m = re.fullmatch(r"%%\{init:\s*(\{.*\})\}%%", lines.pop(0))
        assert m, "a directive must be %%{init: {...}}%%"
        palette = json.loads(m.group(1))["themeVariables"]["xyChart"]["plotColorPalette"]
        out["palette"] = [c.strip() for c in palette.split(",")]
        assert all(re.fullmatch(r"#[0-9a-fA-F]{6}", c) for c in out["palette"])
    assert lines and lines.pop(0) == "xychart-beta", "the diagram must start with xychart-beta"
    for ln in lines:
        if ln.startswith("title "):
            assert re.fullmatch(rf"title {_STR}", ln), ln
        elif ln.startswith("x-axis "):
            m = re.fullmatch(rf"x-axis (?:{_STR} )?\[((?:{_STR})(?:, {_STR})*)\]", ln)
            assert m, ln
            out["labels"] = re.findall(_STR, m.group(1))
        elif ln.startswith("y-axis "):
            assert re.fullmatch(rf"y-axis (?:{_STR} )?{_NUM} --> {_NUM}", ln), ln
        elif ln.startswith("line "):
            m = re.fullmatch(rf"line (?:{_STR} )?\[({_NUM}(?:, {_NUM})*)\]", ln)
            assert m, ln
            out["lines"].append([float(v) for v in m.group(1).split(", ")])
        else:
            raise AssertionError(f"not an xychart statement: {ln}")
    assert out["labels"] and out["lines"], "a chart needs an x-axis and at least one line"
    assert all(len(v) == len(out["labels"]) for v in out["lines"]), "every line as long as the x-axis"
    assert not out["palette"] or len(out["palette"]) >= len(out["lines"])
    return out


def test_the_mermaid_check_can_fail() -> None:
    good = 'xychart-beta\n    title "t"\n    x-axis ["a", "b"]\n    y-axis "s" 0 --> 1\n    line [0.5, .25]'
    check_xychart(good)
    for bad in (
        good.replace("xychart-beta", "xychart-alpha"),
        good.replace("[0.5, .25]", "[0.5]"),
        good.replace('"t"', '"a "quoted" t"'),
        good + "\n    pie [1]",
        good.replace("0.5", "1,5"),
    ):
        with pytest.raises(AssertionError):
            check_xychart(bad)


# -- the review of a vault -----------------------------------------------------------------------


def links_in(markdown: str) -> list[str]:
    """Every [[link]] (table cells escape the `|`), outside code."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [m.replace("\\|", "|") for m in re.findall(r"\[\[[^\]\n]+\]\]", text)]


@pytest.fixture()
def reviewed(make_memory: MemoryFactory, vault: Path) -> tuple[Memory, Path]:
    """The sample vault with two memories remembered 20 days ago and a draft that conflicts with a note."""
    mem = make_memory(calibration=replace(FAKE, conflict=0.6), quiet_seconds=0.0)
    mem.index()
    mem.remember("Ines prefers the night train to Lisbon.", now=NOW - 20 * DAY)
    mem.remember("The garden shed key is under the blue pot.", now=NOW - 20 * DAY)
    (vault / "Inbox" / "broken.md").write_bytes(b"Caf\xe9 body\n")  # not UTF-8: unreadable until re-saved
    mem.index()
    sm = mem.stage(DRAFT, title="Coffee routine", now=NOW - DAY)
    assert sm.needs_review and sm.conflicts[0].path == "Preferences/Coffee.md"
    return mem, vault


def test_review_note_lists_drafts_conflicts_faded_and_a_chart(reviewed: tuple[Memory, Path]) -> None:
    mem, vault = reviewed
    r = mem.review(NOW)
    assert r.written and r.path == "Memory/Review.md"
    note = read_note(vault, r.path)
    assert note.meta["generated_by"] == "vault-memory" and note.meta["review_hash"] == content_hash(
        note.meta, note.body
    )
    md = note.body
    assert md == r.markdown
    # the draft, in full, beside the note it conflicts with, and the commands that resolve it
    [draft] = r.drafts
    assert "### [[Coffee routine]]" in md and "> [!warning] Conflicts with [[Coffee]]" in md
    assert "| This draft says | [[Coffee]] says |" in md
    assert DRAFT in md and COFFEE in md
    assert f'`vault-memory commit {draft.node_id} --supersedes "Preferences/Coffee.md"`' in md
    assert f"`vault-memory discard {draft.node_id}`" in md
    # the two short-tier memories (23 days to dormancy) fade within the week
    assert {v.title for v in r.fading} >= {
        "Ines prefers the night train to Lisbon",
        "The garden shed key is under the blue pot",
    }
    assert "[[Ines prefers the night train to Lisbon]]" in md
    assert "Inbox/broken.md" in [p for p, _ in r.unreadable] and "[[Inbox/broken]]" in md
    # it is Markdown Obsidian renders: callouts (blockquotes), tables, a mermaid fence that parses
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    kinds = {t.type for t in tokens}
    assert {"blockquote_open", "table_open", "heading_open", "fence"} <= kinds
    [chart] = [t for t in tokens if t.type == "fence" and t.info == "mermaid"]
    parsed = check_xychart(chart.content)
    assert len(parsed["lines"]) == len(r.chart) + 1  # one per memory, then the dormancy threshold
    assert {c.note.title for c in r.chart} >= {"Ines prefers the night train to Lisbon"}
    # every link names a note that exists, through the resolver every command uses
    links = links_in(md)
    assert len(links) >= 5
    for link in links:
        assert (vault / resolve_target(internals(mem), link).path).is_file(), link


def test_the_review_copies_no_comment_out_of_a_conflicting_note(reviewed: tuple[Memory, Path]) -> None:
    """What recall hides the review note does not copy into the vault (issue 41, finding 5's kin)."""
    mem, vault = reviewed
    coffee = vault / "Preferences" / "Coffee.md"
    text = coffee.read_text(encoding="utf-8").replace(COFFEE, COFFEE + " %%the laptop code is 4711%%")
    coffee.write_text(text, encoding="utf-8")  # beside what the draft shares: the excerpt is cut there
    md = mem.review(NOW).markdown
    assert "| This draft says | [[Coffee]] says |" in md and "4711" not in md


def test_review_note_is_never_a_memory(reviewed: tuple[Memory, Path]) -> None:
    mem, vault = reviewed
    mem.review(NOW)
    report = mem.index()
    assert internals(mem).catalog.note_by_path("Memory/Review.md") is None
    assert "Memory/Review.md" not in report.passed  # ignored outright: not even read
    hits = mem.recall("drafts awaiting commit fading dormant", now=NOW, touch=False)
    assert all(h.path != "Memory/Review.md" for h in hits)
    assert "Memory/Review.md" not in mem.prefetch("what are the drafts awaiting commit?", now=NOW).block


def test_a_persons_edit_is_kept_never_lost(reviewed: tuple[Memory, Path]) -> None:
    mem, vault = reviewed
    mem.review(NOW)
    path = vault / "Memory" / "Review.md"
    edited = path.read_text(encoding="utf-8") + "\nMy own thought about this.\n"
    path.write_text(edited, encoding="utf-8")
    r = mem.review(NOW + DAY)
    assert r.written and r.kept_edit == f"Memory/Review (edited {(NOW + DAY).date().isoformat()}).md"
    assert (vault / r.kept_edit).read_text(encoding="utf-8") == edited  # their file, byte for byte
    assert "My own thought" not in path.read_text(encoding="utf-8")
    # a property edit counts too, and a second kept copy the same day never overwrites the first
    text = path.read_text(encoding="utf-8").replace(
        "generated_by: vault-memory\n", "generated_by: vault-memory\ntags: [mine]\n"
    )
    path.write_text(text, encoding="utf-8")
    r2 = mem.review(NOW + DAY)
    assert r2.kept_edit == f"Memory/Review (edited {(NOW + DAY).date().isoformat()}) 2.md"
    # an unchanged review is rewritten in place, nothing kept
    r3 = mem.review(NOW + 2 * DAY)
    assert r3.written and r3.kept_edit is None
    # kept copies keep `generated_by`, so they are not indexed either (remove it to make one yours)
    report = mem.index()
    assert r.kept_edit in report.passed and internals(mem).catalog.note_by_path(r.kept_edit) is None
    # broken YAML is an edit as well
    path.write_text("---\ngenerated_by: [oops\n---\nhand written\n", encoding="utf-8")
    r4 = mem.review(NOW + 2 * DAY)
    assert r4.kept_edit and (vault / r4.kept_edit).read_text(encoding="utf-8").endswith("hand written\n")


def test_someone_elses_note_at_the_path_is_left_alone(make_memory: MemoryFactory, vault: Path) -> None:
    mine = vault / "Memory" / "Review.md"
    mine.write_text("# My weekly review\n\nThoughts.\n", encoding="utf-8")
    mem = make_memory()
    r = mem.review(NOW)
    assert not r.written and r.skipped and "not the review note" in r.skipped
    assert mine.read_text(encoding="utf-8") == "# My weekly review\n\nThoughts.\n"


def test_a_review_note_being_edited_is_not_touched(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory(quiet_seconds=60.0)
    mem.review(NOW)
    path = vault / "Memory" / "Review.md"
    path.write_text(path.read_text(encoding="utf-8") + "typing…\n", encoding="utf-8")  # saved just now
    before = path.read_bytes()
    r = mem.review(NOW + DAY)
    assert r.busy and not r.written and r.kept_edit is None and "being written" in (r.skipped or "")
    assert path.read_bytes() == before


def test_review_off_or_read_only_writes_nothing(make_memory: MemoryFactory, vault: Path) -> None:
    assert make_memory(review_note="").review(NOW).skipped
    assert make_memory(read_only=True).review(NOW).skipped
    assert not (vault / "Memory" / "Review.md").exists()


def test_went_dormant_and_came_back(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "Notes").mkdir(parents=True)
    old = (NOW - 200 * DAY).isoformat()  # long tier: dormant after 199.3 days, so 0.7 days ago
    (vault / "Notes" / "Piano.md").write_text(
        f"---\ncreated: {old}\n---\nPiano lessons are on Wednesday.\n", encoding="utf-8"
    )
    mem = make_memory(vault=vault, calibration=replace(FAKE, strong=0.0))
    mem.index()
    r = mem.review(NOW, write=False)
    assert [v.path for v in r.dormant] == ["Notes/Piano.md"] and r.fading == []
    assert r.dormant[0].dormant_on is not None and NOW - DAY < r.dormant[0].dormant_on < NOW
    hits = mem.recall("Piano lessons are on Wednesday", now=NOW)
    assert hits[0].reactivated and hits[0].rehearsed
    assert read_note(vault, "Notes/Piano.md").meta["reactivated"] == NOW
    r = mem.review(NOW + DAY, write=False)
    assert [v.path for v in r.reactivated] == ["Notes/Piano.md"] and r.dormant == []
    assert "## Came back in the last 7 days" in r.markdown and "[[Piano]]" in r.markdown


# -- the terminal --------------------------------------------------------------------------------


def run(vault: Path, index: Path, *args: str, input: str | None = None) -> Any:
    result = CliRunner().invoke(
        app, ["--vault", str(vault), "--index-dir", str(index), "--embedder", "fake", *args], input=input
    )
    return result


def test_cli_review_json_and_no_write(reviewed: tuple[Memory, Path], index_dir: Path) -> None:
    mem, vault = reviewed
    mem.close()
    res = run(vault, index_dir, "review", "--json", "--no-write", "--now", NOW.isoformat())
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["counts"]["drafts"] == 1 and data["drafts"][0]["conflicts"][0]["path"] == "Preferences/Coffee.md"
    assert data["drafts"][0]["commands"][0]["command"].startswith("vault-memory commit ")
    assert data["markdown"].startswith("> [!info]") and data["written"] is False
    assert not (vault / "Memory" / "Review.md").exists()
    res = run(vault, index_dir, "review", "--now", NOW.isoformat())
    assert res.exit_code == 0 and "drafts awaiting commit: 1" in res.stdout and "conflicts with Coffee" in res.stdout
    assert "wrote Memory/Review.md" in res.stderr and (vault / "Memory" / "Review.md").is_file()


def test_cli_review_interactive_walks_the_drafts(make_memory: MemoryFactory, vault: Path, index_dir: Path) -> None:
    mem = make_memory(calibration=replace(FAKE, conflict=0.6))
    mem.index()
    a = mem.stage("The bike lock code is 1234.", now=NOW)
    b = mem.stage("An idea that turned out wrong.", now=NOW)
    c = mem.stage(DRAFT, title="Coffee routine", now=NOW)
    d = mem.stage("Karl moved to Hamburg.", now=NOW)
    mem.close()
    # in staged order (oldest, then by path): discard b; c supersedes its first conflict; a typo, then
    # skip d; commit a
    res = run(vault, index_dir, "review", "-i", "--now", NOW.isoformat(), input="d\ns\n1\nwhat\nk\nc\n")
    assert res.exit_code == 0, res.output
    assert "committed 2, discarded 1, left 1 staged" in res.stdout
    staged = sorted(p.name for p in (vault / "Memory" / "Staged").iterdir())
    assert staged == [Path(d.path).name]
    assert not (vault / b.path).exists()
    assert read_note(vault, "Memory/The bike lock code is 1234.md").meta["node_id"] == a.node_id
    coffee = read_note(vault, "Preferences/Coffee.md").meta
    assert coffee["superseded_by"] == ["[[Coffee routine]]"]
    assert read_note(vault, "Memory/Coffee routine.md").meta["node_id"] == c.node_id
    review = (vault / "Memory" / "Review.md").read_text(encoding="utf-8")
    assert "[[Karl moved to Hamburg]]" in review and "Coffee routine" not in review.split("## Strength")[0]


def test_cli_review_reports_a_note_it_may_not_write(make_memory: MemoryFactory, vault: Path, index_dir: Path) -> None:
    (vault / "Memory" / "Review.md").write_text("mine\n", encoding="utf-8")
    res = run(vault, index_dir, "review", "--now", NOW.isoformat())
    assert res.exit_code == 1 and "not the review note" in res.stderr
    assert (vault / "Memory" / "Review.md").read_text(encoding="utf-8") == "mine\n"


# -- the watcher -----------------------------------------------------------------------------------


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_watcher_refreshes_the_review_note_and_does_not_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "REVIEW_DELAY", 0.1)
    vault = tmp_path / "v"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes" / "a.md").write_text("---\nnode_id: a1\n---\nLighthouses and foghorns.\n", encoding="utf-8")
    mem = Memory(Config(vault=vault, index_dir=tmp_path / "idx", embedder="fake"), embedder=FakeEmbedder())
    mem.index()
    first = mem.review()
    assert first.written
    review = vault / "Memory" / "Review.md"
    os.utime(review, (time.time() - 60, time.time() - 60))
    before = review.stat().st_mtime
    results: list[watch.BatchResult] = []
    watcher = watch.Watcher(mem, debounce=0.05, quiet=60.0, on_batch=results.append)
    watcher.start()
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        staged = vault / "Memory" / "Staged"
        staged.mkdir(parents=True)
        (staged / "Kite.md").write_text("A kite powered by a dragonfly motor.\n", encoding="utf-8")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and "Kite" not in review.read_text(encoding="utf-8"):
            time.sleep(0.05)
        assert "[[Kite]]" in review.read_text(encoding="utf-8") and review.stat().st_mtime > before
        # Reading the drafts gives the hand-dropped one its node_id (a write the watcher syncs), so
        # one more rewrite may follow; then it settles. Wait for that, however slow the machine.
        deadline = time.monotonic() + 15
        mtime, quiet_since = review.stat().st_mtime, time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - quiet_since < 2.0:
            time.sleep(0.1)
            if review.stat().st_mtime != mtime or watcher.pending():
                mtime, quiet_since = review.stat().st_mtime, time.monotonic()
        assert read_note(vault, "Memory/Staged/Kite.md").meta.get("node_id")
        settled = len(results)
        time.sleep(2.0)  # its own write must not come back as a batch, nor cause another rewrite
        assert len(results) == settled and review.stat().st_mtime == mtime
    finally:
        stop.set()
        watcher.stop()
        thread.join(timeout=10)
        watcher.close()
        mem.close()


@pytest.mark.parametrize("bad", ["../Review.md", "Memory/Review.txt", ".obsidian/Review.md"])
def test_a_review_note_outside_the_vault_or_not_markdown_is_refused(make_memory: MemoryFactory, bad: str) -> None:
    from vault_memory.errors import ConfigError

    with pytest.raises(ConfigError, match="review_note"):
        make_memory(review_note=bad)


def test_the_review_says_what_forgetting_kept_out_of_prefetch_and_why_notes_fade(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    vault = tmp_path / "v"
    (vault / "Memory").mkdir(parents=True)
    (vault / "Memory/valve.md").write_text(
        "---\nnode_id: valve001\ntier: short\ncreated: 2026-08-22T19:10:00+00:00\n---\n"
        "The drip line on valve 3 leaks above 2 bar: keep the pump at 1.5 bar.\n",
        encoding="utf-8",
    )
    (vault / "Memory/fresh.md").write_text(
        f"---\nnode_id: fresh001\ntier: long\ncreated: {(NOW - 196 * DAY).isoformat()}\n---\n"
        "The plumber is Pete, he services the boiler in February.\n",
        encoding="utf-8",
    )
    mem = make_memory(vault=vault, calibration=replace(FAKE, weak=0.0, strong=0.99))  # nothing is cued back
    mem.index()
    turn = "the setting the irrigation pump should run at"  # 1 of its words, and it asks nothing: not a cue
    block = mem.prefetch(turn, now=NOW, refresh_staged=False)
    assert "Memory/valve.md" not in [e.path for e in block.entries]
    assert [k.path for k in block.kept_out] == ["Memory/valve.md"]
    assert [h.path for h in mem.recall(turn, now=NOW, touch=False)][0] == "Memory/valve.md"  # asked: found
    review = mem.review(NOW, write=False)
    assert [(k.path, k.blocks) for k in review.kept_out] == [("Memory/valve.md", 1)]
    assert review.kept_out[0].example.startswith("the setting the irrigation")
    assert "## Kept out of prefetch in the last 7 days" in review.markdown and "[[Memory/valve]]" in review.markdown
    assert review.to_dict()["counts"]["kept_out"] == 1
    fading = {v.path: v.why for v in review.fading + review.dormant}
    assert fading["Memory/fresh.md"].startswith("stated ") and "half-life 60 days" in fading["Memory/fresh.md"]
    later = mem.review(NOW + 30 * DAY, write=False)  # a week's window: last month's blocks are not counted
    assert later.kept_out == [] and "Forgetting kept nothing out" in later.markdown
