"""The first hour (issue 25): the quick start answers by meaning, and each friction a newcomer
met on a fresh clone, reproduced the way a person meets it (through the installed console
script where the edge matters, in process for the fast lane)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from tests.conftest import HAS_FCNTL, REPO, SAMPLE, MemoryFactory, snapshot, write_notes
from vault_memory import indexfolder as memory_mod
from vault_memory.cli.main import execute
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals

EXE = str(Path(sys.executable).parent / "vault-memory")
#: The README's quick-start query: no word of it is in Coffee.md ("first thing after I get up"),
#: so only meaning finds it. "... in the morning" is not it: "morning" is a keyword of
#: Daily/2026-10-03 ("Allotment in the morning."), which then ranks first, rightly, by BM25 and
#: its best sentence.
QUICK_START_QUERY = "which hot drink does she start the day with"


def script(args: list[str], cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, cwd=cwd, env={**os.environ, **env}, timeout=300, check=False
    )


def cli(*args: str) -> tuple[int, str, str]:
    """`execute` in process (the console script's own code path): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = execute(list(args))
    return code, out.getvalue(), err.getvalue()


def bulk(vault: Path, n: int) -> None:
    (vault / "Bulk").mkdir(exist_ok=True)
    for i in range(n):
        (vault / f"Bulk/note {i}.md").write_text(
            f"# Bulk {i}\n\nBulk note {i} is about kettles and zebra{i % 7}, with enough words to make it a "
            "paragraph of ordinary length that costs the embedder a few dozen tokens.\n",
            encoding="utf-8",
        )


# -- 1. the quick start ----------------------------------------------------------------------


@pytest.mark.model
def test_quick_start_command_answers_coffee_first_on_a_fresh_clone() -> None:
    """The README's first command, exactly as written, from the repository, with an empty cache."""
    before = snapshot(SAMPLE)
    out = script(["--vault", "sample_vault", "--read-only", "recall", QUICK_START_QUERY], cwd=REPO)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("1. Coffee  (Preferences/Coffee.md"), out.stdout
    assert "first run: embedding this vault's" in out.stderr and "keyword-only" not in out.stderr, out.stderr
    assert snapshot(SAMPLE) == before, "--read-only: the demo writes nothing into the repository"


def test_a_small_vault_is_embedded_before_the_first_answer(vault: Path, index_dir: Path) -> None:
    code, out, err = cli("--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "recall", "tea")
    assert code == 0, err
    assert "first run: embedding this vault's" in err and "before answering" in err
    assert "no vector yet" not in err and "keyword-only" not in err


def test_a_large_vault_answers_by_keyword_meanwhile_and_says_why(
    vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bulk(vault, 40)
    monkeypatch.setattr(memory_mod, "READER_EMBED_TOKENS", 500)  # a large vault, in tokens
    code, out, err = cli("--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "recall", "zebra3")
    assert code == 0, err
    assert out.startswith("1. Bulk ") and "zebra3" in out.splitlines()[1], out
    assert "first run" not in err
    assert "no vector yet (more than a command embeds before it answers; `vault-memory index` embeds them" in err
    assert "results are keyword-only (BM25) meanwhile" in err


def test_the_reader_budget_is_in_tokens_not_texts(make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedding costs tokens: few texts of many tokens are left to `index` as many small ones are."""
    fake = FakeEmbedder()
    mem = make_memory(fake)
    indexer = internals(mem).indexer()
    texts = {c.text_hash: c.text for n in indexer.scan().parsed.values() for c in indexer.chunk_note("x", n)}
    tokens = sum(fake.count_tokens(t) for t in texts.values())
    assert len(texts) < memory_mod.READER_EMBED_BUDGET and tokens < memory_mod.READER_EMBED_TOKENS
    monkeypatch.setattr(memory_mod, "READER_EMBED_TOKENS", tokens - 1)
    report = internals(mem).ensure_current()
    assert report is not None and report.texts_embedded == 0 and fake.texts_embedded == 0
    assert mem.vectors().pending == mem.vectors().chunks > 0
    monkeypatch.setattr(memory_mod, "READER_EMBED_TOKENS", tokens)
    report = internals(mem).ensure_current()
    assert report is not None and report.texts_embedded == len(texts) and mem.vectors().complete


# -- 2. the smaller frictions ----------------------------------------------------------------


def test_ctrl_c_during_a_first_index_says_the_next_run_resumes(
    vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bulk(vault, 300)
    real = FakeEmbedder.embed
    calls = {"n": 0}

    def embed(self: FakeEmbedder, texts: list[str]) -> object:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # what Ctrl-C raises in the main thread
        return real(self, texts)

    monkeypatch.setattr(FakeEmbedder, "embed", embed)
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    code, out, err = cli(*base, "index")
    assert code == 130, err
    assert "interrupted at 256 of " in err, err
    assert "run `vault-memory index` to resume where it stopped (nothing is embedded twice" in err
    total = int(re.search(r"interrupted at 256 of (\d+) texts", err).group(1))  # type: ignore[union-attr]
    monkeypatch.setattr(FakeEmbedder, "embed", real)
    code, out, err = cli(*base, "index", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["texts_embedded"] == total - 256 and report["texts_pending"] == 0, "resumed, nothing twice"


def test_index_names_the_notes_it_skipped_without_a_warning_above(vault: Path, index_dir: Path) -> None:
    """The warning is said once, when the note is first seen; the second `index` must still say which."""
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    assert cli(*base, "index")[0] == 0
    code, out, err = cli(*base, "index")
    assert code == 0 and "deliberately-not-utf8" not in err  # nothing above it this time
    assert "skipped 1 note that could not be read" in out and "see warnings above" not in out
    assert "Inbox/deliberately-not-utf8.md: not valid UTF-8 at byte 44; re-save the file as UTF-8" in out


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_recall_is_a_usage_error_as_stage_calls_it(vault: Path, index_dir: Path, query: str) -> None:
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    code, out, err = cli(*base, "recall", query)
    assert code == 2 and out == "", (code, out)
    assert "error: Invalid value for 'QUERY': the query is empty; say what to recall in plain words" in err
    assert "Try 'vault-memory recall -h' for help." in err
    assert not index_dir.exists(), "refused before the vault was opened"
    assert cli(*base, "stage", query)[0] == 2  # what it already was


def test_an_empty_recall_through_the_api_raises(make_memory: MemoryFactory) -> None:
    from vault_memory.errors import ConfigError

    with pytest.raises(ConfigError, match="the query is empty"):
        make_memory().recall(" ")


@pytest.mark.slow
def test_usage_errors_through_the_console_script(vault: Path, index_dir: Path, tmp_path: Path) -> None:
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    empty = script([*base, "recall", ""])
    assert empty.returncode == 2 and "the query is empty" in empty.stderr, empty.stderr
    late = script(["recall", "tea", "--vault", str(vault), "-k", "3"])
    assert late.returncode == 2, late.stderr
    assert "--vault is a global option: it goes before the command" in late.stderr
    assert f"vault-memory --vault {vault} recall tea -k 3" in late.stderr
    note = vault / "Preferences" / "Coffee.md"
    file = script(["--vault", str(note), "recall", "tea"])
    assert file.returncode == 2 and "is a file, not a folder" in file.stderr, file.stderr
    assert "does not exist" not in file.stderr


@pytest.mark.skipif(not HAS_FCNTL and sys.platform != "win32", reason="mcp's stdio server needs fcntl here")
def test_mcp_names_a_missing_argument_without_pydantic_noise(vault: Path, tmp_path: Path) -> None:
    import anyio
    from mcp import Client

    from tests.test_mcp import _service, text_of
    from vault_memory.mcp_server import build_server

    service = _service(vault, tmp_path / "index")
    said: dict[str, str] = {}

    async def main() -> None:
        async with Client(build_server(service), read_timeout_seconds=60) as c:
            for name, args in [("recall", {}), ("recall", {"query": "x", "k": "many"}), ("remember", {})]:
                r = await c.call_tool(name, args)
                assert r.is_error
                said[f"{name} {sorted(args)}"] = text_of(r)
            r = await c.call_tool("recall", {"query": ""})
            assert r.is_error and "is empty" in text_of(r)  # the CLI and the API agree: an error

    anyio.run(main)
    for text in said.values():
        assert "pydantic" not in text and "http" not in text and "validation error" not in text, text
    assert said["recall []"].startswith("recall needs `query` (what to look up, in plain words)")
    assert "Call recall again with `query` set (it takes: query, k," in said["recall []"]
    assert said["recall ['k', 'query']"].startswith("`k` (how many notes (1-50)) must be a valid integer")
    assert said["remember []"].startswith("remember needs `text`")


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        (["recall", "tea", "--vault", "V"], "vault-memory --vault V recall tea"),
        (
            ["recall", "tea", "-k", "3", "--vault=My Notes", "--read-only"],
            "vault-memory '--vault=My Notes' --read-only recall tea -k 3",
        ),
        (["--embedder", "fake", "status", "--index-dir", "I"], "vault-memory --embedder fake --index-dir I status"),
    ],
)
def test_a_global_option_after_the_command_says_where_it_goes(args: list[str], fixed: str) -> None:
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    option = next(a for a in args[1:] if a.startswith("--vault") or a == "--index-dir").split("=")[0]
    assert f"error: {option} is a global option: it goes before the command; run: {fixed}\n" in err, err
    assert "No such option" not in err


def test_a_vault_that_is_a_file_is_called_a_file(vault: Path) -> None:
    note = vault / "Preferences" / "Coffee.md"
    code, out, err = cli("--vault", str(note), "recall", "tea")
    assert code == 2
    assert f"the vault {note} is a file, not a folder: pass the folder that holds your notes" in err
    assert f"(--vault {note.parent}?)" in err and "does not exist" not in err
    code, _, err = cli("--vault", str(vault / "nowhere"), "recall", "tea")
    assert code == 2 and "does not exist" in err  # a missing folder is still called missing


@pytest.mark.parametrize(
    "target",
    [
        "deliberately-not-utf8",
        "[[deliberately-not-utf8]]",
        "Inbox/deliberately-not-utf8",
        "Inbox/deliberately-not-utf8.md",
    ],
)
def test_reading_a_note_that_is_not_utf8_says_so(vault: Path, index_dir: Path, target: str) -> None:
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    assert cli(*base, "index")[0] == 0  # indexed: the note is known as unreadable, with no title
    code, out, err = cli(*base, "read", target)
    assert code == 8 and out == "", (code, err)
    assert "error: Inbox/deliberately-not-utf8.md: not valid UTF-8 at byte 44; re-save the file as UTF-8" in err
    assert "no note by this title" not in err


def test_links_in_frontmatter_properties_count_as_obsidian_counts_them(tmp_path: Path) -> None:
    vault = write_notes(
        tmp_path / "vault",
        {
            "Projects/Project Atlas.md": '---\nowner: "[[Maya Chen]]"\nstatus: active\n---\n# Project Atlas\n\n'
            "Moving the ingest services to Kubernetes.\n",
            "People/Maya Chen.md": '---\nrelated:\n  - "[[Jonas Weber|Jonas]]"\ncover: "![[maya.png]]"\n---\n'
            "# Maya Chen\n\nStaff engineer at Northwind.\n",
            "People/Jonas Weber.md": "# Jonas Weber\n\nTeam lead.\n",
        },
    )
    base = ["--vault", str(vault), "--index-dir", str(tmp_path / "index"), "--embedder", "fake"]
    code, out, err = cli(*base, "related", "Maya Chen", "--json")
    assert code == 0, err
    found = json.loads(out)
    assert (found["links_out"], found["backlinks"]) == (1, 1), found  # Jonas out; Atlas's owner back
    by = {r["path"]: r for r in found["related"]}
    assert by["Projects/Project Atlas.md"]["links_here"] and by["People/Jonas Weber.md"]["linked_from_here"]
    assert found["unresolved"] == []  # the attachment is not a note link
    code, out, err = cli(*base, "related", "Project Atlas")
    assert code == 0 and "1 link(s) out" in err and "linked    People/Maya Chen.md" in out, (out, err)
    code, out, _ = cli(*base, "read", "Project Atlas", "--json")
    assert json.loads(out)["links"] == ["Maya Chen"]


def test_superseded_notes_are_marked_in_read_and_related(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    mem.index()
    mem.remember(
        "I switched from the Lelit to a Gaggia espresso machine.", title="Espresso machine", supersedes="Coffee"
    )
    mem.close()
    base = ["--vault", str(vault), "--index-dir", str(internals(mem).index_dir), "--embedder", "fake"]
    code, _, err = cli(*base, "read", "Coffee")
    assert code == 0 and "[superseded by [[Espresso machine]]]" in err.splitlines()[-1], err
    code, out, _ = cli(*base, "related", "Espresso machine")
    assert code == 0 and "Preferences/Coffee.md [superseded]" in out, out
    code, out, _ = cli(*base, "related", "Espresso machine", "--json")
    coffee = next(r for r in json.loads(out)["related"] if r["path"] == "Preferences/Coffee.md")
    assert coffee["superseded_by"] == ["[[Espresso machine]]"] and coffee["linked"]  # its `superseded_by` links
    code, out, _ = cli(*base, "recall", "Niche Zero grinder descale", "-k", "1", "--no-touch", "--mode", "bm25")
    assert re.search(r"Coffee .*\[superseded", out), out  # recall's mark, which the lead added, still there


def test_pin_then_unpin_gives_an_untouched_note_back_its_exact_bytes(vault: Path, index_dir: Path) -> None:
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    coffee = vault / "Preferences" / "Coffee.md"
    before = coffee.read_bytes()
    code, out, err = cli(*base, "pin", "Coffee", "--json")
    assert code == 0, err
    pinned = json.loads(out)
    # The pin is the note's own state: `pinned: true` is the one line added, no node_id.
    assert coffee.read_bytes() == before.replace(b"tags: [preferences]\n", b"tags: [preferences]\npinned: true\n", 1)
    assert pinned["node_id"] == "path:Preferences/Coffee.md"  # its identity as before the pin
    code, out, err = cli(*base, "recall", "Niche Zero grinder", "-k", "1", "--mode", "bm25", "--no-touch")
    assert code == 0 and "Coffee" in out.splitlines()[0] and "[pinned]" in out.splitlines()[0], out
    code, out, err = cli(*base, "unpin", pinned["node_id"])  # the id pin gave back works as a target
    assert code == 0, err
    assert coffee.read_bytes() == before


def test_a_pin_after_other_state_keeps_the_identity_that_state_needs(make_memory: MemoryFactory, vault: Path) -> None:
    """Supersession is state kept about a note: its node_id stays through pin and unpin."""
    mem = make_memory()
    mem.index()
    mem.remember(
        "I switched from the Lelit to a Gaggia espresso machine.", title="Espresso machine", supersedes="Coffee"
    )
    coffee = vault / "Preferences" / "Coffee.md"
    linked = coffee.read_bytes()
    assert b"node_id:" in linked and b"superseded_by:" in linked
    mem.pin("Coffee")
    mem.unpin("Coffee")
    assert coffee.read_bytes() == linked


def test_the_review_chart_draws_one_curve_per_history_saying_how_many_share_it(make_memory: MemoryFactory) -> None:
    import datetime as dt

    from tests.test_review import check_xychart

    mem = make_memory()
    made = dt.datetime(2026, 11, 1, 10, 0, tzinfo=dt.UTC)
    facts = ["owns a bike", "plays chess", "speaks German", "keeps bees", "drives a van", "grows tomatoes"]
    for fact in facts:  # six memories with one history: made together, never recalled
        mem.remember(f"The user {fact}.", title=f"The user {fact}", now=made)
    mem.remember("The user sings in a choir.", title="The user sings in a choir", now=made + dt.timedelta(days=1))
    review = mem.review(made + dt.timedelta(days=2), write=False)
    assert len(review.chart) == 2 and len({tuple(c.values) for c in review.chart}) == 2
    shared = next(c for c in review.chart if c.shared)
    assert len(shared.shared) == 5 and {shared.note.title, *(n.title for n in shared.shared)} == {
        f"The user {f}" for f in facts
    }
    block = review.markdown.split("```mermaid\n", 1)[1].split("```", 1)[0]
    parsed = check_xychart(block)
    assert len(parsed["lines"]) == 3  # two curves and the dormancy threshold
    assert f'line "{shared.note.title} and 5 more (6 memories)"' in block
    assert "6 memories with this curve: " in review.markdown
    lines = review.to_dict()["chart"]["lines"]
    assert sorted(len(x["shared_with"]) for x in lines) == [0, 5]


def test_status_after_the_index_is_deleted_says_it_is_missing_and_what_to_run(vault: Path, tmp_path: Path) -> None:
    """Through the console script: the index deleted, status says so and names the command."""
    index_dir = tmp_path / "index"
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    assert script([*base, "index"]).returncode == 0
    shutil.rmtree(index_dir)
    out = script([*base, "status"])
    assert out.returncode == 0, out.stderr
    assert f"index:     {index_dir}  (missing)" in out.stdout, out.stdout
    assert "pending:   46 new" in out.stdout, out.stdout
    assert f"next:      the index {index_dir} is missing (deleted, or never built); run `vault-memory index`" in (
        out.stdout
    )
    info = json.loads(script([*base, "status", "--json"]).stdout)
    assert info["index_state"] == "missing" and "vault-memory index" in info["next_step"]


def test_status_with_chunks_waiting_for_vectors_does_not_say_nothing_is_pending(
    vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index rebuilt by a recall that embedded nothing (a large vault): not `pending: nothing`."""
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    monkeypatch.setattr(memory_mod, "READER_EMBED_TOKENS", 0, raising=False)
    code, out, err = cli(*base, "recall", "tea")
    assert code == 0, err
    code, out, err = cli(*base, "status")
    assert code == 0, err
    chunks = int(re.search(r"chunks: (\d+)", out).group(1))  # type: ignore[union-attr]
    assert f"embedded:  0/{chunks} chunks (0%)" in out
    assert "pending:   nothing" not in out and f"pending:   {chunks:,} chunks to embed" in out, out
    assert f"next:      {chunks:,} chunks wait for their vectors: run `vault-memory index` to embed them" in out
    code, out, err = cli(*base, "status", "--json")
    info = json.loads(out)
    assert info["index_state"] == "embedding" and "vault-memory index" in info["next_step"]
    code, out, err = cli(*base, "index")
    assert code == 0, err
    code, out, err = cli(*base, "status")
    assert "pending:   nothing" in out and "next:" not in out and "(missing)" not in out, out
    assert json.loads(cli(*base, "status", "--json")[1])["index_state"] == "current"


def test_a_moved_vault_keeps_its_index(tmp_path: Path) -> None:
    """Friction 1: a vault folder moved (or renamed) is indexed under its new path's folder; its old
    index is found (its recorded vault is gone, its notes are here) and taken, not orphaned."""
    from vault_memory.config import default_index_dir

    old = tmp_path / "Dropbox" / "notes"
    shutil.copytree(SAMPLE, old, symlinks=True)
    code, out, err = cli("--vault", str(old), "--embedder", "fake", "index")
    assert code == 0, err
    old_index = default_index_dir(old)
    assert (old_index / "catalog.sqlite").is_file()
    new = tmp_path / "Documents" / "My Notes"
    new.parent.mkdir()
    old.rename(new)
    before = snapshot(new)
    got = script(["--vault", str(new), "--embedder", "fake", "recall", "Niche Zero grinder", "--no-touch"])
    code, out, err = got.returncode, got.stdout, got.stderr
    assert code == 0, err
    assert f"the vault moved from {old} to {new}: its index moved with it" in err, err
    assert "nothing is embedded again" in err and "first run" not in err and "no vector yet" not in err, err
    assert out.startswith("1. Coffee"), out
    assert not old_index.exists() and (default_index_dir(new) / "catalog.sqlite").is_file()
    code, out, err = cli("--vault", str(new), "--embedder", "fake", "status", "--json")
    info = json.loads(out)
    assert info["index_state"] == "current" and info["vectors"]["complete"], info
    assert snapshot(new) == before, "the vault is never written for this"


def test_a_copied_vault_gets_its_own_index(tmp_path: Path) -> None:
    """The old folder still there: a copy, not a move; both keep an index of their own."""
    from vault_memory.config import default_index_dir

    first = tmp_path / "notes"
    shutil.copytree(SAMPLE, first, symlinks=True)
    assert cli("--vault", str(first), "--embedder", "fake", "index")[0] == 0
    copy = tmp_path / "notes copy"
    shutil.copytree(first, copy, symlinks=True)
    got = script(["--vault", str(copy), "--embedder", "fake", "status"])
    code, out, err = got.returncode, got.stdout, got.stderr
    assert code == 0 and "moved" not in err, err
    assert (default_index_dir(first) / "catalog.sqlite").is_file()
    assert "(missing)" in out  # the copy's own index is yet to be built


def test_a_vault_moved_twice_beside_two_old_indexes_says_so(tmp_path: Path) -> None:
    """Two gone vaults whose notes are all here: neither is taken, and stderr says what to do."""
    from vault_memory.config import default_index_dir

    olds = [tmp_path / "a", tmp_path / "b"]
    for old in olds:
        shutil.copytree(SAMPLE, old, symlinks=True)
        assert cli("--vault", str(old), "--embedder", "fake", "index")[0] == 0
    new = tmp_path / "c"
    olds[0].rename(new)
    shutil.rmtree(olds[1])
    got = script(["--vault", str(new), "--embedder", "fake", "status"])
    code, err = got.returncode, got.stderr
    assert code == 0, err
    assert "not taken, because more than one could be this vault's" in err, err
    assert f"move its folder to {default_index_dir(new)}" in err
    assert all(default_index_dir(old).is_dir() for old in olds)
