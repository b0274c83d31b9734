"""Query-conditioned freshness (issue 14): which notes answer the same question, answer windows,
what recall and prefetch say about changed facts, and `recall --explain`."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import MemoryFactory, write_notes
from vault_memory.cli import app
from vault_memory.index.calibration import MINILM
from vault_memory.index.catalog import ChunkRow
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.memory import Memory
from vault_memory.search.decay import state_from_meta
from vault_memory.search.ranking import (
    Candidate,
    Ranked,
    Window,
    change_label,
    refill,
    said_first,
    same_fact_groups,
    statements,
)
from vault_memory.search.rules import DEFAULT_RULES
from vault_memory.search.windows import (
    Subject,
    WindowCache,
    about,
    pick_windows,
    picks,
    split_windows,
    window_terms,
)

NOW = dt.datetime(2024, 12, 1, 18, 0, tzinfo=dt.UTC)

# Talk that says nothing about where anyone lives, and shares no word with the other note's talk.
TALK_A = [
    "We spent the morning repairing the garden fence after the storm.",
    "Then we argued about which board game to buy for the holidays.",
    "Dinner was a huge pot of lentil soup with far too much cumin.",
]
TALK_B = [
    "The quarterly report finally went out after three late evenings.",
    "My knee still hurts from that long trail run on Saturday.",
    "We watched a documentary about octopuses and their clever tricks.",
]


def _note(created: str, lines: list[str]) -> str:
    return f"---\ncreated: {created}\n---\n" + "".join(f"- {line}\n" for line in lines)


def _filler(vault: Path) -> None:
    # notes about other things, so relevance has a scale (min-max is over the candidates)
    topics = [
        "sourdough starter feeding schedule",
        "bike chain lubrication",
        "tax return deadline",
        "birthday present ideas for grandma",
        "printer toner cartridge",
        "winter tyres for the car",
    ]
    for i, t in enumerate(topics):
        (vault / f"other-{i}.md").write_text(
            _note(f"2024-0{i + 1}-15", [f"Notes on the {t}.", TALK_A[i % 3]]), encoding="utf-8"
        )


def _nora_moved(tmp_path: Path, older: str) -> Path:
    """A vault of other talk where an older note says `older` and a newer one that Nora lives in Porto."""
    vault = tmp_path / "talk"
    vault.mkdir()
    _filler(vault)
    (vault / "older.md").write_text(_note("2024-03-02", [TALK_A[0], older, TALK_A[1], TALK_A[2]]))
    (vault / "newer.md").write_text(
        _note("2024-11-20", [TALK_B[0], "Nora is living in Porto, a new city.", TALK_B[1], TALK_B[2]])
    )
    return vault


def test_changed_fact_inside_unrelated_talk_ranks_the_newer_first(make_memory: MemoryFactory, tmp_path: Path) -> None:
    # The older statement matches the question a little better; the two notes share no word
    # beyond the fact's own ("Nora", "city"), so their chunks are not alike as wholes.
    vault = _nora_moved(tmp_path, "Nora lives in Lisbon, a sunny city.")
    mem = make_memory(vault=vault, index_dir=tmp_path / "ix")
    mem.index()
    query = "Which city does Nora live in?"
    plain_hits = mem.recall(query, k=3, decay=False, now=NOW, touch=False, explain=True)
    plain = [h.path for h in plain_hits]
    assert plain[:2] == ["older.md", "newer.md"]  # relevance alone: the older first
    # with decay off the sentence that answers still counts for relevance (SciFact dense 0.687, 0.659 without)
    assert plain_hits[1].explain is not None and plain_hits[1].explain["window"] is not None
    whole = internals(mem).embedder.embed([(vault / "older.md").read_text(), (vault / "newer.md").read_text()])
    assert float(whole[0] @ whole[1]) < 0.5  # the old chunk-to-chunk rule would not group them
    hits = mem.recall(query, k=3, now=NOW, touch=False, explain=True)
    assert [h.path for h in hits[:2]] == ["newer.md", "older.md"]
    # the date decided, and says so in --explain; no hit claims the other is replaced (only a
    # `supersedes` link in the vault is evidence enough for that: issue 21)
    assert all(h.change == "" for h in hits)
    assert hits[0].explain is not None and any("moved above #1" in m for m in hits[0].explain["moved"])
    assert hits[0].explain["same_fact"] == ["older.md"]
    assert hits[0].explain["window"]["text"] == "Nora is living in Porto, a new city."
    # the prefetch block carries both, the current one first, each with its day
    block = mem.prefetch(query, now=NOW, refresh_staged=False)
    shown = [e.path for e in block.entries]
    assert shown.index("newer.md") < shown.index("older.md")
    newer = next(line for line in block.block.split("\n") if line.startswith("- (2024-11-20, newer.md) "))
    assert "Nora is living in Porto" in newer  # the sentence that answers, with its neighbours
    # asked what happened, not how things are, relevance alone answers (search/question.py): the date of
    # a later note alike decides nothing about an event; with the rule off, it would
    past = "Which city did Nora live in back in March?"
    assert [h.path for h in mem.recall(past, k=2, now=NOW, touch=False)] == ["older.md", "newer.md"]
    ungated = Memory(internals(mem).config, rules=DEFAULT_RULES.but(one_fact_present_only=False))
    assert [h.path for h in ungated.recall(past, k=2, now=NOW, touch=False)] == ["newer.md", "older.md"]
    ungated.close()


def test_keyword_mode_still_finds_the_sentence_that_answers_and_ranks_the_newer_first(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    # `--mode bm25` on a complete index: relevance stays BM25's, but the answer windows are still
    # found, so the two statements of the fact are told apart by when they were stated (bench
    # updates, bm25+decay newer-first 0.275 without windows, 0.975 with them)
    vault = _nora_moved(tmp_path, "Nora does live in Lisbon, a city she says is the best city to live in.")
    # a weak keyword match, so BM25's min-max has a floor below the two statements
    (vault / "postcard.md").write_text(_note("2024-06-01", ["A postcard from Nora arrived.", TALK_B[2]]))
    mem = make_memory(vault=vault, index_dir=tmp_path / "ix")
    mem.index()
    query = "Which city does Nora live in?"
    plain = [h.path for h in mem.recall(query, k=3, mode="bm25", decay=False, now=NOW, touch=False)]
    assert plain[:2] == ["older.md", "newer.md"]  # BM25 alone: the older first
    hits = mem.recall(query, k=3, mode="bm25", now=NOW, touch=False, explain=True)
    assert [h.path for h in hits[:2]] == ["newer.md", "older.md"]
    assert hits[0].explain is not None and hits[0].explain["window"]["text"] == "Nora is living in Porto, a new city."
    assert hits[0].explain["bm25"] > 0 and hits[0].explain["mode"] == "bm25"


def test_an_older_clearly_better_match_about_another_question_keeps_its_place(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    vault = tmp_path / "talk"
    vault.mkdir()
    _filler(vault)
    (vault / "older.md").write_text(
        _note("2024-03-02", [TALK_A[0], "Nora lives in the city of Lisbon, which city she loves.", TALK_A[1]])
    )
    (vault / "newer.md").write_text(
        _note("2024-11-20", [TALK_B[0], "Nora adopted a grey cat called Pixel.", TALK_B[1]])
    )
    mem = make_memory(vault=vault, index_dir=tmp_path / "ix")
    mem.index()
    hits = mem.recall("Which city does Nora live in?", k=3, now=NOW, touch=False, explain=True)
    paths = [h.path for h in hits]
    assert paths[0] == "older.md" and "newer.md" in paths
    assert all(h.change == "" for h in hits)
    assert hits[0].explain is not None and hits[0].explain["moved"] == []


def _ranked(
    path: str, meta: dict[str, object], relevance: float, answer: list[float], similarity: float, said: str = ""
) -> Ranked:
    chunk = ChunkRow(f"{path}#0", path, 0, "", "two sentences. of a chunk.", "h-" + path)
    window = Window(said or f"What {path} says.", similarity, np.asarray(answer, dtype=np.float32))
    cand = Candidate(path, path, chunk, relevance, similarity, 0.0, window=window)
    return Ranked(cand, state_from_meta(meta), 1.0, False, False, path)


def test_same_fact_groups_the_first_hit_with_its_restatements_only() -> None:
    d1, d2, d3 = {"date": "2024-03-02"}, {"date": "2024-11-20"}, {"date": "2024-06-01"}
    a, b, c = [1.0, 0.0], [0.8, 0.6], [-0.6, 0.8]  # a~b alike (0.8); c unlike both
    items = [
        _ranked("x/old.md", d1, 1.0, a, 0.6),  # recall's answer
        _ranked("x/new.md", d2, 0.8, b, 0.7),
        _ranked("x/other.md", d3, 0.75, c, 0.6),
    ]
    answers = [r.cand.window.vector if r.cand.window else None for r in items]
    assert same_fact_groups(items, answers, MINILM) == [[0, 1], [2]]
    # another folder is another kind of note: no group (unless the rule is switched off)
    elsewhere = [items[0], replace(items[1], path="y/new.md"), items[2]]
    assert same_fact_groups(elsewhere, answers, MINILM) == [[0], [1], [2]]
    assert same_fact_groups(elsewhere, answers, MINILM, DEFAULT_RULES.but(same_folder=False))[0] == [0, 1]
    # stated after now (a plan, a session from after the question): no statement of how things are
    assert same_fact_groups(items, answers, MINILM, now=dt.datetime(2024, 11, 1, tzinfo=dt.UTC))[0] == [0]
    assert same_fact_groups(items, answers, MINILM, now=dt.datetime(2024, 11, 21, tzinfo=dt.UTC))[0] == [0, 1]
    assert same_fact_groups(items, answers, MINILM, now=dt.datetime(2024, 11, 20, 0, 1, tzinfo=dt.UTC))[0] == [0, 1]
    # undated: never "stated later" than anything
    undated = [_ranked("x/old.md", {}, 1.0, a, 0.6), *items[1:]]
    assert same_fact_groups(undated, answers, MINILM)[0] == [0]
    # the group is the first hit's, not the one of the answer closest to the query further down (stop 71:
    # a note about a crib, closer in words, grouped alone while the cabin's two days stayed apart)
    closer = [items[0], items[1], _ranked("x/crib.md", d3, 0.75, c, 0.9)]
    assert same_fact_groups(closer, answers, MINILM)[0] == [0, 1]
    # the same day, or the same words repeated (a daily note's copied line): not a change
    same_day = [_ranked("x/old.md", d2, 1.0, a, 0.6), *items[1:]]
    assert same_fact_groups(same_day, answers, MINILM) == [[0], [1], [2]]
    said = "08:10 Switched my editor from Vim to Helix."
    copied = [_ranked("x/old.md", d1, 1.0, a, 0.6, said), _ranked("x/new.md", d2, 0.8, b, 0.7, said), items[2]]
    assert same_fact_groups(copied, answers, MINILM) == [[0], [1], [2]]
    # one changed word is a changed value
    slack = [_ranked("x/old.md", d1, 1.0, a, 0.6, "The chat is on Slack."), copied[1], items[2]]
    assert same_fact_groups(slack, answers, MINILM)[0] == [0, 1]
    # a first hit worded far from the query (below the weak bar): the group is the one of the answer
    # closest to the query, and a statement below the bar still joins when it says what that answer says
    # (bench updates_hard: newer first 0.951 -> 0.975); a weak best answer groups nothing
    weak = [_ranked("x/old.md", d1, 1.0, a, 0.2), *items[1:]]
    assert same_fact_groups(weak, answers, MINILM)[0] == [0, 1]
    faint = [_ranked("x/old.md", d1, 1.0, a, 0.2), _ranked("x/new.md", d2, 0.8, b, 0.25), items[2]]
    faint[2] = _ranked("x/other.md", d3, 0.75, c, 0.3)  # the best answer, and still below the bar
    assert all(len(g) == 1 for g in same_fact_groups(faint, answers, MINILM))
    # a clearly better match (relevance apart by more than the band) is not the same question
    apart = [items[0], _ranked("x/new.md", d2, 0.5, b, 0.7), items[2]]
    assert same_fact_groups(apart, answers, MINILM) == [[0], [1], [2]]
    # episodic records keep their places
    record = [_ranked("x/old.md", {**d1, "type": "conversation"}, 1.0, a, 0.6), *items[1:]]
    assert same_fact_groups(record, answers, MINILM) == [[0], [1], [2]]


def test_a_statement_repeated_in_a_later_note_counts_from_the_note_that_said_it_first() -> None:
    """sample_vault's "how many slides did we caption with Grandma": a plan written on 2 October and
    written again on 9 October ("Sunday: Grandma, slides box 3.") moved above 5 October's answer
    ("We captioned 35 slides") as the later statement. Repeating a line does not make it newer: the
    two notes are one statement, stated on 2 October, and the answer keeps its place."""
    d2, d5, d9 = {"date": "2026-10-02"}, {"date": "2026-10-05"}, {"date": "2026-10-09"}
    plan, answer = [1.0, 0.0], [0.6, 0.8]
    items = [
        _ranked("d/05.md", d5, 0.78, answer, 0.52, "We captioned 35 slides; she remembered the names."),
        _ranked("d/02.md", d2, 0.73, plan, 0.65, "Grandma wants to go through box 3 of the slides on Sunday."),
        _ranked("d/09.md", d9, 0.72, plan, 0.62, "Sunday: Grandma, slides box 3."),
    ]
    assert statements(items, [0, 1, 2]) == [[0], [1, 2]]
    out = refill(items, [[0, 1, 2]])
    assert [r.path for r in out] == ["d/05.md", "d/02.md", "d/09.md"] and not any(r.moves for r in out)
    assert out[0].same_fact == ("d/02.md", "d/09.md")  # still one question's statements
    assert out[2].repeats == "d/02.md" and out[1].repeats == "" == out[0].repeats  # --explain says so
    # a later statement that says something new moves up, past both copies of the older one
    newer = [items[1], items[2], _ranked("d/11.md", {"date": "2026-10-11"}, 0.7, answer, 0.5, "We captioned 20 more.")]
    out = refill([replace(r, relevance_rank=i) for i, r in enumerate(newer, 1)], [[0, 1, 2]])
    assert [r.path for r in out] == ["d/11.md", "d/02.md", "d/09.md"]
    assert out[0].moves == ("moved above #1 (by relevance): states the same thing differently, stated later",)
    # a statement counts from its first note, whichever note relevance put first
    assert said_first(items, [2, 1])[1] == dt.date(2026, 10, 2).toordinal()


def test_only_a_later_note_below_that_adds_nothing_repeats_one_above() -> None:
    """The simulated year (bench lifetime): "Home for the user is the city of Denver now." adds no
    word to an older, lower "Home for the user's dad is the city of Denver now.", and is the news:
    it keeps its own day. A later line that adds words ("no longer") is a new statement too."""
    old, new = {"date": "2026-03-02"}, {"date": "2026-11-20"}
    a, b = [1.0, 0.0], [0.8, 0.6]
    items = [
        _ranked("m/user.md", new, 0.9, a, 0.6, "Home for the user is the city of Denver now."),
        _ranked("m/lisbon.md", {"date": "2026-06-01"}, 0.8, b, 0.6, "The city the user chose was Lisbon."),
        _ranked("m/dad.md", old, 0.7, b, 0.5, "Home for the user's dad is the city of Denver now."),
    ]
    assert statements(items, [0, 1, 2]) == [[0], [1], [2]]
    assert [r.path for r in refill(items, [[0, 1, 2]])][0] == "m/user.md"
    vim = [
        _ranked("x/1.md", old, 0.9, a, 0.6, "I use Vim."),
        _ranked("x/2.md", new, 0.8, b, 0.6, "I no longer use Vim."),
    ]
    assert statements(vim, [0, 1]) == [[0], [1]]
    assert [r.path for r in refill(vim, [[0, 1]])] == ["x/2.md", "x/1.md"]


def test_change_label() -> None:
    assert change_label(1, [], []) == ""
    assert change_label(1, [3], []) == "supersedes #3"
    assert change_label(3, [], [1]) == "superseded by #1"
    assert change_label(2, [4, 3], []) == "supersedes #3, #4"


def test_picks_read_from_prepared_bodies_equal_pick_windows_of_split_windows() -> None:
    """best_windows tokenizes only the windows that contain a query term (windows.picks); what it picks must
    be what the pure pair picks, on real notes and a chunk with one window."""
    bodies = [p.read_bytes().decode("utf-8", "replace") for p in sorted(Path("sample_vault").rglob("*.md"))]
    bodies += ["One line only, about the city of Lisbon.", "", "Wow.\nOk!"]
    queries = ["which city do I live in", "editor settings vim", "Cities change notes", "the", "project deadline"]
    seen = 0
    for body in bodies:
        for q in queries:
            terms = window_terms(q)
            want = pick_windows(split_windows(body), terms) if len(split_windows(body)) >= 2 else []
            assert picks(body, terms) == want, (body[:60], q)
            seen += bool(want)
    assert seen > 20  # the comparison saw real picks, not only empty lists


def test_a_property_line_is_read_with_its_notes_title_when_it_names_what_the_query_asks() -> None:
    # ../shared/obsidian-vault: "when was the boiler installed" meets `installed: 2019`, two words
    # that are no sentence on their own (MIN_WINDOW_WORDS) and that say nothing of the boiler
    body = "Pressure should sit between 1.0 and 1.5 bar.\n\n- model: Vaillant ecoTEC plus 832\n- installed: 2019"
    boiler = Subject("Boiler", frozenset({"model: Vaillant ecoTEC plus 832", "installed: 2019"}))
    asked = window_terms("when was the boiler installed")
    assert about("installed: 2019", boiler, asked) == "Boiler: installed: 2019"
    assert picks(body, asked, subject=boiler)[0] == "Boiler: installed: 2019"
    assert "installed: 2019" not in " ".join(picks(body, asked))  # without its subject: too short to be read
    # a line the query meets only through words of the title is read as it is: read with the title,
    # `location: Lisbon` answered every question about the Lisbon trip
    trip = Subject("Lisbon conference trip", frozenset({"location: Lisbon"}))
    assert about("location: Lisbon", trip, window_terms("which hotel am I staying at in Lisbon")) == "location: Lisbon"
    # a sentence of the body is never a property, whatever it says
    assert about("Pressure should sit between 1.0 and 1.5 bar.", boiler, asked) == (
        "Pressure should sit between 1.0 and 1.5 bar."
    )


def test_a_property_answers_recall_and_prefetch_with_its_notes_name(make_memory: MemoryFactory, vault: Path) -> None:
    write_notes(
        vault,
        {
            "Areas/Boiler.md": "---\nmodel: Vaillant ecoTEC plus 832\ninstalled: 2019\n---\n# Boiler\n\n"
            "Pressure should sit between 1.0 and 1.5 bar. If it drops below 0.8, top up with the filling loop.\n"
        },
    )
    mem = make_memory(FakeEmbedder())
    mem.index()
    hit = next(
        h
        for h in mem.recall("when was the boiler installed", k=3, touch=False, explain=True)
        if h.path == "Areas/Boiler.md"
    )
    assert hit.explain is not None and hit.explain["window"]["text"] == "Boiler: installed: 2019"
    # the block's first entry reads on in its note from its first line, the property line with it
    # (stop 59: it showed "Boiler: installed: 2019" alone, the one answer that never read on)
    first = mem.prefetch("when was the boiler installed").entries[0]
    assert first.path == "Areas/Boiler.md"
    assert first.text.startswith("Pressure should sit between 1.0 and 1.5 bar.") and "installed: 2019" in first.text
    # below the first entry, the property is shown with its note's name, as recall reads it
    write_notes(
        vault,
        {
            "Daily/2026-11-30.md": "# 2026-11-30\n\n"
            "The boiler engineer asked when the boiler was installed; I could not remember.\n"
        },
    )
    mem.index()
    got = mem.prefetch("when was the boiler installed")
    shown = {e.path: e.text for e in got.entries}
    assert got.entries[0].path == "Daily/2026-11-30.md", got.block
    # the note fits its entry: read whole, as the first entry reads on (stop 61)
    assert shown["Areas/Boiler.md"].startswith("Pressure should sit") and "installed: 2019" in shown["Areas/Boiler.md"]
    # a note longer than its entry: the property is shown with its note's name, as recall reads it
    steps = "".join(f"- Step {i}: bleed the radiator on floor {i} until water runs, then close it.\n" for i in range(6))
    write_notes(
        vault,
        {
            "Areas/Boiler.md": "---\nmodel: Vaillant ecoTEC plus 832\ninstalled: 2019\n---\n# Boiler\n\n"
            "Pressure should sit between 1.0 and 1.5 bar. If it drops below 0.8, top up with the filling loop.\n\n"
            + steps
        },
    )
    mem.index()
    got = mem.prefetch("when was the boiler installed")
    shown = {e.path: e.text for e in got.entries}
    assert got.entries[0].path == "Daily/2026-11-30.md", got.block
    assert shown["Areas/Boiler.md"].startswith("Boiler: installed: 2019"), got.block


def test_a_person_card_read_on_shows_the_properties_beside_the_one_that_answers(
    make_memory: MemoryFactory, vault: Path
) -> None:
    # dexter's People/Sam Tupy.md, a card of properties and no text: "Sam Tupy's birthday is coming
    # up, help me brainstorm a gift for him" showed "Sam Tupy: Birthday: March 26th" and not his
    # interests, though the first entry has half the block to read on in
    write_notes(
        vault,
        {
            "People/Sam Tupy.md": "---\nRole: UX Designer\nLocation: Minneapolis\nHow We Met: River Valley Church\n"
            "Birthday: March 26th\nInterests: Reading, Learning, Xbox, Switch\n---\n"
        },
    )
    mem = make_memory(FakeEmbedder())
    mem.index()
    got = mem.prefetch("Sam Tupy's birthday is coming up, help me brainstorm a gift for him.")
    card = next(e for e in got.entries if e.path == "People/Sam Tupy.md")
    assert got.entries[0] == card
    assert "Birthday: March 26th" in card.text and "Interests: Reading, Learning, Xbox, Switch" in card.text


def test_a_window_too_long_for_the_model_is_not_embedded_and_recall_still_answers(
    make_memory: MemoryFactory, vault: Path
) -> None:
    # A property line fits its chunk, and its note's title read before it can take it past the
    # model's window; an embedder refuses such a text rather than truncate it.
    fake = FakeEmbedder(max_tokens=130)
    title = "Long Summary Note With A Title Of Many Words"
    line = "summary: the pump schedule " + " ".join(f"w{i}" for i in range(119))
    assert fake.count_tokens(f"Pump.\n\n- {line}") <= 130 < fake.count_tokens(f"{title}: {line}")
    (vault / "Areas").mkdir(exist_ok=True)
    (vault / f"Areas/{title}.md").write_text(f"---\n{line}\n---\nPump.\n", encoding="utf-8")
    mem = make_memory(fake)
    mem.index()
    hits = mem.recall("what is the pump schedule summary", k=3, touch=False, explain=True)
    assert hits[0].path == f"Areas/{title}.md"
    assert hits[0].explain is not None and hits[0].explain["window"] is None  # the line had no vector
    mem.prefetch("what is the pump schedule summary")  # asks the same windows: it raised too


def test_windows_are_sentences_and_are_never_embedded_twice(tmp_path: Path) -> None:
    body = "me: The city I chose was Lisbon. It has a river!\nfriend: Wow.\n- Cities change, notes too."
    assert split_windows(body) == [
        "me: The city I chose was Lisbon.",
        "It has a river!",
        "friend: Wow.",
        "Cities change, notes too.",
    ]
    terms = window_terms("Which cities does she live in? my notes")
    assert pick_windows(split_windows(body), terms) == ["Cities change, notes too.", "me: The city I chose was Lisbon."]
    emb = FakeEmbedder()
    with WindowCache(tmp_path / "w.sqlite", emb.identity) as cache:
        cache.vectors(["a sentence here", "another one here"], emb)
        cache.vectors(["a sentence here", "a third one"], emb)
    assert emb.texts_embedded == 3
    with WindowCache(tmp_path / "w.sqlite", emb.identity) as again:  # kept on disk, by text hash
        again.vectors(["a third one"], emb)
    assert emb.texts_embedded == 3


def test_recall_explain_in_process_and_json(vault: Path, index_dir: Path) -> None:
    args = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    runner = CliRunner()
    assert runner.invoke(app, [*args, "index"]).exit_code == 0
    out = runner.invoke(app, [*args, "recall", "espresso grinder", "--explain", "--no-touch", "-k", "3"])
    assert out.exit_code == 0, out.output
    assert "| score: relevance " in out.stdout and "| order: strength " in out.stdout and "tier " in out.stdout
    res = runner.invoke(app, [*args, "recall", "espresso grinder", "--explain", "--no-touch", "--json"])
    hits = json.loads(res.stdout)["hits"]
    ex = hits[0]["explain"]
    for key in (
        "bm25",
        "dense",
        "window",
        "coverage",
        "relevance",
        "strength",
        "tier",
        "dormant",
        "reactivated",
        "cued_by",
        "on_day",
        "stated",
        "same_fact",
        "repeats",
        "moved",
        "relevance_rank",
    ):
        assert key in ex
    plain = runner.invoke(app, [*args, "recall", "espresso grinder", "--no-touch", "--json"])
    assert "explain" not in json.loads(plain.stdout)["hits"][0]


@pytest.mark.slow
def test_recall_explain_console_script(vault: Path, index_dir: Path) -> None:
    exe = str(Path(sys.executable).parent / "vault-memory")
    args = [exe, "--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    assert subprocess.run([*args, "index"], capture_output=True, text=True, timeout=300).returncode == 0
    res = subprocess.run(
        [*args, "recall", "espresso grinder", "--explain", "--no-touch"], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    assert "| score: relevance " in res.stdout and "(#1 by relevance" in res.stdout


def test_words_inside_links_make_no_sentence_an_answer() -> None:
    """Only a sentence's own words make it a candidate answer: "By Michael Stapelberg, in C." is
    not picked for "which tiling window manager do I use", nor is a pointer ("See [[Window manager
    setup]].") or a garden sentence whose subject is its link ("My [[window manager]] of choice.":
    lending it its link's words earned nothing on strangers' text, stop 74); "My tiling window
    manager is i3" is."""
    terms = window_terms("Which tiling window manager do I use?")
    said = [
        "My [[window manager]] of choice.",
        "See [[Window manager setup]].",
        "By Michael Stapelberg, in C.",
        "My tiling window manager is [[i3]].",
    ]
    assert pick_windows(said, terms) == ["My tiling window manager is [[i3]]."]


def test_a_now_without_a_zone_is_read_as_utc_by_recall_and_prefetch(make_memory: MemoryFactory, tmp_path: Path) -> None:
    # `datetime(2026, 11, 29, 12)` is what a Python caller writes first; recall and prefetch
    # compared it with the notes' zoned times and raised TypeError, while stage, log and review
    # read it as UTC. Now every operation reads it so, and answers as for the zoned time.
    vault = _nora_moved(tmp_path, "Nora lives in Lisbon, a sunny city.")
    mem = make_memory(vault=vault, index_dir=tmp_path / "ix")
    mem.index()
    naive = NOW.replace(tzinfo=None)
    query = "Which city does Nora live in?"
    zoned = mem.recall(query, k=3, now=NOW, touch=False, explain=True)
    read = mem.recall(query, k=3, now=naive, touch=False, explain=True)
    assert [(h.path, h.explain) for h in read] == [(h.path, h.explain) for h in zoned]
    assert [h.path for h in read[:2]] == ["newer.md", "older.md"]
    assert [h.path for h in mem.recall(query, k=3, now=naive, touch=False, after="5000d")] == [h.path for h in zoned]
    assert mem.prefetch(query, now=naive).block == mem.prefetch(query, now=NOW).block != ""
