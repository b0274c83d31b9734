"""What forgetting kept out of prefetch blocks: a small log in the index folder, for the review.

Prefetch leaves out a note that answered the turn but is dormant (prefetch.py: forgetting
decides what memory offers unasked). That is invisible by nature, so each time it happens
prefetch records it here, and the review note counts it: how many blocks went without which
notes this week, with an example turn each ("what decay kept out", issue 24).

Derived and disposable like the rest of the index: a SQLite file of its own beside the catalog
(`kept-out.sqlite`), written by any process that prefetches (it is not the catalog, so it takes
no writer lock), keeping the last KEEP_DAYS days and at most MAX_ROWS rows. Any SQLite error
only means nothing is recorded: prefetch never fails for it. A turn is kept as its first
TURN_CHARS characters, in the index folder only (never in the vault).
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

FILE_NAME = "kept-out.sqlite"
KEEP_DAYS = 90  # the review looks back a week (review_window_days); a quarter leaves room to change it
MAX_ROWS = 20_000
TURN_CHARS = 80


@dataclass(frozen=True)
class KeptOutNote:
    """One note forgetting kept out of blocks in a window: how often, and one turn it answered."""

    node_id: str
    path: str
    blocks: int  # prefetches that left it out
    strength: float  # its strength the last time
    example: str  # the start of a turn it answered


class KeptOutLog:
    """The log (module docstring). `path=None` keeps nothing."""

    def __init__(self, path: Path | None) -> None:
        self._db: sqlite3.Connection | None = None
        if path is None:
            return
        try:
            db = sqlite3.connect(path, timeout=0.5, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS kept_out (at REAL NOT NULL, node_id TEXT NOT NULL, path TEXT NOT NULL, "
                "strength REAL NOT NULL, turn TEXT NOT NULL)"
            )
            db.execute("CREATE INDEX IF NOT EXISTS kept_out_at ON kept_out (at)")
            db.commit()
            self._db = db
        except (sqlite3.Error, OSError) as exc:
            log.debug("kept-out log %s unavailable (%s): nothing recorded", path, exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def record(self, now: dt.datetime, turn: str, notes: Sequence[tuple[str, str, float]]) -> None:
        """(node_id, path, strength) of the notes one prefetch at `now` left out."""
        if self._db is None or not notes:
            return
        at = now.timestamp()
        try:
            with self._db:
                self._db.executemany(
                    "INSERT INTO kept_out VALUES (?, ?, ?, ?, ?)",
                    [(at, n, p, s, turn[:TURN_CHARS]) for n, p, s in notes],
                )
                self._db.execute("DELETE FROM kept_out WHERE at < ?", (at - KEEP_DAYS * 86400,))
                self._db.execute(
                    "DELETE FROM kept_out WHERE rowid NOT IN (SELECT rowid FROM kept_out ORDER BY at DESC LIMIT ?)",
                    (MAX_ROWS,),
                )
        except sqlite3.Error as exc:
            log.debug("kept-out log write failed (%s)", exc)

    def since(self, start: dt.datetime, end: dt.datetime) -> list[KeptOutNote]:
        """Each note left out between `start` and `end`, most often first."""
        if self._db is None:
            return []
        try:
            rows = self._db.execute(
                "SELECT node_id, path, count(*), max(at) FROM kept_out WHERE at >= ? AND at <= ? "
                "GROUP BY node_id ORDER BY count(*) DESC, path",
                (start.timestamp(), end.timestamp()),
            ).fetchall()
            out = []
            for node_id, path, count, last in rows:
                strength, turn = self._db.execute(
                    "SELECT strength, turn FROM kept_out WHERE node_id = ? AND at = ? LIMIT 1", (node_id, last)
                ).fetchone()
                out.append(KeptOutNote(node_id, path, int(count), float(strength), str(turn)))
            return out
        except sqlite3.Error as exc:
            log.debug("kept-out log read failed (%s)", exc)
            return []

    def blocks(self, start: dt.datetime, end: dt.datetime) -> int:
        """Prefetches between `start` and `end` that left out at least one note."""
        if self._db is None:
            return 0
        try:
            row = self._db.execute(
                "SELECT count(DISTINCT at || turn) FROM kept_out WHERE at >= ? AND at <= ?",
                (start.timestamp(), end.timestamp()),
            ).fetchone()
            return int(row[0])
        except sqlite3.Error:
            return 0


def open_log(index_dir: Path | None) -> KeptOutLog:
    return KeptOutLog(index_dir / FILE_NAME if index_dir is not None else None)


__all__ = ["FILE_NAME", "KeptOutLog", "KeptOutNote", "open_log"]
