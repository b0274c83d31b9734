"""Query vectors: never embed the same query twice, and load the model while other work runs.

`QueryEmbedder` wraps the index's embedder for the readers (recall, prefetch, staging's
conflict check), which embed one text at a time. A text's vector is kept in memory (a
long-lived process: the MCP server, `watch`) and in `query-vectors.sqlite` in the index
folder (a one-shot CLI: a repeated question costs no model load, which is most of a cold
recall). Keys are the sha256 of the embedder's identity and the text, so two models never
share a vector and the texts themselves are not stored. Batches (the indexer's) pass
straight through: chunk vectors have their own cache in the catalog.

`start(text)` embeds a text on a background thread, so a CLI recall loads the model while it
checks the vault and loads the index; `embed([text])` then waits for that result instead of
embedding the text again.

The file is a cache: any error reading or writing it is logged and ignored.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from .embedders import Embedder, Vectors

log = logging.getLogger(__name__)

FILE_NAME = "query-vectors.sqlite"
MEMORY_ENTRIES = 2048  # vectors kept in memory (384 floats each: 3 MB)
FILE_ENTRIES = 20_000  # rows kept in the file (the oldest written go first): 30 MB
PRUNE_EVERY = 500  # rows written between two prunes


class QueryEmbedder:
    """An Embedder that remembers the vector of every single text it embeds (see module doc)."""

    def __init__(self, inner: Embedder, folder: Path | None) -> None:
        """`folder`: where the persistent cache lives (None: in memory only)."""
        self.inner = inner
        self.path = None if folder is None else folder / FILE_NAME
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._inflight: dict[str, Future[np.ndarray]] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._db_failed = False

    def __getattr__(self, name: str) -> object:
        # Anything else is the inner embedder's (a test's FakeEmbedder counts its calls).
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    # -- the Embedder protocol ---------------------------------------------------
    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def max_tokens(self) -> int:
        return self.inner.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = list(texts) if not isinstance(texts, str) else texts
        if isinstance(items, str) or len(items) != 1:
            return self.inner.embed(items)  # batches, and the inner embedder's own type checks
        text = items[0]
        with self._lock:
            pending = self._inflight.get(text)
        vec = pending.result() if pending is not None else self._lookup(text)
        if vec is None:
            vec = self._compute(text)
        out: Vectors = vec.reshape(1, -1).astype(np.float32, copy=False)
        return out

    # -- warming -------------------------------------------------------------------
    def start(self, text: str) -> None:
        """Embed `text` on a background thread (loading the model if needed); `embed([text])`
        picks the result up. Does nothing if the vector is known or already on its way."""
        if not text.strip():
            return
        with self._lock:
            if text in self._inflight or text in self._memo:
                return
            future: Future[np.ndarray] = Future()
            self._inflight[text] = future

        def run() -> None:
            try:
                vec = self._lookup(text)
                future.set_result(vec if vec is not None else self._compute(text))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for it
                future.set_exception(exc)
            finally:
                with self._lock:
                    self._inflight.pop(text, None)

        threading.Thread(target=run, name="vault-memory-query-vector", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- the caches ----------------------------------------------------------------
    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.inner.identity}\n{text}".encode()).hexdigest()

    def _lookup(self, text: str) -> np.ndarray | None:
        with self._lock:
            vec = self._memo.get(text)
            if vec is not None:
                self._memo.move_to_end(text)
                return vec
        vec = self._read(self._key(text))
        if vec is not None:
            self._remember(text, vec)
        return vec

    def _compute(self, text: str) -> np.ndarray:
        vec = np.asarray(self.inner.embed([text])[0], dtype=np.float32)
        self._remember(text, vec)
        self._write(self._key(text), vec)
        return vec

    def _remember(self, text: str, vec: np.ndarray) -> None:
        with self._lock:
            self._memo[text] = vec
            self._memo.move_to_end(text)
            while len(self._memo) > MEMORY_ENTRIES:
                self._memo.popitem(last=False)

    def _connect(self) -> sqlite3.Connection | None:
        """The cache file, opened on first use (caller holds the lock)."""
        if self._db is None and self.path is not None and not self._db_failed:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # A short timeout: a busy cache is skipped, never waited for.
                db = sqlite3.connect(self.path, timeout=0.2, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # a lost row is a cache miss: no fsync per query
                db.execute("CREATE TABLE IF NOT EXISTS q (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
                db.commit()
                self._db = db
            except (sqlite3.Error, OSError) as exc:
                self._db_failed = True
                log.debug("query vector cache %s unavailable: %s", self.path, exc)
        return self._db

    def _read(self, key: str) -> np.ndarray | None:
        with self._lock:
            db = self._connect()
            if db is None:
                return None
            try:
                row = db.execute("SELECT vec FROM q WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                log.debug("query vector cache read: %s", exc)
                return None
        if row is None:
            return None
        vec = np.frombuffer(row[0], dtype=np.float32)
        return vec if vec.shape == (self.inner.dim,) else None

    def _write(self, key: str, vec: np.ndarray) -> None:
        with self._lock:
            db = self._connect()
            if db is None:
                return
            try:
                rowid = db.execute("INSERT OR REPLACE INTO q VALUES (?, ?)", (key, vec.tobytes())).lastrowid
                if rowid is not None and rowid % PRUNE_EVERY == 0:  # rowids grow across processes
                    db.execute("DELETE FROM q WHERE rowid <= ?", (rowid - FILE_ENTRIES,))
                db.commit()
            except sqlite3.Error as exc:
                db.rollback()
                log.debug("query vector cache write: %s", exc)


__all__ = ["FILE_NAME", "QueryEmbedder"]
