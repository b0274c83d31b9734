"""One writer per index: an exclusive lock on the index folder.

`fcntl.flock` is released by the kernel when the holder dies, so a lock left by a
killed process is recovered by construction; the pid written in the file is only
there to name the holder in the message.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from .errors import LockHeldError

LOCK_NAME = "writer.lock"


class WriterLock:
    """Exclusive, process-wide writer lock for one index folder."""

    def __init__(self, index_dir: Path) -> None:
        self.path = index_dir / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder_pid(self) -> int | None:
        try:
            text = self.path.read_text().strip()
            return int(text) if text else None
        except (OSError, ValueError):
            return None

    def try_acquire(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        os.fsync(fd)
        self._fd = fd
        return True

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
        got = held or self.try_acquire()
        try:
            yield got
        finally:
            if got and not held:
                self.release()

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
