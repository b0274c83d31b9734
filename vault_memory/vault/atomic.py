"""Putting bytes on disk safely: atomic replacement, and the guard against editors saving in place.

notefile.write_note (the one function that writes a note) and move_note use this; nothing
else does. It knows nothing of Markdown: it swaps bytes in, never over an edit in progress,
never loses what an editor wrote, and keeps what the file system knew about the file it
replaces (owner, group, mode, extended attributes), or does not replace it.

Longer than 500 lines because the guard's argument (five steps, what each platform relies on)
and the code that makes each step hold must be read together.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import secrets
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from .. import oscalls
from ..errors import (
    UNWRITABLE,
    ConcurrentEditError,
    NoteBusyError,
    NoteError,
    NoteNotFoundError,
    NoteProtectedError,
    NoteReadError,
    NoteWriteError,
    storage_message,
)
from ..hashing import sha256_hex
from ..oscalls import fcntl_mod

TMP_PREFIX = ".vm-tmp-"  # temp files of in-flight writes; watchers must ignore these names
P = ParamSpec("P")
R = TypeVar("R")


def refused_by_storage(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """For the write path's entry points `f(vault_root, rel_path, ...)`: an OSError saying the storage
    refuses (read-only, permissions, full disk, I/O error) becomes a NoteWriteError naming the note, the
    reason and what to do; a MemoryError a NoteError naming it; the note is unchanged (temp files are
    removed before the error rises)."""

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
            except MemoryError:  # a note far bigger than notes are (a raised max_note_bytes): never a traceback
                rel = str(args[1]) if len(args) > 1 else "a note"
                raise NoteError(rel, f"not enough memory to {what} it; the note was not changed") from None

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


# -- what the file system knew ----------------------------------------------------------------


def protected(st: os.stat_result) -> str | None:
    """Why the file `st` describes must not be replaced behind the person's back, or None.

    A second hard link would be split off (it keeps the old bytes); a file its owner may not
    write was made read-only on purpose (root, or a folder we may write, could replace it anyway).
    """
    if st.st_nlink > 1:
        return (
            f"has {st.st_nlink} hard links: a rewrite would split them (the other names would keep the old "
            "text), so vault-memory leaves it as it is; give it one name (copy it) to let vault-memory write it"
        )
    if os.name != "nt" and not st.st_mode & stat.S_IWUSR:
        return "is read-only (its owner may not write it), so vault-memory leaves it as it is; chmod u+w it to allow"
    return None


def _keep_attributes(fd: int, like: os.stat_result, src_fd: int, rel: str, kernel: oscalls.Kernel) -> None:
    """Give the new file (open as `fd`) the replaced file's owner, group, mode and extended attributes,
    or refuse (NoteProtectedError) before anything is replaced: a rewrite never changes them."""
    if os.name == "nt":
        return  # ReplaceFileW keeps the replaced file's attributes, ACLs and streams; there is no fchown
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (like.st_uid, like.st_gid):
        try:
            os.fchown(fd, like.st_uid, like.st_gid)
        except OSError as exc:  # another user's file, or a group we are not in
            raise NoteProtectedError(
                rel,
                f"is owned by uid {like.st_uid} gid {like.st_gid} and this process ({os.geteuid()}) cannot give a "
                f"rewritten file that owner ({exc.strerror}), so vault-memory leaves it as it is; run as its owner",
            ) from None
    os.fchmod(fd, stat.S_IMODE(like.st_mode))  # after fchown, which may clear setuid/setgid bits
    if src_fd < 0:
        return
    if kernel.copy_metadata is not None:  # macOS: xattrs (Finder tags, ...) and ACLs in one call
        err = kernel.copy_metadata(src_fd, fd)
        if err:
            raise NoteProtectedError(
                rel, f"its extended attributes cannot be copied ({os.strerror(err)}); it was left as it is"
            )
        return
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(src_fd)
    except OSError:
        return  # no extended attributes on this file system
    for name in names:
        try:
            value = os.getxattr(src_fd, name)
            with contextlib.suppress(OSError):
                if os.getxattr(fd, name) == value:
                    continue  # e.g. an SELinux label the new file got from its folder
            os.setxattr(fd, name, value)
        except OSError as exc:
            raise NoteProtectedError(
                rel,
                f"its extended attribute {name} cannot be kept on a rewritten file ({exc.strerror}), "
                "so vault-memory leaves it as it is",
            ) from None


def temp_file(
    path: Path,
    data: bytes,
    mode: int | None,
    *,
    like: os.stat_result | None = None,
    src_fd: int = -1,
    rel: str = "",
) -> Path:
    """A hidden, fsynced temp file beside `path` holding `data` (renamed into place by the caller),
    with the owner, group, mode and extended attributes of the file `like` (read through `src_fd`)."""
    tmp = path.parent / f"{TMP_PREFIX}{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if like is not None:
                _keep_attributes(f.fileno(), like, src_fd, rel or path.name, KERNEL)
            os.fsync(f.fileno())
        if mode is not None and like is None:
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
# (orphaned) inode. Why the window is closed, step by step (write_note, guarded_replace),
# and what each step relies on where (KERNEL, from oscalls.detect()):
#
# 1. We never act on a read we cannot trust. The file is read through one descriptor, with
#    its size and mtime_ns taken before and after: they must agree with each other and with
#    the bytes read. And the file must have been quiet for `quiet` seconds (mtime older than
#    that) unless its bytes are exactly bytes this process wrote there itself: a save in
#    progress keeps bumping the mtime, so a partial note is never old. The caller's hash
#    (of what it read to decide the edit) must match too. [every platform]
# 2. Right before the swap, the path must still be the same inode with the same size,
#    mtime_ns and content (re-read through the same descriptor): any save that began
#    before this check is seen, and we back off (ConcurrentEditError: the human wins).
#    A save paused halfway for longer than the quiet period looks quiet, so we also ask
#    whether another process holds the file open for writing (an editor mid-save does):
#    [Linux] a read lease, held from this check through the swap (the kernel grants it only
#    while no other process has the file open for writing; an open for writing during the
#    swap waits for us and breaks the lease); [Windows] a share-mode probe (opening it shared
#    for reading only is refused while someone has it open for writing). [macOS, portable]
#    there is no such question to ask: a save paused longer than QUIET_SECONDS in its middle,
#    just before our check, is the one case left open there (step 1's assumption).
# 3. A save that begins after the swap opens the path, which is our new file: it truncates
#    and rewrites ours, so the human's bytes are whole (our bookkeeping is what is lost).
#    [every platform]
# 4. That leaves a save whose open lands in the microseconds between check 2 and the swap:
#    it writes into the old file. We keep the old file in hand under a second name across the
#    swap and look at it right after; an in-place save truncates as it opens, so one that
#    opened it is seen at once (as is a broken lease). Then the old file itself goes back to
#    the path, the editor's save (still in flight) lands in place, and ConcurrentEditError.
#    The second name is: [Linux, macOS] the temp file's, where the exchange leaves what it
#    displaced; [Windows] ReplaceFileW's backup name; [portable] a hard link made before
#    check 2. Should the path meanwhile hold a third save, the old file's bytes are kept beside
#    it as a conflict copy once it is quiet (and, with leases, closed). Without a second name
#    (a file system without hard links) the rescue waits until the old file is quiet for
#    QUIET_SECONDS and copies its bytes back. Nothing the editor wrote is lost.
# 5. A save by rename that lands after check 2 is a new file at the path: [Linux, macOS] the
#    exchange shows us what it displaced, which is then not the file we checked, and puts it
#    back; an editor that asked to open the old file for writing meanwhile (a pending break of
#    our lease, Linux) also gets the old file back at the path before we let go. [Windows] the
#    backup name shows what ReplaceFileW displaced; it goes back if it is not what we checked.
#    [portable] the hard link is checked to be the file we checked, so a rename before the
#    link is seen; one landing in the microseconds between that link and os.replace is not
#    (no portable call replaces a file only if it is the one we checked).
# Measured: `python -m bench save_race` (Linux calls on) and `--portable` (all of them off,
# as on a system with none): bench/results/save_race.md. tests/test_write_race.py reproduces
# each step, with the calls present and hidden; the CI lane tests/portable hides them from
# every process.

QUIET_SECONDS = 1.0  # a file written to within this many seconds may be mid-save
# [portable] Without an exchange nothing shows a save by rename that lands in the microseconds between
# our last check and os.replace (step 5); bookkeeping (a write nobody waits for) therefore leaves a
# note alone until it has been quiet this many times longer: a note under active editing is written
# when the person pauses, not between two saves (save_race: 1 of 600 rename saves lost without it).
PORTABLE_QUIET_FACTOR = 3.0
MAX_READ = 1 << 30  # never a note to rewrite (notefile's max_note_bytes stops far earlier)
RESCUE_QUIET = 0.2  # the orphaned inode must be unchanged this long before its bytes are restored
RESCUE_MAX_WAIT = 5.0
KERNEL: oscalls.Kernel = oscalls.detect()
_OURS: dict[str, str] = {}  # absolute path -> sha256 of the bytes this process last wrote there
_OURS_MAX = 4096


def use_portable() -> None:
    """Run the write path without any of the system's help (as on a system that has none of it)."""
    global KERNEL
    KERNEL = oscalls.PORTABLE


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


def busy(rel: str, why: str) -> NoteBusyError:
    return NoteBusyError(rel, f"is being written right now ({why}); nothing was changed, try again in a moment")


def unreadable(rel: str, exc: OSError) -> NoteError:
    """The error for a note that cannot be read: a StorageError (exit 8) when the storage refuses."""
    if exc.errno in UNWRITABLE or exc.errno == errno.EIO:
        return NoteReadError(rel, storage_message(exc, "read", rel))
    return NoteError(rel, f"cannot read note: {exc.strerror or exc}")


def steady_read(path: Path, rel: str) -> tuple[int, bytes, os.stat_result]:
    """(open descriptor, bytes, stat) of a read whose size and mtime held still while reading."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise NoteNotFoundError(rel, "no such note file") from None
    except OSError as exc:
        raise unreadable(rel, exc) from None
    try:
        before = os.fstat(fd)
        if before.st_size > MAX_READ or not stat.S_ISREG(before.st_mode):
            os.close(fd)
            raise NoteError(rel, f"{before.st_size:,} bytes or not a regular file: not a note vault-memory writes")
        raw = _read_fd(fd)
        after = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise unreadable(rel, exc) from None
    except MemoryError:
        os.close(fd)
        raise NoteError(rel, "not enough memory to read it, so it was not written; split the note") from None
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
    OS, a filesystem without them, a file we do not own): the other steps stand alone.
    """
    if not KERNEL.lease or fcntl_mod is None:
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


def _break_pending(fd: int) -> bool:
    """Whether a process asked to open the file we hold a read lease on for writing (it waits on us)."""
    try:
        return bool(fcntl_mod.fcntl(fd, fcntl_mod.F_GETLEASE) != fcntl_mod.F_RDLCK)
    except OSError:
        return False


def has_exchange() -> bool:
    return KERNEL.exchange is not None


def bookkeeping_quiet(quiet: float) -> float:
    """How long a note must be quiet before a bookkeeping write (one nobody waits for) may replace it."""
    if KERNEL.exchange is None and KERNEL.replace_file is None:
        return quiet * PORTABLE_QUIET_FACTOR
    return quiet


def _exchange(a: Path, b: Path) -> bool:
    """Swap what the two names point at, atomically; False where the system cannot."""
    if KERNEL.exchange is None:
        return False
    err = KERNEL.exchange(os.fsencode(a), os.fsencode(b))
    if err == 0:
        return True
    if err in oscalls.NO_EXCHANGE:
        return False  # not supported here (an old kernel, a file system without it): the portable steps
    raise OSError(err, os.strerror(err), str(b))


def _same_file(st: os.stat_result, other: os.stat_result) -> bool:
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def _second_name(path: Path) -> Path | None:
    """[portable] A hidden hard link to the file at `path`, so it stays in hand after os.replace."""
    name = path.parent / f"{TMP_PREFIX}{secrets.token_hex(6)}.old"
    try:
        os.link(path, name)
    except OSError:
        return None  # no hard links here (FAT, some network shares): step 4 copies bytes instead
    return name


def _replace_keeping(tmp: Path, path: Path, rel: str) -> Path:
    """[Windows] ReplaceFileW: `tmp` takes `path`'s place; what was there stays under the returned name."""
    assert KERNEL.replace_file is not None
    backup = path.parent / f"{TMP_PREFIX}{secrets.token_hex(6)}.old"
    err = KERNEL.replace_file(str(path), str(tmp), str(backup))
    if err == oscalls.ERROR_UNABLE_TO_MOVE_REPLACEMENT_2 and os.path.lexists(backup):
        os.replace(backup, path)  # the old file went to the backup name but ours could not follow: undo
        err = oscalls.ERROR_UNABLE_TO_MOVE_REPLACEMENT
    if err in (oscalls.ERROR_SHARING_VIOLATION, oscalls.ERROR_UNABLE_TO_REMOVE_REPLACED):
        raise busy(rel, "another program has it open")
    if err:
        raise OSError(errno.EIO, f"ReplaceFileW failed (Windows error {err})", str(path))
    return backup


def swap_in(
    tmp: Path,
    path: Path,
    rel: str,
    expected: os.stat_result | None,
    *,
    lease_fd: int = -1,
    data: bytes | None = None,
    second: Path | None = None,
) -> Path | None:
    """Put `tmp` at `path`, replacing the file `expected` (the one we checked) and nothing else; returns a
    name that still holds the file it replaced (the caller looks at it, step 4, then removes it), or None.

    With an exchange the file we displaced comes back to `tmp`'s name, so we can see it: if a save by
    rename landed between our check and the swap, what we displaced is that save, not the file we
    checked; it is swapped back into place (and kept beside as a conflict copy if a third save came in
    meanwhile). And if `lease_fd` holds a read lease on the file we checked and an editor asked to open
    that file for writing meanwhile (it now waits on our lease, holding the old file), the old file goes
    back to the path before we let go, so the editor's save lands where it belongs. With ReplaceFileW the
    displaced file is under a backup name and is checked the same way. Otherwise os.replace, and
    `second` (a hard link to the file we checked, made before the check) is what holds the old file.
    """
    ours = os.lstat(tmp)
    if expected is not None and KERNEL.replace_file is not None:
        displaced = _replace_keeping(tmp, path, rel)
        old = os.lstat(displaced)
        if old.st_size == expected.st_size and old.st_mtime_ns == expected.st_mtime_ns:
            return displaced
        KERNEL.replace_file(str(path), str(displaced), None)  # not what we checked: it goes back
        raise ConcurrentEditError(rel, CHANGED + "a save landed as we wrote; it stands, your edit was not written")
    if expected is None or not _exchange(tmp, path):
        if second is not None and expected is not None and _fingerprint(os.stat(path)) != _fingerprint(expected):
            raise ConcurrentEditError(rel, CHANGED + "a save landed as we wrote; it stands, your edit was not written")
        os.replace(tmp, path)  # [portable] the last check was the syscall before: the window is microseconds
        return second
    displaced_st = os.lstat(tmp)
    if _same_file(displaced_st, expected):
        if lease_fd < 0 or not _break_pending(lease_fd):
            return tmp  # the file we checked, now at tmp's name; whoever still has it open keeps it (step 4)
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
    """Swap `data` in for the file read as `old` through `fd` (steps 2-5 above; fd -1: the old file is
    looked at by name). Refuses (NoteProtectedError) a file that must not be replaced, and gives the new
    file the old one's owner, group, mode and extended attributes."""
    why = protected(seen)
    if why:
        raise NoteProtectedError(rel, why)
    tmp = temp_file(path, data, mode, like=seen, src_fd=fd, rel=rel)
    ours = os.lstat(tmp)
    lease = _read_lease(fd) if fd >= 0 else None
    broken = False
    second: Path | None = None
    kept: Path | None = None
    try:
        if lease is False:
            raise busy(rel, "another program has it open for writing")
        if KERNEL.open_for_writing is not None and KERNEL.open_for_writing(str(path)):
            raise busy(rel, "another program has it open for writing")
        if KERNEL.exchange is None and KERNEL.replace_file is None:
            second = _second_name(path)
        try:
            now = os.stat(path)
        except OSError:
            raise ConcurrentEditError(rel, CHANGED + "your edit was not written") from None
        current = _read_fd(fd) if fd >= 0 else path.read_bytes()
        if _fingerprint(now) != _fingerprint(seen) or current != old:
            raise ConcurrentEditError(rel, CHANGED + "your edit was not written")
        if second is not None and not _same_file(os.lstat(second), now):
            raise ConcurrentEditError(rel, CHANGED + "a save landed as we wrote; it stands, your edit was not written")
        kept = swap_in(tmp, path, rel, now, lease_fd=fd if lease else -1, data=data, second=second)
    finally:
        if kept != tmp:
            tmp.unlink(missing_ok=True)
        if second is not None and kept != second:
            second.unlink(missing_ok=True)
        if lease:
            broken = _lease_broken(fd)  # release: a writer waiting on the lease goes on now
    try:
        fsync_dir(path.parent)
        _remember_ours(path, data)
        if not _old_changed(fd, kept, seen, old) and not broken:
            return  # the replaced file was left alone: nobody was writing it
        if kept is not None and _put_back(path, kept, ours):
            kept = None
            raise ConcurrentEditError(
                rel, "an editor saved as vault-memory wrote; its save is back in place and our edit was dropped"
            )
        if fd >= 0:
            _rescue(path, rel, fd, data)
        elif kept is not None:
            _rescue_by_name(path, rel, kept)
            kept = None
    finally:
        if kept is not None:
            kept.unlink(missing_ok=True)


def _old_changed(fd: int, kept: Path | None, seen: os.stat_result, old: bytes) -> bool:
    """Whether the file we replaced was written after our check (step 4): through `fd`, else by name."""
    try:
        if fd >= 0:
            after = os.fstat(fd)
            return _fingerprint(after) != _fingerprint(seen) or _read_fd(fd) != old
        if kept is not None:
            st = os.lstat(kept)
            return (st.st_size, st.st_mtime_ns) != (seen.st_size, seen.st_mtime_ns) or kept.read_bytes() != old
    except OSError:
        return False
    return False


def _put_back(path: Path, kept: Path, ours: os.stat_result) -> bool:
    """Put the old file (now at `kept`, an editor writing into it) back at `path`, if the path still holds
    exactly what we wrote; True when it did."""
    try:
        here = os.lstat(path)
    except OSError:
        return False
    if not _same_file(here, ours) or here.st_size != ours.st_size or here.st_mtime_ns != ours.st_mtime_ns:
        return False  # a third save took the path: the rescue keeps the old file's bytes beside it
    if _exchange(kept, path):
        back = os.lstat(kept)
        if _same_file(back, ours) and back.st_size == ours.st_size and back.st_mtime_ns == ours.st_mtime_ns:
            kept.unlink()
        else:  # someone wrote into ours in between: keep that too
            keep_beside(kept, path)
    elif KERNEL.replace_file is not None:
        if KERNEL.replace_file(str(path), str(kept), None):
            return False
    else:
        os.replace(kept, path)
    fsync_dir(path.parent)
    return True


def _held_for_writing(fd: int) -> bool:
    """Whether another process still has the file open for writing (an editor paused between two
    writes of one save: quiet is not done). Linux answers through a lease; elsewhere, False."""
    lease = _read_lease(fd)
    if lease:
        _release_lease(fd)
    return lease is False


def _settle(fingerprint: Callable[[], tuple[int, int, int, int]], fd: int) -> None:
    """Wait until the old file is unchanged for a while (with leases: and closed), RESCUE_MAX_WAIT at most.
    Without leases nothing says an editor paused mid-save is done, so the wait is the quiet period."""
    quiet = RESCUE_QUIET if KERNEL.lease else max(RESCUE_QUIET, QUIET_SECONDS)
    deadline = time.monotonic() + RESCUE_MAX_WAIT
    last = fingerprint()
    steady_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        cur = fingerprint()
        if cur != last:
            last, steady_since = cur, time.monotonic()
        elif time.monotonic() - steady_since >= quiet and (fd < 0 or not _held_for_writing(fd)):
            return


def _rescue(path: Path, rel: str, fd: int, ours: bytes) -> None:
    """An editor wrote into the file we just replaced: put what it wrote back at the path."""
    _settle(lambda: _fingerprint(os.fstat(fd)), fd)
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
            kept = swap_in(tmp, path, rel, here)
            if kept is not None and kept != tmp:
                kept.unlink(missing_ok=True)
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


def _rescue_by_name(path: Path, rel: str, kept: Path) -> None:
    """[Windows] The old file (at `kept`) was written and the path holds a third save: keep it beside."""
    _settle(lambda: _fingerprint(os.lstat(kept)), -1)
    copy = keep_beside(kept, path)
    raise ConcurrentEditError(
        rel, f"an editor saved while vault-memory wrote; it was kept as {copy.name} and our edit was dropped"
    )


__all__ = [
    "CHANGED",
    "KERNEL",
    "PORTABLE_QUIET_FACTOR",
    "QUIET_SECONDS",
    "bookkeeping_quiet",
    "TMP_PREFIX",
    "busy",
    "create",
    "fsync_dir",
    "guarded_replace",
    "has_exchange",
    "is_ours",
    "protected",
    "quiet_for",
    "refused_by_storage",
    "rename_no_overwrite",
    "steady_read",
    "temp_file",
    "unreadable",
    "use_portable",
]
