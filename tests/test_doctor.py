"""doctor: every kind of drift between vault and index is found, named, and fixed by --fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import write_notes
from vault_memory.cli import app
from vault_memory.config import Config
from vault_memory.doctor import diagnose, fix
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.index.lock import LOCK_NAME
from vault_memory.internals import internals
from vault_memory.memory import Memory
from vault_memory.vault.atomic import TMP_PREFIX
from vault_memory.vault.notefile import read_note

NOTES = {
    "a.md": "---\nnode_id: aaaa0000aaaa0000\n---\n# A\n\nApples and pears.\n",
    "b.md": "---\ntags: [x]\n---\n# B\n\nBananas.\n",
    "sub/c.md": "---\nnode_id: cccc0000cccc0000\n---\n# C\n\nCherries, two chunks.\n\n## More\n\nCherry stones.\n",
}


@pytest.fixture()
def dvault(tmp_path: Path) -> Path:
    vault = write_notes(tmp_path / "vault", NOTES)
    return vault


@pytest.fixture()
def mem(dvault: Path, tmp_path: Path) -> Iterator[Memory]:
    # exact_search_limit=0: keep a vector store, so its drift can be diagnosed and fixed
    m = Memory(
        Config(vault=dvault, index_dir=tmp_path / "index", embedder="fake", exact_search_limit=0),
        embedder=FakeEmbedder(),
    )
    m.index()
    yield m
    m.close()


def test_consistent_after_index(mem: Memory) -> None:
    report = diagnose(mem)
    assert report.ok and report.problems() == []
    assert report.notes_in_vault == report.notes_in_index == 3


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_missing_stale_and_orphans_then_fix(mem: Memory, dvault: Path) -> None:
    (dvault / "new.md").write_text("# New\n\nNot indexed yet.\n", encoding="utf-8")
    a = dvault / "a.md"
    a.write_text(a.read_text(encoding="utf-8") + "\nAnd plums.\n", encoding="utf-8")
    (dvault / "sub/c.md").rename(dvault / "sub/moved.md")
    (dvault / "b.md").unlink()
    report = diagnose(mem)
    assert not report.ok
    assert report.missing == ["new.md"]
    assert report.stale == {"a.md": "modified", "sub/moved.md": "moved"}
    assert report.orphans == ["b.md"]
    text = "\n".join(report.problems())
    assert "new.md" in text and "a.md (modified)" in text and "b.md" in text
    assert (dvault / "new.md").read_text(encoding="utf-8") == "# New\n\nNot indexed yet.\n", "diagnosis writes nothing"
    after = fix(mem)
    assert after.ok, after.problems()


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_vector_store_drift(mem: Memory) -> None:
    store = internals(mem).store
    assert store is not None
    victim = sorted(internals(mem).catalog.chunk_ids())[0]
    store.delete([victim])
    store.upsert(["ghost#0"], np.ones((1, FakeEmbedder().dim), dtype=np.float32))
    report = diagnose(mem)
    assert (report.vectors_missing, report.vectors_orphaned) == (1, 1) and not report.ok
    assert fix(mem).ok
    assert store.ids() == internals(mem).catalog.chunk_ids()


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_interrupted_run_is_reported(mem: Memory) -> None:
    with internals(mem).catalog.transaction():
        internals(mem).catalog.set_meta("store_dirty", "1")
    report = diagnose(mem)
    assert report.store_dirty and not report.ok
    assert fix(mem).ok


def test_embedder_mismatch(mem: Memory, dvault: Path, tmp_path: Path) -> None:
    mem.close()
    other = Memory(Config(vault=dvault, index_dir=tmp_path / "index", embedder="fake"), embedder=FakeEmbedder(dim=32))
    try:
        report = diagnose(other)
        assert report.embedder_mismatch and not report.ok
        assert "--rebuild" in report.problems()[0]
    finally:
        other.close()


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_duplicate_ids_and_unreadable_notes(mem: Memory, dvault: Path) -> None:
    shutil.copy(dvault / "a.md", dvault / "copy of a.md")
    later = time.time() + 5
    os.utime(dvault / "copy of a.md", (later, later))
    (dvault / "broken.md").write_bytes(b"\x00\x01\x02 binary")
    report = diagnose(mem)
    [(nid, paths)] = report.duplicate_ids.items()
    assert paths == ["a.md", "copy of a.md"]
    assert "broken.md" in report.unreadable
    after = fix(mem)  # the copy (the younger file) gets a fresh id; the original keeps its own
    assert after.ok and not after.duplicate_ids
    assert read_note(dvault, "a.md").meta["node_id"] == nid == "aaaa0000aaaa0000"
    assert read_note(dvault, "copy of a.md").meta["node_id"] != nid
    assert "broken.md" in after.unreadable, "unreadable notes are reported but are not drift"


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_stale_lock_and_leftover_temp_files(mem: Memory, dvault: Path, tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "index" / LOCK_NAME).write_text(str(dead.pid))  # what a SIGKILLed writer leaves behind
    tmp = dvault / "sub" / f"{TMP_PREFIX}abc123.tmp"
    tmp.write_bytes(b"half a note")
    old = time.time() - 3600
    os.utime(tmp, (old, old))
    fresh = dvault / f"{TMP_PREFIX}inflight.tmp"  # a write in flight in another process: left alone
    fresh.write_bytes(b"x")
    report = diagnose(mem)
    assert report.stale_lock_pid == dead.pid and report.writer_pid is None
    assert report.temp_files == [f"sub/{TMP_PREFIX}abc123.tmp"]
    after = fix(mem)
    assert after.ok, after.problems()
    assert not tmp.exists() and fresh.exists()
    assert (tmp_path / "index" / LOCK_NAME).read_text() == ""


def test_live_writer_is_not_a_stale_lock(mem: Memory, dvault: Path, tmp_path: Path) -> None:
    internals(mem).hold_writer_lock()
    reader = Memory(
        Config(vault=dvault, index_dir=tmp_path / "index", embedder="fake", read_only=True), embedder=FakeEmbedder()
    )
    try:
        report = diagnose(reader)
        assert report.ok and report.writer_pid == os.getpid() and report.stale_lock_pid is None
    finally:
        reader.close()


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_cli_exit_codes_and_json(mem: Memory, dvault: Path, tmp_path: Path) -> None:
    mem.close()
    args = ["--vault", str(dvault), "--index-dir", str(tmp_path / "index"), "--embedder", "fake"]
    runner = CliRunner()
    ok = runner.invoke(app, [*args, "doctor"])
    assert ok.exit_code == 0, ok.output
    assert "consistent" in ok.output
    (dvault / "b.md").unlink()
    drift = runner.invoke(app, [*args, "doctor", "--json"])
    assert drift.exit_code == 1
    data = json.loads(drift.stdout)
    assert data["ok"] is False and data["orphans"] == ["b.md"] and data["problems"]
    fixed = runner.invoke(app, [*args, "doctor", "--fix", "--json"])
    assert fixed.exit_code == 0, fixed.output
    assert json.loads(fixed.stdout)["fixed"] is True
    assert runner.invoke(app, [*args, "doctor"]).exit_code == 0


@pytest.mark.slow
def test_console_script_exit_code(mem: Memory, dvault: Path, tmp_path: Path) -> None:
    """Through `run()` (the console entry point), not only through click's test runner."""
    mem.close()
    (dvault / "b.md").unlink()
    exe = Path(sys.executable).parent / "vault-memory"
    args = [str(exe), "--vault", str(dvault), "--index-dir", str(tmp_path / "index"), "--embedder", "fake", "doctor"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "b.md" in done.stdout and "doctor --fix" in done.stdout
