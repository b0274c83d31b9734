"""Run Python as if fcntl did not exist (as on Windows), to test the package and the suite there:

    PYTHONPATH=tests/no_fcntl .venv/bin/python -m pytest -m "not slow"

Loaded at start-up by every interpreter that has this folder on PYTHONPATH (the test run and
every subprocess it starts). fcntl cannot be imported by anyone; vault_memory.index.lock, which then
finds neither fcntl nor msvcrt, is given its msvcrt backend over a stand-in built on Linux
open-file-description locks (byte-range and per open file, as msvcrt.locking is). msvcrt itself
is not faked: the standard library (subprocess) takes its presence to mean Windows.
Linux only (F_OFD_SETLK).
"""

from __future__ import annotations

import errno
import fcntl as _fcntl
import importlib.machinery
import os
import struct
import sys
import types
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

sys.modules["fcntl"] = None  # type: ignore[assignment]

msvcrt = types.SimpleNamespace(LK_NBLCK=2, LK_UNLCK=0)


def locking(fd: int, mode: int, nbytes: int) -> None:
    kind = _fcntl.F_UNLCK if mode == msvcrt.LK_UNLCK else _fcntl.F_WRLCK
    here = os.lseek(fd, 0, os.SEEK_CUR)
    try:
        _fcntl.fcntl(fd, _fcntl.F_OFD_SETLK, struct.pack("hhqqi", kind, os.SEEK_SET, here, nbytes, 0))
    except OSError as exc:
        raise PermissionError(errno.EACCES, "Permission denied") from exc


msvcrt.locking = locking


class _GiveTheLockMsvcrt:
    """After vault_memory.index.lock is executed, swap its backend (it found no locking module) for msvcrt's."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name != "vault_memory.index.lock" or ("msvcrt" in sys.modules and sys.modules["msvcrt"] is None):
            return None  # not the lock, or a test hiding msvcrt too
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        real = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            real(module)
            assert module.BACKEND.name == "none", module.BACKEND.name
            module.BACKEND = module._Msvcrt(msvcrt)

        loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _GiveTheLockMsvcrt())  # type: ignore[arg-type]
