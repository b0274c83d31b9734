"""The CLI: thin, JSON for machines, clear errors, every command documented."""

from __future__ import annotations

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


def test_index_then_recall_json(base: list[str]) -> None:
    out = run([*base, "index"])
    assert out.returncode == 0, out.stderr
    assert "indexed" in out.stdout and "notes" in out.stdout
    assert "latin1-export.md" in out.stderr  # the unreadable note is named on stderr
    res = run([*base, "recall", "ollama keep alive", "-k", "3", "--json", "--no-touch"])
    assert res.returncode == 0, res.stderr
    hits = json.loads(res.stdout)
    assert 1 <= len(hits) <= 3
    for key in ("path", "node_id", "title", "heading", "snippet", "score", "strength", "tier", "pinned",
                "dormant", "reactivated"):
        assert key in hits[0]
    assert "\\" not in hits[0]["path"]
    assert hits[0]["path"] == "Inbox/ollama keep-alive.md"


def test_recall_human_output_and_status(base: list[str]) -> None:
    res = run([*base, "recall", "tokyo trip", "--no-touch"])
    assert res.returncode == 0, res.stderr
    assert re.search(r"^1\. ", res.stdout, re.M)
    st = run([*base, "status", "--json"])
    info = json.loads(st.stdout)
    assert info["notes"] > 0 and info["chunks"] >= info["notes"] - 5
    assert info["embedder"] == "fake/256"
    assert info["pending"] == {}
    assert "Inbox/latin1-export.md" in info["failures"]


def test_env_and_flags(vault: Path, index_dir: Path) -> None:
    env = {"VAULT_MEMORY_VAULT": str(vault), "VAULT_MEMORY_INDEX_DIR": str(index_dir),
           "VAULT_MEMORY_EMBEDDER": "fake"}
    assert run(["index"], env=env).returncode == 0
    # a flag wins over the environment
    res = run(["--embedder", "fake:32", "index"], env=env)
    assert res.returncode == 5 and "--rebuild" in res.stderr and "Traceback" not in res.stderr


def test_errors_are_one_line_with_exit_codes(tmp_path: Path) -> None:
    res = run(["--vault", str(tmp_path / "nope"), "--embedder", "fake", "recall", "x"])
    assert res.returncode == 2
    assert res.stderr.startswith("error: ") and "does not exist" in res.stderr and "Traceback" not in res.stderr
    res = run(["--vault", str(tmp_path), "--index-dir", str(tmp_path / "i"), "--embedder", "bogus", "index"])
    assert res.returncode == 4 and "minilm" in res.stderr
    res = run(["--vault", str(tmp_path), "--index-dir", str(tmp_path / "i"), "--embedder", "fake", "recall", "x",
               "--now", "yesterday"])
    assert res.returncode == 2 and "ISO 8601" in res.stderr


def test_config_file_in_vault(vault: Path, index_dir: Path) -> None:
    (vault / ".vault-memory.toml").write_text('embedder = "fake"\nignore = ["Inbox/"]\n', encoding="utf-8")
    res = run(["--vault", str(vault), "--index-dir", str(index_dir), "index", "--json"])
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["failures"] == {}  # Inbox/ (with the unreadable note) is ignored
    (vault / ".vault-memory.toml").write_text("half_life_days = 3\n", encoding="utf-8")
    res = run(["--vault", str(vault), "--index-dir", str(index_dir), "index"])
    assert res.returncode == 2 and "unknown setting" in res.stderr


def test_every_command_is_documented() -> None:
    from vault_memory_cli.main import app

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    import typer.main

    group = typer.main.get_command(app)
    names = sorted(group.commands)  # type: ignore[attr-defined]
    assert "recall" in names and "index" in names
    missing = [n for n in names if f"vault-memory {n}" not in readme and f"`{n}`" not in readme]
    assert not missing, f"commands missing from README.md: {missing}"
