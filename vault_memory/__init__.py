"""vault-memory: a Markdown vault as an AI agent's memory.

from vault_memory import Memory
with Memory(vault="~/notes") as mem:
    for hit in mem.recall("what editor do I use?"):
        print(hit.path, hit.snippet)
    system_prompt = BASE_PROMPT + mem.prefetch(user_turn).block
    mem.remember("The user switched to Helix in November.")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import Config, resolve_config
from .errors import VaultMemoryError
from .lifecycle.recall import Hit
from .memory import Memory, open_memory

if TYPE_CHECKING:
    from .lifecycle.prefetch import PrefetchEntry, PrefetchResult
    from .records import CommitReport, Committed, Left, PinResult, StagedMemory

# The records of the other verbs are imported on first use (PEP 562), so `import vault_memory`
# for a recall does not load the write path and prefetch (bench `cold`).
_LAZY = {
    "PrefetchEntry": "lifecycle.prefetch",
    "PrefetchResult": "lifecycle.prefetch",
    "CommitReport": "records",
    "Committed": "records",
    "Left": "records",
    "PinResult": "records",
    "StagedMemory": "records",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CommitReport",
    "Committed",
    "Config",
    "Hit",
    "Left",
    "Memory",
    "PinResult",
    "PrefetchEntry",
    "PrefetchResult",
    "StagedMemory",
    "VaultMemoryError",
    "open_memory",
    "resolve_config",
]
__version__ = "0.1.0"
