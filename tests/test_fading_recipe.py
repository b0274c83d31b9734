"""The Dataview query and Base for "what is fading" (docs/memory-model.md), evaluated in Python on real
frontmatter.

Obsidian cannot run here, so the query's own text is read from the chapter, its clauses are
mirrored line by line (`dql_fading`), and the result is compared with the decay model and
the review note on the same vault. The check first proves it can fail.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import NOW, MemoryFactory
from vault_memory.internals import internals
from vault_memory.memory import Memory
from vault_memory.vault.fields import parse_bool, parse_time
from vault_memory.vault.notefile import read_note

README = Path(__file__).resolve().parent.parent / "docs" / "memory-model.md"
DAY = dt.timedelta(days=1)


def readme_block(lang: str, after: str = "") -> str:
    text = README.read_text(encoding="utf-8")
    if after:
        text = text[text.index(after) :]
    m = re.search(rf"```{lang}\n(.*?)```", text, re.S)
    assert m, f"no ```{lang} block in {README.name}"
    return m.group(1)


def dql() -> str:
    return readme_block("dataview", "## What is fading, from Obsidian")


def base() -> dict[str, Any]:
    return dict(yaml.safe_load(readme_block("yaml", "Memory/Fading.base")))


def hours(text: str, unit: str) -> list[float]:
    return [float(h) for h in re.findall(rf"(\d+(?:\.\d+)?) ?{unit}", text)]


def dql_fading(notes: dict[str, dict[str, Any]], mday: dict[str, dt.datetime], today: dt.date, query: str) -> list[str]:
    """The chapter's query, clause by clause, over {path: frontmatter}. Like vault-memory, it reads no
    file time: a memory with neither `last_accessed` nor `created` is not listed (it has no age)."""
    folder = re.search(r'FROM "([^"]+)"', query)
    short_h, long_h = hours(query, " hours")
    window = int(re.search(r"date\(today\) \+ dur\((\d+) days\)", query).group(1))  # type: ignore[union-attr]
    assert folder and 'WHERE file.folder = "Memory"' in query and "AND (last_accessed OR created)" in query
    assert "file.mday" not in query and "file.mtime" not in query
    out: list[tuple[dt.datetime, str]] = []
    for path, meta in notes.items():
        if path.rsplit("/", 1)[0] != folder.group(1):  # WHERE file.folder = "Memory"
            continue
        if parse_bool(meta.get("pinned")) or meta.get("superseded_by") or meta.get("generated_by"):
            continue  # AND !pinned AND !superseded_by AND !generated_by
        if not (meta.get("last_accessed") or meta.get("created")):
            continue  # AND (last_accessed OR created)
        anchor = parse_time(meta.get("last_accessed")) or parse_time(meta.get("created"))
        assert anchor is not None
        dormant_on = anchor + dt.timedelta(hours=short_h if meta.get("tier") == "short" else long_h)
        midnight = dt.datetime(today.year, today.month, today.day, tzinfo=dt.UTC)  # date(today)
        if dormant_on <= midnight + dt.timedelta(days=window):
            out.append((dormant_on, path))
    return [p for _, p in sorted(out)]  # SORT dormant_on ASC


@pytest.fixture()
def memories(make_memory: MemoryFactory, vault: Path) -> Memory:
    """The sample vault's memories (last used in September and October) and some recent ones."""
    mem = make_memory()
    mem.index()
    mem.remember("The car's MOT is due on 3 February.", now=NOW - 20 * DAY)  # fading: dormant in 3.25 days
    mem.remember("The spare key is with the neighbour at number 12.", now=NOW - 23.5 * DAY)  # dormant 6 h ago
    standups = mem.remember("Standups are at 9:30 on weekdays.", now=NOW - 2 * DAY)
    old = mem.remember("The office wifi password is on the fridge.", now=NOW - 22 * DAY)
    sm = mem.stage("The office wifi password changed; ask Priya.", now=NOW - DAY)
    mem.commit([sm.node_id], supersedes=old.path, now=NOW - DAY)  # superseded: out of the list
    mem.pin(standups.node_id)
    mem.index()
    return mem


def frontmatter(mem: Memory) -> tuple[dict[str, dict[str, Any]], dict[str, dt.datetime]]:
    notes, mday = {}, {}
    for path in sorted((internals(mem).vault / "Memory").glob("*.md")):
        rel = path.relative_to(internals(mem).vault).as_posix()
        note = read_note(internals(mem).vault, rel)
        notes[rel] = note.meta
        mday[rel] = dt.datetime.fromtimestamp(note.mtime, dt.UTC).replace(hour=0, minute=0, second=0)
    return notes, mday


def test_the_durations_are_the_decay_models_dormancy_horizons(memories: Memory) -> None:
    model = internals(memories).decay
    want = [model.half_life(t) * 24 * math.log2(1 / model.dormant_below) for t in ("short", "long")]
    got = hours(dql(), " hours")
    assert len(got) == 2 and all(abs(g - w) < 1 for g, w in zip(got, want, strict=True))
    formulas = " ".join(base()["formulas"].values())
    assert all(abs(g - w) < 1 for g, w in zip(hours(formulas, "h"), want, strict=True))


def test_the_query_lists_what_the_decay_model_and_the_review_call_fading(memories: Memory) -> None:
    notes, mday = frontmatter(memories)
    listed = dql_fading(notes, mday, NOW.date(), dql())
    # the decay model's own answer: not pinned or superseded, dormant by a week from today
    horizon = dt.datetime(NOW.year, NOW.month, NOW.day, tzinfo=dt.UTC) + 7 * DAY
    model = internals(memories).decay
    expected = []
    for path, meta in notes.items():
        state = model.state(meta, path)
        if state.pinned or state.superseded_by or meta.get("generated_by"):
            continue
        if model.strength(state, horizon) < model.dormant_below + 1e-3:
            expected.append(path)
    assert sorted(listed) == sorted(expected)
    assert "Memory/The car's MOT is due on 3 February.md" in listed
    assert "Memory/The spare key is with the neighbour at number 12.md" in listed
    assert "Memory/valve-3-pressure.md" in listed  # the sample vault's own, dormant since October
    assert not any("Standups" in p or "wifi password is on" in p for p in listed)  # pinned; superseded
    # the review note's fading and recently-dormant memories are all in it; the rest went dormant earlier
    review = memories.review(NOW, write=False)
    shown = {v.path for v in review.fading + review.dormant if v.path.count("/") == 1}
    assert shown <= set(listed)
    for path in set(listed) - shown:
        state = model.state(notes[path], path)
        assert model.strength(state, NOW - 7 * DAY) < model.dormant_below  # dormant before the window
    # every field the query reads is on the notes it lists
    for path in listed:
        assert "last_accessed" in notes[path] or "created" in notes[path]
        assert notes[path].get("tier") in ("short", "long")


def test_the_check_can_fail(memories: Memory) -> None:
    notes, mday = frontmatter(memories)
    wrong = dql().replace("dur(558 hours)", "dur(5580 hours)")  # a tenfold half-life
    assert "Memory/The car's MOT is due on 3 February.md" not in dql_fading(notes, mday, NOW.date(), wrong)


def test_the_base_is_valid_yaml_reading_the_same_fields() -> None:
    b = base()
    filters = b["filters"]["and"]
    assert 'file.folder == "Memory"' in filters and {"!pinned", "!superseded_by", "!generated_by"} <= set(filters)
    assert set(b["formulas"]) == {"last_used", "dormant_on"} and "last_accessed || created" in filters
    assert "file.mtime" not in " ".join(b["formulas"].values())
    for field in ("last_accessed", "created", "tier"):
        assert field in " ".join(b["formulas"].values())
    [view] = b["views"]
    assert view["type"] == "table" and 'formula.dormant_on <= today() + "7d"' in view["filters"]["and"]
    for prop in view["order"] + [s["property"] for s in view["sort"]]:
        assert not prop.startswith("formula.") or prop.removeprefix("formula.") in b["formulas"]
