"""The demo vault shipped inside the package: a small vault to try vault-memory on from any
folder after `pipx install` or `uv tool install` (the repository's `sample_vault/` is not in the
wheel, and holds deliberate edge cases besides).

    dest = copy_demo(Path("vault-memory-demo"))   # then: vault-memory --vault vault-memory-demo recall "..."

The copy is the user's to write into (recall records a use in it); the package's own files are
never a vault, so an install in a read-only location still works.
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from .errors import ConfigError, StorageError, storage_message

#: The demo vault's folder inside the package.
DEMO_FOLDER = ("data", "demo_vault")


def demo_vault() -> Traversable:
    """The shipped demo vault (a folder inside the installed package)."""
    return resources.files("vault_memory").joinpath(*DEMO_FOLDER)


def _copy(src: Traversable, dest: Path) -> int:
    count = 0
    for entry in sorted(src.iterdir(), key=lambda e: e.name):
        target = dest / entry.name
        if entry.is_dir():
            target.mkdir(exist_ok=True)
            count += _copy(entry, target)
        elif entry.name.endswith(".md"):
            target.write_bytes(entry.read_bytes())
            count += 1
    return count


def copy_demo(dest: Path) -> Path:
    """Copy the demo vault into `dest` (made if missing; an existing folder must be empty), and
    return it resolved. Refuses to write into a folder that holds anything."""
    dest = dest.expanduser()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConfigError(f"{dest}: exists and is not an empty folder; give a new folder for the demo vault")
    src = demo_vault()
    if not src.is_dir():
        raise ConfigError("the demo vault is missing from this install of vault-memory; reinstall it")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        copied = _copy(src, dest)
    except OSError as exc:
        raise StorageError(storage_message(exc, "write the demo vault", dest)) from None
    if not copied:
        raise ConfigError("the demo vault in this install of vault-memory is empty; reinstall it")
    return dest.resolve()


__all__ = ["DEMO_FOLDER", "copy_demo", "demo_vault"]
