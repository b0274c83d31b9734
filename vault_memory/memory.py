"""`Memory`: the one object the CLI, the MCP server and Python callers use.

It owns the index folder (catalog + vector store), the embedder and the writer lock,
and closes them on exit. Time enters here: every method takes `now`, defaulting to
the clock only at this edge.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from .catalog import Catalog, NoteRow
from .config import Config, resolve_config
from .decay import DecayModel, state_from_meta
from .embedders import Embedder, make_embedder
from .errors import (
    ConcurrentEditError,
    IndexStateError,
    NoteError,
    VaultNotFoundError,
    VectorStoreUnavailableError,
)
from .indexer import IndexReport, Indexer, jsonable
from .lock import WriterLock
from .notefile import read_note, write_note
from .recall import Granularity, Hit, Mode, Searcher, rank, snippet
from .vault import IgnoreRules
from .vectorstore import VectorStore, collection_name

log = logging.getLogger(__name__)

CATALOG_NAME = "catalog.sqlite"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


class Memory:
    """A vault and its derived index. Use as a context manager."""

    def __init__(self, config: Config | None = None, *, embedder: Embedder | None = None,
                 clock: Callable[[], dt.datetime] = utcnow, **overrides: Any) -> None:
        self.config = config if config is not None else resolve_config(overrides)
        if not self.config.vault.is_dir():
            raise VaultNotFoundError(f"vault folder {self.config.vault} does not exist; pass --vault PATH")
        self.vault = self.config.vault.resolve()
        self.index_dir = self.config.resolved_index_dir
        self.clock = clock
        self._embedder = embedder
        self._catalog: Catalog | None = None
        self._store: VectorStore | None = None
        self._store_failed: str | None = None
        self._hold = False
        self.lock = WriterLock(self.index_dir)
        self.rules = IgnoreRules.for_vault(self.vault, self.config.ignore)
        self.decay = DecayModel(self.config.half_life_short_days, self.config.half_life_long_days,
                                self.config.dormant_below, self.config.promote_after_days)

    # -- lifecycle ------------------------------------------------------------
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
        self._store = None
        self._hold = False
        self.lock.release()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedder, ollama_host=self.config.ollama_host,
                                           timeout=self.config.embed_timeout)
        return self._embedder

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            path = self.index_dir / CATALOG_NAME
            try:
                self._catalog = Catalog(path)
            except IndexStateError:
                held = self.lock.held
                if not (held or self.lock.try_acquire()):
                    raise
                try:
                    # The index is disposable: set the broken one aside and start again.
                    aside = path.with_name(f"{CATALOG_NAME}.corrupt-{int(time.time())}")
                    log.warning("index catalog %s is unreadable; moved it to %s and rebuilding", path, aside)
                    path.rename(aside)
                    for suffix in ("-wal", "-shm"):
                        path.with_name(CATALOG_NAME + suffix).unlink(missing_ok=True)
                    self._store = None
                    VectorStore.destroy(self.index_dir / "chroma")
                    self._catalog = Catalog(path)
                finally:
                    if not held:
                        self.lock.release()
        return self._catalog

    def _headers(self) -> dict[str, str]:
        import os

        token = os.environ.get("VAULT_MEMORY_CHROMA_TOKEN") or os.environ.get("CHROMA_TOKEN")
        return {"Authorization": f"Bearer {token}"} if token else {}

    @property
    def store(self) -> VectorStore | None:
        """The vector store, or None when it is unreachable and lexical fallback was asked for."""
        if self._store is None and self._store_failed is None:
            name = collection_name(self.vault, self.embedder.identity)
            try:
                self._store = VectorStore(path=None if self.config.chroma_url else self.index_dir / "chroma",
                                          url=self.config.chroma_url, name=name, headers=self._headers())
            except VectorStoreUnavailableError as exc:
                if not self.config.lexical_fallback:
                    raise
                self._store_failed = str(exc)
                log.warning("%s; serving lexical (BM25) recall only", exc)
        return self._store

    def _indexer(self) -> Indexer:
        return Indexer(self.vault, self.catalog, self.store, self.embedder, self.rules,
                       assign_ids=self.config.assign_ids and not self.config.read_only)

    # -- indexing -------------------------------------------------------------
    def index(self, *, rebuild: bool = False, progress: Callable[[int, int], None] | None = None,
              wait: float = 3.0) -> IndexReport:
        """Reconcile the index with the vault (or rebuild it from nothing). Takes the writer lock."""
        with self.writing(wait):
            if rebuild:
                self._drop_index()
            report = self._indexer().reconcile(progress)
        report.rebuilt = rebuild
        return report

    @contextmanager
    def writing(self, wait: float = 3.0) -> Iterator[None]:
        """Hold the writer lock for the duration (unless this object already holds it for good)."""
        if self.lock.held:
            yield
            return
        self.lock.acquire(wait=wait)
        try:
            yield
        finally:
            if not self._hold:
                self.lock.release()

    def hold_writer_lock(self, wait: float = 3.0) -> None:
        """Keep the writer lock until close (watch, MCP server)."""
        self.lock.acquire(wait=wait)
        self._hold = True

    def _drop_index(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
        if self._store is not None or self.config.chroma_url:
            store = self.store
            if store is not None:
                store.drop()
        else:
            VectorStore.destroy(self.index_dir / "chroma")
        for suffix in ("", "-wal", "-shm"):
            (self.index_dir / (CATALOG_NAME + suffix)).unlink(missing_ok=True)

    def sync_paths(self, paths: Sequence[str]) -> IndexReport:
        """Reconcile only these vault-relative paths (the watcher's incremental step)."""
        with self.writing():
            return self._indexer().reconcile(None, paths=paths)

    def ensure_current(self, progress: Callable[[int, int], None] | None = None) -> IndexReport | None:
        """Reconcile if no other process is writing the index; otherwise read what is there."""
        if self.lock.held:
            return self._indexer().reconcile(progress)
        if self.lock.try_acquire():
            try:
                return self._indexer().reconcile(progress)
            finally:
                self.lock.release()
        log.info("index is being written by process %s; reading it as it is", self.lock.holder_pid())
        return None

    # -- recall ---------------------------------------------------------------
    def recall(self, query: str, k: int = 5, *, mode: Mode = "hybrid", decay: bool = True,
               now: dt.datetime | None = None, touch: bool = True, granularity: Granularity = "note",
               include_staged: bool = False) -> list[Hit]:
        """The k most relevant notes, ranked with decay; returned notes are rehearsed unless touch=False."""
        if not query.strip():
            return []
        now = now or self.clock()
        if self.store is None and mode != "bm25":
            mode = "bm25"
        searcher = Searcher(self.catalog, self.store, self.embedder)
        exclude = () if include_staged else (self.config.staging_folder.rstrip("/") + "/",)
        cands = searcher.search(query, mode=mode, granularity=granularity,
                                candidates=max(100, 4 * k), exclude_prefixes=exclude)
        notes = self.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
        ranked = rank(cands, notes, model=self.decay, now=now, decay=decay,
                      reactivate_similarity=self.config.reactivate_similarity, k=k)
        hits = [self._hit(query, c, notes[c.node_id], st, strength, score, dormant, react)
                for c, st, strength, score, dormant, react in ranked]
        if touch and not self.config.read_only:
            self.rehearse([h.node_id for h in hits], now=now)
        return hits

    def _hit(self, query: str, c: Any, note: NoteRow, state: Any, strength: float, score: float,
             dormant: bool, reactivated: bool) -> Hit:
        anchor = state.anchor.isoformat() if state.anchor is not None else None
        return Hit(path=note.path, node_id=note.node_id, title=note.title, heading=c.chunk.heading,
                   snippet=snippet(c.chunk.text, query), score=round(score, 6), relevance=round(c.relevance, 6),
                   similarity=round(c.similarity, 6), strength=round(strength, 6), tier=state.tier,
                   pinned=state.pinned, dormant=dormant, reactivated=reactivated,
                   superseded_by=list(state.superseded_by), chunk_id=c.chunk.chunk_id, text=c.chunk.text,
                   date=anchor)

    # -- rehearsal ------------------------------------------------------------
    def rehearse(self, node_ids: Sequence[str], *, now: dt.datetime | None = None) -> list[str]:
        """Write `last_accessed`/`access_count` for these notes; returns the paths written.

        Recalls within `rehearsal_coalesce_seconds` of the last one coalesce into one write.
        Rehearsal never re-embeds and never bumps `revision`.
        """
        if self.config.read_only:
            return []
        now = now or self.clock()
        written: list[str] = []
        rows = self.catalog.notes_by_ids(list(node_ids))
        for nid in node_ids:
            row = rows.get(nid)
            if row is None or not row.id_in_file:
                continue
            try:
                note = read_note(self.vault, row.path)
            except (NoteError, OSError):
                continue
            state = state_from_meta(note.meta, note.mtime)
            if (state.anchor_source == "last_accessed" and state.anchor is not None
                    and 0 <= (now - state.anchor).total_seconds() < self.config.rehearsal_coalesce_seconds):
                continue
            fields = self.decay.rehearse(state, now)
            if state.tier != "short":
                fields.pop("rehearsal_days")  # only short-tier memories need it (for promotion)
            try:
                new = write_note(self.vault, row.path, expected_hash=note.file_hash, set_fields=fields)
            except ConcurrentEditError:
                continue  # a human is editing it: their edit wins, the rehearsal is dropped
            written.append(row.path)
            self._refresh_row(row, new)
        return written

    def _refresh_row(self, row: NoteRow, note: Any) -> None:
        """Keep the catalog in step with a write we just made, if we may write the index."""
        held = self.lock.held
        if not (held or self.lock.try_acquire()):
            return  # the process holding the lock (a watcher) will see the change
        try:
            with self.catalog.transaction():
                self.catalog.upsert_note(replace(row, file_hash=note.file_hash, meta=jsonable(note.meta),
                                                 mtime=note.mtime))
        finally:
            if not held:
                self.lock.release()

    # -- status ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, locations, embedder, and what a reconcile would do (without doing it)."""
        cat = self.catalog
        indexer = Indexer(self.vault, cat, None, self.embedder, self.rules, assign_ids=False)
        scan = indexer.scan()
        plan = indexer.plan(scan)
        counts = plan.counts()
        pending = {k: v for k, v in counts.items() if k != "unchanged" and v}
        store_info: dict[str, Any]
        try:
            store = self.store
            store_info = store.describe() | {"vectors": store.count()} if store else {"error": self._store_failed}
        except VectorStoreUnavailableError as exc:
            store_info = {"error": str(exc)}
        return {
            "vault": str(self.vault),
            "index_dir": str(self.index_dir),
            "notes": len(cat.notes()),
            "chunks": cat.chunk_count(),
            "embedder": cat.get_meta("embedder") or self.config.embedder,
            "vector_store": store_info,
            "pending": pending,
            "failures": {p: e for p, (_, e) in cat.failures().items()} | dict(scan.failures),
            "writer_pid": self.lock.holder_pid() if not self.lock.held else None,
        }


def open_memory(vault: str | Path, **overrides: Any) -> Memory:
    """Shorthand: `with open_memory("~/notes") as mem: ...`."""
    return Memory(resolve_config({"vault": Path(vault), **overrides}))


__all__ = ["Memory", "open_memory", "CATALOG_NAME", "Path"]
