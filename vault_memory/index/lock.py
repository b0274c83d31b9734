"""One writer per index: an exclusive lock on the index folder, on POSIX and on Windows.

The lock is an OS lock on `writer.lock`, not the file's existence: `fcntl.flock` on POSIX,
`msvcrt.locking` of one byte on Windows. Both are released by the OS when the holder dies,
so a lock left by a killed process is recovered by construction; the pid written in the
file is only there to name the holder in messages (and for `doctor` to name a dead one).

Both backends lock per open file (flock: per open file description; msvcrt: per handle),
so two `WriterLock`s on one folder exclude each other even inside one process.

The backend is chosen by what imports, not by `sys.platform`, so the Windows path can be
exercised on POSIX with a stand-in `msvcrt` (tests/test_lock.py). With neither module the
package still imports; only taking the lock fails, with a message saying why.

One writer even when the folder is deleted or recreated. A lock is on an open file, so a
holder whose `writer.lock` was unlinked (the index folder deleted, `rm -rf ~/.cache/...`)
still holds a lock, on a file nobody can open any more: a new writer creates a new file,
locks it, and both would write. Two rules close that:
- an acquirer checks, after locking, that the file it locked is the one at the path
  (fstat of its descriptor = stat of the path); if not, the path was replaced while it
  was locking, and it tries again on the new file;
- a holder checks `still_ours()` (two stat calls) before each write it makes and, in a
  long-running process, every second (watch.py, IndexFolder.check_index). When the path no longer
  holds its file, it has lost the lock: it takes the lock on the new file if it is free
  and rebuilds the index there, or stops with LockHeldError if another writer has it.
A new writer can therefore overlap an old one only until the old one's next check (about a
second, or the end of the embedding batch in flight), and only while the old one writes into
the deleted files, which nobody reads.

A folder that cannot be written (read-only file system, permissions, full disk) has no lock
to take: `try_acquire` raises IndexNotWritableError, `if_free` yields False (readers then
read the index as it is), and `probe` still works, read-only.
"""

from __future__ import annotations

import errno
import importlib
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Protocol

from ..errors import UNWRITABLE, IndexNotWritableError, IndexStateError, LockHeldError, storage_message

LOCK_NAME = "writer.lock"
# Windows locks a byte range, and a locked range cannot be read by other processes; lock one
# byte far past the pid text so readers can still see who holds it (locking past EOF is allowed).
_MSVCRT_OFFSET = 1 << 20
# What a non-blocking lock attempt raises when another process holds it.
_HELD_ERRNOS = frozenset(
    {errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK, getattr(errno, "EDEADLOCK", errno.EDEADLK), errno.EDEADLK}
)


class _Backend(Protocol):
    name: str

    def try_lock(self, fd: int) -> bool:
        """Take the exclusive lock without waiting; False if another holder has it."""

    def unlock(self, fd: int) -> None: ...


class _Flock:
    name = "flock"

    def __init__(self, fcntl: ModuleType) -> None:
        self._fcntl = fcntl

    def try_lock(self, fd: int) -> bool:
        try:
            self._fcntl.flock(fd, self._fcntl.LOCK_EX | self._fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in _HELD_ERRNOS:
                return False
            raise
        return True

    def unlock(self, fd: int) -> None:
        self._fcntl.flock(fd, self._fcntl.LOCK_UN)


class _Msvcrt:
    name = "msvcrt"

    def __init__(self, msvcrt: ModuleType) -> None:
        self._msvcrt = msvcrt

    def try_lock(self, fd: int) -> bool:
        os.lseek(fd, _MSVCRT_OFFSET, os.SEEK_SET)
        try:
            self._msvcrt.locking(fd, self._msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            if exc.errno in _HELD_ERRNOS:
                return False
            raise
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
        return True

    def unlock(self, fd: int) -> None:
        os.lseek(fd, _MSVCRT_OFFSET, os.SEEK_SET)
        try:
            self._msvcrt.locking(fd, self._msvcrt.LK_UNLCK, 1)
        finally:
            os.lseek(fd, 0, os.SEEK_SET)


class _Unavailable:
    name = "none"

    def try_lock(self, fd: int) -> bool:
        raise IndexStateError(
            "this platform offers neither fcntl.flock nor msvcrt.locking, so vault-memory cannot "
            "guarantee one writer per index; use it read-only (--read-only, `recall`) here"
        )

    def unlock(self, fd: int) -> None:
        return None


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _pick_backend() -> _Backend:
    fcntl = _import("fcntl")
    if fcntl is not None:
        return _Flock(fcntl)
    msvcrt = _import("msvcrt")
    if msvcrt is not None:
        return _Msvcrt(msvcrt)
    return _Unavailable()


BACKEND: _Backend = _pick_backend()


def _open_existing(path: Path) -> int:
    # Read-write where allowed (byte-range locks want it); flock is content with read-only.
    try:
        return os.open(path, os.O_RDWR)
    except OSError as exc:
        if exc.errno not in UNWRITABLE:
            raise
        return os.open(path, os.O_RDONLY)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@dataclass(frozen=True)
class LockProbe:
    """What `WriterLock.probe` saw: whether a live process holds the lock, and the pid in the file."""

    held: bool  # some other open file holds the lock right now
    pid: int | None  # the pid the last holder wrote (None: no file, or empty)

    @property
    def stale_pid(self) -> int | None:
        """A pid left in the file by a holder that no longer holds the lock (it died)."""
        return None if self.held else self.pid


class WriterLock:
    """Exclusive writer lock for one index folder (one holder across processes)."""

    def __init__(self, index_dir: Path, backend: _Backend | None = None) -> None:
        self.path = index_dir / LOCK_NAME
        self._backend = backend or BACKEND
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder_pid(self) -> int | None:
        try:
            text = self.path.read_text().strip("\x00 \t\r\n")
            return int(text) if text else None
        except (OSError, ValueError):
            return None

    def _open_for_lock(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno in UNWRITABLE:
                raise IndexNotWritableError(
                    storage_message(exc, "write the index folder", self.path.parent)
                    + "; or pass --index-dir to a writable folder (readers still read this index as it is)"
                ) from None
            raise

    def try_acquire(self) -> bool:
        """Take the lock without waiting; False if another process holds it.

        IndexNotWritableError when the folder cannot be written at all."""
        if self._fd is not None:
            return True
        for _ in range(10):
            fd = self._open_for_lock()
            try:
                if not self._backend.try_lock(fd):
                    os.close(fd)
                    return False
                if self._is_at_path(fd):
                    break
            except BaseException:
                os.close(fd)
                raise
            # The path was unlinked or replaced while we locked: that lock protects nothing.
            self._backend.unlock(fd)
            os.close(fd)
        else:
            raise LockHeldError(
                f"the lock file {self.path} keeps being replaced while it is taken; "
                "is something deleting the index folder in a loop?"
            )
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(os.getpid()).encode())
            os.fsync(fd)
        except OSError:
            pass  # a full disk: the pid only names the holder in messages; the lock itself holds
        self._fd = fd
        return True

    def _is_at_path(self, fd: int) -> bool:
        try:
            return _same_file(os.fstat(fd), os.stat(self.path))
        except OSError:
            return False

    def still_ours(self) -> bool:
        """True while we hold the lock on the file that is at the path (see the module docstring).

        False when not held, or when `writer.lock` was deleted or replaced under us: the index
        folder went away, and another process may be writing a new one."""
        return self._fd is not None and self._is_at_path(self._fd)

    def acquire(self, wait: float = 3.0) -> None:
        """Wait up to `wait` seconds, then raise LockHeldError naming the holder."""
        deadline = time.monotonic() + wait
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                pid = self.holder_pid()
                who = f"process {pid}" if pid else "another process"
                raise LockHeldError(
                    f"the index at {self.path.parent} is being written by {who} (e.g. `vault-memory watch`); "
                    "stop it or wait for it to finish, or just use `recall`, which works while it runs",
                    pid=pid,
                )
            time.sleep(0.1)

    @contextmanager
    def if_free(self) -> Iterator[bool]:
        """Hold the lock for the block if it is free or already ours; yields whether we hold it.

        The one "write the index if nobody else is" step: after a write to the vault, a
        command re-indexes what it touched only if it may; otherwise the process holding
        the lock (a watcher, the MCP server) picks the change up. Releases only what it took.
        """
        held = self.held
        try:
            got = held or self.try_acquire()
        except IndexNotWritableError:
            got = False  # nobody can write this index: read it as it is
        try:
            yield got
        finally:
            if got and not held:
                self.release()

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            with suppress(OSError):  # the pid is informational; a full disk must not keep the lock
                os.ftruncate(self._fd, 0)
            self._backend.unlock(self._fd)
        finally:
            os.close(self._fd)
            self._fd = None

    def probe(self) -> LockProbe:
        """Is another process holding the lock? Tries it for an instant on a separate handle and lets go,
        without writing the file. Call it when this object does not hold the lock itself."""
        if self._fd is not None:
            return LockProbe(held=True, pid=os.getpid())
        pid = self.holder_pid()
        try:
            fd = _open_existing(self.path)
        except FileNotFoundError:
            return LockProbe(held=False, pid=None)
        try:
            if not self._backend.try_lock(fd):
                return LockProbe(held=True, pid=pid)
            self._backend.unlock(fd)
        except IndexStateError:  # no locking on this platform: nothing can be said about a holder
            return LockProbe(held=False, pid=None)
        finally:
            os.close(fd)
        return LockProbe(held=False, pid=pid)

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


__all__ = ["BACKEND", "LOCK_NAME", "LockProbe", "WriterLock"]
