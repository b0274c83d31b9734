"""The one error tree of vault-memory.

    VaultMemoryError                 base: every error we raise on purpose
    ├── ConfigError                  a bad flag, environment variable or config file value
    ├── VaultNotFoundError           the vault folder does not exist
    ├── NoteError                    something about one note (always names the file)
    │   ├── NoteParseError           a note cannot be read (bad bytes, bad YAML)
    │   ├── ConcurrentEditError      the note changed between read and write (compare-and-swap lost)
    │   ├── NoteNotFoundError        no note with that node_id or path
    │   └── UnsafePathError          a path that would leave the vault
    ├── EmbedderError                the embedder cannot produce vectors (missing model, server down)
    ├── IndexStateError              the derived index is missing, corrupt or from another model
    │   └── EmbedderMismatchError    the index was built by a different embedder
    ├── LockHeldError                another process holds the index writer lock
    └── VectorStoreUnavailableError  a Chroma server cannot be reached

Messages say what happened, which file or setting, and what to do. The CLI maps
each class to an exit code in one place.
"""

from __future__ import annotations


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


class NoteParseError(NoteError):
    """The note cannot be parsed; it is skipped and left untouched."""


class ConcurrentEditError(NoteError):
    """The note changed on disk after we read it; our write was abandoned."""


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


class LockHeldError(VaultMemoryError):
    """Another process holds the index writer lock."""

    exit_code = 6

    def __init__(self, message: str, pid: int | None = None) -> None:
        self.pid = pid
        super().__init__(message)


class VectorStoreUnavailableError(VaultMemoryError):
    """The vector store (e.g. a Chroma server) cannot be reached."""

    exit_code = 7
