"""What the MCP server holds while it runs: a `Memory` for tool calls, and a watcher keeping the index current.

The index is kept current by the watcher (watch.py) on a background thread, with its own
`Memory` (own SQLite connection), holding the writer lock. Tool calls use a second
`Memory` that only reads the index; writes go to the vault through the one write path and
the watcher indexes them; a write tool waits (briefly) until the index shows what it
wrote, so `remember` then `recall` finds the memory. If another process holds the writer
lock, the server serves reads (and still writes notes, which the lock holder indexes) and
tries again to become the writer every LOCK_RETRY_SECONDS.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..config import Config
from ..errors import IndexNotWritableError, LockHeldError, VaultMemoryError
from ..hashing import sha256_hex
from ..index.catalog import recorded_embedder
from ..index.embedders import Embedder, make_embedder
from ..internals import internals
from ..memory import CATALOG_NAME, Memory

log = logging.getLogger(__name__)

INDEX_WAIT_SECONDS = 5.0  # how long a write tool waits for the index to show its write
LOCK_RETRY_SECONDS = 30.0
STARTUP_WAIT_SECONDS = 15.0  # a tool call right after start waits this long for the first reconcile, at most

T = TypeVar("T")


class Service:
    """What the server holds: a read Memory for tools, and a watcher keeping the index current."""

    def __init__(
        self,
        config: Config,
        *,
        embedder: Embedder | None = None,
        lock_retry: float = LOCK_RETRY_SECONDS,
        index_wait: float = INDEX_WAIT_SECONDS,
        startup_wait: float = STARTUP_WAIT_SECONDS,
    ) -> None:
        self.config = config
        # One embedder for both Memory objects: the model is loaded once (it loads lazily).
        self.embedder = embedder or make_embedder(
            config.embedder,
            ollama_host=config.ollama_host,
            timeout=config.embed_timeout,
            index_identity=recorded_embedder(config.resolved_index_dir / CATALOG_NAME),
        )
        self.mem = Memory(config, embedder=self.embedder)
        self.guard = threading.Lock()  # the tools' Memory is used by one tool call at a time
        self.lock_retry = lock_retry
        self.index_wait = index_wait
        self.startup_wait = startup_wait
        self.writer = False  # this process holds the writer lock and runs the watcher
        self.indexed_once = threading.Event()  # the start-up reconcile finished (or someone else indexes)
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch_mem: Memory | None = None
        self._watcher: Any = None

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> None:
        """Start the background thread: reconcile, then follow the vault (if we get the lock)."""
        if self.config.read_only:
            self.indexed_once.set()  # read-only: never write the index; serve what is there
            return
        self._thread = threading.Thread(target=self._keep_current, name="vault-memory-watch", daemon=True)
        self._thread.start()

    def _keep_current(self) -> None:
        from ..watch import Watcher

        try:
            # Open the tools' vector store first: Chroma's per-folder client cache is not safe
            # against two threads creating the same client at once; the watcher's then reuses it.
            with self.guard:
                if internals(self.mem).keeps_store():  # a small local index is searched exactly: no Chroma store at all
                    _ = internals(self.mem).store
        except VaultMemoryError as exc:
            log.warning("vector store: %s", exc)
        while not self._stop.is_set():
            mem = Memory(self.config, embedder=self.embedder)
            watcher = Watcher(mem)
            try:
                report = watcher.start(wait=0.0)
            except (LockHeldError, IndexNotWritableError) as exc:  # another writer, or a read-only index folder
                watcher.close()
                mem.close()
                if not self.indexed_once.is_set():
                    log.warning("serving reads: %s", exc)
                self.indexed_once.set()
                self._stop.wait(self.lock_retry)
                continue
            except Exception as exc:  # noqa: BLE001 - keep serving reads whatever went wrong
                watcher.close()
                mem.close()
                self.last_error = f"could not index the vault: {exc}"
                log.exception("could not index the vault; serving what the index has")
                self.indexed_once.set()
                self._stop.wait(self.lock_retry)
                continue
            self._watch_mem, self._watcher, self.writer = mem, watcher, True
            self.last_error = None
            log.info("indexed %s notes; watching %s", report.notes, self.config.vault)
            self.indexed_once.set()
            try:
                watcher.run(self._stop)
            except Exception:  # noqa: BLE001
                log.exception("the watcher stopped; restarting it")
                self._stop.wait(min(self.lock_retry, 5.0))  # do not spin on a persistent failure
            finally:
                watcher.close()
                mem.close()
                self.writer, self._watch_mem, self._watcher = False, None, None

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self.guard:
            self.mem.close()

    # -- helpers for tools -----------------------------------------------------------
    def call(self, fn: Callable[[Memory], T], *, wait_ready: bool = True) -> T:
        if wait_ready:  # right after start-up, give the first reconcile a moment (a warm index takes ~1 s)
            self.indexed_once.wait(self.startup_wait)
        with self.guard:
            return fn(self.mem)

    def await_indexed(self, paths: Iterable[str]) -> bool:
        """Wait until the index has these notes as they are on disk now; False on timeout."""
        todo = sorted({p for p in paths if p})
        deadline = time.monotonic() + self.index_wait
        while True:
            pending = []
            for rel in todo:
                try:
                    raw = (internals(self.mem).vault / rel).read_bytes()
                except OSError:
                    continue  # moved or gone: nothing to wait for
                with self.guard:
                    row = internals(self.mem).catalog.note_by_path(rel)
                if row is None or row.file_hash != sha256_hex(raw):
                    pending.append(rel)
            if not pending:
                return True
            if time.monotonic() >= deadline or self.config.read_only:
                return False
            time.sleep(0.05)


__all__ = ["Service"]
