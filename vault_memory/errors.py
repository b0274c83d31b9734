"""The one error tree of vault-memory.

    VaultMemoryError                 base: every error we raise on purpose
    ├── ConfigError                  a bad flag, environment variable or config file value
    ├── VaultNotFoundError           the vault folder does not exist
    ├── NoteError                    something about one note (always names the file)
    │   ├── NoteParseError           a note cannot be read (bad bytes, bad YAML; exit 8 like StorageError)
    │   ├── ConcurrentEditError      the note changed between read and write (compare-and-swap lost)
    │   │   └── NoteBusyError        the note is being saved right now (after a short wait and retry)
    │   ├── NoteNotFoundError        no note with that node_id or path
    │   └── UnsafePathError          a path that would leave the vault
    ├── EmbedderError                the embedder cannot produce vectors (missing model, server down)
    ├── IndexStateError              the derived index is missing, corrupt or from another model
    │   ├── EmbedderMismatchError    the index was built by a different embedder
    │   ├── CatalogCorruptError      catalog.sqlite fails SQLite's integrity check (set aside and rebuilt)
    │   └── VectorStoreCorruptError  the embedded Chroma folder cannot be read (set aside and rebuilt)
    ├── LockHeldError                another process holds the index writer lock (or took it over)
    ├── VectorStoreUnavailableError  a Chroma server cannot be reached
    └── StorageError                 a file or folder cannot be written or read: read-only file system,
        │                            permissions, full disk, I/O error (always names the file)
        ├── VaultNotWritableError    the vault cannot be written: the commands that write refuse,
        │                            the rest behave as with --read-only
        ├── NoteWriteError           one note could not be written for that reason (also a NoteError)
        │   └── NoteProtectedError   a note that must not be replaced: hard links, read-only, an owner or
        │                            extended attribute this process cannot keep
        ├── NoteReadError            one note cannot be read for that reason (also a NoteError)
        └── IndexNotWritableError    the index folder cannot be written: readers read it as it is

Messages say what happened, which file or setting, and what to do. The CLI maps
each class to an exit code in one place (cli/main.py `execute`), and turns an OSError
that reaches it into the StorageError message for that file.
"""

from __future__ import annotations

import errno


class VaultMemoryError(Exception):
    """Base class for every error vault-memory raises on purpose."""

    exit_code = 1


class ConfigError(VaultMemoryError):
    """A configuration value is invalid."""

    exit_code = 2


class VaultNotFoundError(VaultMemoryError):
    """The vault folder does not exist."""

    exit_code = 2


class NoteError(VaultMemoryError):
    """A problem with one note; `path` is the vault-relative path."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


def naming_once(path: str, why: str) -> str:
    """`why` as a line about the note at `path`, naming it once: a NoteError's message already
    begins with its path; a recorded reason may not."""
    return why if why.startswith(path) else f"{path}: {why}"


class NoteParseError(NoteError):
    """The note cannot be parsed; it is skipped and left untouched."""

    exit_code = 8  # the file cannot be read (as a note): as for a permission or I/O error, the message says why


class ConcurrentEditError(NoteError):
    """The note is being saved right now, or changed on disk after we read it; our write was abandoned."""

    exit_code = 9


class NoteBusyError(ConcurrentEditError):
    """The note is being saved right now (a fresh mtime, or a program holds it open for writing)."""


class NoteNotFoundError(NoteError):
    """No note matches the given node_id or path."""

    exit_code = 3


class UnsafePathError(NoteError):
    """The path points outside the vault (.., absolute path, symlink out)."""

    exit_code = 2


class EmbedderError(VaultMemoryError):
    """The embedder cannot produce vectors."""

    exit_code = 4


class IndexStateError(VaultMemoryError):
    """The derived index is missing, corrupt or inconsistent."""

    exit_code = 5


class EmbedderMismatchError(IndexStateError):
    """The index holds vectors from a different embedder."""


class CatalogCorruptError(IndexStateError):
    """The catalog's SQLite file is damaged (a failed integrity check, "database disk image is malformed")."""


class VectorStoreCorruptError(IndexStateError):
    """The embedded Chroma folder cannot be read; it is rebuilt from the catalog's vectors."""


class LockHeldError(VaultMemoryError):
    """Another process holds the index writer lock."""

    exit_code = 6

    def __init__(self, message: str, pid: int | None = None) -> None:
        self.pid = pid
        super().__init__(message)


class VectorStoreUnavailableError(VaultMemoryError):
    """The vector store (e.g. a Chroma server) cannot be reached."""

    exit_code = 7


class StorageError(VaultMemoryError):
    """A file or folder cannot be written or read (read-only, permissions, full disk, I/O error)."""

    exit_code = 8


class VaultNotWritableError(StorageError):
    """The vault cannot be written; nothing was written."""


class NoteWriteError(NoteError, StorageError):
    """One note could not be written because of its storage; the file is unchanged.

    A NoteError too, so bookkeeping that skips a note it cannot write (rehearsal) skips this one."""

    exit_code = 8


class NoteProtectedError(NoteWriteError):
    """A note whose replacement would lose what the file system knows (a second hard link, a read-only
    mode, an owner or extended attribute this process cannot set): it is left as it is."""


class NoteReadError(NoteError, StorageError):
    """One note cannot be read because of its storage (permission denied, I/O error)."""

    exit_code = 8


class IndexNotWritableError(StorageError):
    """The index folder cannot be written (a command that must write the index refuses)."""


# What to do about an OSError, by errno: the second half of every storage message.
_HINTS = {
    errno.EROFS: "the file system is read-only: remount it writable",
    errno.EACCES: "permission denied: check the owner and permissions (ls -l)",
    errno.EPERM: "operation not permitted: check the owner, permissions and attributes (lsattr)",
    errno.ENOSPC: "the disk is full: free some space",
    errno.EDQUOT: "the disk quota is exceeded: free some space or raise the quota",
    errno.EIO: "the disk reported an I/O error: check the disk (dmesg) and restore the file from a backup",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n)",
    errno.ENFILE: "too many open files in the system",
}
# errnos that mean "this place cannot be written", as opposed to a missing or odd file.
UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})


def storage_hint(exc: OSError) -> str:
    """What to do about this OSError, in a few words."""
    if exc.errno in _HINTS:
        return _HINTS[exc.errno]
    return exc.strerror or str(exc) or exc.__class__.__name__


def storage_message(exc: OSError, what: str = "", path: object = None) -> str:
    """`cannot write <file> (<strerror>): <what to do>` for an OSError, naming the file it was about."""
    where = path if path is not None else (exc.filename if exc.filename is not None else "a file")
    reason = exc.strerror or exc.__class__.__name__
    verb = what or ("write" if exc.errno in UNWRITABLE else "read")
    hint = storage_hint(exc)
    return f"cannot {verb} {where} ({reason})" + ("" if hint == reason else f": {hint}")
