"""The narrow interface the operations below `Memory` work against.

staging, edits, recall, prefetch, doctor and watch each need a few shared things — the
vault, its settings, the catalog, the embedder, a searcher, the clock — and two ways of
keeping the index in step with a write they just made. They take a `Workspace` (a
Protocol that `IndexFolder` satisfies) instead of `Memory` itself, so imports only go down:
indexfolder.py and memory.py import them; none of them imports either.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..config import Config
from ..errors import VectorStoreUnavailableError
from ..index.calibration import Calibration
from ..index.catalog import Catalog, VectorProgress
from ..index.embedders import Embedder
from ..index.keptout import KeptOutLog
from ..vault.names import Names
from ..vault.notefile import ParsedNote
from ..vault.walk import IgnoreRules
from .decay import DecayModel
from .rules import ReadRules
from .search import Searcher
from .windows import WindowScorer


@dataclass
class Bookkeeping:
    """What one Memory remembers between calls about its own bookkeeping writes."""

    said: set[str] = field(default_factory=set)  # warnings already given (a protected note is said once)
    pending: dict[str, dt.datetime] = field(default_factory=dict)  # node_id -> a rehearsal skipped (busy)


class Workspace(Protocol):
    """What an operation may use of the memory it runs in (IndexFolder implements it)."""

    vault: Path  # absolute, resolved
    config: Config
    decay: DecayModel
    clock: Callable[[], dt.datetime]
    bookkeeping: Bookkeeping
    read_rules: ReadRules  # every number and switch of the read path (rules.py)

    @property
    def rules(self) -> IgnoreRules: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def calibration(self) -> Calibration:
        """The embedder's cosine thresholds (calibration.py)."""
        ...

    def vectors(self) -> VectorProgress:
        """How many chunks have their vector (the rest are found by keyword only, for now)."""
        ...

    def note_names(self) -> Names:
        """Every indexed note's names (file name, path, title, aliases) for resolving targets and links."""
        ...

    def searcher(self, embedder: Embedder | None = None) -> Searcher:
        """A relevance-only Searcher on the dense backend the index calls for."""
        ...

    def kept_out_log(self) -> KeptOutLog:
        """What prefetch left out because it was dormant, for the review (keptout.py)."""
        ...

    def window_scorer(self) -> WindowScorer:
        """Scores search candidates by their best answer window (windows.py)."""
        ...

    def index_paths(self, paths: Iterable[str]) -> bool:
        """Re-index these vault paths now if the writer lock is free (else its holder will); True if done."""
        ...

    def note_written(self, note: ParsedNote) -> None:
        """We just wrote only owned frontmatter keys of this note: update its catalog row if we may write it."""
        ...

    def lexical_only(self, exc: VectorStoreUnavailableError) -> None:
        """The vector store failed mid-call: re-raise, or (lexical fallback) go on BM25-only with a warning."""
        ...


def zoned(value: dt.datetime) -> dt.datetime:
    """`value` with a zone: a time without one is read as UTC, by every operation that takes `now`."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value


def now_utc(ws: Workspace, now: dt.datetime | None) -> dt.datetime:
    """`now` (or the workspace clock) as an aware time without microseconds."""
    return zoned(now or ws.clock()).replace(microsecond=0)


__all__ = ["Bookkeeping", "Workspace", "now_utc", "zoned"]
