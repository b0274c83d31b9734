"""The first session (issue 40): each friction a new user met in one session on a copy of a
person's vault under git, reproduced the way they met it. Each test failed on 8b68fab.

 1. `--vault ''` (an unset shell variable) took the current folder as the vault.
 2. A copy of a vault (`cp -r`) took over the original's index, as if the vault had moved.
 3. An added fact about a person was a "conflict", with advice to supersede the person's note.
 4. A dormant note matched only on a word of its title was written back as `reactivated`.
 5. `recent` left out dated daily notes; a log entry showed as 00:00.
 6. `prefetch ""` exited 0; a budget too small for one entry said "no relevant memory".
 7. `related` listed every daily note sharing one copied line.
 8. MCP `stage` took a string for `tags` and a memory with no content word.
 9. `commit --supersedes` printed a node_id; `pin` on a template did not say it was one.
10. The quick start's answer line cut off the answering sentence; the deliberate latin1 sample was unmarked.
11. The review chart drew memories with curves a reader cannot tell apart as separate lines.
12. Benchmark result files recorded the absolute paths of the machine that ran them.
"""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from tests.conftest import REPO, MemoryFactory, write_notes
from vault_memory.cli.main import execute
from vault_memory.errors import ConfigError
from vault_memory.memory import Memory


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = execute(list(args))
    return code, out.getvalue(), err.getvalue()


# -- 1. --vault '' -------------------------------------------------------------------------


def test_an_empty_vault_option_is_refused_not_taken_for_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> None:
    here = write_notes(tmp_path / "clone", {"guide/tea.md": "# Tea\n\nGreen tea in the afternoon.\n"})
    monkeypatch.chdir(here)
    cache = isolated_env / ".cache" / "vault-memory"
    before = sorted(p.name for p in cache.iterdir())
    code, out, err = cli("--vault", "", "--embedder", "fake", "recall", "tea")
    assert code == 2 and out == "", (code, out, err)
    assert "--vault is empty" in err
    assert sorted(p.name for p in cache.iterdir()) == before, "no index folder was made for the current folder"
    with pytest.raises(ConfigError, match="empty"):
        Memory(vault="", embedder="fake")


# -- 2. a copy is not a move -----------------------------------------------------------------


@pytest.mark.slow
def test_a_copy_of_a_vault_renamed_and_renamed_back_keeps_its_own_index(tmp_path: Path) -> None:
    """Renamed away and back by commands that write nothing (`status`), then copied: the copy gets
    an index of its own; the original keeps its index, and never takes the copy's."""
    import shutil

    from tests.conftest import SAMPLE
    from vault_memory.config import default_index_dir

    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE, vault, symlinks=True)
    assert cli("--vault", str(vault), "--embedder", "fake", "index")[0] == 0
    index = default_index_dir(vault)
    middle = tmp_path / "vault-moved"
    vault.rename(middle)
    assert cli("--vault", str(middle), "--embedder", "fake", "status")[0] == 0
    assert default_index_dir(middle).is_dir() and not index.exists()  # a move: the index followed
    middle.rename(vault)
    assert cli("--vault", str(vault), "--embedder", "fake", "status")[0] == 0
    assert index.is_dir() and not default_index_dir(middle).exists()  # and back
    copy = tmp_path / "vaultcopy"
    shutil.copytree(vault, copy, symlinks=True)
    code, out, _ = cli("--vault", str(copy), "--embedder", "fake", "status", "--json")
    assert code == 0 and json.loads(out)["index_state"] == "missing"  # its own, yet to be built
    assert (index / "catalog.sqlite").is_file(), "the original keeps its index"
    assert cli("--vault", str(copy), "--embedder", "fake", "index")[0] == 0
    shutil.rmtree(index)  # the original's index deleted: it builds its own, never takes the copy's
    code, out, _ = cli("--vault", str(vault), "--embedder", "fake", "status", "--json")
    assert code == 0 and json.loads(out)["index_state"] == "missing"
    assert (default_index_dir(copy) / "catalog.sqlite").is_file()


def test_an_index_whose_record_went_stale_stays_with_the_vault_its_folder_is_named_for(tmp_path: Path) -> None:
    """An index adopted by an older version records the gone middle path; its folder still names
    the vault beside it, so a copy of that vault does not take it."""
    import shutil
    import sqlite3

    from tests.conftest import SAMPLE
    from vault_memory.config import default_index_dir

    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE, vault, symlinks=True)
    assert cli("--vault", str(vault), "--embedder", "fake", "index")[0] == 0
    index = default_index_dir(vault)
    with sqlite3.connect(index / "catalog.sqlite") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'vault'", (str(tmp_path / "vault-moved"),))
    copy = tmp_path / "vaultcopy"
    shutil.copytree(vault, copy, symlinks=True)
    code, out, _ = cli("--vault", str(copy), "--embedder", "fake", "status", "--json")
    assert code == 0 and json.loads(out)["index_state"] == "missing"
    assert (index / "catalog.sqlite").is_file()


# -- 3. an added fact is not a conflict --------------------------------------------------------

PERSON_VAULT = {
    "People/Jonas Weber.md": (
        "---\naliases: [Jonas, JW]\ntags:\n  - person\ncompany: freelance\nrole: designer\n---\n# Jonas Weber\n\n"
        "Met:: 2019-09-01\nLikes:: cycling, espresso, Lisbon\n\nJonas designs the Atlas dashboard. We cycle to "
        "the lake on Sundays.\nHe is vegetarian — remember when booking dinner.\n"
    ),
    "Areas/Health/Dentist.md": (
        "# Dentist\n\nAppointment moved to **14 November, 9:30**.\n\nDr. Berger, Lindenstraße 4.\n"
    ),
    "Daily Notes/2026-10-11.md": (
        "---\ndate: 2026-10-11\n---\n# Sunday, October 11, 2026\n\n## Log\n"
        "- 08:10 Dentist appointment moved to November 14 at 9:30.\n- 13:00 Lunch with [[Jonas Weber]].\n"
    ),
    "Daily Notes/2026-11-12.md": (
        "---\ndate: 2026-11-12\n---\n# Thursday, November 12, 2026\n\n## Log\n"
        "- 08:10 Dentist appointment moved to November 14 at 9:30.\n- 13:00 Lunch with [[Jonas Weber]].\n"
    ),
}


@pytest.mark.model
def test_an_added_fact_is_not_a_conflict_and_a_persons_note_is_never_to_be_superseded(tmp_path: Path) -> None:
    vault = write_notes(tmp_path / "v", PERSON_VAULT)
    base = ["--vault", str(vault), "--index-dir", str(tmp_path / "idx")]
    assert cli(*base, "index")[0] == 0
    code, out, err = cli(
        *base, "remember", "Jonas's new favourite restaurant is Taberna do Mercado in Lisbon.", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["conflicts"] == [], "an added fact about a person is not a conflict"
    code, out, err = cli(
        *base, "remember", "My dentist appointment is on 2026-12-03 at 9:30.", "--now", "2026-11-29T12:00:00+00:00"
    )
    assert code == 0, err
    assert "Daily Notes/" not in err, "a daily note records what was said that day: no conflict"
    assert "Areas/Health/Dentist.md" in err and "supersedes:" not in err and "--supersedes" not in err
    assert "edit that line there" in err
    first = "My dentist appointment is on 2026-12-03 at 9 30"  # the memory just written (its file name)
    code, out, err = cli(
        *base, "remember", "The dentist appointment is on 2026-12-10 at 8:00.", "--supersedes", first, "--json"
    )
    assert code == 0, err
    done = json.loads(out)
    assert done["supersedes"] and first not in json.dumps(done["conflicts"]), "the note it supersedes is no conflict"
    code, _, err = cli(
        *base, "remember", "The dentist appointment is on 2026-12-17 at 8:00.", "--supersedes", "Dentist"
    )
    assert code == 0 and "[[Dentist]]" not in err and "conflicts with Dentist" not in err, err


# -- 4. a title word does not bring a faded note back ----------------------------------------

LISBON = (
    "---\ntags: [travel, conference]\ndate: 2026-03-12\nlocation: Lisbon\n---\n# Lisbon conference trip\n\n"
    "Flights booked: 12–16 March, TAP, seat 14A.\nHotel:: Casa do Príncipe\n"
    'Talk:: "Moving ingest to Kubernetes without tears" — Thursday 11:00\n\n'
    "- [ ] Print the boarding passes\n- [ ] Ask [[Jonas Weber]] for restaurant tips\n"
)


def test_a_dormant_note_matched_only_on_its_title_is_not_written_back_as_come_back(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    import dataclasses

    from tests.conftest import NOW
    from vault_memory.index.calibration import FAKE

    notes = {"Projects/Lisbon Conference.md": LISBON, "Notes/other.md": "# Other\n\nTea.\n"}
    vault = write_notes(tmp_path / "v", notes)
    # the fake embedder's cosines are lower than MiniLM's: a lower clear-match bar lets it rehearse
    mem = make_memory(vault=vault, calibration=dataclasses.replace(FAKE, strong=0.1))
    mem.index()
    note = vault / "Projects/Lisbon Conference.md"
    hits = mem.recall("Lisbon trip", now=NOW)
    assert hits[0].path == "Projects/Lisbon Conference.md" and hits[0].dormant and hits[0].similarity >= 0.1
    assert note.read_text(encoding="utf-8") == LISBON, "matched on its title alone: not a use, not come back"
    assert mem.review(NOW, write=False).reactivated == []
    hits = mem.recall("flights booked TAP seat 14A", now=NOW)  # its text answers: it comes back
    assert hits[0].path == "Projects/Lisbon Conference.md" and hits[0].rehearsed
    assert "reactivated:" in note.read_text(encoding="utf-8")
    assert [v.path for v in mem.review(NOW, write=False).reactivated] == ["Projects/Lisbon Conference.md"]


# -- 5. recent lists daily notes, at their entries' time ---------------------------------------


def test_recent_lists_dated_daily_notes_and_a_log_entry_at_its_time(make_memory: MemoryFactory, tmp_path: Path) -> None:
    import datetime as dt

    vault = write_notes(
        tmp_path / "v",
        {
            "Daily Notes/2026-10-29.md": "---\ndate: 2026-10-29\n---\n# Thursday\n\n## Log\n- 08:10 Booked flights.\n"
            "- 13:00 Lunch with Jonas.\n",
            "Daily Notes/2026-11-02.md": "# Monday\n\nA quiet day, nothing timed.\n",
            "Daily Notes/2025-01-01.md": "# Long ago\n\n- 09:00 New year.\n",
            "People/Jonas.md": "# Jonas\n\nDesigner.\n",
        },
    )
    mem = make_memory(vault=vault)
    now = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
    mem.log("Helped Maya fix the VPN", now=dt.datetime(2026, 11, 28, 14, 35, tzinfo=dt.UTC))
    mem.index()
    got = {r.path: (r.event, r.when) for r in mem.recent(days=400, k=50, now=now)}
    assert got["Daily Notes/2026-10-29.md"] == ("logged", "2026-10-29T13:00:00+00:00")
    assert got["Daily Notes/2026-11-02.md"] == ("logged", "2026-11-02")  # a day, not a made-up 00:00
    assert got["Memory/Episodes/2026-11-28.md"] == ("logged", "2026-11-28T14:35:00+00:00")
    assert "Daily Notes/2025-01-01.md" not in got and "People/Jonas.md" not in got  # too old; no date at all
    code, out, _ = cli(
        "--vault",
        str(vault),
        "--index-dir",
        str(tmp_path / "index"),
        "--embedder",
        "fake",
        "recent",
        "--days",
        "400",
        "--now",
        "2026-11-29T12:00:00+00:00",
    )
    assert "2026-11-28 14:35  logged" in out and "2026-11-02        logged" in out and "00:00" not in out


# -- 6. prefetch "" and a budget too small ----------------------------------------------------


@pytest.mark.parametrize("turn", ["", "   "])
def test_an_empty_prefetch_is_a_usage_error_as_recall_calls_it(vault: Path, index_dir: Path, turn: str) -> None:
    code, out, err = cli("--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "prefetch", turn)
    assert code == 2 and out == "" and "the turn is empty" in err, (code, err)
    assert not index_dir.exists(), "refused before the vault was opened"


def test_a_budget_too_small_for_one_entry_says_so(vault: Path, index_dir: Path) -> None:
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "prefetch"]
    turn = "how do I take my espresso in the morning?"
    code, out, err = cli(*base, turn, "--json")
    assert code == 0 and json.loads(out)["relevant"] >= 1
    code, out, err = cli(*base, turn, "--budget", "80")
    assert code == 0 and out == ""
    assert "no relevant memory" not in err and "too long for --budget 80" in err, err


# -- 7. related folds copies of one line ------------------------------------------------------


def test_related_folds_daily_notes_that_share_one_copied_line(make_memory: MemoryFactory, tmp_path: Path) -> None:
    days = {
        f"Daily Notes/2026-10-{d:02d}.md": (
            f"---\ndate: 2026-10-{d:02d}\nmood: {mood}\n---\n# October {d}\n\n## Tasks\n- [x] Morning run\n"
            f"- [ ] Reply to [[Maya Chen]] about the Atlas timeline\n- [ ] Water plants 📅 2026-10-{d + 1:02d}\n"
        )
        for d, mood in zip(range(1, 19, 2), ["good", "tired", "ok"] * 3, strict=True)
    }
    vault = write_notes(
        tmp_path / "v",
        {
            **days,
            "Projects/Project Atlas.md": "# Project Atlas\n\nMigrating the ingest pipeline to Kubernetes. The "
            "timeline is agreed with Maya Chen; the dashboard comes last.\n",
            "Notes/Atlas dashboard.md": "# Atlas dashboard\n\nThe dashboard of the Atlas pipeline shows ingest lag.\n",
            "People/Maya Chen.md": "# Maya Chen\n\nPlatform team.\n",
        },
    )
    mem = make_memory(vault=vault)
    mem.index()
    found = mem.related("Project Atlas", k=10)
    daily = [r for r in found.related if r.path.startswith("Daily Notes/")]
    assert len(daily) == 1, [r.path for r in found.related]
    assert len(daily[0].also_in) == len(days) - 1 and daily[0].path not in daily[0].also_in
    assert daily[0].also_in == sorted(daily[0].also_in, reverse=True)  # newest first
    assert any(r.path == "Notes/Atlas dashboard.md" for r in found.related)  # room for the other neighbours


# -- 8. a memory must say something, and tags are a list ----------------------------------------


@pytest.mark.slow
def test_mcp_stage_refuses_a_string_for_tags_and_a_memory_with_no_content_word(vault: Path, tmp_path: Path) -> None:
    import anyio
    from mcp import Client

    from tests.test_mcp import _service, text_of
    from vault_memory.mcp_server import build_server

    async def body(c: Client) -> None:
        for args, expected in [
            ({"text": "The user likes green tea.", "tags": "notalist"}, "tags"),
            ({"text": "x"}, "says nothing to remember it by"),
            ({"text": "the, of. a!"}, "says nothing to remember it by"),
        ]:
            r = await c.call_tool("stage", args)
            assert r.is_error and expected in text_of(r), (args, text_of(r))
        r = await c.call_tool("remember", {"text": "x"})
        assert r.is_error and "says nothing" in text_of(r)
        done = await c.call_tool("commit_all", {})
        assert not done.is_error and done.structured_content is not None
        assert done.structured_content["committed"] == []

    service = _service(vault, tmp_path / "index")

    async def main() -> None:
        async with Client(build_server(service), read_timeout_seconds=60) as client:
            await body(client)

    anyio.run(main)
    assert not (vault / "Memory" / "x.md").exists()


def test_the_api_refuses_them_too(make_memory: MemoryFactory) -> None:
    mem = make_memory()
    with pytest.raises(ConfigError, match="says nothing"):
        mem.stage("x")
    with pytest.raises(ConfigError, match="not one string"):
        mem.remember("The user likes green tea.", tags="notalist")  # type: ignore[arg-type]
    assert mem.stage("JW prefers tea.").title  # a name counts as a word


# -- 9. names, not ids; the template folder named --------------------------------------------


def test_commit_supersedes_names_the_note_and_pin_names_the_template_folder(tmp_path: Path) -> None:
    vault = write_notes(
        tmp_path / "v",
        {
            "Notes/Garden.md": "# Garden\n\nThe rain barrel holds 300 litres.\n",
            "Templates/Daily.md": '---\ndate: "{{date}}"\n---\n# {{title}}\n\n## Log\n',
            ".obsidian/templates.json": '{"folder": "Templates"}',
        },
    )
    base = ["--vault", str(vault), "--index-dir", str(tmp_path / "idx"), "--embedder", "fake"]
    code, out, err = cli(*base, "stage", "The rain barrel holds 500 litres now.")
    assert code == 0, err
    code, out, err = cli(*base, "commit", out.strip(), "--supersedes", "Garden")
    assert code == 0, err
    assert out.rstrip().endswith("(supersedes Garden)"), out
    code, out, err = cli(*base, "pin", "Templates/Daily.md")
    assert code != 0 and "Templates/, the vault's template folder" in err, err


# -- 10. the quick start's answer line; the deliberate sample marked ---------------------------


def test_the_quick_start_answer_line_starts_with_the_sentence_that_answers(vault: Path, index_dir: Path) -> None:
    from tests.test_first_hour import QUICK_START_QUERY

    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "--read-only"]
    code, out, err = cli(*base, "recall", QUICK_START_QUERY, "--folder", "Preferences", "-k", "5", "--json")
    assert code == 0, err
    coffee = next(h for h in json.loads(out)["hits"] if h["path"] == "Preferences/Coffee.md")
    # no content word of the question is in the note: its line starts where the note does
    assert coffee["snippet"].startswith("Dark roast espresso, a double, first thing after I get up")


def test_the_sample_vaults_unreadable_note_says_it_is_one_on_purpose(vault: Path, index_dir: Path) -> None:
    code, out, err = cli("--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "index")
    assert code == 0, err
    warned = [line for line in (out + err).splitlines() if "not valid UTF-8" in line]
    assert warned and all("deliberately-not-utf8" in line for line in warned), warned


# -- 11. the chart draws lines a reader can tell apart ------------------------------------------


def test_memories_of_one_session_are_one_curve_on_the_review_chart(make_memory: MemoryFactory) -> None:
    import datetime as dt

    from tests.test_review import check_xychart

    mem = make_memory()
    made = dt.datetime(2026, 11, 1, 10, 0, tzinfo=dt.UTC)
    facts = [
        "owns a bike", "plays chess", "speaks German", "keeps bees", "drives a van", "grows tomatoes",
        "sings in a choir", "runs on Sundays", "reads Dutch", "bakes bread", "rows a boat",
    ]  # fmt: skip
    for i, fact in enumerate(facts):  # eleven memories of one afternoon, a few minutes apart
        mem.remember(f"The user {fact}.", title=f"The user {fact}", now=made + dt.timedelta(minutes=17 * i))
    review = mem.review(made + dt.timedelta(days=2), write=False)
    block = review.markdown.split("```mermaid\n", 1)[1].split("```", 1)[0]
    parsed = check_xychart(block)
    assert len(parsed["lines"]) == 2, block  # one curve and the dormancy threshold
    assert "(11 memories)" in block
    legend = review.markdown.split("| Memory |", 1)[1].split("\n\n", 1)[0]
    assert legend.count("\n| ") == 1 + 1 + 1, legend  # the separator row, one memory row, the threshold row


# -- 12. benchmark results say nothing about whose machine made them ------------------------

ABSOLUTE_PATH = re.compile(r"""(?:^|(?<=[\s"'=(\[{,:]))/[A-Za-z0-9._-]+/[^\s"',;)\]}]*""", re.M)


def absolute_paths(text: str) -> list[str]:
    return ABSOLUTE_PATH.findall(text)


def test_the_path_finder_can_fail() -> None:
    assert absolute_paths('"vault": "/home/ana/perf-cache/vaults/x", tree=/work/main') == [
        "/home/ana/perf-cache/vaults/x",
        "/work/main",
    ]
    assert absolute_paths("bench/.cache/x ../shared/bench-data …/tmp/x https://a.b/c 12 ms/query") == []


def test_no_benchmark_result_file_records_an_absolute_path() -> None:
    files = sorted(p for p in (REPO / "bench" / "results").iterdir() if p.suffix in (".json", ".md"))
    assert len(files) > 20
    found = {p.name: absolute_paths(p.read_text(encoding="utf-8")) for p in files}
    assert not {k: v for k, v in found.items() if v}, "record paths relative to the repository or the data folder"


def test_the_result_writer_records_portable_paths(tmp_path: Path) -> None:
    from bench.harness import REPO as BENCH_REPO
    from bench.harness import Result, RunOptions

    result = Result("probe", RunOptions(out=tmp_path, quick=True))
    result.params.update(vault=BENCH_REPO / "bench/.cache/vaults/x", data=BENCH_REPO.parent / "shared/bench-data/y")
    result.results["elsewhere"] = "/home/someone/perf-cache/index/z"
    result.markdown.append(f"read from {BENCH_REPO / 'bench/results/scale.json'}")
    json_path, md_path = result.write()
    for path in (json_path, md_path):
        assert absolute_paths(path.read_text(encoding="utf-8")) == [], path.read_text(encoding="utf-8")
    payload = json.loads(json_path.read_text(encoding="utf-8"))
    assert payload["params"]["vault"] == "bench/.cache/vaults/x"
    assert payload["params"]["data"] == "../shared/bench-data/y"
    assert payload["results"]["elsewhere"] == "…/perf-cache/index/z"
    assert "read from bench/results/scale.json" in md_path.read_text(encoding="utf-8")
