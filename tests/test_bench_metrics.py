"""Hand-computed cases for bench/metrics.py."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bench import metrics


def test_ndcg_perfect_and_empty():
    assert metrics.ndcg_at_k(["a", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)
    assert metrics.ndcg_at_k([], {"a": 1}, 10) == 0.0
    assert metrics.ndcg_at_k(["x", "y"], {}, 10) == 0.0


def test_ndcg_single_relevant_at_rank_3():
    # DCG = 1/log2(4) = 0.5; IDCG = 1/log2(2) = 1.
    assert metrics.ndcg_at_k(["x", "y", "a"], {"a": 1}, 10) == pytest.approx(0.5)


def test_ndcg_graded_gain_is_linear_like_trec_eval():
    # qrels a=2, b=1. Run: b, a.
    # DCG = 1/1 + 2/log2(3); IDCG = 2/1 + 1/log2(3).
    dcg = 1 + 2 / math.log2(3)
    idcg = 2 + 1 / math.log2(3)
    assert metrics.ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(dcg / idcg)


def test_ndcg_cutoff_and_ideal_from_qrels():
    # Two relevant docs, only one retrieved within k=2: DCG = 1/log2(3); IDCG = 1 + 1/log2(3).
    got = metrics.ndcg_at_k(["x", "a", "b"], {"a": 1, "b": 1}, 2)
    assert got == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_ndcg_ignores_zero_judgements_and_duplicates():
    assert metrics.ndcg_at_k(["n", "a"], {"a": 1, "n": 0}, 10) == pytest.approx(1 / math.log2(3))
    # A duplicate id must not earn gain twice.
    assert metrics.ndcg_at_k(["a", "a"], {"a": 1}, 10) == pytest.approx(1.0)


def test_ndcg_rejects_bad_k():
    with pytest.raises(ValueError):
        metrics.ndcg_at_k(["a"], {"a": 1}, 0)


def test_recall_at_k():
    assert metrics.recall_at_k(["a", "x", "b"], {"a", "b", "c"}, 2) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(["a", "x", "b"], {"a", "b", "c"}, 3) == pytest.approx(2 / 3)
    assert metrics.recall_at_k(["a"], {"a": 1, "z": 0}, 5) == 1.0  # qrels mapping: zero is not relevant
    assert metrics.recall_at_k(["a"], set(), 5) == 0.0


def test_evidence_recall():
    units = [["D1:1", "D1:2"], ["D2:5"], ["D3:1", "D1:3"]]
    gold = ["D1:2", "D1:3", "D4:4"]
    assert metrics.evidence_recall(units, gold, 1) == pytest.approx(1 / 3)
    assert metrics.evidence_recall(units, gold, 2) == pytest.approx(1 / 3)
    assert metrics.evidence_recall(units, gold, 3) == pytest.approx(2 / 3)
    assert metrics.evidence_recall(units, ["D1:1", "D1:1"], 1) == 1.0  # duplicates in gold count once
    assert metrics.evidence_recall(units, [], 3) == 0.0


def test_flatten_units_budget():
    units = [["D1:1", "D1:2"], ["D1:2", "D2:5"], ["D3:1"]]
    flat = metrics.flatten_units(units)
    assert flat == ["D1:1", "D1:2", "D2:5", "D3:1"]
    assert metrics.recall_at_k(flat, ["D2:5", "D3:1"], 3) == pytest.approx(0.5)


def test_newer_first():
    st = ["old", "mid", "new"]
    assert metrics.newer_first(["new", "x", "old", "mid"], st)
    assert not metrics.newer_first(["old", "new", "mid"], st)
    assert metrics.newer_first(["x", "new"], st)  # older ones not retrieved do not count against it
    assert not metrics.newer_first(["old", "mid"], st)  # newest missing
    with pytest.raises(ValueError):
        metrics.newer_first(["a"], [])


def test_all_in_top_k():
    assert metrics.all_in_top_k(["a", "b", "c"], ["b", "a"], 2)
    assert not metrics.all_in_top_k(["a", "x", "b"], ["b", "a"], 2)


def test_percentiles_match_numpy_linear():
    vals = [5, 1, 4, 2, 3]
    assert metrics.median(vals) == 3
    assert metrics.median([1, 2, 3, 4]) == pytest.approx(2.5)
    # numpy.percentile(range(1, 21), 95) == 19.05
    assert metrics.p95(range(1, 21)) == pytest.approx(19.05)
    assert metrics.percentile([7], 95) == 7
    assert metrics.percentile(vals, 0) == 1 and metrics.percentile(vals, 100) == 5
    with pytest.raises(ValueError):
        metrics.median([])


def test_mean():
    assert metrics.mean([1, 2, 3]) == 2
    assert metrics.mean([]) == 0.0
    assert metrics.mean([True, False, False, True]) == 0.5


def test_ablate_judges_a_rule_on_the_set_it_was_not_chosen_on() -> None:
    """bench ablate's left-out table: on each foreign set, the other sets decide whether the rule
    stays (a tie drops it), and what it buys there counts only where it stayed."""
    from bench.studies.ablate import earned, left_out, left_out_table

    def cell(first: float) -> dict[str, float | None]:
        return {"first": first, "top5": None, "newest": None, "block": None, "silence": None}

    sets = ("dexter", "flancian", "jbranchaud-til", "longmemeval")
    results = {
        "default": {s: cell(0.5) for s in sets},
        # the rule buys 0.1 on dexter alone: chosen only where dexter is among the others
        "no_local": {**{s: cell(0.5) for s in sets}, "dexter": cell(0.4)},
        # the rule buys 0.1 on every set: kept everywhere, earns 0.4
        "no_general": {s: cell(0.4) for s in sets},
        # the rule costs 0.1 on flancian: dropped where flancian decides
        "no_costly": {**{s: cell(0.5) for s in sets}, "flancian": cell(0.6)},
    }
    local = left_out(results, "no_local")
    assert local is not None
    assert local["dexter"] == (False, pytest.approx(0.1))  # the others saw no gain: dropped
    assert all(local[s][0] for s in sets if s != "dexter")
    assert earned(local) == 0.0  # where it was kept, it bought nothing
    general = left_out(results, "no_general")
    assert general is not None and earned(general) == pytest.approx(0.4)
    costly = left_out(results, "no_costly")
    assert costly is not None and not any(kept for s, (kept, _) in costly.items() if s != "flancian")
    assert costly["flancian"][0] is False and earned(costly) == 0.0
    lines = left_out_table(results, [("default", "", {}), ("no_local", "", {}), ("no_general", "", {})])
    rows = [ln for ln in lines if ln.startswith("| no_")]
    assert rows[0].startswith("| no_local") and rows[-1].startswith("| no_general")  # least earned first
    assert left_out({"default": {"dexter": cell(0.5)}, "x": {"dexter": cell(0.4)}}, "x") is None


def test_ablate_leaves_out_another_persons_vault_as_it_leaves_out_the_shared_ones() -> None:
    """A vault measured beside the shared three (its questions file under --vaults) is a foreign set
    too: it is left out and decides for the others; the team's own sets never are."""
    from bench.studies.ablate import foreign_sets, left_out

    def cell(first: float) -> dict[str, float | None]:
        return {"first": first, "top5": None, "newest": None, "block": None, "silence": None}

    names = ["real_vault sample", "m0lentum", "dexter", "updates_hard v0", "scifact", "longmemeval"]
    assert foreign_sets(names) == ["dexter", "longmemeval", "m0lentum"]
    results = {
        "default": {s: cell(0.5) for s in names},
        # the rule buys on the fourth vault alone: only there is it dropped, and the team's sets say nothing
        "no_rule": {**{s: cell(0.5) for s in names}, "m0lentum": cell(0.3), "real_vault sample": cell(0.0)},
    }
    got = left_out(results, "no_rule")
    assert got is not None and set(got) == {"dexter", "longmemeval", "m0lentum"}
    assert got["m0lentum"] == (False, pytest.approx(0.2))
    assert got["dexter"][0] and got["longmemeval"][0]


def test_a_block_holds_a_turns_text_as_it_reads() -> None:
    """bench foreign's block check: a note's `Birthday: [[October 11th]]` is held by a block that shows
    the property as "Birthday: October 11th"; a block without the date does not hold it."""
    from types import SimpleNamespace

    from bench.data.foreign import Turn
    from bench.runners.foreign import score_block

    turn = Turn("z05", "Jake's birthday is coming up", must=("Birthday: [[October 11th]]",))

    def block(line: str) -> SimpleNamespace:
        entry = SimpleNamespace(path="People/Jake Stachel.md", title="Jake Stachel", text=line)
        return SimpleNamespace(block=f"[RELEVANT_LEARNED_MEMORY]\n- (undated, x.md) {line}\n", entries=[entry])

    assert score_block(turn, block("Jake Stachel: Birthday: October 11th"))["ok"]
    assert score_block(turn, block("Jake Stachel: Birthday:  [[October 11th]]"))["ok"]
    assert not score_block(turn, block("Jake Stachel: Birthday: October 12th"))["ok"]
    # a URL the turn needs is held by a block that shows it as the target of a Markdown link
    # (read as its words, the link is "a paper": stop 72, `flancian`'s fourteenth file)
    url = Turn("t16", "link the paper", must=("http://www.nonsymbolic.org/PNSE-Article.pdf",))
    assert score_block(url, block("This is from [a paper](http://www.nonsymbolic.org/PNSE-Article.pdf)."))["ok"]
    assert not score_block(url, block("This is from [a paper](http://www.nonsymbolic.org/)."))["ok"]
    # a list item's "- " and a heading's "### " copied with the line are marks a block does not print;
    # a line of code is held as written ("> truncate pokemons;" is psql's prompt, shown so)
    item = Turn("t04", "add what the pasta needs", must=("- [ ] Pesto sauce",))
    assert score_block(item, block("Creamy Pesto Pasta: [ ] Pesto sauce [ ] cream"))["ok"]
    assert not score_block(item, block("Creamy Pesto Pasta: [x] Pesto sauce"))["ok"]
    heading = Turn("t20", "what was the test", must=("#### Full blood test",))
    assert score_block(heading, block("Health > Full blood test: fasting from 8pm"))["ok"]
    code = Turn("t09", "empty the table", must=("> truncate pokemons;",))
    assert score_block(code, block("> truncate pokemons;"))["ok"]
    assert score_block(code, block("truncate pokemons;"))["ok"]  # as it reads, the prompt's mark is not the command
    # a table row as written is held by an entry that shows its cells in order, named by the header
    # or as a key and its value (stop 80); a line of code with pipes in it is still held as written
    row = Turn("t23", "what was the offer", must=("| Base Pay      | $200,000 |",))
    assert score_block(row, block("Pay: Base Pay; Amount: $200,000 Pay: Stock; Amount: $65,000"))["ok"]
    assert score_block(row, block("Base Pay: $200,000"))["ok"]
    assert not score_block(row, block("Amount: $200,000 Pay: Base Pay"))["ok"]
    assert not score_block(row, block("Pay: Base Pay; Amount: $180,000"))["ok"]
    pipe = Turn("t10", "sort by size", must=("du -h | sort -nr",))
    assert score_block(pipe, block("du -h | sort -nr"))["ok"]
    assert not score_block(pipe, block("du -h sort -nr"))["ok"]


def test_an_entry_ending_on_a_lead_in_is_counted() -> None:
    """bench foreign counts entries whose last line leads in and shows nothing of what it introduces
    ("Instead I just use fstab and mount/unmount as needed:"), cut or not; a colon inside a line is
    no lead-in."""
    from types import SimpleNamespace

    from bench.data.foreign import Turn
    from bench.runners.foreign import ends_on_a_lead_in, score_block

    assert ends_on_a_lead_in("Instead I just use fstab and mount/unmount as needed:")
    assert ends_on_a_lead_in("Start the day by taking a look at: …")
    assert not ends_on_a_lead_in("as needed: UUID=6139-3034 /mnt/sd exfat noauto,x-systemd.automount")
    entries = [
        SimpleNamespace(path="autofs.md", title="autofs", text=t)
        for t in ("as needed:", "Flights booked: 12-16 March.")
    ]
    got = SimpleNamespace(block="[RELEVANT_LEARNED_MEMORY]\n- as needed:\n", entries=entries)
    assert score_block(Turn("p07", "SD card", must=("x-systemd",)), got)["lead_in"] == 1


def test_an_entry_is_navigation_when_it_only_points_elsewhere() -> None:
    """bench foreign's navigation count: an entry of links, URLs and dates with fewer than two words
    of its own is navigation; a short statement that points nowhere ("I'm a subscriber.") is not."""
    from bench.runners.foreign import navigation_only

    assert navigation_only("- [Generate A UUID](postgres/generate-a-uuid.md)")
    assert navigation_only("[[2026-10-15]] · [[2026-10-19]]")
    assert navigation_only("Thread: https://twitter.com/flancian/status/1320089326508822528")
    assert not navigation_only("I'm a subscriber.")
    assert not navigation_only("Nah")
    assert not navigation_only("Lunch with [[Jonas Weber]] at the new ramen place.")
    # of those, a saved web link named in two words or more is counted apart (stop 80)
    from bench.runners.foreign import bookmarks_only

    assert navigation_only("[R Graphics Cookbook](https://r-graphics.org/)")
    assert bookmarks_only("[R Graphics Cookbook](https://r-graphics.org/)")
    assert not bookmarks_only("- [Generate A UUID](postgres/generate-a-uuid.md)")  # a way to another note
    assert not bookmarks_only("[source](https://example.org/a)")  # a word alone says where, not what
    assert not bookmarks_only("I'm a subscriber.")  # no navigation at all
    # a web page a note saves, shown under the note's title, is a saved link too (stop 82)
    amadeo = "Amadeo: A [[person]]. [[twitter]] https://twitter.com/kingmob84"
    assert navigation_only(amadeo) and bookmarks_only(amadeo, "Amadeo") and not bookmarks_only(amadeo)
    assert not bookmarks_only("Piglia: [[301]] [[Ricardo Piglia]].", "Piglia")  # a redirect to another note
    assert not bookmarks_only("Thread: https://twitter.com/flancian/status/1", "Birdbear")  # not its title


def test_foreign_combines_question_files_into_one_count_per_vault() -> None:
    """bench foreign --combine: each vault's questions right first, in the top 5 and their MRR are
    summed over the runs, weighted by each run's answered questions (not averaged run by run), the
    pairs add, and a run where a mode alone puts more right notes first than hybrid is named."""
    from bench.runners.foreign import combine

    def summary(n: int, first: float, bm25: float, dense: float, turns: list[int]) -> dict[str, Any]:
        def mode(f: float) -> dict[str, Any]:
            return {"first": f, "top5": 1.0, "mrr": f, "no_answer_all_weak": [1, 8], "answered_all_weak": [0, n]}

        return {
            "answered": n,
            "hybrid": mode(first),
            "bm25": mode(bm25),
            "dense": mode(dense),
            "blocks": {"turns_ok": turns},
        }

    runs = [
        ("shared", {"flancian": summary(56, 0.625, 0.554, 0.661, [8, 12])}),
        ("fifth", {"flancian": summary(32, 0.75, 0.5, 0.5, [14, 24])}),
    ]
    got = combine(runs)["flancian"]
    assert got["runs"] == 2 and got["answered"] == 88
    assert got["modes"]["hybrid"]["first"] == 35 + 24  # 0.625 of 56, 0.75 of 32
    assert got["modes"]["dense"]["first"] == 37 + 16
    assert got["modes"]["hybrid"]["mrr"] == pytest.approx(0.625 * 56 + 0.75 * 32)
    assert got["pairs"]["turns_ok"] == [22, 36]
    assert got["pairs"]["no_answer_all_weak"] == [2, 16]
    assert got["led_by"] == [("shared", 56, 35, 31, 37)]  # dense alone led there, not on the fifth


def test_foreign_every_runs_each_question_folder_and_sums_them(tmp_path: Path) -> None:
    """bench foreign --every ROOT: the question files of --vaults, then each folder of ROOT that
    holds question files (its vault read from --vaults' folder), summed per set as --combine sums
    earlier runs; a folder without question files is not a run."""
    import json

    from bench.harness import RunOptions
    from bench.runners.foreign import run

    base, more = tmp_path / "base", tmp_path / "more"
    (base / "diary").mkdir(parents=True)
    for topic, line in [
        ("kettle", "Descale the kettle with citric acid every month."),
        ("bike", "The bike lock code is 4512."),
    ]:
        (base / "diary" / f"{topic}.md").write_text(f"# {topic.title()}\n\n{line}\n", encoding="utf-8")

    def questions(folder: Path, qs: list[tuple[str, str]]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        spec = {
            "vault": "diary",
            "now": "2026-12-01",
            "questions": [
                {"id": f"q{i}", "kind": "fact", "q": q, "answers": [{"path": path, "text": ""}]}
                for i, (q, path) in enumerate(qs)
            ],
            "prefetch": [],
        }
        (folder / "diary.questions.json").write_text(json.dumps(spec), encoding="utf-8")

    questions(base, [("how do I descale the kettle", "kettle.md")])
    questions(more / "second", [("what is the bike lock code", "bike.md"), ("kettle descaling", "kettle.md")])
    questions(more / "third", [("bike lock", "bike.md")])
    (more / "notes").mkdir()  # no question file: no run
    opts = RunOptions(
        quick=True,
        data=tmp_path / "no-data",
        out=tmp_path / "out",
        cache=tmp_path / "cache",
        extra={"vaults": base, "every": more, "modes": "hybrid,bm25"},
    )
    res = run(opts)
    got = res.results["combined"]["diary"]
    assert got["runs"] == 3 and got["answered"] == 4
    assert [r["questions"] for r in res.results["runs"]] == [str(base), str(more / "second"), str(more / "third")]
    assert set(got["modes"]) == {"hybrid", "bm25"}
    assert "longmemeval" not in res.results["combined"]  # no pool under --data: skipped, not an empty run
    assert any("summed over 3 runs" in line for line in res.markdown)
    # each run keeps every question's result, so two runs compare question by question
    assert [[q["id"] for q in r["detail"]["diary"]["questions"]] for r in res.results["runs"]] == [
        ["q0"],
        ["q0", "q1"],
        ["q0"],
    ]


def test_foreign_every_with_sets_runs_only_those_sets_of_each_folder(tmp_path: Path) -> None:
    """bench foreign --every ROOT --sets NAMES: each folder's question files of those sets only (the
    vaults without the pool, whose first index takes far longer); a folder with none of them is no run."""
    import json

    from bench.harness import RunOptions
    from bench.runners.foreign import run

    base, more = tmp_path / "base", tmp_path / "more"
    for vault, note, line in [
        ("diary", "kettle", "Descale the kettle monthly."),
        ("garden", "roses", "Prune in March."),
    ]:
        (base / vault).mkdir(parents=True)
        (base / vault / f"{note}.md").write_text(f"# {note.title()}\n\n{line}\n", encoding="utf-8")
    for folder, vault, note in [
        (more / "a", "diary", "kettle"),
        (more / "a", "garden", "roses"),
        (more / "b", "garden", "roses"),
    ]:
        folder.mkdir(parents=True, exist_ok=True)
        spec = {
            "vault": vault,
            "now": "2026-12-01",
            "questions": [
                {
                    "id": "q0",
                    "kind": "fact",
                    "q": f"what about the {note}",
                    "answers": [{"path": f"{note}.md", "text": ""}],
                }
            ],
            "prefetch": [],
        }
        (folder / f"{vault}.questions.json").write_text(json.dumps(spec), encoding="utf-8")

    def ran(sets: str | None) -> list[tuple[str, list[str]]]:
        opts = RunOptions(
            quick=True,
            data=tmp_path / "no-data",
            out=tmp_path / "out",
            cache=tmp_path / "cache",
            extra={"vaults": base, "every": more, "modes": "bm25", **({"sets": sets} if sets else {})},
        )
        return [(Path(r["questions"]).name, sorted(r["summary"])) for r in run(opts).results["runs"]]

    # base holds no question file and no pool: its run is empty; with --sets it is no run at all
    assert ran(None) == [("base", []), ("a", ["diary", "garden"]), ("b", ["garden"])]
    assert ran("diary") == [("a", ["diary"])]  # b holds no diary questions: no run


def test_ablate_combines_question_files_before_leaving_a_vault_out() -> None:
    """bench ablate --combine: what a rule buys on a vault is summed over every question file's run,
    then judged leave one vault out as in one run; a rule one run did not try adds nothing there."""
    from bench.studies.ablate import _left_out_cells, combined_buys, earned, left_out_of

    def cell(first: float) -> dict[str, float | None]:
        return {"first": first, "n_first": 10, "top5": None, "newest": None, "block": None, "silence": None}

    sets = ("dexter", "flancian", "jbranchaud-til")
    first = {"default": {s: cell(0.5) for s in sets}, "no_rule": {**{s: cell(0.5) for s in sets}, "dexter": cell(0.3)}}
    # a later file: the rule costs flancian one question and buys jbranchaud-til one
    later = {
        "default": {s: cell(0.5) for s in sets},
        "no_rule": {"dexter": cell(0.5), "flancian": cell(0.6), "jbranchaud-til": cell(0.4)},
        "no_other": {s: cell(0.4) for s in sets},
    }
    buys = combined_buys([first, later])
    assert buys["no_rule"] == {
        "dexter": pytest.approx(2.0),
        "flancian": pytest.approx(-1.0),
        "jbranchaud-til": pytest.approx(1.0),
    }
    assert buys["no_other"] == {s: pytest.approx(1.0) for s in sets}  # only the later run tried it
    lovo = left_out_of(buys["no_rule"])
    assert lovo is not None
    assert lovo["dexter"] == (False, pytest.approx(2.0))  # flancian and jbranchaud-til tie: dropped
    assert lovo["flancian"] == (True, pytest.approx(-1.0))  # the others gain 3: kept, and it costs 1 here
    assert earned(lovo) == pytest.approx(0.0)
    assert left_out_of({"dexter": 1.0}) is None
    # a row stays under its table's columns: a set the rule was never tried on is a blank cell, not
    # the next set's cell moved left (a rule tried only on the vaults, in a table with the pool)
    vaults_only = left_out_of({"dexter": 2.0, "jbranchaud-til": 1.0})
    assert vaults_only is not None
    total, cells = _left_out_cells(vaults_only, ["dexter", "flancian", "jbranchaud-til", "longmemeval"])
    assert cells == ["kept +2.0", "", "kept +1.0", "", "+3.0"] and total == pytest.approx(3.0)


def test_foreign_budget_option_sets_the_block_budget(tmp_path):
    """bench foreign --budget N: the Memory it opens holds its blocks to N characters (the default
    budget otherwise), so a budget curve measures what it says."""
    import datetime as dt

    from bench.data.foreign import Dataset
    from bench.harness import RunOptions
    from bench.runners.foreign import opened

    words = "the kettle descaling routine uses citric acid every month and a long rinse after".split()
    files = {f"n{i}.md": f"# Kettle {i}\n\n{' '.join(words[i % 5 :] * 3)}\n" for i in range(12)}
    ds = Dataset("tiny", None, files, (), ())
    now = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)
    sizes = {}
    for budget in (None, 300):
        extra = {} if budget is None else {"budget": budget}
        opts = RunOptions(quick=True, cache=tmp_path / "cache", extra=extra)
        with opened(ds, opts) as (mem, _vault, _rep):
            got = mem.prefetch("how do I descale the kettle with citric acid", now=now, refresh_staged=False)
            sizes[budget] = len(got.block)
    assert 0 < sizes[300] <= 300 < sizes[None]


def test_a_question_file_from_another_vault_gives_its_own_now(tmp_path):
    """bench foreign reads a vault that is none of the shared three when its questions file says
    its "now" (a day, or a time with an offset); without one it names the file and what to add."""
    import datetime as dt
    import json

    from bench.data.foreign import NOW, real_vault

    def write(name, spec):
        (tmp_path / name).mkdir()
        body = {"vault": name, "questions": [{"id": "s01", "kind": "fact", "q": "q?", "answers": []}], "prefetch": []}
        (tmp_path / f"{name}.questions.json").write_text(json.dumps(body | spec), encoding="utf-8")

    write("diary", {"now": "2023-05-17"})
    assert real_vault(tmp_path, "diary").questions[0].now == dt.datetime(2023, 5, 17, 20, 0, tzinfo=dt.UTC)
    write("timed", {"now": "2023-05-17T08:30:00+02:00"})
    assert real_vault(tmp_path, "timed").questions[0].now == dt.datetime(2023, 5, 17, 6, 30, tzinfo=dt.UTC)
    write("dexter", {})
    assert real_vault(tmp_path, "dexter").questions[0].now == NOW["dexter"]
    write("nodate", {})
    with pytest.raises(ValueError, match=r'nodate\.questions\.json gives no "now"'):
        real_vault(tmp_path, "nodate")


def test_reweigh_reads_what_a_question_asks_for_and_the_links_among_candidates() -> None:
    """Two families of evidence `bench reweigh` weighs beside recall's own (stop 81): whether an answer
    sentence holds what the question asks for, and how many other candidates link to a candidate."""
    from types import SimpleNamespace

    from bench.studies.reweigh import _HOLDS, _linked, asks_for

    assert asks_for("How much did I give to the campaign?") == "number"
    assert asks_for("When's my wife's birthday?") == "date"
    assert asks_for("Who first told me about Foam?") == asks_for("Which town did we go to?") == "name"
    assert asks_for("What book did S. give me?") is None
    assert _HOLDS["number"].search("It cost $40.") and not _HOLDS["number"].search("It cost a lot.")
    assert _HOLDS["name"].search("told me about [[foam]]") and not _HOLDS["name"].search("Told me about it.")
    ranked = [SimpleNamespace(path=p, node_id=p) for p in ("a.md", "people/Jack Carlson.md", "c.md")]
    links = {"a.md": frozenset({"jack carlson"}), "c.md": frozenset({"jack carlson", "a"})}
    assert _linked(ranked, links) == [1, 2, 0]


def test_foreign_rules_option_runs_every_set_with_that_variant(tmp_path: Path, monkeypatch) -> None:
    """bench foreign --rules NAME=VALUE,...: every set is asked with the shipped rules but those
    fields (a switch on/off, a number, none), recorded in the result; a name or value ReadRules
    cannot take stops the run before anything is indexed, saying which."""
    import json

    from bench.harness import RunOptions
    from bench.runners import foreign
    from vault_memory.internals import internals
    from vault_memory.search.rules import DEFAULT_RULES

    assert foreign.read_rules(None) is None and foreign.read_rules(" ") is None
    got = foreign.read_rules("coverage=off, fusion_alpha=0.6,keeps_replaced_out=none,head=3")
    assert got == DEFAULT_RULES.but(coverage=False, fusion_alpha=0.6, keeps_replaced_out=None, head=3)
    for bad, says in [
        ("no_such_rule=1", "no_such_rule"),
        ("coverage", "coverage"),
        ("coverage=maybe", "coverage cannot be 'maybe'"),
        ("fusion_alpha=high", "fusion_alpha cannot be 'high'"),
    ]:
        with pytest.raises(SystemExit, match=says):
            foreign.read_rules(bad)

    base = tmp_path / "base"
    (base / "diary").mkdir(parents=True)
    (base / "diary" / "kettle.md").write_text("# Kettle\n\nDescale it with citric acid.\n", encoding="utf-8")
    spec = {
        "vault": "diary",
        "now": "2026-12-01",
        "questions": [{"id": "q0", "kind": "fact", "q": "descale", "answers": [{"path": "kettle.md", "text": ""}]}],
        "prefetch": [],
    }
    (base / "diary.questions.json").write_text(json.dumps(spec), encoding="utf-8")
    seen = []
    real = foreign.evaluate

    def evaluate(mem, *args, **kwargs):
        seen.append(internals(mem).read_rules)
        return real(mem, *args, **kwargs)

    monkeypatch.setattr(foreign, "evaluate", evaluate)

    def run(extra: dict[str, str]) -> dict:
        opts = RunOptions(
            quick=True,
            data=tmp_path / "no-data",
            out=tmp_path / "out",
            cache=tmp_path / "cache",
            extra={"vaults": base, "modes": "bm25", "sets": "diary", **extra},
        )
        return foreign.run(opts).params

    assert "rules" not in run({}) and seen[-1] == DEFAULT_RULES
    assert run({"rules": "whole_note=0"})["rules"] == "whole_note=0"
    assert seen[-1] == DEFAULT_RULES.but(whole_note=0.0)
    with pytest.raises(SystemExit, match="whole_notes"):
        run({"rules": "whole_notes=0"})
    assert len(seen) == 2  # the bad name stopped the run before any set was asked


def test_ablate_judge_weighs_each_variant_left_one_set_out(tmp_path: Path) -> None:
    """bench ablate --judge DIR: each variant's bench foreign results (DIR/<variant>/*.json, plain
    or --every, summed) against DIR/default's, counted in questions and turns (answered questions
    left all weak against), then left one set out: a rule stays for a set when the other sets gain
    by it, and what it buys there is its cell."""
    import json

    from bench.harness import RunOptions
    from bench.runners.foreign import combine
    from bench.studies.ablate import judged_counts, run

    def summary(first: int, silent: int = 0, turns: int = 5, weak: int = 0) -> dict:
        return {
            "answered": 10,
            "hybrid": {
                "first": first / 10,
                "top5": 0.9,
                "latest_first": [2, 4],
                "no_answer_all_weak": [silent, 8],
                "answered_all_weak": [weak, 10],
            },
            "blocks": {"turns_ok": [turns, 12]},
        }

    pool = {"answered": 10, "hybrid": {"first": 0.5, "top5": 0.8, "newest_first_ku": [3, 5]}, "blocks": {}}
    pool["blocks"]["answer_in_block"] = 0.7
    assert judged_counts(combine([("pool", {"longmemeval": pool})])["longmemeval"]) == {
        "first": 5,
        "top5": 8,
        "newest": 3,
        "silence": 0,
        "block": 7,
        "all_weak": 0,
    }

    def write(folder: str, name: str, results: dict, rules: str | None = None) -> None:
        (tmp_path / folder).mkdir(exist_ok=True)
        params = {"rules": rules} if rules else {}
        (tmp_path / folder / name).write_text(json.dumps({"params": params, "results": results}), encoding="utf-8")

    every = {"dexter": summary(6), "flancian": summary(5), "jbranchaud-til": summary(8)}
    write("default", "foreign-every.json", {"runs": [{"summary": every}, {"summary": {"flancian": summary(7)}}]})
    write("default", "foreign.json", {"summary": {"longmemeval": pool}})
    # off: dexter loses 2 firsts, flancian 1 first but one more silence; jbranchaud-til 1 answered
    # question all weak; the pool unchanged
    off = {"dexter": summary(4), "flancian": summary(5, silent=1), "jbranchaud-til": summary(8, weak=1)}
    write(
        "rule_off", "foreign-every.json", {"runs": [{"summary": off}, {"summary": {"flancian": summary(6)}}]}, "x=off"
    )
    write("rule_off", "foreign.json", {"summary": {"longmemeval": pool}}, "x=off")
    res = run(RunOptions(quick=True, out=tmp_path / "out", cache=tmp_path / "c", extra={"judge": tmp_path}))
    assert res.results["buys"]["rule_off"] == {
        "dexter": 2.0,
        "flancian": 0.0,  # one first lost on the second file, one silence gained on the first
        "jbranchaud-til": 1.0,
        "longmemeval": 0.0,
    }
    row = next(line for line in res.markdown if line.startswith("| `rule_off`"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # dexter left out: the others gain 1, kept, +2 there; the pool left out: kept, 0 there
    assert cells[1:6] == ["kept +2.0", "kept +0.0", "kept +1.0", "kept +0.0", "+3.0"]
    assert "dexter first -2" in cells[6] and "jbranchaud-til all_weak +1" in cells[6]
    with pytest.raises(SystemExit, match="no bench foreign result"):
        write("broken", "foreign.json", {"nothing": 1})
        run(RunOptions(quick=True, out=tmp_path / "out", cache=tmp_path / "c", extra={"judge": tmp_path}))
