"""vault-memory: a Markdown vault as an AI agent's memory.

from vault_memory import Memory
with Memory(vault="~/notes") as mem:
    for hit in mem.recall("what editor do I use?"):
        print(hit.path, hit.snippet)
    system_prompt = BASE_PROMPT + mem.prefetch(user_turn).block
    mem.remember("The user switched to Helix in November.")
"""

from __future__ import annotations

from .config import Config, resolve_config
from .errors import VaultMemoryError
from .memory import Memory, open_memory
from .prefetch import PrefetchEntry, PrefetchResult
from .recall import Hit
from .records import CommitReport, Committed, Left, PinResult, StagedMemory

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
