"""vault-memory: a Markdown vault as an AI agent's memory.

    from vault_memory import Memory
    with Memory(vault="~/notes") as mem:
        for hit in mem.recall("what editor do I use?"):
            print(hit.path, hit.snippet)
"""

from __future__ import annotations

from .config import Config, resolve_config
from .errors import VaultMemoryError
from .memory import Memory, open_memory
from .recall import Hit

__all__ = ["Config", "Hit", "Memory", "VaultMemoryError", "open_memory", "resolve_config"]
__version__ = "0.1.0"
