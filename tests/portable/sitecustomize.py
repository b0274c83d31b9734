"""Run Python as if the system offered none of the calls the write path can lean on (issue 26):

    PYTHONPATH=tests/portable .venv/bin/python -m pytest -m save_race

Loaded at start-up by every interpreter that has this folder on PYTHONPATH (the test run and
every subprocess it starts: recall processes, `vault-memory watch`). Right after
vault_memory.vault.atomic is executed, its KERNEL becomes oscalls.PORTABLE: no read lease, no
renameat2 exchange, no ReplaceFileW, no share-mode probe, no fcopyfile; only the portable
steps of atomic.py's guard are left, as on a system that has none of them.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

os.environ["VM_PORTABLE_LANE"] = "1"  # lets tests see that the lane is on (and say so when skipping)


class _Portable:
    """After vault_memory.vault.atomic is executed, switch it to the portable steps."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name != "vault_memory.vault.atomic":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        real = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            real(module)
            module.use_portable()

        loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Portable())  # type: ignore[arg-type]
