"""Never lose a human's byte: the write path against editors that save in place (issue 12).

The guard is described in vault_memory/vault/atomic.py. Each step gets a deterministic test here
(a half-saved note, a save landing between our check and our swap, a save after the swap),
and a small real race runs editors and recall processes against each other.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from vault_memory import oscalls
from vault_memory.errors import ConcurrentEditError, NoteParseError
from vault_memory.hashing import sha256_hex
from vault_memory.vault import atomic
from vault_memory.vault.notefile import read_note, write_note

pytestmark = pytest.mark.save_race

HUMAN = "---\ntitle: Groceries\nmykey: human value\n---\n# Groceries\n\nBuy coffee beans and oat milk.\n"


def old_note(tmp_path: Path, text: str = HUMAN) -> Path:
    path = tmp_path / "g.md"
    path.write_text(text, encoding="utf-8")
    past = time.time() - 60
    os.utime(path, (past, past))
    return path


def test_a_half_saved_note_is_never_written_over(tmp_path: Path) -> None:
    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    with open(path, "wb") as f:  # an editor truncated and wrote half: the mtime is fresh
        f.write(HUMAN.encode()[: len(HUMAN) // 2])
    partial = path.read_bytes()
    with pytest.raises(ConcurrentEditError):  # our read was of the whole note: the hash differs
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    # Even a caller that read the half (its hash matches) is refused: the file is not quiet.
    with pytest.raises(ConcurrentEditError, match="being written right now"):
        write_note(tmp_path, "g.md", expected_hash=sha256_hex(partial), set_fields={"access_count": 1})
    assert path.read_bytes() == partial


@pytest.mark.skipif(not atomic.KERNEL.lease, reason="file leases are Linux-only (and hidden in the portable lane)")
def test_a_save_paused_longer_than_the_quiet_period_is_still_refused(tmp_path: Path) -> None:
    """An editor that truncated, wrote half and then stalled (a loaded machine) for longer than
    QUIET_SECONDS: the half looks quiet, but the editor still holds the file open for writing."""
    path = old_note(tmp_path)
    editor = open(path, "r+b")  # noqa: SIM115 - held open across the write, as a stalled save does
    try:
        editor.truncate(0)
        editor.write(HUMAN.encode()[: len(HUMAN) // 2])
        editor.flush()
        past = time.time() - 60
        os.utime(path, (past, past))  # quiet for a minute: the quiet period alone would let it through
        half = path.read_bytes()
        with pytest.raises(ConcurrentEditError, match="open for writing"):
            write_note(tmp_path, "g.md", expected_hash=sha256_hex(half), set_fields={"access_count": 1})
        assert path.read_bytes() == half
    finally:
        editor.close()


def test_a_busy_note_waits_when_asked_then_writes(tmp_path: Path) -> None:
    path = old_note(tmp_path)
    path.write_text(HUMAN, encoding="utf-8")  # just saved (whole)
    note = read_note(tmp_path, "g.md")
    started = time.monotonic()
    new = write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"pinned": True}, quiet=0.5, wait=3.0)
    assert 0.3 <= time.monotonic() - started < 3.0
    assert new.meta["pinned"] is True and "mykey: human value" in path.read_text(encoding="utf-8")


def test_our_own_fresh_write_does_not_wait(tmp_path: Path) -> None:
    old_note(tmp_path)
    first = write_note(
        tmp_path, "g.md", expected_hash=read_note(tmp_path, "g.md").file_hash, set_fields={"access_count": 1}, quiet=5.0
    )
    started = time.monotonic()
    write_note(tmp_path, "g.md", expected_hash=first.file_hash, set_fields={"access_count": 2}, quiet=5.0)
    assert time.monotonic() - started < 1.0  # the bytes are ours: no save of anyone else is in progress


EXCHANGE = [
    pytest.param(True, marks=pytest.mark.skipif(not atomic.has_exchange(), reason="no renameat2 here"), id="exchange"),
    pytest.param(False, id="replace"),
]


def hook_swap(monkeypatch: pytest.MonkeyPatch, exchange: bool, hook: Callable[..., object]) -> None:
    """Route the swap through `hook(real, src, dst)`: RENAME_EXCHANGE where the system has it, else the
    portable steps (os.replace, the old file kept by a hard link).

    The editor here is this very process, whose open for writing would wait out our own read lease (the
    kernel's lease-break-time, 45 s): the lease is off, as where the system has none.
    """
    if exchange:
        real_exchange = atomic.KERNEL.exchange
        assert real_exchange is not None
        kernel = oscalls.Kernel("exchange, no lease", exchange=lambda a, b: hook(real_exchange, a, b))  # type: ignore[arg-type,return-value]
        monkeypatch.setattr(atomic, "KERNEL", kernel)
    else:
        monkeypatch.setattr(atomic, "KERNEL", oscalls.PORTABLE)
        real_replace = os.replace
        monkeypatch.setattr(atomic.os, "replace", lambda a, b: hook(real_replace, a, b))


@pytest.mark.parametrize("exchange", EXCHANGE)
def test_a_save_landing_between_check_and_swap_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    edited = HUMAN.replace("oat milk.", "oat milk and bread.").encode()
    done = threading.Event()
    started = threading.Event()

    def editor_then_replace(real: Callable[..., object], src: Path | bytes, dst: Path | bytes) -> object:
        if Path(os.fsdecode(dst)) == path and not started.is_set():
            started.set()
            fh = open(path, "r+b")  # the editor opens the (old) file and truncates it...
            fh.truncate(0)
            out = real(src, dst)  # ...our swap happens...

            def finish() -> None:  # ...and the editor's write lands in the replaced inode
                time.sleep(0.05)
                fh.write(edited)
                fh.close()
                done.set()

            threading.Thread(target=finish).start()
            return out
        return real(src, dst)

    hook_swap(monkeypatch, exchange, editor_then_replace)
    with pytest.raises(ConcurrentEditError, match="back in place"):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    assert done.wait(5)
    assert path.read_bytes() == edited  # the human's whole save, ours dropped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]  # no temp file, no second name, no copy


@pytest.mark.parametrize("exchange", EXCHANGE)
def test_a_rescued_save_is_kept_beside_when_the_path_changed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    real_replace = os.replace
    calls = {"n": 0}

    def racing(real: Callable[..., object], src: Path, dst: Path) -> object:
        calls["n"] += 1
        if calls["n"] == 1:
            with open(path, "r+b") as fh:  # an in-place save into the old inode...
                fh.truncate(0)
                fh.write(b"in place save\n")
            out = real(src, dst)
            (tmp_path / "other.tmp").write_bytes(b"a third save, by rename\n")
            real_replace(tmp_path / "other.tmp", path)  # ...and another save after ours
            return out
        return real(src, dst)

    hook_swap(monkeypatch, exchange, racing)
    with pytest.raises(ConcurrentEditError, match="conflict"):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    copies = [p for p in tmp_path.iterdir() if "(conflict " in p.name]
    assert len(copies) == 1 and copies[0].read_bytes() == b"in place save\n"
    assert path.read_bytes() == b"a third save, by rename\n"


@pytest.mark.skipif(not atomic.has_exchange(), reason="RENAME_EXCHANGE (Linux renameat2) is not available here")
def test_a_save_by_rename_between_check_and_swap_stands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last window of the guard: an editor renames its save over the note after our check, before our
    swap. The swap exchanges instead of replacing, sees that what it displaced is not what it checked, and
    puts the editor's save back; our edit is dropped, nothing is kept beside (nothing else was saved)."""
    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    saved = HUMAN.replace("oat milk.", "oat milk, saved by rename.").encode()
    real_replace = os.replace
    calls = {"n": 0}

    def rename_save_first(real: Callable[..., object], a: bytes, b: bytes) -> object:
        calls["n"] += 1
        if calls["n"] == 1:
            (tmp_path / "editor.tmp").write_bytes(saved)
            real_replace(tmp_path / "editor.tmp", path)
        return real(a, b)

    hook_swap(monkeypatch, True, rename_save_first)
    with pytest.raises(ConcurrentEditError, match="a save landed"):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    assert path.read_bytes() == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]  # no temp file, no conflict copy


@pytest.mark.slow  # spawns a process or takes over 2 s
@pytest.mark.skipif(not atomic.KERNEL.lease, reason="file leases are Linux-only (and hidden in the portable lane)")
@pytest.mark.parametrize("exchange", EXCHANGE)
def test_an_editor_opening_the_note_as_we_swap_keeps_its_whole_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    """An editor (another process) opens the note while we swap: it has the old file and waits on our
    lease. It writes half, pauses longer than the rescue's quiet period, then writes the rest.
    With RENAME_EXCHANGE the old file goes back to the path before we let go (the save lands in
    place); without it the rescue waits until the editor closes the file, not only until it is
    quiet, and puts the whole save back, not the half it saw first."""
    import subprocess
    import sys

    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    edited = HUMAN.replace("oat milk.", "oat milk, and this save paused halfway.").encode()
    editor = (
        "import sys, time\n"
        "data = sys.stdin.buffer.read()\n"
        "with open(sys.argv[1], 'r+b') as f:\n"  # blocks on our lease until we let go
        "    f.truncate(0); f.write(data[:40]); f.flush(); time.sleep(0.8); f.write(data[40:])\n"
    )
    real_exchange, real_replace = atomic.KERNEL.exchange, os.replace
    procs: list[subprocess.Popen[bytes]] = []

    def editor_opens_first(real: Callable[..., object], a: Path | bytes, b: Path | bytes) -> object:
        if not procs:
            proc = subprocess.Popen([sys.executable, "-c", editor, str(path)], stdin=subprocess.PIPE)
            assert proc.stdin is not None
            proc.stdin.write(edited)
            proc.stdin.close()
            procs.append(proc)
            time.sleep(1.5)  # the editor has looked the path up (the old file) and waits on our lease
        return real(a, b)

    if exchange:
        assert real_exchange is not None
        kernel = replace(atomic.KERNEL, exchange=lambda a, b: editor_opens_first(real_exchange, a, b))
        monkeypatch.setattr(atomic, "KERNEL", kernel)
    else:
        monkeypatch.setattr(atomic, "KERNEL", replace(atomic.KERNEL, exchange=None))
        monkeypatch.setattr(atomic.os, "replace", lambda a, b: editor_opens_first(real_replace, a, b))
    with pytest.raises(ConcurrentEditError, match="an editor opened it" if exchange else "back in place"):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    assert procs[0].wait(10) == 0
    assert path.read_bytes() == edited


def _editor_in_the_window(path: Path, edited: bytes, pause: float, seen: dict[str, bytes]) -> Callable[..., object]:
    """A hook for the swap: an editor opens the old file (truncating it) just before the swap, and
    after it, writes half, pauses, writes the rest, closes, and at once reads the note again (as
    the next save of save_race's editor does): what it reads must be its own save."""

    def hook(real: Callable[..., object], src: Path | bytes, dst: Path | bytes) -> object:
        if Path(os.fsdecode(dst)) != path or "thread" in seen:
            return real(src, dst)
        fh = open(path, "r+b")  # noqa: SIM115 - the editor's own handle, closed by its thread
        fh.truncate(0)
        out = real(src, dst)

        def finish() -> None:
            fh.write(edited[:20])
            fh.flush()
            time.sleep(pause)
            fh.write(edited[20:])
            fh.close()
            seen["next read"] = path.read_bytes()

        thread = threading.Thread(target=finish)
        seen["thread"] = b""
        thread.start()
        hook.thread = thread  # type: ignore[attr-defined]
        return out

    return hook


@pytest.mark.parametrize("exchange", EXCHANGE)
def test_a_slow_save_opened_as_we_swap_is_never_displaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    """Issue 26: with the lease and renameat2 hidden (as on macOS), `save_race` slow + watch displaced
    1 save in 300: an editor opened the old file in the microseconds before our swap and paused
    halfway longer than the rescue's quiet period; the rescue put the half back, the rest went to
    the orphan, and the editor's next read found its save gone. Now the old file itself goes back
    to the path at once (the second name: a hard link where there is no exchange), so the save
    lands in place and the editor's next read finds it whole; no conflict copy, no leftover."""
    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    edited = HUMAN.replace("oat milk.", "oat milk, saved slowly in place.").encode()
    seen: dict[str, bytes] = {}
    hook = _editor_in_the_window(path, edited, 0.5, seen)
    hook_swap(monkeypatch, exchange, hook)
    with pytest.raises(ConcurrentEditError, match="back in place"):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    hook.thread.join(5)  # type: ignore[attr-defined]
    assert seen["next read"] == edited  # the editor's next save starts from its own, whole
    assert path.read_bytes() == edited
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]  # no conflict copy, no second name


def test_a_portable_write_leaves_one_name_and_no_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The portable path's hard link (the old file's second name) is gone after a write, and the note
    is a single-link file again, so the next write is not refused as hard-linked."""
    monkeypatch.setattr(atomic, "KERNEL", oscalls.PORTABLE)
    path = old_note(tmp_path)
    first = write_note(
        tmp_path, "g.md", expected_hash=read_note(tmp_path, "g.md").file_hash, set_fields={"pinned": True}
    )
    assert os.stat(path).st_nlink == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]
    write_note(tmp_path, "g.md", expected_hash=first.file_hash, set_fields={"access_count": 2})
    assert "access_count: 2" in path.read_text(encoding="utf-8")


def test_a_rename_save_before_the_portable_link_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Portable step 5: a save by rename that lands after our read, before the hard link is taken, makes
    the link name the editor's file, not the one we checked: we back off, the save stands."""
    monkeypatch.setattr(atomic, "KERNEL", oscalls.PORTABLE)
    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    saved = HUMAN.replace("oat milk.", "oat milk, saved by rename.").encode()
    real_link = os.link

    def link_after_a_rename_save(src: Path, dst: Path) -> None:
        if Path(src) == path and str(dst).endswith(".old"):
            (tmp_path / "editor.tmp").write_bytes(saved)
            os.utime(tmp_path / "editor.tmp", ns=(os.stat(path).st_mtime_ns,) * 2)  # same mtime, same size
            os.replace(tmp_path / "editor.tmp", path)
        real_link(src, dst)

    monkeypatch.setattr(atomic.os, "link", link_after_a_rename_save)
    with pytest.raises(ConcurrentEditError):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    assert path.read_bytes() == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]


def test_portable_bookkeeping_waits_longer_for_a_note_under_editing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an exchange a save by rename in the microseconds before os.replace cannot be seen
    (save_race --portable lost 1 of 600 rename saves that way), so a rehearsal leaves a note saved a
    moment ago alone for PORTABLE_QUIET_FACTOR quiet periods; a write someone waits for does not."""
    path = old_note(tmp_path)
    recent = time.time() - 1.5 * atomic.QUIET_SECONDS  # quiet, but not for three quiet periods
    os.utime(path, (recent, recent))
    note = read_note(tmp_path, "g.md")
    monkeypatch.setattr(atomic, "KERNEL", oscalls.PORTABLE)
    with pytest.raises(ConcurrentEditError, match="being written right now"):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    assert path.read_text(encoding="utf-8") == HUMAN
    monkeypatch.setattr(atomic, "KERNEL", oscalls.Kernel("exchange", exchange=lambda a, b: 0))
    assert atomic.bookkeeping_quiet(1.0) == 1.0
    monkeypatch.setattr(atomic, "KERNEL", oscalls.PORTABLE)
    done = write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"pinned": True}, wait=3.0)
    assert done.meta["pinned"] is True  # a person's write waits the ordinary quiet period only


def test_unterminated_frontmatter_is_reported_and_never_rewritten(tmp_path: Path) -> None:
    path = old_note(tmp_path, "---\ntitle: Draft\nmykey: v\n\n# Heading\nbody\n")
    with pytest.raises(NoteParseError, match="never closed"):
        read_note(tmp_path, "g.md")
    with pytest.raises(NoteParseError):
        write_note(tmp_path, "g.md", expected_hash=sha256_hex(path.read_bytes()), set_fields={"pinned": True})
    assert path.read_text(encoding="utf-8").startswith("---\ntitle: Draft\n")


@pytest.mark.slow
@pytest.mark.parametrize(("slow", "watch"), [(False, False), (True, True)], ids=["fast-saves", "slow-saves+watch"])
def test_editor_race_loses_nothing(tmp_path: Path, slow: bool, watch: bool) -> None:
    from bench.studies.save_race import run_race

    result = run_race(tmp_path, edits=40, recallers=2, slow=slow, watch=watch, seed=11)
    assert result["saves"] == 40
    assert result["lost"] == 0 and result["human_changed"] == 0, result
    assert result["final_has_human_bytes"] and result["temp_files_left"] == 0
    assert result["recalls"] > 40  # the recallers really raced the editor
    assert result["rehearsals_written"] > 0  # ... and really wrote into the note meanwhile
