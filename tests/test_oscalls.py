"""The system calls the write path leans on, simulated where this machine has not got them (issue 26).

macOS's renamex_np, fcopyfile and Windows' ReplaceFileW and share-mode probe cannot run here. Each
wrapper in oscalls.py is checked against a fake library (it must pass the right flags and turn a
failure into an error code), and atomic.py's guard is run with a Kernel holding stand-ins that keep
the real calls' contracts on Linux: an exchange without a lease (macOS), ReplaceFileW built from a
hard link and a rename plus a lease-based "open for writing?" probe (Windows).
"""

from __future__ import annotations

import ctypes
import errno
import os
import time
from pathlib import Path
from typing import Any

import pytest

from vault_memory import oscalls
from vault_memory.errors import ConcurrentEditError
from vault_memory.vault import atomic
from vault_memory.vault.notefile import read_note, write_note

pytestmark = pytest.mark.save_race

HUMAN = "---\ntitle: Groceries\nmykey: human value\n---\n# Groceries\n\nBuy coffee beans and oat milk.\n"


def old_note(tmp_path: Path) -> Path:
    path = tmp_path / "g.md"
    path.write_text(HUMAN, encoding="utf-8")
    past = time.time() - 60
    os.utime(path, (past, past))
    return path


class FakeFn:
    """A C function as ctypes shows it: argtypes and restype can be set; calls are recorded."""

    def __init__(self, result: Any, err: int = 0) -> None:
        self.result, self.err, self.calls = result, err, []  # type: ignore[var-annotated]

    def __call__(self, *args: Any) -> Any:
        self.calls.append(args)
        if self.err:
            ctypes.set_errno(self.err)
        return self.result


def test_detect_finds_nothing_on_an_unknown_system() -> None:
    assert oscalls.detect("sunos5") is oscalls.PORTABLE
    assert oscalls.PORTABLE.exchange is None and not oscalls.PORTABLE.lease


def test_detect_on_this_linux_finds_its_calls() -> None:
    here = oscalls.detect("linux")
    assert here.name == "linux" and here.replace_file is None and here.open_for_writing is None


def test_renamex_np_is_called_with_rename_swap() -> None:
    libc = type("libc", (), {})()
    libc.renamex_np = FakeFn(0)
    exchange = oscalls.darwin_exchange(libc)
    assert exchange is not None and exchange(b"/v/a", b"/v/b") == 0
    assert libc.renamex_np.calls == [(b"/v/a", b"/v/b", 0x2)]
    libc.renamex_np = FakeFn(-1, errno.ENOTSUP)  # a file system without swap (e.g. an SMB share)
    exchange = oscalls.darwin_exchange(libc)
    assert exchange is not None and exchange(b"/v/a", b"/v/b") == errno.ENOTSUP
    assert errno.ENOTSUP in oscalls.NO_EXCHANGE  # ...which atomic falls back from, not fails on


def test_no_renamex_np_means_no_exchange() -> None:
    assert oscalls.darwin_exchange(type("libc", (), {})()) is None
    assert oscalls.darwin_exchange(None) is None


def test_fcopyfile_copies_acls_and_xattrs() -> None:
    libc = type("libc", (), {})()
    libc.fcopyfile = FakeFn(0)
    copy = oscalls.darwin_copy_metadata(libc)
    assert copy is not None and copy(3, 4) == 0
    assert libc.fcopyfile.calls == [(3, 4, None, 1 | 4)]  # COPYFILE_ACL | COPYFILE_XATTR


def test_windows_wrappers_pass_the_flags_and_read_the_share_violation() -> None:
    k32 = type("kernel32", (), {})()
    k32.ReplaceFileW = FakeFn(1)
    k32.CreateFileW = FakeFn(None)  # refused
    k32.CloseHandle = FakeFn(1)
    replace_file, probe = oscalls.windows_calls(k32, get_error=lambda: oscalls.ERROR_SHARING_VIOLATION)
    assert replace_file is not None and probe is not None
    assert replace_file("C:\\v\\g.md", "C:\\v\\t", "C:\\v\\b") == 0
    assert k32.ReplaceFileW.calls == [("C:\\v\\g.md", "C:\\v\\t", "C:\\v\\b", 0x2, None, None)]
    assert probe("C:\\v\\g.md") is True  # another process has it open for writing
    (args,) = k32.CreateFileW.calls
    assert args[1] == 0x80000000 and args[2] == 0x1 | 0x4  # read, sharing read and delete only: not write
    k32.CreateFileW = FakeFn(1234)  # a handle: nobody writes it
    _, probe = oscalls.windows_calls(k32, get_error=lambda: 0)
    assert probe is not None and probe("C:\\v\\g.md") is False and k32.CloseHandle.calls == [(1234,)]
    k32.ReplaceFileW = FakeFn(0)
    replace_file, _ = oscalls.windows_calls(k32, get_error=lambda: oscalls.ERROR_UNABLE_TO_REMOVE_REPLACED)
    assert replace_file is not None and replace_file("a", "b", None) == oscalls.ERROR_UNABLE_TO_REMOVE_REPLACED


# -- the guard with each platform's calls, simulated -------------------------------------------


def _replace_file_standin(events: list[str]) -> oscalls.ReplaceFile:
    """ReplaceFileW's contract on Linux: `replacement` takes `replaced`'s name, the old file keeps `backup`."""

    def replace_file(replaced: str, replacement: str, backup: str | None) -> int:
        events.append("ReplaceFileW")
        if backup:
            os.link(replaced, backup)
        os.replace(replacement, replaced)
        return 0

    return replace_file


def _writer_probe_standin(path: str) -> bool:
    """ "Does another process hold it open for writing?", answered on Linux by a read lease (the
    question Windows answers with share modes)."""
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return exc.errno in (errno.EAGAIN, errno.EBUSY)
    else:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return False
    finally:
        os.close(fd)


def windows(events: list[str]) -> oscalls.Kernel:
    return oscalls.Kernel(
        "windows (simulated)", replace_file=_replace_file_standin(events), open_for_writing=_writer_probe_standin
    )


def _write_like_windows(tmp_path: Path, data: bytes) -> None:
    """write_note's last step as on Windows: the descriptor is closed before the swap (fd -1)."""
    path = tmp_path / "g.md"
    raw = path.read_bytes()
    atomic.guarded_replace(path, "g.md", -1, raw, os.stat(path), data, 0o644)


@pytest.mark.skipif(not atomic.KERNEL.lease, reason="the Windows probe's stand-in uses Linux leases")
def test_windows_an_editor_holding_the_note_open_for_writing_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    monkeypatch.setattr(atomic, "KERNEL", windows(events))
    path = old_note(tmp_path)
    with subprocess_holding_open(path):
        with pytest.raises(ConcurrentEditError, match="open for writing"):
            _write_like_windows(tmp_path, b"ours\n")
    assert path.read_text(encoding="utf-8") == HUMAN and events == []


def subprocess_holding_open(path: Path) -> Any:
    """A context manager: another process holds `path` open for writing (an editor mid-save)."""
    import contextlib
    import subprocess
    import sys

    @contextlib.contextmanager
    def held() -> Any:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys,time; f=open(sys.argv[1],'r+b'); print('open', flush=True); time.sleep(30)",
            ]
            + [str(path)],
            stdout=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == b"open"
            yield
        finally:
            proc.kill()
            proc.wait()

    return held()


def test_windows_replace_keeps_the_old_file_in_hand_and_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    monkeypatch.setattr(
        atomic, "KERNEL", oscalls.Kernel("windows (simulated)", replace_file=_replace_file_standin(events))
    )
    path = old_note(tmp_path)
    _write_like_windows(tmp_path, HUMAN.replace("Groceries\n\n", "Groceries\n\nours\n").encode())
    assert events == ["ReplaceFileW"] and "ours" in path.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]  # the backup name is gone


def test_windows_a_save_by_rename_before_replacefile_goes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step 5 with ReplaceFileW: what it displaced (under the backup name) is not what we checked, so it is
    put back; our edit is dropped, the editor's save stands."""
    events: list[str] = []
    real = _replace_file_standin(events)
    path = old_note(tmp_path)
    saved = HUMAN.replace("oat milk.", "oat milk, saved by rename.").encode()

    def rename_save_first(replaced: str, replacement: str, backup: str | None) -> int:
        if not events:
            (tmp_path / "editor.tmp").write_bytes(saved)
            os.replace(tmp_path / "editor.tmp", path)
        return real(replaced, replacement, backup)

    monkeypatch.setattr(atomic, "KERNEL", oscalls.Kernel("windows (simulated)", replace_file=rename_save_first))
    with pytest.raises(ConcurrentEditError, match="a save landed"):
        _write_like_windows(tmp_path, b"ours\n")
    assert path.read_bytes() == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]


def test_macos_exchange_without_a_lease_puts_an_in_place_save_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS: an exchange (renamex_np) but no lease. An editor that opened the old file as we swapped
    finds it back at the path; its save lands in place."""
    if not atomic.has_exchange():
        pytest.skip("the stand-in for renamex_np is Linux's renameat2, hidden here")
    real = atomic.KERNEL.exchange
    assert real is not None
    path = old_note(tmp_path)
    note = read_note(tmp_path, "g.md")
    edited = HUMAN.replace("oat milk.", "oat milk and bread.").encode()
    handles: list[Any] = []

    def renamex_np(a: bytes, b: bytes) -> int:
        if not handles:
            fh = open(path, "r+b")  # noqa: SIM115 - the editor's, closed below
            fh.truncate(0)
            handles.append(fh)
        return real(a, b)

    monkeypatch.setattr(atomic, "KERNEL", oscalls.Kernel("macos (simulated)", exchange=renamex_np))
    with pytest.raises(ConcurrentEditError, match="back in place"):
        write_note(tmp_path, "g.md", expected_hash=note.file_hash, set_fields={"access_count": 1})
    handles[0].write(edited)
    handles[0].close()
    assert path.read_bytes() == edited
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.md"]
