"""The CLI: thin, JSON for machines, clear errors, every command documented.

Most tests run the installed console script (`vault-memory` next to sys.executable), the way
users and CI meet it; they are marked slow. The in-process tests of `execute` cover the same
error paths in the fast lane."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

EXE = [str(Path(sys.executable).parent / "vault-memory")]


def run(args: list[str], env: dict[str, str] | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([*EXE, *args], capture_output=True, text=True, env=full_env, timeout=300, **kw)  # type: ignore[call-overload]


@pytest.fixture()
def base(vault: Path, index_dir: Path) -> list[str]:
    return ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]


@pytest.mark.slow
def test_index_then_recall_json(base: list[str]) -> None:
    out = run([*base, "index"])
    assert out.returncode == 0, out.stderr
    assert "indexed" in out.stdout and "notes" in out.stdout
    assert "deliberately-not-utf8.md" in out.stderr  # the unreadable note is named on stderr
    res = run([*base, "recall", "ollama keep alive", "-k", "3", "--json", "--no-touch"])
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    hits = out["hits"]
    assert 1 <= len(hits) <= 3 and out["count"] == len(hits)
    for key in (
        "path",
        "node_id",
        "title",
        "heading",
        "snippet",
        "score",
        "strength",
        "tier",
        "pinned",
        "dormant",
        "reactivated",
    ):
        assert key in hits[0]
    assert "\\" not in hits[0]["path"]
    assert hits[0]["path"] == "Inbox/ollama keep-alive.md"


@pytest.mark.slow
def test_recall_human_output_and_status(base: list[str]) -> None:
    res = run([*base, "recall", "tokyo trip", "--no-touch"])
    assert res.returncode == 0, res.stderr
    assert re.search(r"^1\. ", res.stdout, re.M)
    st = run([*base, "status", "--json"])
    info = json.loads(st.stdout)
    assert info["notes"] > 0 and info["chunks"] >= info["notes"] - 5
    assert info["embedder"] == "fake/256"
    assert info["pending"] == {}
    assert "Inbox/deliberately-not-utf8.md" in info["failures"]


@pytest.mark.slow
def test_env_and_flags(vault: Path, index_dir: Path) -> None:
    env = {"VAULT_MEMORY_VAULT": str(vault), "VAULT_MEMORY_INDEX_DIR": str(index_dir), "VAULT_MEMORY_EMBEDDER": "fake"}
    assert run(["index"], env=env).returncode == 0
    # a flag wins over the environment
    res = run(["--embedder", "fake:32", "index"], env=env)
    assert res.returncode == 5 and "--rebuild" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_errors_are_one_line_with_exit_codes(tmp_path: Path) -> None:
    res = run(["--vault", str(tmp_path / "nope"), "--embedder", "fake", "recall", "x"])
    assert res.returncode == 2
    assert res.stderr.startswith("error: ") and "does not exist" in res.stderr and "Traceback" not in res.stderr
    res = run(["--vault", str(tmp_path), "--index-dir", str(tmp_path / "i"), "--embedder", "bogus", "index"])
    assert res.returncode == 4 and "minilm" in res.stderr
    res = run(
        [
            "--vault",
            str(tmp_path),
            "--index-dir",
            str(tmp_path / "i"),
            "--embedder",
            "fake",
            "recall",
            "x",
            "--now",
            "yesterday",
        ]
    )
    assert res.returncode == 2 and "ISO 8601" in res.stderr


@pytest.mark.slow
def test_config_file_in_vault(vault: Path, index_dir: Path) -> None:
    (vault / ".vault-memory.toml").write_text('embedder = "fake"\nignore = ["Inbox/"]\n', encoding="utf-8")
    res = run(["--vault", str(vault), "--index-dir", str(index_dir), "index", "--json"])
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["failures"] == {}  # Inbox/ (with the unreadable note) is ignored
    (vault / ".vault-memory.toml").write_text("half_life_days = 3\n", encoding="utf-8")
    res = run(["--vault", str(vault), "--index-dir", str(index_dir), "index"])
    assert res.returncode == 2 and "unknown setting" in res.stderr


def command_names() -> list[str]:
    import typer.main

    from vault_memory.cli.main import app

    group = typer.main.get_command(app)
    return sorted(getattr(group, "commands", {}))


def test_every_command_is_documented() -> None:
    reference = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")  # generated: tests/test_docs.py
    names = command_names()
    assert {"recall", "index", "config", "log"} <= set(names)
    missing = [n for n in names if f"### `vault-memory {n}`" not in reference]
    assert not missing, f"commands missing from docs/cli.md: {missing}"


def test_commands_are_registered_explicitly() -> None:
    """The command list in main.py is the registry: nothing registers itself by being imported."""
    from vault_memory.cli.main import COMMANDS

    assert sorted(name for name, _ in COMMANDS) == command_names()


# -- through the installed console script: usage errors, exit codes ---------------------------

USAGE_ERRORS = [
    pytest.param(["recal", "x"], "Did you mean 'recall'", id="unknown-command"),
    pytest.param(["recall"], "Missing argument", id="missing-argument"),
    pytest.param(["--bogus"], "No such option: --bogus", id="unknown-global-option"),
    pytest.param(["-k", "0", "recall", "x"], "option of recall", id="command-option-before-command"),
    pytest.param(["recall", "x", "-k", "0"], "-k", id="out-of-range"),
    pytest.param(["recall", "x", "--mode", "fuzzy"], "--mode", id="bad-choice"),
    pytest.param(["--vault", "v"], "Missing command", id="no-command"),
    pytest.param(["log", "x", "--bogus"], "No such option", id="unknown-command-option"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "expected"), USAGE_ERRORS)
def test_usage_errors_are_two_lines_and_exit_2(args: list[str], expected: str) -> None:
    res = run(args)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and res.stdout == ""
    lines = res.stderr.splitlines()
    assert 1 <= len(lines) <= 2, res.stderr
    assert lines[0].startswith("error: ") and expected in lines[0]
    assert lines[-1].startswith("Try 'vault-memory") and "-h' for help." in lines[-1]


@pytest.mark.slow
def test_bare_command_prints_help_on_stderr_and_exits_2() -> None:
    res = run([])
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert res.stderr.startswith("Usage: vault-memory") and "recall" in res.stderr


@pytest.mark.slow
def test_help_version_and_env_in_help() -> None:
    short, long = run(["-h"]), run(["--help"])
    assert short.returncode == long.returncode == 0 and short.stdout == long.stdout
    # the environment variable and the config key of each option survive help rendering
    for text in (
        "[env: VAULT_MEMORY_VAULT]",
        "VAULT_MEMORY_INDEX_DIR",
        "VAULT_MEMORY_EMBEDDER",
        "VAULT_MEMORY_READ_ONLY",
        "--install-completion",
        "--version",
    ):
        assert text in short.stdout, text
    sub = run(["prefetch", "-h"])
    assert sub.returncode == 0 and "[config: prefetch_budget; default: 1200]" in " ".join(sub.stdout.split())
    assert "[default: 5; 1<=x<=100]" in run(["recall", "-h"]).stdout
    from vault_memory import __version__

    version = run(["--version"])
    assert version.returncode == 0 and version.stdout.strip() == f"vault-memory {__version__}"
    # typer detects the shell from the parent process: run it from bash, as a user's shell would
    # ("; exit" keeps bash from exec-ing the command in its place, which would hide it)
    completion = subprocess.run(
        ["bash", "-c", f"'{EXE[0]}' --show-completion; exit $?"], capture_output=True, text=True, timeout=60
    )
    assert completion.returncode == 0 and "_VAULT_MEMORY_COMPLETE" in completion.stdout, completion.stderr


@pytest.mark.slow
def test_exit_codes_propagate_through_the_script(tmp_path: Path) -> None:
    """`raise typer.Exit(1)` in a command must exit 1 through the console script, not only in CliRunner."""
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nA note.\n", encoding="utf-8")
    (vault / "Blocked").write_text("a file where the memory folder should be\n", encoding="utf-8")
    base = ["--vault", str(vault), "--index-dir", str(tmp_path / "i"), "--embedder", "fake"]
    staged = run([*base, "stage", "A fact that cannot be moved."])
    assert staged.returncode == 0, staged.stderr
    nid = staged.stdout.strip()
    left = run([*base, "commit", nid, "--json"], env={"VAULT_MEMORY_MEMORY_FOLDER": "Blocked"})
    assert left.returncode == 1, left.stderr  # named, and left staged
    report = json.loads(left.stdout)
    assert report["committed"] == [] and report["left"][0]["node_id"] == nid and report["left"][0]["code"] == "error"
    unknown = run([*base, "commit", "0123456789abcdef"])
    assert unknown.returncode == 3 and unknown.stderr.startswith("error: ") and "Traceback" not in unknown.stderr
    assert run([*base, "commit", "--all"], env={"VAULT_MEMORY_MEMORY_FOLDER": "Blocked"}).returncode == 0
    (vault / "b.md").write_text("# B\n\nNot indexed yet.\n", encoding="utf-8")
    assert run([*base, "doctor"]).returncode == 1  # drift: exit 1 (typer.Exit through the script)
    assert run([*base, "--read-only", "pin", "a.md"]).returncode == 2


@pytest.mark.slow
def test_python_dash_m_runs_the_cli() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "vault_memory", "--version"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0 and res.stdout.startswith("vault-memory ")
    res = subprocess.run(
        [sys.executable, "-m", "vault_memory", "recal", "x"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 2 and "Did you mean 'recall'" in res.stderr


@pytest.mark.slow
def test_config_shows_each_setting_and_its_source(vault: Path, index_dir: Path, isolated_env: Path) -> None:
    user = isolated_env / ".config" / "vault-memory" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("prefetch_budget = 900\n", encoding="utf-8")
    (vault / ".vault-memory.toml").write_text("staged_ttl_days = 3\n", encoding="utf-8")
    res = run(
        ["--vault", str(vault), "--index-dir", str(index_dir), "config", "--json"],
        env={"VAULT_MEMORY_EMBEDDER": "fake"},
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    s = out["settings"]
    assert s["vault"] == {"value": str(vault), "source": "flag", "from": "--vault"}
    assert s["embedder"] == {"value": "fake", "source": "env", "from": "VAULT_MEMORY_EMBEDDER"}
    assert s["staged_ttl_days"] == {"value": 3.0, "source": "vault file", "from": str(vault / ".vault-memory.toml")}
    assert s["prefetch_budget"] == {"value": 900, "source": "user file", "from": str(user)}
    assert s["half_life_long_days"] == {"value": 60.0, "source": "default", "from": None}
    assert out["files"]["user"] == {"path": str(user), "exists": True}
    text = run(["--vault", str(vault), "config"], env={"VAULT_MEMORY_EMBEDDER": "fake"})
    assert text.returncode == 0
    assert re.search(r"^embedder\s+fake\s+\(env VAULT_MEMORY_EMBEDDER\)$", text.stdout, re.M)
    assert re.search(r"^index_dir\s+\S+\s+\(default\)$", text.stdout, re.M)  # the resolved per-vault folder


# -- one JSON shape per noun ------------------------------------------------------------------


@pytest.mark.slow
def test_every_json_output_is_one_object(base: list[str]) -> None:
    """Each command with --json prints one object; lists sit under plural keys; records keep their fields."""

    def j(*args: str) -> dict[str, object]:
        res = run([*base, *args, "--json"])
        assert res.returncode == 0, (args, res.stderr)
        out = json.loads(res.stdout)
        assert isinstance(out, dict), args
        return out

    index = j("index")
    assert {"notes", "chunks", "counts", "failures"} <= set(index)
    hits = j("recall", "tokyo trip", "--no-touch")
    assert set(hits) == {"hits", "count", "lexical_only", "vectors"}
    assert hits["count"] == len(hits["hits"])  # type: ignore[arg-type]
    assert hits["lexical_only"] is False and hits["vectors"]["complete"] is True  # type: ignore[index]
    assert {"vault", "notes", "pending"} <= set(j("status"))
    assert {"ok", "problems", "fixed"} <= set(j("doctor"))
    staged = j("stage", "The spare key is under the blue flowerpot.")
    listing = j("staged")
    assert set(listing) == {"staged", "count", "expired"} and listing["count"] == 1
    assert listing["staged"] == [staged]  # a staged memory has the same fields wherever it appears
    committed = j("commit", str(staged["node_id"]))
    assert set(committed) == {"committed", "left"}
    remembered = j("remember", "The bike lock code is written on the shed door.")
    assert set(remembered) == set(committed["committed"][0])  # type: ignore[index]
    pinned = j("pin", str(remembered["path"]))
    assert pinned == {"node_id": remembered["node_id"], "path": remembered["path"], "pinned": True, "changed": True}
    assert j("unpin", str(remembered["path"]))["pinned"] is False
    assert set(j("log", "Oiled the bike chain")) == {"path"}
    assert {"block", "entries", "budget", "refreshed"} <= set(j("prefetch", "where is the spare key"))
    assert set(j("config")) == {"settings", "files"}
    gone = j("stage", "A throwaway thought.")
    assert j("discard", str(gone["node_id"]))["path"].startswith(".trash/")  # type: ignore[union-attr]


def test_commands_with_json_are_the_documented_ones() -> None:
    """Every command that takes --json is in the JSON table (docs/agents.md)."""
    import typer.main

    from vault_memory.cli.main import app

    group = typer.main.get_command(app)
    with_json = sorted(
        name for name, cmd in getattr(group, "commands", {}).items() if any("--json" in p.opts for p in cmd.params)
    )
    agents = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    section = agents.split("## JSON output", 1)[1].split("\n## ", 1)[0]
    assert [n for n in with_json if f"`{n}`" not in section] == []


# -- progress: rate and ETA on a terminal only -----------------------------------------------


class FakeTerminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_progress_shows_rate_and_eta_on_a_terminal_only() -> None:
    from vault_memory.cli.output import Progress

    clock = iter([0.0, 10.0, 10.1, 20.0, 20.0])
    term = FakeTerminal(tty=True)
    bar = Progress("embedding", stream=term, clock=lambda: next(clock))
    bar(0, 100)
    bar(25, 100)  # 25 in 10 s: 2.5/s, 75 left: 30 s
    bar(26, 100)  # within the redraw interval: skipped
    bar(100, 100)
    bar.close()
    lines = term.getvalue().split("\r")
    assert "embedding 25/100 chunks (25%)  2.5/s  ETA 0:30" in lines[2]
    assert "26/100" not in term.getvalue()
    assert lines[-1].strip().startswith("embedding 100/100 chunks in 0:20 (5.0/s)")
    assert term.getvalue().endswith("\n")
    # an update skipped by the redraw interval is drawn when the bar closes
    clock = iter([0.0, 0.1, 2.0])
    term = FakeTerminal(tty=True)
    bar = Progress("indexing", stream=term, clock=lambda: next(clock))
    bar(0, 50)
    bar(10, 50)
    bar.close()
    assert term.getvalue().split("\r")[-1] == "indexing 10/50 chunks (20%)  5.0/s  ETA 0:08\n"
    pipe = FakeTerminal(tty=False)
    quiet = Progress("embedding", stream=pipe)
    quiet(1, 10)
    quiet.close()
    assert pipe.getvalue() == ""


# -- the same error paths in process (fast lane) ------------------------------------------------


@pytest.mark.parametrize(("args", "expected"), USAGE_ERRORS)
def test_execute_usage_errors(args: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    from vault_memory.cli import execute

    assert execute(args) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 2 and expected in lines[0] and "Traceback" not in err


def test_execute_returns_the_exit_code_of_typer_exit(
    vault: Path, index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`doctor` raises typer.Exit(1) on drift; click hands that code back instead of exiting with it."""
    from vault_memory.cli import execute

    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    assert execute([*base, "doctor"]) == 1  # nothing indexed yet: drift
    assert execute([*base, "index"]) == 0
    assert execute([*base, "doctor"]) == 0
    assert execute([*base, "commit", "0123456789abcdef"]) == 3  # NoteNotFoundError's code
    assert execute(["--version"]) == 0 and execute(["-h"]) == 0
    assert execute([]) == 2
    assert "error: " in capsys.readouterr().err


def test_the_library_never_imports_the_cli() -> None:
    package = REPO / "vault_memory"
    offenders = [
        str(p.relative_to(REPO))
        for p in package.glob("*.py")
        if p.name != "__main__.py"
        and re.search(r"^\s*(from|import)\s+(vault_memory\.cli|\.cli)\b", p.read_text(encoding="utf-8"), re.M)
    ]
    assert offenders == []
