"""Query-conditioned freshness (issue 14): which notes answer the same question, answer windows,
what recall and prefetch say about changed facts, and `recall --explain`."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import MemoryFactory
from vault_memory.cli import app
from vault_memory.embedders import FakeEmbedder
from vault_memory.ranking import change_label, same_question_groups
from vault_memory.windows import WindowCache, pick_windows, picks, split_windows, window_terms

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


def test_changed_fact_inside_unrelated_talk_ranks_the_newer_first(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "talk"
    vault.mkdir()
    _filler(vault)
    # The older statement matches the question a little better; the two notes share no word
    # beyond the fact's own ("Nora", "city"), so their chunks are not alike as wholes.
    (vault / "older.md").write_text(
        _note("2024-03-02", [TALK_A[0], "Nora lives in Lisbon, a sunny city.", TALK_A[1], TALK_A[2]])
    )
    (vault / "newer.md").write_text(
        _note("2024-11-20", [TALK_B[0], "Nora is living in Porto, a new city.", TALK_B[1], TALK_B[2]])
    )
    mem = make_memory(vault=vault, index_dir=tmp_path / "ix")
    mem.index()
    query = "Which city does Nora live in?"
    plain = [h.path for h in mem.recall(query, k=3, decay=False, now=NOW, touch=False)]
    assert plain[:2] == ["older.md", "newer.md"]  # relevance alone: the older first
    whole = mem.embedder.embed([(vault / "older.md").read_text(), (vault / "newer.md").read_text()])
    assert float(whole[0] @ whole[1]) < 0.5  # the old chunk-to-chunk rule would not group them
    hits = mem.recall(query, k=3, now=NOW, touch=False, explain=True)
    assert [h.path for h in hits[:2]] == ["newer.md", "older.md"]
    assert hits[0].change == "newest of 2 statements"
    assert hits[1].change == "older: newer statement (2024-11-20) is #1"
    assert hits[0].explain is not None and any("moved above #1" in m for m in hits[0].explain["moved"])
    assert hits[0].explain["window"]["text"] == "Nora is living in Porto, a new city."
    # the prefetch block carries both, the current one first, the older marked
    block = mem.prefetch(query, now=NOW, refresh_staged=False)
    shown = [e.path for e in block.entries]
    assert shown.index("newer.md") < shown.index("older.md")
    assert "older: newer statement (2024-11-20) is #1" in block.block


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


def test_same_question_groups_by_answers_not_chunks() -> None:
    # chunk vectors would be unlike; the answers (rows) of 0 and 1 are alike, 2 answers nothing alike
    answers = np.array([[1.0, 0.0], [0.8, 0.6], [-0.6, 0.8]], dtype=np.float32)
    groups = same_question_groups(answers, [1.0, 0.8, 0.75], ["a", "b", "c"], 0.5, 0.35)
    assert sorted(map(sorted, groups)) == [[0, 1], [2]]
    # a clearly better match (relevance apart by more than the band) is never grouped
    assert sorted(map(sorted, same_question_groups(answers, [1.0, 0.5, 0.4], ["a", "b", "c"], 0.5, 0.35))) == [
        [0],
        [1],
        [2],
    ]
    # both answer the query about equally well: grouped even when the answers differ in wording
    far = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    assert same_question_groups(far, [1.0, 0.9], ["a", "b"], 0.5, 0.35, answers=[0.52, 0.50]) == [[0, 1]]
    assert same_question_groups(far, [1.0, 0.9], ["a", "b"], 0.5, 0.35, answers=[0.62, 0.50]) == [[0], [1]]
    # episodic records keep their places
    assert same_question_groups(answers, [1.0, 0.8, 0.75], ["a", "b", "c"], 0.5, 0.35, fixed=[False, True, False]) == [
        [0],
        [1],
        [2],
    ]


def test_change_label() -> None:
    assert change_label(1, "2024-11-20", []) == ""
    assert change_label(1, "2024-11-20", [(2, "2024-03-02")]) == "newest of 2 statements"
    assert change_label(2, "2024-03-02", [(1, "2024-11-20")]) == "older: newer statement (2024-11-20) is #1"
    assert change_label(2, "2024-03-02", [(1, "2024-03-02")]) == "same question as #1, stated the same day"
    assert change_label(1, "2024-03-02", [(2, "2024-03-02")]) == "same question as #2, stated the same day"


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
    assert "| relevance " in out.stdout and "strength " in out.stdout and "tier " in out.stdout
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
        "stated",
        "same_question",
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
    assert "| relevance " in res.stdout and "(#1 by relevance" in res.stdout
