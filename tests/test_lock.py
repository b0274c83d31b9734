"""The writer lock: one holder across processes, the holder's pid readable, a dead holder's lock recovered,
and the Windows (msvcrt) path, exercised here through a stand-in when fcntl is hidden."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import HAS_FCNTL, REPO
from vault_memory.errors import LockHeldError
from vault_memory.index.lock import LOCK_NAME, WriterLock


def test_one_holder_and_its_pid(tmp_path: Path) -> None:
    first, second = WriterLock(tmp_path), WriterLock(tmp_path)
    assert first.try_acquire() and first.held
    assert first.holder_pid() == os.getpid()
    assert not second.try_acquire()  # the lock is per open file, so even this process is refused
    probe = second.probe()
    assert probe.held and probe.pid == os.getpid() and probe.stale_pid is None
    with pytest.raises(LockHeldError, match=f"process {os.getpid()}") as info:
        second.acquire(wait=0.2)
    assert info.value.pid == os.getpid()
    first.release()
    assert not first.held and (tmp_path / LOCK_NAME).read_text() == ""  # release clears the pid
    assert second.probe().held is False and second.probe().pid is None
    with second:
        assert second.held
    assert not second.held


def test_probe_reports_the_pid_a_dead_holder_left(tmp_path: Path) -> None:
    assert WriterLock(tmp_path).probe().held is False  # no file at all
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_NAME).write_text(dead.stdout.strip())
    probe = WriterLock(tmp_path).probe()
    assert not probe.held and probe.stale_pid == int(dead.stdout)
    assert (tmp_path / LOCK_NAME).read_text() == dead.stdout.strip()  # probing writes nothing


HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from vault_memory.index.lock import BACKEND, WriterLock
    lock = WriterLock(Path(sys.argv[1]))
    assert lock.try_acquire()
    print(BACKEND.name, flush=True)
    sys.stdin.read()  # hold until the test closes our stdin (or kills us)
""")


@pytest.mark.slow
def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip()
        lock = WriterLock(tmp_path)
        assert not lock.try_acquire()
        assert lock.probe().held and lock.holder_pid() == holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert lock.try_acquire()  # the OS let go of the dead holder's lock; nobody cleaned anything up
    lock.release()


# -- where fcntl is absent ------------------------------------------------------------------------

# A stand-in for Windows' msvcrt.locking: Linux open-file-description locks, which like msvcrt lock a byte
# range from the current position and belong to the open file (handle), not to the process, so two opens
# in one process exclude each other and closing another descriptor of the file keeps the lock.
FAKE_MSVCRT = textwrap.dedent("""
    import errno, fcntl as _fcntl, os, struct, sys, types
    sys.modules["fcntl"] = None  # what Windows has: no fcntl
    msvcrt = types.ModuleType("msvcrt")
    msvcrt.LK_NBLCK, msvcrt.LK_UNLCK = 2, 0
    def locking(fd, mode, nbytes):
        kind = _fcntl.F_UNLCK if mode == msvcrt.LK_UNLCK else _fcntl.F_WRLCK
        flock = struct.pack("hhqqi", kind, os.SEEK_SET, os.lseek(fd, 0, os.SEEK_CUR), nbytes, 0)
        try:
            _fcntl.fcntl(fd, _fcntl.F_OFD_SETLK, flock)
        except OSError as exc:
            raise PermissionError(errno.EACCES, "Permission denied") from exc
    msvcrt.locking = locking
    sys.modules["msvcrt"] = msvcrt
""")
HAS_OFD_LOCKS = HAS_FCNTL and hasattr(importlib.import_module("fcntl"), "F_OFD_SETLK")


def python(code: str, *args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


@pytest.mark.slow
@pytest.mark.posix
@pytest.mark.skipif(not HAS_OFD_LOCKS, reason="the msvcrt stand-in needs Linux OFD locks")
def test_windows_path_one_writer_and_readable_pid(tmp_path: Path) -> None:
    """On Windows the tests above run on the real msvcrt; here its code path runs on a stand-in."""
    holder = python(FAKE_MSVCRT + HOLDER, str(tmp_path), stdin=subprocess.PIPE)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "msvcrt", holder.stderr and holder.stderr.read()
        check = python(
            FAKE_MSVCRT
            + textwrap.dedent("""
            import sys
            from pathlib import Path
            from vault_memory.index.lock import BACKEND, WriterLock
            lock = WriterLock(Path(sys.argv[1]))
            probe = lock.probe()
            print(BACKEND.name, lock.try_acquire(), probe.held, probe.pid, lock.holder_pid())
            mine, again = WriterLock(Path(sys.argv[2])), WriterLock(Path(sys.argv[2]))
            print(mine.try_acquire(), again.try_acquire(), mine.holder_pid() == again.probe().pid, again.try_acquire())
        """),
            str(tmp_path),
            str(tmp_path / "other"),
        )
        out, err = check.communicate(timeout=60)
        assert check.returncode == 0, err
        first, second = out.splitlines()
        assert first.split() == ["msvcrt", "False", "True", str(holder.pid), str(holder.pid)]
        # one holder per lock even inside one process, and reading the pid file does not drop the lock
        assert second.split() == ["True", "False", "True", "False"]
        # the pid is at the start of the file, the locked byte far past it: the file stays a few bytes
        assert (tmp_path / LOCK_NAME).stat().st_size == len(str(holder.pid))
    finally:
        holder.kill()
        holder.wait(timeout=30)
    after = python(
        FAKE_MSVCRT
        + textwrap.dedent("""
        import sys
        from pathlib import Path
        from vault_memory.index.lock import WriterLock
        lock = WriterLock(Path(sys.argv[1]))
        stale = lock.probe().stale_pid
        with lock:
            print(stale, lock.held)
        print(lock.held)
    """),
        str(tmp_path),
    )
    out, err = after.communicate(timeout=60)
    assert after.returncode == 0, err
    assert out.split() == [str(holder.pid), "True", "False"]  # the dead holder's pid, then the lock is ours


@pytest.mark.slow
def test_package_and_cli_import_without_fcntl_or_msvcrt(tmp_path: Path) -> None:
    """Neither module (an exotic platform): everything imports, the CLI runs, only taking the lock fails."""
    code = textwrap.dedent("""
        import sys
        sys.modules["fcntl"] = None
        sys.modules["msvcrt"] = None
        from pathlib import Path
        import vault_memory, vault_memory.doctor, vault_memory.cli.main
        from vault_memory.errors import IndexStateError
        from vault_memory.index.lock import BACKEND, WriterLock
        lock = WriterLock(Path(sys.argv[1]))
        try:
            lock.try_acquire()
        except IndexStateError as exc:
            print(BACKEND.name, "refused:", exc)
        print(lock.held, lock.probe().held)
        sys.argv = ["vault-memory", "--version"]
        vault_memory.cli.main.run()
    """)
    proc = python(code, str(tmp_path))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("none refused: this platform offers neither fcntl.flock nor msvcrt.locking")
    assert lines[1] == "False False"
    assert lines[2].startswith("vault-memory ")
