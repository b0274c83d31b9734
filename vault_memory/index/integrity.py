"""Is the catalog sound? SQLite's integrity checks, telling damage from a full disk or a
read-only folder, and saving what can be saved of a damaged catalog's embedding cache.

SQLite says a file is damaged only when a query reaches a damaged page ("database disk image
is malformed"), so `Memory` asks `is_corruption` of any sqlite3 error it meets, and `doctor`
runs `check_database` (quick_check reads every b-tree page; FTS5's check its own index, which
random bytes inside a page can break without quick_check noticing).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import CatalogCorruptError, IndexNotWritableError, IndexStateError, VaultMemoryError

CHECK_SECONDS = 5.0  # per integrity check: quick_check reads ~200 MB/s here, so a 1 GB catalog is checked in part
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT (and _VTAB, _INDEX, ...), SQLITE_NOTADB
_CORRUPT_WORDS = ("malformed", "not a database", "corrupt")


@dataclass
class IntegrityReport:
    """What `check_database` found: `problems` (empty: none seen) and the checks cut short or not run."""

    problems: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _deadline(end: float) -> Callable[[], int]:
    """An SQLite progress handler that interrupts the statement once `end` (monotonic) has passed."""
    return lambda: int(time.monotonic() > end)


def is_corruption(exc: BaseException) -> bool:
    """Whether an sqlite3 error says the database file is damaged (not locked, full or read-only)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _CORRUPT_CODES
    return any(w in str(exc).lower() for w in _CORRUPT_WORDS)


def is_unwritable(exc: BaseException) -> bool:
    """Whether an sqlite3 error says the file cannot be written (read-only, full disk, permissions)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return any(
        w in text for w in ("readonly", "read-only", "disk is full", "unable to open database file", "disk i/o error")
    )


def open_error(path: Path, exc: BaseException) -> VaultMemoryError:
    """The error for a catalog that cannot be opened (or used), naming the file and what to do."""
    if is_corruption(exc):
        return CatalogCorruptError(
            f"index catalog {path} is damaged ({exc}); `vault-memory doctor --fix` sets it aside and rebuilds it "
            "from the vault (nothing in the vault is lost)"
        )
    if isinstance(exc, OSError) or is_unwritable(exc):
        return IndexNotWritableError(
            f"cannot open index catalog {path} ({getattr(exc, 'strerror', None) or exc}): make the folder writable, "
            "free some space, or pass --index-dir to a writable folder"
        )
    return IndexStateError(f"index catalog {path} is unreadable ({exc}); run `vault-memory index --rebuild`")


def salvage_vectors(path: Path) -> tuple[str | None, dict[str, bytes]]:
    """(embedder, text_hash -> vector bytes) read from a damaged catalog, as far as it can be read.

    The embedding cache is the one costly part of the index: a row whose hash and length look
    right and whose vector is unit-length (every embedder normalises) is kept; reading stops at
    the first damaged page. Nothing at all is an answer too."""
    rows: dict[str, bytes] = {}
    embedder: str | None = None
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None, rows
    try:
        got = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        embedder = str(got[0]) if got else None
        for text_hash, blob in db.execute("SELECT text_hash, vec FROM vectors"):
            if (
                isinstance(text_hash, str)
                and re.fullmatch(r"[0-9a-f]{64}", text_hash)
                and isinstance(blob, bytes)
                and blob
                and len(blob) % 4 == 0
            ):
                vec = np.frombuffer(blob, dtype=np.float32)
                with np.errstate(over="ignore", invalid="ignore"):  # damaged bytes: huge values are refused below
                    unit = bool(np.all(np.isfinite(vec))) and abs(float(vec @ vec) - 1.0) < 1e-3
                if unit:
                    rows[text_hash] = blob
    except (sqlite3.Error, ValueError):
        pass
    finally:
        db.close()
    if rows:  # one model, one dimension: keep the common length only
        lengths: dict[int, int] = {}
        for blob in rows.values():
            lengths[len(blob)] = lengths.get(len(blob), 0) + 1
        common = max(lengths, key=lambda n: lengths[n])
        rows = {h: b for h, b in rows.items() if len(b) == common}
    return (embedder if rows else None), rows


def check_database(
    db: sqlite3.Connection, *, read_only: bool = False, max_seconds: float = CHECK_SECONDS
) -> IntegrityReport:
    """SQLite's `PRAGMA quick_check` and FTS5's own integrity check of the catalog, each stopped
    after `max_seconds` (a huge catalog is then reported as checked in part, not as damaged).

    quick_check verifies every b-tree page (not index contents: that is what makes it quick);
    random bytes inside a page of the FTS5 index pass it but fail the FTS5 check."""
    report = IntegrityReport()
    for name, sql in (
        ("quick_check", "PRAGMA quick_check(20)"),
        ("fts", "INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')"),
    ):
        db.set_progress_handler(_deadline(time.monotonic() + max_seconds), 10_000)
        try:
            rows = db.execute(sql).fetchall()
            if name == "quick_check":
                report.problems += [str(r[0]) for r in rows if str(r[0]) != "ok"]
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                report.partial.append(f"{name} stopped after {max_seconds:g} s")
            elif name == "fts" and read_only and "readonly" in str(exc):
                report.partial.append("fts not run (it needs a writable catalog)")
            else:
                report.problems.append(f"{name}: {exc}")
        except sqlite3.DatabaseError as exc:
            report.problems.append(f"{name}: {exc}")
        finally:
            db.set_progress_handler(None, 0)
            if name == "fts" and not read_only:
                db.rollback()
        if report.problems:
            break
    return report
