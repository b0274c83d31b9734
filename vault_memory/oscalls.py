"""What each operating system offers for replacing a file safely, each looked up only where it exists.

    Kernel.exchange(a, b)          swap what two names point at, atomically:
                                   Linux renameat2(RENAME_EXCHANGE), macOS renamex_np(RENAME_SWAP)
    Kernel.lease                   Linux read leases (fcntl F_SETLEASE): "no other process has it open
                                   for writing", held from the check through the swap
    Kernel.replace_file(p, t, b)   Windows ReplaceFileW: put t at p, keeping what was at p under b
    Kernel.open_for_writing(p)     Windows share modes: whether another process holds p open for writing
    Kernel.copy_metadata(src, dst) macOS fcopyfile(COPYFILE_ACL | COPYFILE_XATTR) between descriptors
                                   (Linux copies xattrs with os.listxattr; Windows' ReplaceFileW keeps them)

Each entry is found once through ctypes, guarded, and is None where the system has no such call;
atomic.py (the only user) states what it relies on where each is None. `PORTABLE` has them all
off: what a system without any of them gets (the CI lane `tests/portable` and
`python -m bench save_race --portable` run the write path that way). exchangedata(2), macOS's
older swap, is deliberately not used: APFS does not support it, and descriptors follow the
swapped *data*, so the file we kept open would no longer be the one we displaced.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:  # POSIX; leases are Linux-only
    import fcntl as fcntl_mod
except ImportError:  # pragma: no cover - Windows
    fcntl_mod = None  # type: ignore[assignment]

Exchange = Callable[[bytes, bytes], int]  # 0, or an errno
ReplaceFile = Callable[[str, str, str | None], int]  # 0, or a Windows error code
OpenForWriting = Callable[[str], bool]
CopyMetadata = Callable[[int, int], int]  # 0, or an errno

# errnos that mean "this file system cannot exchange": fall back to the portable steps.
NO_EXCHANGE = frozenset({errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV})
ERROR_SHARING_VIOLATION = 32  # Windows: another process has the file open in a way our share mode denies
ERROR_LOCK_VIOLATION = 33
ERROR_UNABLE_TO_REMOVE_REPLACED = 1175  # Windows ReplaceFileW: the replaced file is in use, nothing moved
ERROR_UNABLE_TO_MOVE_REPLACEMENT = 1176  # ...the replacement could not take the name; the old file is intact
ERROR_UNABLE_TO_MOVE_REPLACEMENT_2 = 1177  # ...and the old file is now under the backup name


@dataclass(frozen=True)
class Kernel:
    """The calls this system has (None: it has not)."""

    name: str
    exchange: Exchange | None = None
    lease: bool = False
    replace_file: ReplaceFile | None = None
    open_for_writing: OpenForWriting | None = None
    copy_metadata: CopyMetadata | None = None


PORTABLE = Kernel("portable")


def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - no C library to look in
        return None


def linux_exchange(libc: Any) -> Exchange | None:
    """glibc's renameat2 (Linux >= 3.15, glibc >= 2.28) with RENAME_EXCHANGE, or None."""
    fn = getattr(libc, "renameat2", None) if libc is not None else None
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    at_fdcwd, rename_exchange = -100, 2

    def exchange(a: bytes, b: bytes) -> int:
        return 0 if fn(at_fdcwd, a, at_fdcwd, b, rename_exchange) == 0 else ctypes.get_errno()

    return exchange


def darwin_exchange(libc: Any) -> Exchange | None:
    """macOS's renamex_np (10.12+) with RENAME_SWAP, or None."""
    fn = getattr(libc, "renamex_np", None) if libc is not None else None
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    rename_swap = 0x2

    def exchange(a: bytes, b: bytes) -> int:
        return 0 if fn(a, b, rename_swap) == 0 else ctypes.get_errno()

    return exchange


def darwin_copy_metadata(libc: Any) -> CopyMetadata | None:
    """macOS's fcopyfile with COPYFILE_ACL | COPYFILE_XATTR (Finder tags, quarantine, ACLs), or None."""
    fn = getattr(libc, "fcopyfile", None) if libc is not None else None
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32]
    fn.restype = ctypes.c_int
    copyfile_acl, copyfile_xattr = 1 << 0, 1 << 2

    def copy(src_fd: int, dst_fd: int) -> int:
        return 0 if fn(src_fd, dst_fd, None, copyfile_acl | copyfile_xattr) == 0 else ctypes.get_errno()

    return copy


def windows_calls(
    kernel32: Any, get_error: Callable[[], int] | None = None
) -> tuple[ReplaceFile | None, OpenForWriting | None]:
    """ReplaceFileW and a share-mode probe from kernel32, or None for each it lacks (`get_error`:
    GetLastError, as ctypes keeps it on Windows)."""
    replace_w = getattr(kernel32, "ReplaceFileW", None)
    create_w = getattr(kernel32, "CreateFileW", None)
    close = getattr(kernel32, "CloseHandle", None)
    if get_error is None:
        get_error = getattr(ctypes, "get_last_error", lambda: 0)
    replace_file: ReplaceFile | None = None
    probe: OpenForWriting | None = None
    if replace_w is not None:
        replace_w.argtypes = [ctypes.c_wchar_p] * 3 + [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
        replace_w.restype = ctypes.c_int
        ignore_merge_errors = 0x2

        def replace(replaced: str, replacement: str, backup: str | None) -> int:
            ok = replace_w(replaced, replacement, backup, ignore_merge_errors, None, None)
            return 0 if ok else (get_error() or 1)

        replace_file = replace
    if create_w is not None and close is not None:
        create_w.argtypes = [ctypes.c_wchar_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p]
        create_w.argtypes += [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p]
        create_w.restype = ctypes.c_void_p
        close.argtypes = [ctypes.c_void_p]
        generic_read, share_read_delete, open_existing = 0x80000000, 0x1 | 0x4, 3
        invalid = ctypes.c_void_p(-1).value

        def open_for_writing(path: str) -> bool:
            # Asking to share the file for reading only is refused while another process has it open
            # for writing: an editor in the middle of a save. The handle is closed at once, so an
            # editor that opens it a moment later is never refused because of us.
            handle = create_w(path, generic_read, share_read_delete, None, open_existing, 0, None)
            if handle is None or handle == invalid:
                return get_error() in (ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION)
            close(handle)
            return False

        probe = open_for_writing
    return replace_file, probe


def detect(platform: str = sys.platform) -> Kernel:
    """The calls the running system offers."""
    if platform.startswith("linux"):
        lease = fcntl_mod is not None and hasattr(fcntl_mod, "F_SETLEASE") and hasattr(fcntl_mod, "F_SETSIG")
        return Kernel("linux", exchange=linux_exchange(_libc()), lease=lease)
    if platform == "darwin":
        libc = _libc()
        return Kernel("macos", exchange=darwin_exchange(libc), copy_metadata=darwin_copy_metadata(libc))
    if platform == "win32":
        try:
            kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
        except (AttributeError, OSError):
            return PORTABLE
        replace_file, probe = windows_calls(kernel32)
        return Kernel("windows", replace_file=replace_file, open_for_writing=probe)
    return PORTABLE


def fsencode(path: os.PathLike[str] | str) -> bytes:
    return os.fsencode(path)


__all__ = ["PORTABLE", "Kernel", "detect", "fcntl_mod", "fsencode"]
