"""Filters on recall and prefetch: tags (nested), folder, type, statement date; applied before ranking."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import NOW, MemoryFactory, write_notes
from vault_memory.errors import ConfigError
from vault_memory.index.calibration import FAKE
from vault_memory.internals import internals
from vault_memory.memory import Memory
from vault_memory.search.filters import NoteFilter, make_filter, parse_when

NOTES = {
    "Travel/Japan 2025.md": "---\ntags: [travel/japan]\ndate: 2025-04-02\n---\nKyoto trip: temples, trains, ramen.\n",
    "Travel/Tokyo tips.md": "---\ntags: [travel]\ndate: 2026-10-20\n---\nTokyo trip tips: Suica card, trains.\n",
    "Travel/Travelling light.md": "---\ntags: [travelling]\ndate: 2026-10-21\n---\nPack light for any trip.\n",
    "Work/Decisions/Use Postgres.md": "---\ntype: Decision\ndate: 2026-10-25\n---\nWe chose Postgres.\n",
    "Work/Meeting notes.md": "---\ntype: meeting\ndate: 2026-10-26\n---\nThe trip budget was discussed.\n",
    "Journal/2026-10-15.md": "Took the train to Leipzig, a short trip.\n",
    "Inbox/trip ideas.md": "Trip ideas: trains across the Alps, a ferry to Norway.\n",
}


@pytest.fixture()
def fmem(make_memory: MemoryFactory, tmp_path: Path) -> Memory:
    vault = write_notes(tmp_path / "fv", NOTES)
    mem = make_memory(vault=vault)
    mem.index()
    return mem


def paths(mem: Memory, query: str = "trip trains", k: int = 10, **filters: object) -> set[str]:
    return {h.path for h in mem.recall(query, k=k, touch=False, **filters)}  # type: ignore[arg-type]


def test_make_filter_reads_what_people_and_models_type() -> None:
    flt = make_filter(
        tags=["#Travel", "travel", "work/"],
        folder="/Work/Decisions/",
        type=" Decision ",
        after="2026-10-01",
        before="7d",
        now=NOW,
    )
    assert flt is not None
    assert flt.tags == ("travel", "work") and flt.folder == "Work/Decisions" and flt.type == "decision"
    assert flt.after is not None and flt.after.date() == dt.date(2026, 10, 1)
    assert flt.before == NOW - dt.timedelta(days=7)
    assert make_filter(now=NOW) is None and make_filter(tags=[], folder="", now=NOW) is None
    assert make_filter(tags="travel", now=NOW) == NoteFilter(tags=("travel",))  # one tag as a string
    assert parse_when("3m", NOW, "after") == NOW - dt.timedelta(days=90)
    assert parse_when("2026-10-01T09:00+02:00", NOW, "after") == dt.datetime(2026, 10, 1, 7, tzinfo=dt.UTC)
    for bad, msg in [
        ({"after": "last month"}, "is not a date"),
        ({"tags": ["two words"]}, "not a tag"),
        ({"folder": "../etc"}, "leaves the vault"),
        ({"after": "2026-10-02", "before": "2026-10-01"}, "must come before"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            make_filter(now=NOW, **bad)  # type: ignore[arg-type]


def test_tags_match_nested_tags_and_not_prefixes(fmem: Memory) -> None:
    assert paths(fmem, tags=["travel"]) == {"Travel/Japan 2025.md", "Travel/Tokyo tips.md"}
    assert paths(fmem, tags=["#travel/japan"]) == {"Travel/Japan 2025.md"}
    assert paths(fmem, tags=["Travelling"]) == {"Travel/Travelling light.md"}
    assert paths(fmem, tags=["travel", "travel/japan"]) == {"Travel/Japan 2025.md"}  # every tag must match
    assert paths(fmem, tags=["nosuchtag"]) == set()


def test_folder_type_and_dates(fmem: Memory) -> None:
    assert paths(fmem, folder="Work") == {"Work/Decisions/Use Postgres.md", "Work/Meeting notes.md"}
    assert paths(fmem, folder="work/decisions") == {"Work/Decisions/Use Postgres.md"}  # ASCII case ignored
    assert paths(fmem, folder="Wor") == set()  # a folder, not a prefix of a name
    assert paths(fmem, type="decision") == {"Work/Decisions/Use Postgres.md"}
    # the statement date: a `date` property, a daily note's file name
    assert paths(fmem, after="2026-10-20", before="2026-10-26") == {
        "Travel/Tokyo tips.md",
        "Travel/Travelling light.md",
        "Work/Decisions/Use Postgres.md",
    }
    assert paths(fmem, after="2026-10-15", before="2026-10-16") == {"Journal/2026-10-15.md"}
    assert paths(fmem, before="2026-01-01") == {"Travel/Japan 2025.md"}
    both = paths(fmem, tags=["travel"], after="2026-01-01")
    assert both == {"Travel/Tokyo tips.md"}


def test_the_k_are_all_eligible_however_selective_the_filter(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """200 notes about trains and 3 tagged ones about something else: a filter on the tag still fills k."""
    vault = tmp_path / "many"
    (vault / "n").mkdir(parents=True)
    for i in range(200):
        (vault / "n" / f"train {i}.md").write_text(f"The train number {i} leaves for the trip at dawn.\n")
    for i in range(3):
        (vault / "n" / f"garden {i}.md").write_text(f"---\ntags: [garden]\n---\nTomato bed {i} needs water.\n")
    mem = make_memory(vault=vault)
    mem.index()
    unfiltered = [h.path for h in mem.recall("train trip at dawn", k=3, touch=False)]
    assert all("train" in p for p in unfiltered)
    hits = mem.recall("train trip at dawn", k=3, touch=False, tags=["garden"])
    assert sorted(h.path for h in hits) == [f"n/garden {i}.md" for i in range(3)]
    for mode in ("bm25", "dense"):
        got = mem.recall("tomato bed water", k=3, touch=False, tags=["garden"], mode=mode)  # type: ignore[arg-type]
        assert {h.path for h in got} <= {f"n/garden {i}.md" for i in range(3)} and got


def test_filters_on_the_vector_store_path(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """Above exact_search_limit (or with a server) dense search runs in Chroma, which has no note metadata."""
    vault = write_notes(tmp_path / "ann", NOTES)
    mem = make_memory(vault=vault, exact_search_limit=0)
    mem.index()
    assert not internals(mem).exact_search()
    assert {h.path for h in mem.recall("trip", k=5, touch=False, mode="dense", decay=False, tags=["travel"])} == {
        "Travel/Japan 2025.md",
        "Travel/Tokyo tips.md",
    }


def test_prefetch_takes_the_same_filters(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = write_notes(tmp_path / "pv", NOTES)
    mem = make_memory(vault=vault, calibration=replace(FAKE, weak=0.0))  # the fake embedder's cosines are small
    mem.index()
    everything = mem.prefetch("trip trains", now=NOW, refresh_staged=False)
    filtered = mem.prefetch("trip trains", now=NOW, refresh_staged=False, folder="Travel")
    assert {e.path for e in everything.entries} - {e.path for e in filtered.entries}
    assert filtered.entries and all(e.path.startswith("Travel/") for e in filtered.entries)
    none = mem.prefetch("trip trains", now=NOW, refresh_staged=False, tags=["nosuchtag"])
    assert none.block == "" and none.entries == []


def test_a_tag_query_never_returns_a_template(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "tv"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "templates.json").write_text(json.dumps({"folder": "Templates"}))
    (vault / "Templates").mkdir()
    (vault / "Templates" / "Trip.md").write_text("---\ntags: [travel]\ndate: {{date}}\n---\n# {{title}}\n\nTrip: \n")
    (vault / "Lisbon trip.md").write_text("---\ntags: [travel]\n---\nLisbon trip in May.\n")
    mem = make_memory(vault=vault)
    mem.index()
    assert paths(mem, "trip", tags=["travel"]) == {"Lisbon trip.md"}
    assert paths(mem, "trip") == {"Lisbon trip.md"}


def test_dates_follow_frontmatter_edits(fmem: Memory) -> None:
    """The catalog's stated time is refreshed on a frontmatter-only change (planner: meta)."""
    rel = "Inbox/trip ideas.md"
    path = internals(fmem).vault / rel
    assert rel not in paths(fmem, before="2020-01-01")
    path.write_text("---\ndate: 2019-05-01\n---\n" + path.read_text())
    fmem.index()
    assert paths(fmem, before="2020-01-01") == {rel}
