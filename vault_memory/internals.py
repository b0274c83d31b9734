"""`internals(mem)`: what runs behind a `Memory`, for the edges, the bench and the tests.

`Memory`'s public members are the documented operations only (memory.py); the index folder, the
embedder, the lock and the caches they run in are an `IndexFolder` (indexfolder.py). The CLI, the
MCP server, watch and doctor need that plumbing too, and reach it here. Imports nothing at run
time, so the CLI can import it at start-up without loading the index code (bench `cold`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .indexfolder import IndexFolder


class _Facade(Protocol):  # `Memory`, named structurally so that this module sits below memory.py
    _folder: IndexFolder


def internals(mem: _Facade) -> IndexFolder:
    """The `IndexFolder` behind `mem`: not part of the documented API."""
    return mem._folder


__all__ = ["internals"]
