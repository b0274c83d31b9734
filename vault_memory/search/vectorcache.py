"""The vector cache of answer sentences (windows.py): vectors by text hash, asked of the index's
sentence store first (sentences.py), then of a small SQLite file beside the catalog
(`windows.sqlite`), then of the embedder, so a text is never embedded twice.

    WindowCache       the cache (SQLite; never required: errors only log), with an in-memory LRU
    open_cache(...)   the cache of an index folder
    rows_in(...)      an `IN (...)` query's rows, a few hundred keys a statement
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..hashing import sha256_hex
from ..index.embedders import Embedder, takes_whole

log = logging.getLogger(__name__)

#: The cache keeps at most this many vectors (about 1.5 KB each), oldest dropped first.
CACHE_MAX_ROWS = 50_000
CACHE_NAME = "windows.sqlite"
MEM_ROWS = 20_000  # ... and at most this many in a process's memory (30 MB), the least recently used dropped
FLUSH_ROWS = 512  # new vectors are written to the file in groups of this many ...
FLUSH_SECONDS = 5.0  # ... or when this long has passed since the last write (and at close)


class Indexed(Protocol):
    """Vectors by text hash written with the index (sentences.SentenceStore)."""

    def get(self, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...


class WindowCache:
    """Window vectors by text hash, in a small SQLite file of their own beside the catalog.

    Derived and disposable like the rest of the index, shared by every process on the index
    (recall in a shell, the MCP server, a watcher), and written by readers too: it is not
    the catalog, so it needs no writer lock. Any SQLite error (a read-only folder, a busy
    file) only means the vectors are not kept; recall never fails for it. `path=None` keeps
    them in memory for this object's life.
    """

    def __init__(
        self,
        path: Path | None,
        identity: str,
        *,
        max_rows: int = CACHE_MAX_ROWS,
        mem_rows: int = MEM_ROWS,
        indexed: Indexed | None = None,
    ) -> None:
        """`indexed`: the sentence vectors written with the index (sentences.py), asked first."""
        self.identity = identity
        self.mem_rows = mem_rows
        self.indexed = indexed
        self.max_rows = max_rows
        # the vectors this process used, newest last: at most `mem_rows` (a server answering for weeks
        # kept every one it ever embedded or read, 1.5 KB each)
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self._indexed: set[str] = set()  # of `_mem`'s, the vectors `indexed` holds (index_vectors)
        self._unwritten: list[tuple[str, bytes]] = []
        self._flushed_at = time.monotonic()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            try:
                self._db = self._open(path)
            except (sqlite3.Error, OSError) as exc:
                log.debug("window cache %s unavailable (%s): keeping window vectors in memory", path, exc)
                self._db = None

    def _open(self, path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=0.5, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS windows (text_hash TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        if row is None or row[0] != self.identity:  # another model's vectors are worth nothing
            db.execute("DELETE FROM windows")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (self.identity,))
        db.commit()
        return db

    def close(self) -> None:
        if self._db is not None:
            self.flush()
            self._db.close()
            self._db = None

    def __enter__(self) -> WindowCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out = {h: self._mem[h] for h in hashes if h in self._mem}
        for h in out:
            self._mem.move_to_end(h)
        want = [h for h in hashes if h not in out]
        if self.indexed is not None and want:
            out |= self._read_indexed(want)
            want = [h for h in want if h not in out]
        if self._db is not None and want:
            try:
                for h, blob in rows_in(
                    self._db, "SELECT text_hash, vec FROM windows WHERE text_hash IN ({marks})", want
                ):
                    out[h] = self._remember(h, np.frombuffer(blob, dtype=np.float32))
            except sqlite3.Error as exc:
                log.debug("window cache read failed (%s)", exc)
        return out

    def _read_indexed(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors `indexed` holds of `hashes`, kept in memory too, as the file's are."""
        assert self.indexed is not None
        out = {h: self._remember(h, vec) for h, vec in self.indexed.get(hashes).items()}
        self._indexed.update(h for h in out if h in self._mem)  # a batch past `mem_rows` keeps its last
        return out

    def _remember(self, h: str, vec: np.ndarray) -> np.ndarray:
        self._mem[h] = vec
        self._mem.move_to_end(h)
        while len(self._mem) > self.mem_rows:
            self._indexed.discard(self._mem.popitem(last=False)[0])
        return vec

    def put(self, hashes: Sequence[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
        """Keep these vectors: in memory at once, in the file at the next `flush` (written
        behind: a commit per new question was ~1.5 ms of its recall). `close` flushes; a
        long-lived process flushes every FLUSH_ROWS rows or FLUSH_SECONDS. Returns them as kept
        (as read back: the same bits every time)."""
        rows = [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in zip(hashes, vectors, strict=True)]
        kept = {h: self._remember(h, np.frombuffer(blob, dtype=np.float32)) for h, blob in rows}
        if self._db is None or not rows:
            return kept
        self._unwritten.extend(rows)
        if len(self._unwritten) >= FLUSH_ROWS or time.monotonic() - self._flushed_at >= FLUSH_SECONDS:
            self.flush()
        return kept

    def flush(self) -> None:
        """Write the vectors kept since the last flush to the file (errors only log)."""
        rows, self._unwritten = self._unwritten, []
        self._flushed_at = time.monotonic()
        if self._db is None or not rows:
            return
        try:
            self._db.executemany("INSERT OR REPLACE INTO windows VALUES (?, ?)", rows)
            top = self._db.execute("SELECT max(rowid) FROM windows").fetchone()[0] or 0
            if top > self.max_rows:  # oldest out; rowids only grow, so this is insertion order
                self._db.execute("DELETE FROM windows WHERE rowid <= ?", (top - self.max_rows,))
            self._db.commit()
        except sqlite3.Error as exc:
            log.debug("window cache write failed (%s): not kept", exc)
            try:
                self._db.rollback()
            except sqlite3.Error:
                pass

    def index_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """text -> vector, for the texts whose vector the index holds (`indexed`): nothing is
        embedded, and what a question embedded before does not count, so what a question is
        answered depends on the index, not on the questions asked before it."""
        if self.indexed is None or not texts:
            return {}
        keys = {t: sha256_hex(t) for t in texts}
        held = {h: self._mem[h] for h in set(keys.values()) if h in self._indexed}
        for h in held:
            self._mem.move_to_end(h)
        want = sorted({h for h in keys.values() if h not in held})
        if want:
            held |= self._read_indexed(want)
        return {t: held[h] for t, h in keys.items() if h in held}

    def vectors(self, texts: Sequence[str], embedder: Embedder) -> dict[str, np.ndarray]:
        """text -> vector, embedding (in one batch) only the texts never seen before. A text longer
        than the model's window gets none (a model refuses it rather than truncate it): a sentence
        fits the chunk it comes from, but a property line read with its note's title (`about`) can
        outgrow it, and then the chunk's own cosine stands for it."""
        keys = {t: sha256_hex(t) for t in texts}
        known = self.get(sorted(set(keys.values())))
        missing = [t for t in sorted({t for t, h in keys.items() if h not in known}) if takes_whole(embedder, t)]
        if missing:
            vecs = np.asarray(embedder.embed(missing), dtype=np.float32)
            known |= self.put([keys[t] for t in missing], vecs)
        return {t: known[h] for t, h in keys.items() if h in known}


def open_cache(index_dir: Path | None, embedder: Embedder, indexed: Indexed | None = None) -> WindowCache:
    """The window cache of an index folder (in memory when there is none), asking `indexed` first."""
    return WindowCache(index_dir / CACHE_NAME if index_dir is not None else None, embedder.identity, indexed=indexed)


def rows_in(db: sqlite3.Connection, query: str, keys: Sequence[Any], step: int = 500) -> Iterator[tuple[Any, ...]]:
    """The rows `query` gives for `keys`, its `IN ({marks})` filled with `step` of them at a time:
    a fill asks thousands at once, past what one statement may bind on an older SQLite (999)."""
    for start in range(0, len(keys), step):
        part = list(keys[start : start + step])
        yield from db.execute(query.format(marks=",".join("?" * len(part))), part)


__all__ = ["CACHE_NAME", "MEM_ROWS", "Indexed", "WindowCache", "open_cache", "rows_in"]
