"""The watcher, driven for real: watchdog events on a temporary vault, a Watcher running in a
thread (or `vault-memory watch` / `index` in a subprocess), and after each change we poll until
recall and doctor agree with the vault."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.conftest import write_notes
from vault_memory.config import Config
from vault_memory.doctor import diagnose
from vault_memory.index.calibration import FAKE, Calibration
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.memory import Memory
from vault_memory.vault.notefile import read_note
from vault_memory.vault.walk import IgnoreRules, iter_note_paths
from vault_memory.watch import BatchResult, Watcher

NOTES = {  # with node_ids, as notes the memory has written into before (moves keep them); dated, so a use counts
    "Inbox/alpha.md": "---\nnode_id: a1\ndate: 2026-01-01\n---\n# Alpha\n\nThe alpha note talks about lighthouses and "
    "foghorns.\n",
    "Inbox/beta.md": "---\ntags: [birds]\nnode_id: b2\ndate: 2026-01-01\n---\n# Beta\n\nPuffins nest on cliffs in the "
    "north.\n",
    "Projects/gamma.md": "---\nnode_id: c3\ndate: 2026-01-01\n---\n# Gamma\n\nA project plan for the greenhouse "
    "irrigation pump.\n",
    "Projects/deep/delta.md": "---\nnode_id: d4\ndate: 2026-01-01\n---\n# Delta\n\nNotes on sourdough hydration and "
    "rye flour.\n",
    "Projects/deep/epsilon.md": "---\nnode_id: e5\ndate: 2026-01-01\n---\n# Epsilon\n\nThe violin needs new strings "
    "before the concert.\n",
    "zeta.md": "---\nnode_id: f6\ndate: 2026-01-01\n---\n# Zeta\n\nCalibrating the telescope mount for "
    "astrophotography.\n",
}


@pytest.fixture()
def base() -> Iterator[Path]:
    """A scratch folder, on tmpfs when there is one: Chroma fsyncs every write, and this
    file is about event handling, not disk speed."""
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="vm-watch-", dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def wvault(base: Path) -> Path:
    vault = write_notes(base / "vault", NOTES)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian/workspace.json").write_text("{}", encoding="utf-8")
    return vault


def memory(vault: Path, index_dir: Path, calibration: Calibration | None = None, **overrides: object) -> Memory:
    cfg = Config(vault=vault, index_dir=index_dir, embedder="fake", **overrides)  # type: ignore[arg-type]
    return Memory(cfg, embedder=FakeEmbedder(), calibration=calibration)


@dataclass
class Running:
    watcher: Watcher
    mem: Memory
    reader: Memory
    vault: Path
    results: list[BatchResult]
    thread: threading.Thread

    def wait_until(self, check: Callable[[], object], timeout: float = 10.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            assert self.thread.is_alive(), "the watcher thread died"
            last = check()
            if last:
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what or check}: {last!r}")

    def converged(self) -> bool:
        """The index agrees with the vault: same paths and hashes, doctor finds no drift."""
        if self.watcher.pending():
            return False
        rules = IgnoreRules.for_vault(self.vault)
        on_disk = {}
        for rel in iter_note_paths(self.vault, rules):
            raw = (self.vault / rel).read_bytes()
            on_disk[rel] = hashlib.sha256(raw).hexdigest()
        failures = internals(self.reader).catalog.failures()
        indexed = {r.path: r.file_hash for r in internals(self.reader).catalog.notes()}
        expected = {p: h for p, h in on_disk.items() if p not in failures}
        return indexed == expected and diagnose(self.reader).ok

    def settle(self, timeout: float = 10.0) -> None:
        self.wait_until(self.converged, timeout, "index == vault")

    def paths_for(self, query: str, k: int = 3) -> list[str]:
        return [h.path for h in self.reader.recall(query, k=k, touch=False)]


@pytest.fixture()
def running(wvault: Path, base: Path) -> Iterator[Callable[..., Running]]:
    started: list[tuple[Watcher, Memory, Memory, threading.Thread, threading.Event]] = []

    def start(quiet: float = 60.0, **kw: object) -> Running:
        mem = memory(wvault, base / "index")
        results: list[BatchResult] = []
        watcher = Watcher(mem, debounce=0.05, quiet=quiet, on_batch=results.append, **kw)  # type: ignore[arg-type]
        watcher.start()
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        reader = memory(wvault, base / "index", read_only=True)
        started.append((watcher, mem, reader, thread, stop))
        run = Running(watcher, mem, reader, wvault, results, thread)
        run.settle()
        return run

    yield start
    for watcher, mem, reader, thread, stop in started:
        stop.set()
        watcher.stop()
        thread.join(timeout=10)
        watcher.close()
        mem.close()
        reader.close()


def atomic_save(path: Path, text: str) -> None:
    """What editors do: write a temp file beside the note, then rename it over the note."""
    tmp = path.parent / f".{path.name}.swp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# -- the basic file operations ------------------------------------------------------------------


def test_create_edit_atomic_save_rename_delete(running: Callable[..., Running]) -> None:
    r = running()
    vault = r.vault
    assert all((vault / rel).read_text(encoding="utf-8") == text for rel, text in NOTES.items()), (
        "the start-up reconcile writes nothing"
    )

    (vault / "Inbox/new idea.md").write_text("# Idea\n\nA kite powered by a dragonfly motor.\n", encoding="utf-8")
    r.settle()
    assert r.paths_for("dragonfly kite")[0] == "Inbox/new idea.md"

    p = vault / "Inbox/alpha.md"
    p.write_text(p.read_text(encoding="utf-8") + "\nAlso: a walrus named Gustav.\n", encoding="utf-8")
    r.settle()
    assert r.paths_for("walrus Gustav")[0] == "Inbox/alpha.md"

    q = vault / "zeta.md"
    node_id = read_note(vault, "zeta.md").meta["node_id"]
    atomic_save(q, q.read_text(encoding="utf-8").replace("telescope mount", "equatorial wedge"))
    r.settle()
    assert r.paths_for("equatorial wedge")[0] == "zeta.md"
    row = internals(r.reader).catalog.note_by_path("zeta.md")
    assert row is not None and row.node_id == node_id, "an atomic save is an edit, not delete + create"
    assert not list(vault.glob(".*.swp"))

    (vault / "Projects/gamma.md").rename(vault / "Projects/greenhouse.md")
    r.settle()
    assert r.paths_for("greenhouse irrigation pump")[0] == "Projects/greenhouse.md"

    (vault / "Inbox/beta.md").unlink()
    r.settle()
    assert "Inbox/beta.md" not in r.paths_for("puffins nest cliffs", k=10)
    assert internals(r.reader).catalog.note_by_path("Inbox/beta.md") is None


@pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")  # watchdog re-watching a re-created folder
def test_folder_moves_in_out_and_to_trash(running: Callable[..., Running], base: Path) -> None:
    r = running()
    vault = r.vault
    ids = {rel: read_note(vault, rel).meta["node_id"] for rel in ("Projects/deep/delta.md", "Projects/deep/epsilon.md")}
    (vault / "Projects/deep").rename(vault / "Archive")
    r.settle()
    assert r.paths_for("sourdough hydration")[0] == "Archive/delta.md"
    rows = {row.path: row.node_id for row in internals(r.reader).catalog.notes()}
    assert rows["Archive/delta.md"] == ids["Projects/deep/delta.md"], "a moved folder keeps its notes' ids"
    assert rows["Archive/epsilon.md"] == ids["Projects/deep/epsilon.md"]

    (vault / ".trash").mkdir()
    (vault / "Archive").rename(vault / ".trash/Archive")  # Obsidian's delete
    r.settle()
    assert not [p for p in r.paths_for("violin strings concert", k=10) if p.startswith(("Archive/", ".trash/"))]

    outside = base / "elsewhere"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub/kiwi.md").write_text("# Kiwi\n\nKiwi fruit and kiwi birds.\n", encoding="utf-8")
    outside.rename(vault / "Imported")  # a folder dropped in from outside the vault
    r.settle()
    assert r.paths_for("kiwi birds")[0] == "Imported/sub/kiwi.md"
    (vault / "Imported").rename(base / "gone")  # and moved out again
    r.settle()
    assert internals(r.reader).catalog.note_by_path("Imported/sub/kiwi.md") is None


@pytest.mark.slow
def test_burst_of_500_files_is_coalesced(running: Callable[..., Running]) -> None:
    r = running()
    before = r.watcher.batches
    folder = r.vault / "Burst"
    folder.mkdir()
    for i in range(500):
        (folder / f"b{i:03}.md").write_text(f"# Burst {i}\n\nItem number {i} of the synced drop.\n", encoding="utf-8")
    r.settle(timeout=45)
    assert len([row for row in internals(r.reader).catalog.notes() if row.path.startswith("Burst/")]) == 500
    assert r.watcher.batches - before < 60, "events are debounced and coalesced into a few batches"
    assert r.paths_for("Burst 417")[0] == "Burst/b417.md"


def test_binary_note_and_symlinks_out_of_the_vault(running: Callable[..., Running], base: Path) -> None:
    r = running()
    vault = r.vault
    (vault / "blob.md").write_bytes(bytes(range(256)) * 8)
    outside = base / "secret.md"
    outside.write_text("# Secret\n\nThe password is swordfish.\n", encoding="utf-8")
    secret_before = outside.read_bytes()
    os.symlink(outside, vault / "link-out.md")
    os.symlink(base, vault / "linked-folder")  # a folder link: not followed either
    r.settle()
    report = diagnose(r.reader)
    assert report.ok
    assert "binary" in report.unreadable["blob.md"] or "UTF-8" in report.unreadable["blob.md"]
    paths = {row.path for row in internals(r.reader).catalog.notes()}
    assert "blob.md" not in paths and "link-out.md" not in paths
    assert not any(p.startswith("linked-folder/") for p in paths)
    assert "link-out.md" not in r.paths_for("swordfish password", k=10)
    assert outside.read_bytes() == secret_before, "nothing outside the vault is ever written"
    # the binary file repaired: it becomes a note
    (vault / "blob.md").write_text("# Blob\n\nNow it is text about marmalade.\n", encoding="utf-8")
    r.settle()
    assert r.paths_for("marmalade")[0] == "blob.md"
    assert "blob.md" not in diagnose(r.reader).unreadable


# -- our own writes ---------------------------------------------------------------------------------


def snapshot_notes(vault: Path) -> dict[str, bytes]:
    return {str(p.relative_to(vault)): p.read_bytes() for p in sorted(vault.rglob("*.md")) if p.is_file()}


@pytest.mark.slow
def test_own_writes_converge_without_loops(running: Callable[..., Running], wvault: Path, base: Path) -> None:
    r = running()
    # Start-up assigned node_ids (writes), whose events came back as syncs: all must be quiet now.
    time.sleep(0.5)
    batches, snap = r.watcher.batches, snapshot_notes(wvault)
    embedded = internals(r.mem).embedder.texts_embedded  # type: ignore[attr-defined]
    time.sleep(1.0)
    assert r.watcher.batches == batches and snapshot_notes(wvault) == snap

    # A new note is indexed and left alone: no id, no write, no echo. (Dated: an undated note has no
    # age, so a recall would not rehearse it.)
    fresh = "---\ndate: 2026-06-01\n---\n# Fresh\n\nOrigami cranes.\n"
    (wvault / "fresh.md").write_text(fresh, encoding="utf-8")
    r.settle()
    time.sleep(0.5)
    settled = r.watcher.batches
    time.sleep(1.0)
    assert r.watcher.batches == settled
    assert (wvault / "fresh.md").read_text(encoding="utf-8") == fresh

    # Rehearsal by an agent's recall in another Memory: frontmatter-only writes (the first also gives
    # the note its id, never a time), never re-embedded, never a revision bump, and no loop.
    agent = memory(wvault, base / "index", calibration=replace(FAKE, strong=0.0))
    now = dt.datetime.now(dt.UTC)
    try:
        for day in (0, 70):  # each use a half-life or more after the last: each is written (rehearse_below)
            when = (now + dt.timedelta(days=day)).replace(microsecond=0)
            hits = agent.recall("origami cranes", k=1, now=when)
            assert hits and hits[0].path == "fresh.md"
            r.wait_until(
                lambda w=when: read_note(wvault, "fresh.md").meta.get("last_accessed") == w, what="rehearsal write"
            )
            r.settle()
    finally:
        agent.close()
    meta = read_note(wvault, "fresh.md").meta
    assert "revision" not in meta and meta["node_id"] and "stated" not in meta
    assert internals(r.mem).embedder.texts_embedded == embedded + 1  # type: ignore[attr-defined]  # only fresh.md's text
    meta_syncs = [b for b in r.results if b.report and b.report.counts.get("meta")]
    assert meta_syncs, "the second rehearsal write was applied as a META sync"
    seen = internals(r.reader).catalog.note_by_path("fresh.md").meta.get("last_accessed")  # type: ignore[union-attr]
    assert seen is not None and str(seen).startswith((now + dt.timedelta(days=70)).date().isoformat())


@pytest.mark.slow
def test_human_edit_is_recorded_as_rehearsal_after_quiet(running: Callable[..., Running], wvault: Path) -> None:
    r = running(quiet=0.6)
    p = wvault / "Inbox/alpha.md"
    # An editor saving repeatedly: nothing is written while it keeps typing.
    for i in range(6):
        p.write_text(p.read_text(encoding="utf-8") + f"\nline {i}\n", encoding="utf-8")
        time.sleep(0.2)
        assert "last_accessed" not in read_note(wvault, "Inbox/alpha.md").meta, "written while the editor was busy"
    r.wait_until(lambda: read_note(wvault, "Inbox/alpha.md").meta.get("last_accessed"), what="the use recorded")
    meta = read_note(wvault, "Inbox/alpha.md").meta
    assert "revision" not in meta  # issue 41: nothing reads it, so the watcher no longer writes it
    assert p.read_text(encoding="utf-8").endswith("line 5\n"), "the human's text is intact"
    r.settle()
    written = p.read_bytes()
    time.sleep(1.0)
    assert p.read_bytes() == written, "recording the edit does not loop"

    # A frontmatter-only edit by the human is not a content edit.
    q = wvault / "Inbox/beta.md"
    q.write_text(q.read_text(encoding="utf-8").replace("tags: [birds]", "tags: [birds, coast]"), encoding="utf-8")
    r.settle()
    time.sleep(1.0)
    assert "last_accessed" not in read_note(wvault, "Inbox/beta.md").meta

    # A bulk change (a git pull touching many notes at once) is not a human edit.
    for i in range(12):
        (wvault / f"Pulled/n{i}.md").parent.mkdir(exist_ok=True)
        (wvault / f"Pulled/n{i}.md").write_text(
            f"---\nnode_id: pulled{i}\ndate: 2026-01-01\n---\n# Pulled {i}\n\nfirst version\n", encoding="utf-8"
        )
    r.settle()
    for i in range(12):
        f = wvault / f"Pulled/n{i}.md"
        f.write_text(f.read_text(encoding="utf-8").replace("first", "second"), encoding="utf-8")
    r.settle()
    time.sleep(1.0)
    assert all("last_accessed" not in read_note(wvault, f"Pulled/n{i}.md").meta for i in range(12))


def git(vault: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main", *args],
        cwd=vault,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_what_git_or_a_sync_client_brings_is_never_recorded_and_no_time_moves_back(
    running: Callable[..., Running], wvault: Path
) -> None:
    """Issue 41, finding 6: a checkout or pull of 10 notes or fewer, and `git stash pop`, were recorded as
    a person's edits: `revision` and `last_accessed` written into each (the tree dirty after every small
    pull), and a `last_accessed` in the future moved back to today. What git or a sync client brings is
    indexed and never written into; a person's edit is still a use, never moved backwards."""
    alpha, beta, zeta = wvault / "Inbox/alpha.md", wvault / "Inbox/beta.md", wvault / "zeta.md"
    git(wvault, "init", "-q")
    git(wvault, "add", "-A")
    git(wvault, "commit", "-qm", "notes")
    git(wvault, "checkout", "-qb", "other")
    alpha.write_text(
        alpha.read_text(encoding="utf-8").replace("date:", "last_accessed: 2040-01-01T00:00:00+00:00\ndate:")
        + "\nFrom the other machine.\n",
        encoding="utf-8",
    )
    beta.write_text(beta.read_text(encoding="utf-8") + "\nAlso from there.\n", encoding="utf-8")
    git(wvault, "commit", "-qam", "elsewhere")
    git(wvault, "checkout", "-q", "main")
    r = running(quiet=0.3)

    def quiet_and_clean(what: str) -> None:
        r.settle()
        time.sleep(1.5)  # past the quiet period: what would be recorded is written by now
        r.settle()
        assert git(wvault, "status", "--porcelain") == "", what

    git(wvault, "checkout", "-q", "other")  # two notes change, as a small pull brings them
    quiet_and_clean("a checkout of two notes")
    assert read_note(wvault, "Inbox/alpha.md").meta["last_accessed"].year == 2040
    git(wvault, "checkout", "-q", "main")
    quiet_and_clean("a checkout back")
    git(wvault, "merge", "-q", "--ff-only", "other")  # as `git pull` merges what it fetched
    quiet_and_clean("a fast-forward merge")

    zeta.write_text(zeta.read_text(encoding="utf-8") + "\nA person's line.\n", encoding="utf-8")
    git(wvault, "stash", "-q")  # at once: before the watcher's quiet period ends
    quiet_and_clean("stash")
    git(wvault, "stash", "pop", "-q")
    r.settle()
    time.sleep(1.5)
    assert "A person's line." in zeta.read_text(encoding="utf-8")
    assert "last_accessed" not in read_note(wvault, "zeta.md").meta, "stash pop recorded as a use"
    git(wvault, "checkout", "-q", "--", "zeta.md")

    # A sync client renames its download onto the note: no use either.
    tmp = wvault / "Inbox" / ".syncthing.beta.md.tmp"
    tmp.write_text(beta.read_text(encoding="utf-8") + "\nSynced from the phone.\n", encoding="utf-8")
    os.replace(tmp, beta)
    r.settle()
    time.sleep(1.5)
    assert "last_accessed" not in read_note(wvault, "Inbox/beta.md").meta

    # A person's edits: a use, recorded once quiet; never backwards (2040 stays).
    time.sleep(2.5)  # git's state files older than its margin: this is a person now
    alpha.write_text(alpha.read_text(encoding="utf-8") + "\nTyped by hand.\n", encoding="utf-8")
    zeta.write_text(zeta.read_text(encoding="utf-8") + "\nTyped by hand too.\n", encoding="utf-8")
    r.wait_until(lambda: read_note(wvault, "zeta.md").meta.get("last_accessed"), what="the person's edit")
    r.settle()
    meta = read_note(wvault, "Inbox/alpha.md").meta
    assert meta["last_accessed"].year == 2040 and "revision" not in meta


def test_edit_record_loses_to_a_concurrent_edit(running: Callable[..., Running], wvault: Path) -> None:
    """Compare-and-swap: if the file changes between our read and our write, the human wins."""
    import vault_memory.watch as watch_mod

    r = running(quiet=0.3)
    real_write = watch_mod.write_note
    p = wvault / "zeta.md"

    def racing_write(vault: Path, rel: str, **kw: object):  # type: ignore[no-untyped-def]
        with p.open("a", encoding="utf-8") as f:
            f.write("\nTyped at the worst moment.\n")
        return real_write(vault, rel, **kw)  # type: ignore[arg-type]

    watch_mod.write_note = racing_write  # type: ignore[assignment]
    try:
        p.write_text(p.read_text(encoding="utf-8") + "\nFirst edit.\n", encoding="utf-8")
        r.wait_until(lambda: "worst moment" in p.read_text(encoding="utf-8"), what="the racing edit")
    finally:
        watch_mod.write_note = real_write
    # The racing edit is itself a body edit: it is recorded once the file is quiet again.
    r.wait_until(lambda: read_note(wvault, "zeta.md").meta.get("last_accessed"), what="the use, after the race")
    text = p.read_text(encoding="utf-8")
    assert "First edit." in text and text.count("Typed at the worst moment.") == 1


# -- processes: the CLI, two writers, signals, SIGKILL ------------------------------------------------


def cli(*args: str, base: Path, index: str = "index") -> list[str]:
    exe = Path(sys.executable).parent / "vault-memory"
    return [str(exe), "--vault", str(base / "vault"), "--index-dir", str(base / index), "--embedder", "fake", *args]


def wait_for_line(stream_path: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = stream_path.read_text(encoding="utf-8", errors="replace") if stream_path.exists() else ""
        if needle in text:
            return text
        if proc.poll() is not None:
            raise AssertionError(f"process exited ({proc.returncode}) before {needle!r}:\n{text}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {needle!r}")


def index_rows(index_dir: Path) -> set[tuple[str, str, str, str]]:
    db = sqlite3.connect(f"file:{index_dir / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        return set(db.execute("SELECT node_id, path, file_hash, body_hash FROM notes"))
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.posix
def test_watch_cli_lock_readers_and_sigterm(wvault: Path, base: Path) -> None:
    err = base / "watch.err"
    with err.open("wb") as fh:
        proc = subprocess.Popen(cli("watch", "--debounce", "0.05", base=base), stderr=fh, stdout=subprocess.DEVNULL)
    try:
        wait_for_line(err, "watching", proc)
        (wvault / "otter.md").write_text("# Otter\n\nSea otters hold hands while sleeping.\n", encoding="utf-8")
        wait_for_line(err, "1 new", proc)
        # In parallel (each process pays chromadb's import): a second writer, a reader, doctor.
        commands = {
            "index": ["index"],
            "recall": ["recall", "--no-touch", "--json", "sea otters sleeping"],
            "doctor": ["doctor"],
        }
        runs = {
            name: subprocess.Popen(cli(*args, base=base), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name, args in commands.items()
        }
        out: dict[str, tuple[int, str, str]] = {}
        for name, run in runs.items():
            stdout, stderr = run.communicate(timeout=60)
            out[name] = (run.returncode, stdout, stderr)
        # The second writer waits briefly, then names the holder.
        code, _, stderr = out["index"]
        assert code == 6 and f"process {proc.pid}" in stderr and "watch" in stderr, stderr
        # Readers work meanwhile, and see what the watcher applied.
        code, stdout, stderr = out["recall"]
        assert code == 0 and '"otter.md"' in stdout, stderr
        code, stdout, stderr = out["doctor"]
        assert code == 0, stdout + stderr
        assert f"being written by process {proc.pid}" in stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "stopped" in err.read_text(encoding="utf-8")
    # The lock is released: the next writer gets it at once, and finds nothing to do.
    with memory(wvault, base / "index") as after:
        report = after.index(wait=0)
    assert report.counts["new"] == report.counts["modified"] == report.counts["deleted"] == 0


KILL_SCRIPT = textwrap.dedent("""
    import sys, time
    import vault_memory.index.indexer as indexer
    real = indexer.Indexer._write_note
    def slow(self, *a, **kw):  # a bigger vault, in less test time: each note's write takes a while
        time.sleep(0.02)
        return real(self, *a, **kw)
    indexer.Indexer._write_note = slow
    from vault_memory.cli import run
    sys.argv = ["vault-memory", *sys.argv[1:]]
    run()
""")


N_KILL = 160


@pytest.mark.slow
@pytest.mark.posix
def test_sigkill_mid_index_then_restart_converges(wvault: Path, base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULT_MEMORY_EXACT_SEARCH_LIMIT", "0")  # keep a vector store: its crash safety is tested
    for i in range(N_KILL):
        folder = wvault / f"Bulk/{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        fm = f"---\ntitle: bulk {i}\n---\n" if i % 3 == 0 else ""
        (folder / f"note {i}.md").write_text(
            f"{fm}# Bulk {i}\n\nText {i} about item {i * 7 % 13}.\n\n## Part two\n\nMore words for chunk two of {i}.\n",
            encoding="utf-8",
        )
    original = snapshot_notes(wvault)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, *cli("index", base=base)[1:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            db = base / "index/catalog.sqlite"
            try:
                if db.exists() and len(index_rows(base / "index")) >= 20:
                    break
            except sqlite3.Error:
                pass
            assert proc.poll() is None, "the indexing process finished before it could be killed"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    after_kill = snapshot_notes(wvault)
    assert set(after_kill) == set(original), "no note created or lost"
    for rel, raw in after_kill.items():
        if raw != original[rel]:  # only a node_id line (and fences for a note without frontmatter) added
            new_lines = [ln for ln in raw.decode().splitlines() if not ln.startswith("node_id:")]
            old_lines = original[rel].decode().splitlines()
            assert [ln for ln in new_lines if ln != "---"] == [ln for ln in old_lines if ln != "---"], rel
    assert len(index_rows(base / "index")) < N_KILL + len(NOTES), "killed mid-run"

    # Restart: converges.
    with memory(wvault, base / "index", exact_search_limit=0) as restarted:
        report = restarted.index(wait=0)
    assert report.store_resynced > 0 or report.counts["new"] > 0
    final = snapshot_notes(wvault)
    for rel, raw in final.items():
        if raw != after_kill[rel]:  # the restart only adds ids the first run had not reached
            assert "node_id:" not in after_kill[rel].decode()
            assert [ln for ln in raw.decode().splitlines() if not ln.startswith("node_id:") and ln != "---"] == [
                ln for ln in after_kill[rel].decode().splitlines() if ln != "---"
            ], rel
    assert not [p for p in wvault.rglob(".vm-tmp-*")], "no temp files left behind"

    # ... to exactly what a clean rebuild produces.
    rebuilt = base / "rebuilt"
    with memory(wvault, rebuilt, exact_search_limit=0) as clean:
        clean.index(rebuild=True)
    assert snapshot_notes(wvault) == final, "a rebuild writes nothing to the vault"
    assert index_rows(base / "index") == index_rows(rebuilt)
    killed_mem = memory(wvault, base / "index", read_only=True, exact_search_limit=0)
    clean_mem = memory(wvault, rebuilt, read_only=True, exact_search_limit=0)
    try:
        assert internals(killed_mem).catalog.chunk_ids() == internals(clean_mem).catalog.chunk_ids()
        assert internals(killed_mem).store.ids() == internals(killed_mem).catalog.chunk_ids()  # type: ignore[union-attr]
        assert internals(clean_mem).store.ids() == internals(clean_mem).catalog.chunk_ids()  # type: ignore[union-attr]
        assert diagnose(killed_mem).ok
    finally:
        killed_mem.close()
        clean_mem.close()


def test_two_writers_in_one_process_tree(wvault: Path, base: Path) -> None:
    """Two watchers on one index: the second is refused with the holder's pid; the first keeps working."""
    from vault_memory.errors import LockHeldError

    first = memory(wvault, base / "index")
    second = memory(wvault, base / "index")
    w1 = Watcher(first, debounce=0.05)
    w2 = Watcher(second, debounce=0.05)
    try:
        w1.start()
        with pytest.raises(LockHeldError) as err:
            w2.start(wait=0.3)
        assert err.value.pid == os.getpid() and f"process {os.getpid()}" in str(err.value)
        assert w2._observer is None, "a refused watcher does not observe"
        (wvault / "kea.md").write_text("# Kea\n\nKea parrots are curious.\n", encoding="utf-8")
        stop = threading.Event()
        t = threading.Thread(target=w1.run, args=(stop,), daemon=True)
        t.start()
        reader = memory(wvault, base / "index", read_only=True)
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not internals(reader).catalog.note_by_path("kea.md"):
                time.sleep(0.05)
            assert internals(reader).catalog.note_by_path("kea.md") is not None
            report = diagnose(reader)  # the watcher may still be flushing the note's vectors: wait for it
            while time.monotonic() < deadline + 10 and not report.ok:
                time.sleep(0.1)
                report = diagnose(reader)
            assert report.ok, report.problems()
        finally:
            stop.set()
            t.join(timeout=10)
            reader.close()
    finally:
        w1.close()
        w2.close()
        first.close()
        second.close()


@pytest.mark.slow
@pytest.mark.posix
def test_sigkill_watcher_mid_burst_then_restart_converges(
    wvault: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_MEMORY_EXACT_SEARCH_LIMIT", "0")  # keep a vector store: its crash safety is tested
    err = base / "watch.err"
    with err.open("wb") as fh:
        proc = subprocess.Popen(cli("watch", "--debounce", "0.05", base=base), stderr=fh, stdout=subprocess.DEVNULL)
    try:
        wait_for_line(err, "watching", proc)
        for i in range(150):
            (wvault / f"drop {i}.md").write_text(f"# Drop {i}\n\nDropped file {i}.\n", encoding="utf-8")
            if i == 20:
                wait_for_line(err, "new", proc)  # a batch is being applied while files keep arriving
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with memory(wvault, base / "index", exact_search_limit=0) as mem:
        mem.index(wait=0)
        report = diagnose(mem)
        assert report.ok, report.problems()
        assert len(internals(mem).catalog.notes()) == len(NOTES) + 150
        assert internals(mem).store.ids() == internals(mem).catalog.chunk_ids()  # type: ignore[union-attr]


# -- the vault folder goes away and comes back (issue 22 item 6) -----------------------------------


def test_watch_rearms_when_the_vault_folder_is_moved_away_and_back(
    running: Callable[..., Running], caplog: pytest.LogCaptureFixture
) -> None:
    """The vault folder moved away (a sync client, a rename, an unmount) and back: a note edited meanwhile,
    and one edited after, are both picked up, without a restart, and the watcher says so."""
    r = running()
    vault = r.vault
    away = vault.with_name(vault.name + ".away")
    vault.rename(away)
    time.sleep(1.5)  # the watcher notices it is gone
    p = away / "Inbox/alpha.md"
    p.write_text(p.read_text(encoding="utf-8") + "\nEdited while away: a narwhal named Olga.\n", encoding="utf-8")
    away.rename(vault)
    r.settle(15)
    assert r.paths_for("narwhal Olga")[0] == "Inbox/alpha.md"
    q = vault / "zeta.md"
    q.write_text(q.read_text(encoding="utf-8") + "\nEdited after: a pangolin named Rui.\n", encoding="utf-8")
    r.settle(15)
    assert r.paths_for("pangolin Rui")[0] == "zeta.md"
    said = " ".join(rec.getMessage() for rec in caplog.records)
    assert "is gone" in said and "watching it again" in said


def test_watch_rearms_when_the_vault_folder_is_replaced(running: Callable[..., Running]) -> None:
    """A new folder at the vault's path (restored from a backup, a sync client's replace): watched anew."""
    r = running()
    vault = r.vault
    copy = vault.with_name(vault.name + ".new")
    shutil.copytree(vault, copy, symlinks=True)
    (copy / "Inbox/replaced.md").write_text("# Replaced\n\nA quokka called Mia lives here.\n", encoding="utf-8")
    old = vault.with_name(vault.name + ".old")
    vault.rename(old)
    copy.rename(vault)
    r.settle(15)
    assert r.paths_for("quokka Mia")[0] == "Inbox/replaced.md"
    (vault / "Inbox/after.md").write_text("# After\n\nA capybara called Leo.\n", encoding="utf-8")
    r.settle(15)
    assert r.paths_for("capybara Leo")[0] == "Inbox/after.md"
