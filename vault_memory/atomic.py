"""Putting bytes on disk safely: atomic replacement, and the guard against editors saving in place.

notefile.write_note (the one function that writes a note) and move_note use this; nothing
else does. It knows nothing of Markdown: it swaps bytes in, never over an edit in progress,
and never loses what an editor wrote.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import stat
import time
from pathlib import Path

try:  # POSIX; the read lease below is Linux-only
    import fcntl as fcntl_mod
except ImportError:  # pragma: no cover - Windows
    fcntl_mod = None  # type: ignore[assignment]

from .errors import ConcurrentEditError, NoteError, NoteNotFoundError
from .hashing import sha256_hex

TMP_PREFIX = ".vm-tmp-"  # temp files of in-flight writes; watchers must ignore these names
CHANGED = "changed on disk since it was read; re-read and retry — "


def fsync_dir(folder: Path) -> None:
    # Make the rename itself durable; directories cannot be opened on every OS, so best effort.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def rename_no_overwrite(src: Path, dst: Path) -> None:
    """Rename src to dst; FileExistsError if dst exists.

    A hard link is the portable atomic "create only if absent"; where links are unsupported
    fall back to check-then-rename (tiny race) rather than fail.
    """
    try:
        os.link(src, dst)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(dst):
            raise FileExistsError(str(dst)) from None
        os.rename(src, dst)
        return
    os.unlink(src)


def temp_file(path: Path, data: bytes, mode: int | None) -> Path:
    """A hidden, fsynced temp file beside `path` holding `data` (renamed into place by the caller)."""
    tmp = path.parent / f"{TMP_PREFIX}{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def create(path: Path, rel: str, data: bytes) -> None:
    """Write a new note, never over an existing file."""
    tmp = temp_file(path, data, None)
    try:
        rename_no_overwrite(tmp, path)
    except FileExistsError:
        raise NoteError(rel, "a file already exists at this path; the new note was not written") from None
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    _remember_ours(path, data)


# -- the in-place-save guard ----------------------------------------------------------------
#
# Many editors save by truncating the file and writing it again in place (Node's
# fs.writeFile, which Obsidian and VS Code use; nano). Between the truncate and the last
# write the file holds part of the note, and an `os.replace` over it would install our
# frontmatter plus that part, while the rest of the editor's save went to the replaced
# (orphaned) inode. Why the window is closed, step by step (write_note, guarded_replace):
#
# 1. We never act on a read we cannot trust. The file is read through one descriptor, with
#    its size and mtime_ns taken before and after: they must agree with each other and with
#    the bytes read. And the file must have been quiet for `quiet` seconds (mtime older than
#    that) unless its bytes are exactly bytes this process wrote there itself: a save in
#    progress keeps bumping the mtime, so a partial note is never old. The caller's hash
#    (of what it read to decide the edit) must match too.
# 2. Right before the swap, the path must still be the same inode with the same size,
#    mtime_ns and content (re-read through the same descriptor): any save that began
#    before this check is seen, and we back off (ConcurrentEditError: the human wins).
#    On Linux we also hold a read lease from this check through the swap: the kernel grants
#    it only while no other process has the file open for writing, so a save paused halfway
#    for longer than the quiet period (the editor holds the file open meanwhile) is refused
#    here too; and any open for writing during the swap waits for us and breaks the lease.
# 3. A save that begins after the swap opens the path, which is our new file: it truncates
#    and rewrites ours, so the human's bytes are whole (our bookkeeping is what is lost).
# 4. That leaves a save whose truncate lands in the microseconds between check 2 and the
#    swap (with the lease: one that opened the old file meanwhile and broke the lease). We
#    keep the old inode open across the swap and read it afterwards: if it changed, or the
#    lease was broken, the editor wrote (or will write) into it; we wait until it is quiet and put its bytes back
#    at the path (if the path still holds what we wrote; otherwise beside it, as a
#    conflict copy), and report ConcurrentEditError. Nothing the editor wrote is lost.
# On Windows an open file cannot be replaced and editors save differently; steps 1-3 apply.
# Without leases (macOS, a filesystem without them) the quiet period is what holds a slow save
# back: one that pauses longer than QUIET_SECONDS in the middle is the case left open there.
# tests/test_write_race.py and `python -m bench soak` race editors against this.

QUIET_SECONDS = 1.0  # a file written to within this many seconds may be mid-save
RESCUE_QUIET = 0.2  # the orphaned inode must be unchanged this long before its bytes are restored
RESCUE_MAX_WAIT = 5.0
_OURS: dict[str, str] = {}  # absolute path -> sha256 of the bytes this process last wrote there
_OURS_MAX = 4096


def _remember_ours(path: Path, data: bytes) -> None:
    key = str(path)
    _OURS.pop(key, None)
    _OURS[key] = sha256_hex(data)
    while len(_OURS) > _OURS_MAX:
        _OURS.pop(next(iter(_OURS)))


def is_ours(path: Path, data: bytes) -> bool:
    return _OURS.get(str(path)) == sha256_hex(data)


def _fingerprint(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks: list[bytes] = []
    while True:
        part = os.read(fd, 1 << 20)
        if not part:
            return b"".join(chunks)
        chunks.append(part)


def busy(rel: str, why: str) -> ConcurrentEditError:
    return ConcurrentEditError(rel, f"is being written right now ({why}); nothing was changed, try again in a moment")


def steady_read(path: Path, rel: str) -> tuple[int, bytes, os.stat_result]:
    """(open descriptor, bytes, stat) of a read whose size and mtime held still while reading."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise NoteNotFoundError(rel, "no such note file") from None
    except OSError as exc:
        raise NoteError(rel, f"cannot read note: {exc.strerror or exc}") from None
    try:
        before = os.fstat(fd)
        raw = _read_fd(fd)
        after = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise NoteError(rel, f"cannot read note: {exc.strerror or exc}") from None
    if _fingerprint(before) != _fingerprint(after) or len(raw) != after.st_size:
        os.close(fd)
        raise busy(rel, "it changed while it was read")
    return fd, raw, after


def quiet_for(st: os.stat_result, quiet: float) -> float:
    """Seconds still to wait before the file counts as quiet (0 when it does)."""
    age = time.time() - st.st_mtime
    if age < -quiet:  # far in the future: a clock or a sync tool, not a save in progress
        return 0.0
    return max(0.0, quiet - age)


def _read_lease(fd: int) -> bool | None:
    """Linux only: take a read lease on the file read through `fd`.

    The kernel grants it only while no other process has the file open for writing (an editor
    in the middle of a save, however slow, holds it open), and while we hold it, another
    process opening the file for writing waits for us and shows up as a broken lease. True:
    held. False: refused, a writer has it open. None: leases are not available here (another
    OS, a filesystem without them, a file we do not own): steps 1-4 stand alone.
    """
    if fcntl_mod is None or not (hasattr(fcntl_mod, "F_SETLEASE") and hasattr(fcntl_mod, "F_SETSIG")):
        return None
    try:
        # A broken lease is signalled; the default SIGIO would end the process, SIGURG is ignored.
        fcntl_mod.fcntl(fd, fcntl_mod.F_SETSIG, signal.SIGURG)
        fcntl_mod.fcntl(fd, fcntl_mod.F_SETLEASE, fcntl_mod.F_RDLCK)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EBUSY):
            return False
        return None
    return True


def _lease_broken(fd: int) -> bool:
    """Whether a process opened the leased file for writing since we took the lease; releases it."""
    try:
        broken = fcntl_mod.fcntl(fd, fcntl_mod.F_GETLEASE) != fcntl_mod.F_RDLCK
    except OSError:
        broken = True  # cannot tell: look at the old file below, as without a lease
    with contextlib.suppress(OSError):
        fcntl_mod.fcntl(fd, fcntl_mod.F_SETLEASE, fcntl_mod.F_UNLCK)
    return broken


def guarded_replace(path: Path, rel: str, fd: int, old: bytes, seen: os.stat_result, data: bytes,
                    mode: int | None) -> None:
    """Swap `data` in for the file read as `old` through `fd` (steps 2-4 above; fd -1: steps 2-3)."""
    tmp = temp_file(path, data, mode)
    lease = _read_lease(fd) if fd >= 0 else None
    broken = False
    try:
        if lease is False:
            raise busy(rel, "another program has it open for writing")
        try:
            now = os.stat(path)
        except OSError:
            raise ConcurrentEditError(rel, CHANGED + "your edit was not written") from None
        current = _read_fd(fd) if fd >= 0 else path.read_bytes()
        if _fingerprint(now) != _fingerprint(seen) or current != old:
            raise ConcurrentEditError(rel, CHANGED + "your edit was not written")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        if lease:
            broken = _lease_broken(fd)  # release: a writer waiting on the lease goes on now
    fsync_dir(path.parent)
    _remember_ours(path, data)
    if fd < 0:
        return
    try:
        after = os.fstat(fd)
        orphan = _read_fd(fd) if _fingerprint(after) == _fingerprint(seen) else None
    except OSError:
        return
    if orphan == old and not broken:
        return  # the replaced file was left alone: nobody was writing it
    _rescue(path, rel, fd, data)


def _rescue(path: Path, rel: str, fd: int, ours: bytes) -> None:
    """An editor wrote into the file we just replaced: put what it wrote back at the path."""
    deadline = time.monotonic() + RESCUE_MAX_WAIT
    last = _fingerprint(os.fstat(fd))
    steady_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        cur = _fingerprint(os.fstat(fd))
        if cur != last:
            last, steady_since = cur, time.monotonic()
        elif time.monotonic() - steady_since >= RESCUE_QUIET:
            break
    saved = _read_fd(fd)
    try:
        current: bytes | None = path.read_bytes()
    except OSError:
        current = None
    if current == ours:
        tmp = temp_file(path, saved, stat.S_IMODE(os.fstat(fd).st_mode))
        try:
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        fsync_dir(path.parent)
        _remember_ours(path, saved)
        where = "it is back in place"
    else:  # the path changed again meanwhile: keep the editor's save beside it, never drop it
        stamp = time.strftime("%Y-%m-%d %H%M%S")
        copy = path.with_name(f"{path.stem} (conflict {stamp}){path.suffix}")
        tmp = temp_file(path, saved, None)
        try:
            rename_no_overwrite(tmp, copy)
        finally:
            tmp.unlink(missing_ok=True)
        where = f"it was kept as {copy.name}"
    raise ConcurrentEditError(rel, f"an editor saved while vault-memory wrote; {where} and our edit was dropped")


__all__ = ["CHANGED", "QUIET_SECONDS", "TMP_PREFIX", "busy", "create", "fsync_dir", "guarded_replace",
           "is_ours", "quiet_for", "rename_no_overwrite", "steady_read", "temp_file"]
