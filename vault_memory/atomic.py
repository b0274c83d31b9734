"""Putting bytes on disk safely: atomic replacement, and the guard against editors saving in place.

notefile.write_note (the one function that writes a note) and move_note use this; nothing
else does. It knows nothing of Markdown: it swaps bytes in, never over an edit in progress,
and never loses what an editor wrote.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import secrets
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

try:  # POSIX; the read lease below is Linux-only
    import fcntl as fcntl_mod
except ImportError:  # pragma: no cover - Windows
    fcntl_mod = None  # type: ignore[assignment]

from .errors import UNWRITABLE, ConcurrentEditError, NoteError, NoteNotFoundError, NoteWriteError, storage_message
from .hashing import sha256_hex

TMP_PREFIX = ".vm-tmp-"  # temp files of in-flight writes; watchers must ignore these names
P = ParamSpec("P")
R = TypeVar("R")


def refused_by_storage(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """For the write path's entry points `f(vault_root, rel_path, ...)`: an OSError saying the storage
    refuses (read-only, permissions, full disk, I/O error) becomes a NoteWriteError naming the note, the
    reason and what to do; the note is unchanged (temp files are removed before the error rises)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except OSError as exc:
                if exc.errno not in UNWRITABLE and exc.errno != errno.EIO:
                    raise
                rel = str(args[1]) if len(args) > 1 else "a note"
                raise NoteWriteError(
                    rel, f"{storage_message(exc, what, exc.filename or rel)}; the note was not changed"
                ) from None

        return inner

    return wrap


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
#    lease was broken, the editor wrote (or will write) into it; we wait until it is quiet (and,
#    with leases, until no process holds it open for writing: a save paused between two writes
#    is not done) and put its bytes back
#    at the path (if the path still holds what we wrote; otherwise beside it, as a
#    conflict copy), and report ConcurrentEditError. Nothing the editor wrote is lost.
# 5. On Linux the swap is a RENAME_EXCHANGE (swap_in), so what it displaced is in our hands:
#    a save by rename that landed after check 2 is seen (it is not the file we checked) and
#    put back; and an editor that asked to open the old file for writing meanwhile (a pending
#    break of our lease: it waits on us, holding the old file) gets the old file back at the
#    path before we let go, so its save lands in place and step 4 has nothing to rescue.
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
    _release_lease(fd)
    return broken


def _release_lease(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl_mod.fcntl(fd, fcntl_mod.F_SETLEASE, fcntl_mod.F_UNLCK)


def _renameat2() -> Any:
    """glibc's renameat2, for RENAME_EXCHANGE (Linux >= 3.15, glibc >= 2.28), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_RENAMEAT2 = _renameat2()
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap what the two names point at, atomically; False where the system cannot."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EXDEV):
        return False  # not supported here (an old kernel, a filesystem without it): plain replace
    raise OSError(err, os.strerror(err), str(b))


def _same_file(st: os.stat_result, other: os.stat_result) -> bool:
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def swap_in(
    tmp: Path, path: Path, rel: str, expected: os.stat_result | None, *, lease_fd: int = -1, data: bytes | None = None
) -> None:
    """Put `tmp` at `path`, replacing the file `expected` (the one we checked) and nothing else.

    With RENAME_EXCHANGE the file we displaced comes back to `tmp`'s name, so we can see it: if a
    save by rename landed between our check and the swap, what we displaced is that save, not the
    file we checked; it is swapped back into place (and kept beside as a conflict copy if a third
    save came in meanwhile). And if `lease_fd` holds a read lease on the file we checked and an
    editor asked to open that file for writing meanwhile (it now waits on our lease, holding the
    old file), the old file goes back to the path before we let go, so the editor's save lands
    where it belongs. Without RENAME_EXCHANGE, os.replace (the window is the microseconds between
    the check and this call; step 4 looks after).
    """
    ours = os.lstat(tmp)
    if expected is None or not _exchange(tmp, path):
        os.replace(tmp, path)
        return
    displaced = os.lstat(tmp)
    if _same_file(displaced, expected):
        if lease_fd < 0 or not _break_pending(lease_fd):
            tmp.unlink()  # the file we checked; whoever still has it open keeps it (step 4 looks)
            return
        why = "an editor opened it for writing as we wrote; its save stands, your edit was not written"
    else:
        why = "a save landed as we wrote; it stands, your edit was not written"
    _exchange(tmp, path)  # put their file back
    back = os.lstat(tmp)
    if not _same_file(back, ours) or (data is not None and back.st_size != len(data)):
        keep_beside(tmp, path)  # a third save landed in between (or wrote into ours): keep it too, never drop it
    else:
        tmp.unlink()
    raise ConcurrentEditError(rel, CHANGED + why)


def _break_pending(fd: int) -> bool:
    """Whether a process asked to open the file we hold a read lease on for writing (it waits on us)."""
    try:
        return bool(fcntl_mod.fcntl(fd, fcntl_mod.F_GETLEASE) != fcntl_mod.F_RDLCK)
    except OSError:
        return False


def keep_beside(src: Path, path: Path) -> Path:
    """Move `src` next to `path` as `<name> (conflict <time>).md`, never over anything."""
    stamp = time.strftime("%Y-%m-%d %H%M%S")
    for n in range(1, 100):
        suffix = f" (conflict {stamp})" if n == 1 else f" (conflict {stamp} {n})"
        copy = path.with_name(f"{path.stem}{suffix}{path.suffix}")
        try:
            rename_no_overwrite(src, copy)
            return copy
        except FileExistsError:
            continue
    raise NoteError(path.name, "too many conflict copies beside this note; nothing was removed")


def guarded_replace(
    path: Path, rel: str, fd: int, old: bytes, seen: os.stat_result, data: bytes, mode: int | None
) -> None:
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
        swap_in(tmp, path, rel, now, lease_fd=fd if lease else -1, data=data)
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


def _held_for_writing(fd: int) -> bool:
    """Whether another process still has the file open for writing (an editor paused between two
    writes of one save: quiet is not done). Linux answers through a lease; elsewhere, False."""
    lease = _read_lease(fd)
    if lease:
        _release_lease(fd)
    return lease is False


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
        elif time.monotonic() - steady_since >= RESCUE_QUIET and not _held_for_writing(fd):
            break
    saved = _read_fd(fd)
    try:
        here: os.stat_result | None = os.stat(path)
        current: bytes | None = path.read_bytes()
    except OSError:
        here, current = None, None
    where = ""
    if current == ours:
        tmp = temp_file(path, saved, stat.S_IMODE(os.fstat(fd).st_mode))
        try:
            swap_in(tmp, path, rel, here)
            fsync_dir(path.parent)
            _remember_ours(path, saved)
            where = "it is back in place"
        except ConcurrentEditError:
            pass  # yet another save took the path meanwhile: it stands; keep this one beside it
        finally:
            tmp.unlink(missing_ok=True)
    if not where:  # the path changed again meanwhile: keep the editor's save beside it, never drop it
        tmp = temp_file(path, saved, None)
        try:
            copy = keep_beside(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        where = f"it was kept as {copy.name}"
    raise ConcurrentEditError(rel, f"an editor saved while vault-memory wrote; {where} and our edit was dropped")


__all__ = [
    "CHANGED",
    "QUIET_SECONDS",
    "TMP_PREFIX",
    "busy",
    "create",
    "fsync_dir",
    "guarded_replace",
    "is_ours",
    "quiet_for",
    "refused_by_storage",
    "rename_no_overwrite",
    "steady_read",
    "temp_file",
]
