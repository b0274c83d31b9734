"""Nothing half-done (issue 22): each bullet of the issue's first list, reproduced.

An error writes nothing; names we make are visible; a big file is never read whole; a sync
client's conflict copy never takes a note's identity; exit codes as docs/reliability.md's
table says; owned times never move backwards; a skipped rehearsal is retried; a note written
while another process holds the writer lock is found promptly. (A rewrite keeping the owner,
xattrs and links: tests/test_write_keeps.py; `watch` re-arming: tests/test_watch.py.)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client

from tests.conftest import NOW, MemoryFactory, snapshot
from vault_memory.config import Config
from vault_memory.doctor import diagnose, fix
from vault_memory.errors import ConcurrentEditError, NoteNotFoundError
from vault_memory.index import requests
from vault_memory.index.calibration import FAKE
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.mcp_server import Service, build_server
from vault_memory.memory import Memory
from vault_memory.text import note_name, safe_file_name
from vault_memory.vault import atomic
from vault_memory.vault.notefile import read_note

#: every hit counts as used (rehearsed), whatever its cosine
EVERY_HIT_USED = replace(FAKE, strong=-1.0)

EXE = str(Path(sys.executable).parent / "vault-memory")
ROUTER = "The wifi router is in the hallway cupboard."


SETPRIV = shutil.which("setpriv")
# Root reads any file; without these two capabilities it is refused like anyone else (permission denied).
NO_DAC = [SETPRIV or "setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all"]


def cli(vault: Path, index: Path, *args: str, no_dac: bool = False, timeout: float = 120) -> Any:
    base = [EXE, "--vault", str(vault), "--index-dir", str(index), "--embedder", "fake"]
    return subprocess.run([*(NO_DAC if no_dac else []), *base, *args], capture_output=True, text=True, timeout=timeout)


def vault_files(vault: Path) -> dict[str, bytes]:
    return {k: v for k, v in snapshot(vault).items()}


# -- 1. an error writes nothing --------------------------------------------------------------------


@pytest.mark.slow  # the console script
def test_remember_with_an_unknown_supersedes_writes_nothing(vault: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert cli(vault, index, "index").returncode == 0
    before = vault_files(vault)
    res = cli(vault, index, "remember", ROUTER, "--supersedes", "No Such Note")
    assert res.returncode == 3, res.stderr
    assert "No Such Note" in res.stderr and "Traceback" not in res.stderr
    staged = cli(vault, index, "staged", "--json")
    assert staged.returncode == 0 and json.loads(staged.stdout)["staged"] == []
    assert vault_files(vault) == before


def test_a_failed_remember_over_the_api_leaves_nothing_for_commit_all(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    mem.index()
    before = vault_files(vault)
    with pytest.raises(NoteNotFoundError):
        mem.remember("The spare key is under the blue pot.", supersedes="No Such Note")
    assert vault_files(vault) == before
    report = mem.commit_all()
    assert report.committed == [] and vault_files(vault) == before


def test_a_remember_that_fails_after_staging_takes_its_draft_back(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supersedes target resolves, but linking it fails (a person is saving it): the draft the call
    staged is removed again, so the vault is as it was, and commit_all finds nothing."""
    from vault_memory.lifecycle import staging

    mem = make_memory()
    mem.index()
    target = next(r.path for r in internals(mem).catalog.notes() if not r.path.startswith("Memory/"))
    before = vault_files(vault)

    def busy(*a: object, **k: object) -> object:
        raise ConcurrentEditError(target, "is being written right now (test); nothing was changed")

    monkeypatch.setattr(staging, "link_superseded", busy)
    with pytest.raises(ConcurrentEditError):
        mem.remember(ROUTER, supersedes=target)
    assert vault_files(vault) == before
    assert mem.commit_all().committed == []
    assert mem.staged() == []


def test_commit_all_leaves_a_failed_remembers_leftover(make_memory: MemoryFactory, vault: Path) -> None:
    """A draft a `remember` call staged and could not finish (it crashed, or could not take it back)
    says so (`staged_by: remember`): commit_all never commits it; naming it commits it."""
    mem = make_memory()
    mem.index()
    from vault_memory.lifecycle import staging

    sm = staging._stage(internals(mem), ROUTER, "Router", False, [], NOW, [], made_by="remember")
    report = mem.commit_all()
    assert report.committed == []
    assert [x.reason for x in report.left if x.node_id == sm.node_id][0].startswith("left: staged by a `remember`")
    done = mem.commit([sm.node_id])
    assert [c.node_id for c in done.committed] == [sm.node_id]
    assert "staged_by" not in read_note(vault, done.committed[0].path).meta


def test_a_failed_mcp_remember_is_not_committed_later(vault: Path, tmp_path: Path) -> None:
    service = Service(
        Config(vault=vault, index_dir=tmp_path / "index", embedder="fake"),
        embedder=FakeEmbedder(),
        lock_retry=0.2,
        index_wait=3.0,
    )
    before = vault_files(vault)

    async def main() -> None:
        async with Client(build_server(service), read_timeout_seconds=60) as c:
            bad = await c.call_tool("remember", {"text": "x", "supersedes": "No Such Note"})
            assert bad.is_error
            done = await c.call_tool("commit_all", {})
            assert not done.is_error and done.structured_content["committed"] == []

    anyio.run(main)
    after = vault_files(vault)
    assert {k for k in after if not k.startswith(".obsidian")} == {k for k in before if not k.startswith(".obsidian")}
    assert not (vault / "Memory" / "x.md").exists()


# -- 2. names we make are always visible ---------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        "../../etc/hosts maps names to addresses",
        ". . .profile",
        "\u200b.hidden",
        "\u2024\u2024/passwd",  # one-dot leaders: a dot after NFKC
        "\uff0e\uff0e\uff0fetc",  # fullwidth ../
        "..",
        "/",
    ],
)
def test_generated_names_are_visible_and_ours(title: str) -> None:
    name = note_name(title)
    assert safe_file_name(name), name
    assert not name.startswith(".") and "/" not in name and "\\" not in name


@given(st.text(max_size=80))
def test_any_title_makes_a_visible_name(title: str) -> None:
    assert safe_file_name(note_name(title))


def test_a_path_like_memory_is_staged_visibly_and_found(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    mem.index()
    text = "../../etc/hosts maps names to addresses"
    done = mem.remember(text)
    assert not Path(done.path).name.startswith(".") and done.path.startswith("Memory/")
    again = mem.remember(text)  # a retry: the same memory, no second file
    assert again.existing or again.path == done.path
    assert not [p for p in (vault / "Memory").rglob(".*.md")]
    assert diagnose(mem).unaccounted == []


def test_doctor_lists_a_hidden_staged_file_and_fix_shows_it(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    mem.index()
    staged = vault / "Memory" / "Staged"
    staged.mkdir(parents=True, exist_ok=True)
    hidden = staged / ".. etc hosts maps names to addresses.md"
    hidden.write_text(
        "---\nnode_id: 0123456789abcdef\nstatus: staged\n---\n../../etc/hosts maps names\n", encoding="utf-8"
    )
    report = diagnose(mem)
    assert report.unaccounted == ["Memory/Staged/.. etc hosts maps names to addresses.md"]
    assert not report.ok and any("hidden from every scan" in p for p in report.problems())
    after = fix(mem)
    assert after.unaccounted == [] and not hidden.exists()
    assert [sm.path for sm in mem.staged()] == ["Memory/Staged/etc hosts maps names to addresses.md"]


# -- 3. bounded reads --------------------------------------------------------------------------------


@pytest.fixture()
def sparse_export(vault: Path) -> Iterator[Path]:
    path = vault / "export.md"
    with open(path, "wb") as f:
        f.truncate(8 * 1024**3)  # 8 GB, sparse: costs nothing on disk
    yield path
    path.unlink(missing_ok=True)


def test_an_8gb_sparse_note_is_skipped_in_milliseconds(
    make_memory: MemoryFactory, sparse_export: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mem = make_memory()
    started = time.perf_counter()
    report = mem.index()
    assert time.perf_counter() - started < 10  # the whole sample vault; the big file costs a stat
    assert "export.md" in report.failures and "max_note_bytes" in report.failures["export.md"]
    mem.recall("coffee", k=3)
    mem.index()
    said = [r for r in caplog.records if r.getMessage().startswith("export.md")]
    assert len(said) == 1, [r.getMessage() for r in said]  # one warning, not one per command
    with pytest.raises(Exception, match="max_note_bytes"):
        read_note(internals(mem).vault, "export.md")


def test_max_note_bytes_is_settable(make_memory: MemoryFactory, vault: Path) -> None:
    (vault / "big.md").write_text("# Big\n\n" + "word " * 1000, encoding="utf-8")
    mem = make_memory(max_note_bytes=2048)
    assert "big.md" in mem.index().failures
    roomy = make_memory(max_note_bytes=1 << 20, index_dir=vault.parent / "index2")
    assert "big.md" not in roomy.index().failures


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads peak RSS from /proc")
def test_index_and_watch_stay_small_beside_an_8gb_note(vault: Path, tmp_path: Path, sparse_export: Path) -> None:
    """Peak RSS of `index` and `watch` under 300 MB (fake embedder), under a 1.5 GB address-space limit
    too (where the whole-file read died with MemoryError), and the file skipped with one warning."""
    import resource

    index = tmp_path / "index"
    base = [EXE, "--vault", str(vault), "--index-dir", str(index), "--embedder", "fake"]

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))

    # A fresh wrapper process whose only child is `index`: its RUSAGE_CHILDREN peak is that child's alone
    # (this test process has waited for other children, e.g. a Chroma server, in the same run).
    wrapper = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(r.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(r.returncode)\n"
    )
    started = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", wrapper, *base, "index"], capture_output=True, text=True, timeout=300, preexec_fn=limited
    )
    took = time.perf_counter() - started
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("WARNING: export.md") == 1 and "Traceback" not in res.stderr
    peak_kb = int(res.stdout.strip().splitlines()[-1])
    assert peak_kb / 1024 < 300, peak_kb
    assert took < 30
    watcher = subprocess.Popen([*base, "watch"], stderr=subprocess.PIPE, text=True, preexec_fn=limited)
    try:
        time.sleep(4)
        with open(sparse_export, "r+b") as f:  # touched while watched: read again? never
            f.truncate(8 * 1024**3 + 4096)
        (vault / "fresh.md").write_text("# Fresh\n\nA note written while watching.\n", encoding="utf-8")
        time.sleep(4)
        assert watcher.poll() is None
        assert _peak_rss_mb(watcher.pid) < 300
    finally:
        watcher.terminate()
        _, err = watcher.communicate(timeout=30)
    assert "Traceback" not in err and "MemoryError" not in err


# -- 5. identity follows the live note -------------------------------------------------------------


SYNC_COPIES = [
    "Router.sync-conflict-20261201-101500-ABCDEF1.md",  # Syncthing
    "Router (Jonas's conflicted copy 2026-12-01).md",  # Dropbox
    "Router 2.md",  # iCloud
    "Router (conflict 2026-12-01 101500).md",  # Obsidian Sync
    "Router_LOCAL_12345.md",  # git mergetool
]


@pytest.mark.parametrize("copy_name", SYNC_COPIES)
def test_a_sync_conflict_copy_never_takes_the_notes_id(make_memory: MemoryFactory, vault: Path, copy_name: str) -> None:
    """Syncthing gives its copy the older mtime; the old rule (the oldest file keeps the id) gave the
    copy the id, so `unpin <id>` unpinned the copy. The live note keeps it, whatever the mtimes."""
    live = vault / "Router.md"
    live.write_text(f"---\nnode_id: 7f3e9a0112345678\npinned: true\n---\n{ROUTER}\n", encoding="utf-8")
    copy = vault / copy_name
    copy.write_text(f"---\nnode_id: 7f3e9a0112345678\npinned: true\n---\n{ROUTER} (older)\n", encoding="utf-8")
    old = time.time() - 86400
    os.utime(copy, (old, old))  # the copy is the older file
    mem = make_memory()
    mem.index()
    row = internals(mem).catalog.note_by_id("7f3e9a0112345678")
    assert row is not None and row.path == "Router.md"
    report = diagnose(mem)
    assert copy_name in report.conflict_copies and "Router.md" in report.conflict_copies[copy_name]
    fix(mem)
    assert read_note(vault, "Router.md").meta["node_id"] == "7f3e9a0112345678"
    assert read_note(vault, copy_name).meta["node_id"] != "7f3e9a0112345678"
    done = mem.unpin("7f3e9a0112345678")
    assert done.path == "Router.md" and "pinned" not in read_note(vault, "Router.md").meta


def test_a_name_that_only_looks_like_an_icloud_copy_is_not_one(make_memory: MemoryFactory, vault: Path) -> None:
    (vault / "Sprint.md").write_text("# Sprint\n\nThe first sprint.\n", encoding="utf-8")
    (vault / "Sprint 2.md").write_text("# Sprint 2\n\nThe second sprint.\n", encoding="utf-8")
    mem = make_memory()
    mem.index()
    assert "Sprint 2.md" not in diagnose(mem).conflict_copies


# -- 7. exit codes, busy notes, time, rehearsals -------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    not (hasattr(os, "geteuid") and os.geteuid() == 0 and SETPRIV), reason="drops root's file capabilities (setpriv)"
)
def test_permission_denied_exits_8(vault: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    note = vault / "secret.md"
    note.write_text("# Secret\n\nThe safe code is in the blue folder.\n", encoding="utf-8")
    os.chown(note, 1000, 1000)
    os.chmod(note, 0o000)  # someone else's, readable by no one else
    res = cli(vault, index, "index", no_dac=True)
    assert res.returncode == 0 and "secret.md" in res.stderr  # indexing skips it, with a warning
    res = cli(vault, index, "read", "secret.md", no_dac=True)
    assert res.returncode == 8, (res.returncode, res.stderr)
    assert "secret.md" in res.stderr and "Permission denied" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
@pytest.mark.skipif(not atomic.KERNEL.lease, reason="a save held open is seen through a Linux lease")
def test_a_note_being_written_waits_then_exits_9(vault: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert cli(vault, index, "index").returncode == 0
    note = vault / "Preferences" / "Coffee.md"
    before = note.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys,time; f=open(sys.argv[1],'r+b'); print('open', flush=True); time.sleep(60)"]
        + [str(note)],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"open"
        started = time.monotonic()
        res = cli(vault, index, "pin", "Preferences/Coffee.md")
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert res.returncode == 9, (res.returncode, res.stderr)
    assert "being written right now" in res.stderr and waited >= 2.5  # a short wait and retry first
    assert note.read_bytes() == before


def test_recall_in_the_past_never_moves_last_accessed_back(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory(calibration=EVERY_HIT_USED)
    mem.index()
    later = dt.datetime(2040, 1, 1, tzinfo=dt.UTC)
    hits = mem.recall("Danube bike trip Passau Vienna", k=1, now=later)
    rel = hits[0].path  # a dated note (an undated one has no age to restart)
    assert read_note(vault, rel).meta["last_accessed"] == later
    before = (vault / rel).read_bytes()
    mem.recall("Danube bike trip Passau Vienna", k=1, now=dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    assert (vault / rel).read_bytes() == before  # nothing to move: the replay writes nothing
    assert read_note(vault, rel).meta["last_accessed"] == later


def test_a_rehearsal_skipped_while_the_note_is_edited_lands_at_the_next_recall(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(atomic, "QUIET_SECONDS", 1.0)
    mem = make_memory(calibration=EVERY_HIT_USED)
    mem.index()
    rel = mem.recall("Danube bike trip Passau Vienna", k=1, touch=False)[0].path
    path = vault / rel
    other = mem.recall("espresso coffee grinder", k=1, touch=False)[0].path
    assert other != rel
    path.write_bytes(path.read_bytes())  # a person saved it a moment ago: not quiet
    mem.index()
    first = dt.datetime(2031, 5, 1, tzinfo=dt.UTC)
    hits = mem.recall("Danube bike trip Passau Vienna", k=1, now=first)
    assert hits[0].path == rel and not hits[0].rehearsed
    assert "last_accessed" not in read_note(vault, rel).meta
    time.sleep(1.1)  # quiet now
    # another recall: the next quiet moment
    mem.recall("espresso coffee grinder", k=1, now=first + dt.timedelta(hours=1))
    assert read_note(vault, rel).meta["last_accessed"] == first


# -- the first index while another process holds the writer lock -------------------------------------


class SlowFake(FakeEmbedder):
    """A fake embedder that takes its time, like MiniLM on a first index."""

    def embed(self, texts: Any) -> Any:
        time.sleep(0.8)  # per call of up to 128 texts
        return super().embed(texts)


@pytest.mark.slow
def test_a_memory_remembered_during_anothers_first_index_is_found_promptly(vault: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    for i in range(900):
        (vault / "Bulk" / f"n{i:03}.md").parent.mkdir(exist_ok=True)
        (vault / "Bulk" / f"n{i:03}.md").write_text(
            f"# Note {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(60)) + "\n", encoding="utf-8"
        )
    writer = Memory(Config(vault=vault, index_dir=index, embedder="fake"), embedder=SlowFake())
    done = threading.Event()

    def first_index() -> None:
        try:
            writer.index()
        finally:
            done.set()

    thread = threading.Thread(target=first_index)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not (index / "catalog.sqlite").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        res = cli(vault, index, "remember", "The spare bike key hangs behind the fridge.")
        assert res.returncode == 0, res.stderr
        assert not done.is_set(), "the first index finished too soon to test this"
        found_after = None
        started = time.monotonic()
        while time.monotonic() - started < 15 and not done.is_set():
            out = cli(vault, index, "recall", "spare bike key fridge", "--json", "--no-touch")
            hits = json.loads(out.stdout)["hits"] if out.returncode == 0 else []
            if any("spare bike key" in (h.get("path", "") + h.get("snippet", "")).lower() for h in hits):
                found_after = time.monotonic() - started
                break
        assert found_after is not None and not done.is_set(), "found only once the first index finished"
    finally:
        thread.join(120)
        writer.close()
    assert requests.take(index) == []


def test_requests_round_trip(tmp_path: Path) -> None:
    assert requests.ask(tmp_path, ["Memory/a.md", "Memory/b.md", "bad\nname"])
    assert requests.ask(tmp_path, ["Memory/a.md"])
    assert sorted(requests.take(tmp_path)) == ["Memory/a.md", "Memory/b.md"]
    assert requests.take(tmp_path) == []
