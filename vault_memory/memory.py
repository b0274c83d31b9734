"""`Memory`: the one object the CLI, the MCP server and Python callers use.

It owns the index folder (catalog + vector store), the embedder and the writer lock,
and closes them on exit. Time enters here: every method takes `now`, defaulting to
the clock only at this edge.

Longer than most modules: it is the facade, so every public operation is a documented method
here (each one line over its module), next to the state those operations share: the index,
the lock, and the caches a long-running process keeps (vectors, note names).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

import numpy as np

from . import edits, staging
from .catalog import Catalog, chunk_owner
from .config import Config, resolve_config
from .decay import DecayModel
from .embedders import Embedder, make_embedder
from .errors import IndexStateError, VaultMemoryError, VaultNotFoundError, VectorStoreUnavailableError
from .fields import stated_epoch
from .filters import make_filter
from .indexer import Indexer, IndexReport, jsonable
from .lock import WriterLock
from .names import Names
from .notefile import ParsedNote, file_node_id
from .prefetch import PrefetchResult
from .prefetch import prefetch as _prefetch
from .ranking import Mode
from .reading import NoteText
from .reading import read as _read
from .recall import Hit
from .recall import recall as _recall
from .recent import RecentNote
from .recent import recent as _recent
from .records import CommitReport, Committed, Left, PinResult, StagedMemory
from .related import Related
from .related import related as _related
from .search import Granularity, Searcher
from .vault import IgnoreRules, walk_notes
from .vectorstore import VectorStore, describe_target, open_store

log = logging.getLogger(__name__)

CATALOG_NAME = "catalog.sqlite"
STORE_RETRY_SECONDS = 30.0  # with lexical fallback, how long to serve BM25-only before trying the server again


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


class Memory:
    """A vault and its derived index: the API the CLI and the MCP server are thin layers over.

        with Memory(vault="~/notes") as mem:          # keyword overrides, resolved like CLI flags
            block = mem.prefetch(user_turn).block     # "" when nothing is relevant
            hits = mem.recall("which editor do I use?", k=5)
            mem.remember("The user switched to Helix in November.")

    Settings not given come from `VAULT_MEMORY_*` variables and the config files (config.py).
    Closing releases the index and the writer lock; use it as a context manager.
    """

    def __init__(self, config: Config | None = None, *, embedder: Embedder | str | None = None,
                 clock: Callable[[], dt.datetime] = utcnow, **overrides: Any) -> None:
        """`Memory(config)`, or `Memory(vault=..., **settings)` resolved like CLI flags (config.py).

        `embedder` is an Embedder instance, or a spec string ("minilm", "fake", "ollama:MODEL")
        taken as the `embedder` setting.
        """
        if isinstance(embedder, str):  # Memory(vault=..., embedder="fake"): the setting, not an instance
            overrides["embedder"], embedder = embedder, None
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
        self._store_failed_at = 0.0
        self._exact: tuple[str, list[str], np.ndarray] | None = None
        self._owners: tuple[list[str], np.ndarray, dict[str, int]] | None = None
        self._names: tuple[str, Names] | None = None
        self._hold = False
        self.lock = WriterLock(self.index_dir)
        self._rules = IgnoreRules.for_vault(self.vault, self.config.ignore, use_obsidian=self.config.obsidian_settings)
        self.decay = DecayModel.from_settings(self.config, daily_format=self._rules.obsidian.daily_format)

    # -- lifecycle ------------------------------------------------------------
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the index and release the writer lock (the context manager calls this)."""
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
            self._exact = None
            self._owners = None
            self._names = None
        if self._store is not None:
            self._store.close()
        self._store = None
        self._hold = False
        self.lock.release()

    @property
    def embedder(self) -> Embedder:
        """The embedder (created on first use, from `config.embedder`)."""
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedder, ollama_host=self.config.ollama_host,
                                           timeout=self.config.embed_timeout)
        return self._embedder

    @property
    def catalog(self) -> Catalog:
        """The SQLite catalog (opened on first use; an unreadable one is set aside and rebuilt)."""
        if self._catalog is None:
            path = self.index_dir / CATALOG_NAME
            try:
                self._catalog = Catalog(path)
            except IndexStateError:
                with self.lock.if_free() as writer:
                    if not writer:
                        raise
                    # The index is disposable: set the broken one aside and start again.
                    aside = path.with_name(f"{CATALOG_NAME}.corrupt-{int(time.time())}")
                    log.warning("index catalog %s is unreadable; moved it to %s and rebuilding", path, aside)
                    path.rename(aside)
                    for suffix in ("-wal", "-shm"):
                        path.with_name(CATALOG_NAME + suffix).unlink(missing_ok=True)
                    self._store = None
                    VectorStore.destroy(self.index_dir / "chroma")
                    self._catalog = Catalog(path)
        return self._catalog

    @property
    def rules(self) -> IgnoreRules:
        """Which files are notes (dot-folders, `ignore` settings, `.vaultmemoryignore`)."""
        return self._rules

    def reload_rules(self) -> None:
        """Read the ignore rules again (the watcher calls this when `.vaultmemoryignore` changes)."""
        self._rules = IgnoreRules.for_vault(self.vault, self.config.ignore, use_obsidian=self.config.obsidian_settings)
        self.decay = replace(self.decay, daily_format=self._rules.obsidian.daily_format)

    @property
    def store_error(self) -> str | None:
        """Why the vector store is not in use (lexical fallback serving), or None."""
        return self._store_failed

    @property
    def store(self) -> VectorStore | None:
        """The vector store, or None when it is unreachable and lexical fallback was asked for.

        Server mode: URL from config, credentials from the environment only (vectorstore.open_store).
        After a failure with fallback on, the server is tried again every STORE_RETRY_SECONDS.
        """
        if self._store is None and (self._store_failed is None
                                    or time.monotonic() - self._store_failed_at >= STORE_RETRY_SECONDS):
            try:
                self._store = open_store(vault=self.vault, index_dir=self.index_dir,
                                         embedder_identity=self.embedder.identity, url=self.config.chroma_url)
                self._store_failed = None
            except VectorStoreUnavailableError as exc:
                self.lexical_only(exc)
        return self._store

    def lexical_only(self, exc: VectorStoreUnavailableError) -> None:
        """The server failed (at open or mid-run): raise, or with lexical fallback go BM25-only and warn."""
        if not self.config.lexical_fallback:
            raise exc
        if self._store is not None:
            self._store.close()
        self._store = None
        self._store_failed, self._store_failed_at = str(exc), time.monotonic()
        log.warning("vector store unavailable, serving lexical (BM25) recall only: %s", exc)

    def _reconcile(self, progress: Callable[[int, int], None] | None = None,
                   paths: Sequence[str] | None = None) -> IndexReport:
        try:
            return self.indexer().reconcile(progress, paths=paths)
        except VectorStoreUnavailableError as exc:
            # The catalog is consistent (store_dirty stays set); with fallback, finish it without the store.
            self.lexical_only(exc)
            return self.indexer().reconcile(progress, paths=paths)

    def indexer(self) -> Indexer:
        """An Indexer over this vault and index (writing it needs the writer lock: see `writing`)."""
        # While recall is served from the catalog's vectors (`exact_search`), Chroma is opened
        # only when a reconcile has something to write; otherwise it is opened (and checked)
        # first thing, as the ANN path and server mode need it.
        lazy = self._store is None and self.exact_search()
        return Indexer(self.vault, self.catalog, (lambda: self.store) if lazy else self.store, self.embedder,
                       self.rules, lazy_store=lazy)

    # -- dense search ---------------------------------------------------------
    def exact_search(self) -> bool:
        """Whether dense search runs exactly over the catalog's vectors instead of Chroma's ANN.

        True for a local index of at most `exact_search_limit` chunks: loading the vectors
        takes ~0.15 s at 26k chunks and a query ~5 ms, where a cold process spends ~1.2 s
        importing chromadb and loading its HNSW segment (bench/run_cold.py), and exact
        search has no approximation error. Server mode always uses the server.
        """
        return self.config.chroma_url is None and self.catalog.chunk_count() <= self.config.exact_search_limit

    def _exact_owners(self) -> tuple[np.ndarray, dict[str, int]]:
        """For the exact vectors' rows: each row's note as a small integer, and note -> integer.
        Kept with the vectors, so a filtered search masks rows with one integer `isin` (search.py)."""
        ids, _ = self._exact_vectors()
        if self._owners is None or self._owners[0] is not ids:
            codes: dict[str, int] = {}
            arr = np.fromiter((codes.setdefault(chunk_owner(c), len(codes)) for c in ids), dtype=np.int64,
                              count=len(ids))
            self._owners = (ids, arr, codes)
        return self._owners[1], self._owners[2]

    def _exact_vectors(self) -> tuple[list[str], np.ndarray]:
        """All chunk vectors, loaded once and again only after the catalog's chunks change."""
        gen = self.catalog.vectors_generation()
        if self._exact is None or self._exact[0] != gen:
            ids, mat = self.catalog.all_chunk_vectors()
            self._exact = (gen, ids, mat)
        return self._exact[1], self._exact[2]

    def note_names(self) -> Names:
        """Every indexed note's names (resolve.py), kept until a path, title or alias changes in
        any process (catalog `names_gen`); before anything is indexed, the vault's file names."""
        try:
            gen = self.catalog.names_generation()
            if self._names is None or self._names[0] != gen:
                rows = self.catalog.name_rows()
                if not rows:
                    return Names([], walk_notes(self.vault, self.rules).notes)
                self._names = (gen, Names(rows))
            return self._names[1]
        except VaultMemoryError:
            return Names([], walk_notes(self.vault, self.rules).notes)

    def searcher(self, embedder: Embedder | None = None) -> Searcher:
        """A relevance-only Searcher over this index, on the dense backend `exact_search` picks."""
        if self.exact_search():
            return Searcher(self.catalog, None, embedder or self.embedder, exact=self._exact_vectors,
                            owners=self._exact_owners)
        return Searcher(self.catalog, self.store, embedder or self.embedder)

    # -- indexing -------------------------------------------------------------
    def index(self, *, rebuild: bool = False, progress: Callable[[int, int], None] | None = None,
              wait: float = 3.0) -> IndexReport:
        """Reconcile the index with the vault (or rebuild it from nothing). Takes the writer lock."""
        with self.writing(wait):
            if rebuild:
                self._drop_index()
            report = self._reconcile(progress)
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
            self._exact = None
            self._owners = None
            self._names = None
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
            return self._reconcile(None, paths=paths)

    def ensure_current(self, progress: Callable[[int, int], None] | None = None) -> IndexReport | None:
        """Reconcile if no other process is writing the index; otherwise read what is there."""
        with self.lock.if_free() as writer:
            if writer:
                return self._reconcile(progress)
        log.info("index is being written by process %s; reading it as it is", self.lock.holder_pid())
        return None

    def resync_store(self) -> int:
        """Make the vector store's ids and vectors match the catalog (no embedding); returns rows fixed."""
        with self.writing():
            indexer = self.indexer()
            return indexer.resync_store() if indexer.store is not None else 0

    def index_paths(self, paths: Iterable[str]) -> bool:
        """Re-index these paths if the writer lock can be had now; True if it was done.

        The write itself already succeeded, so an indexing problem is logged, not raised: the
        note is safe in the vault and the next `index` (or the watcher) picks it up. Raising
        here would make an agent retry a write that already happened.
        """
        todo = sorted({p for p in paths if p})
        if not todo:
            return True
        with self.lock.if_free() as writer:
            if not writer:
                log.info("index is being written by process %s; it will pick up %s", self.lock.holder_pid(),
                         ", ".join(todo))
                return False
            try:
                self.sync_paths(todo)
                return True
            except VaultMemoryError as exc:
                log.warning("wrote %s but could not update the index (%s); run `vault-memory index`",
                            ", ".join(todo), exc)
                return False

    def note_written(self, note: ParsedNote) -> None:
        """Keep the catalog in step with a frontmatter-only write we just made, if we may write the index."""
        with self.lock.if_free() as writer:
            if not writer:
                return  # the process holding the lock (a watcher) will see the change
            row = self.catalog.note_by_path(note.path)
            if row is None:
                return
            if not row.id_in_file and file_node_id(note):  # our first write gave it an id: a new identity
                self.sync_paths([note.path])
                return
            stated = stated_epoch(note.meta, note.mtime, PurePosixPath(note.path).stem, self.decay.daily_format)
            with self.catalog.transaction():
                self.catalog.upsert_note(replace(row, file_hash=note.file_hash, meta=jsonable(note.meta),
                                                 mtime=note.mtime, stated=stated))

    # -- recall and prefetch ---------------------------------------------------
    def recall(self, query: str, k: int = 5, *, mode: Mode = "hybrid", decay: bool = True,
               now: dt.datetime | None = None, touch: bool = True, granularity: Granularity = "note",
               include_staged: bool = False, tags: Sequence[str] | str | None = None, folder: str | None = None,
               type: str | None = None, after: str | dt.date | None = None,
               before: str | dt.date | None = None) -> list[Hit]:
        """The k most relevant notes, ranked with decay; returned notes are rehearsed unless touch=False.

        Filters (filters.py) decide which notes may come back *before* ranking, so the k are
        all eligible: `tags` (each one, nested tags included: `travel` matches `travel/japan`),
        `folder` (at any depth), `type` (frontmatter `type`), `after` / `before` (when the note
        was stated: ISO dates or times, or `7d`, `2w`, `3m`, `1y` back from now).
        """
        when = now or self.clock()
        flt = make_filter(tags=tags, folder=folder, type=type, after=after, before=before, now=when)
        return _recall(self, query, k, mode=mode, decay=decay, now=now, touch=touch, granularity=granularity,
                       include_staged=include_staged, filters=flt)

    def prefetch(self, text: str, *, budget: int | None = None, now: dt.datetime | None = None,
                 refresh_staged: bool = True, touch: bool = False, tags: Sequence[str] | str | None = None,
                 folder: str | None = None, type: str | None = None, after: str | dt.date | None = None,
                 before: str | dt.date | None = None) -> PrefetchResult:
        """The `[RELEVANT_LEARNED_MEMORY]` block for this turn, at most `budget` characters in all.

        Entries are the notes whose decayed cosine to `text` reaches `prefetch_min_score`, best
        first, one per note, near-duplicates merged; dormant (unless strongly matched),
        superseded and staged memories stay out. `result.block` is "" when nothing is relevant.
        Staged memories the turn is about get their expiry extended (`refresh_staged`); shown
        notes are rehearsed only with `touch=True`. The filters are recall's. Logic and
        rationale: prefetch.py.
        """
        when = now or self.clock()
        flt = make_filter(tags=tags, folder=folder, type=type, after=after, before=before, now=when)
        return _prefetch(self, text, budget=budget, now=now, refresh_staged=refresh_staged, touch=touch,
                         filters=flt)

    # -- reading -----------------------------------------------------------------
    def read(self, target: str, *, heading: str | None = None,
             lines: str | tuple[int | None, int | None] | None = None, max_chars: int | None = None) -> NoteText:
        """A note, one heading's section (`heading`, or `[[Note#Heading]]`) or a line range
        (`"40:80"`, body lines, 1-based), with its path, title, node_id and dates.

        `target` is a title, alias, file name, vault path, `[[wikilink]]` or node_id (resolve.py).
        Writes nothing. Private notes and files that are not notes are refused. Logic: reading.py.
        """
        return _read(self, target, heading=heading, lines=lines, max_chars=max_chars)

    def related(self, target: str, *, k: int = 10) -> Related:
        """Notes related to `target` by its links (out and back) and by meaning (its chunks'
        vectors against the index), each marked `linked` or not, with its reasons. Logic: related.py."""
        return _related(self, target, k=k)

    def recent(self, *, days: float = 7, k: int = 20, now: dt.datetime | None = None) -> list[RecentNote]:
        """Notes written, committed, recalled or logged in the last `days` days, newest first
        (from frontmatter and episode names, never file times). Logic: recent.py."""
        return _recent(self, days=days, k=k, now=now)

    def rehearse(self, node_ids: Sequence[str], *, now: dt.datetime | None = None) -> list[str]:
        """Write `last_accessed`/`access_count` for these notes; returns the paths written.

        Recalls within `rehearsal_coalesce_seconds` of the last one coalesce into one write.
        Rehearsal never re-embeds and never bumps `revision`.
        """
        return edits.rehearse(self, node_ids, now=now)

    # -- the agent's write path (staging.py, edits.py) ------------------------
    def stage(self, text: str, *, title: str | None = None, tags: Sequence[str] = (),
              now: dt.datetime | None = None) -> StagedMemory:
        """Write a staged memory (flagged needs_review if it conflicts with a committed note)."""
        return staging.stage(self, text, title=title, tags=tags, now=now)

    def staged(self, now: dt.datetime | None = None) -> list[StagedMemory]:
        """The staged memories, oldest first; expired ones are moved to .trash/ first."""
        return staging.staged(self, now)

    def expire_staged(self, now: dt.datetime | None = None) -> list[Left]:
        """Move expired staged memories to .trash/ (never deleted); returns what was moved."""
        return staging.expire_staged(self, now)

    def commit(self, ids: Sequence[str], *, supersedes: str | Sequence[str] | None = None,
               now: dt.datetime | None = None) -> CommitReport:
        """Commit these staged memories (by node_id or staged path) to the memory folder."""
        return staging.commit(self, ids, supersedes=supersedes, now=now)

    def commit_all(self, now: dt.datetime | None = None) -> CommitReport:
        """Commit every staged memory not flagged needs_review; report the rest and why."""
        return staging.commit_all(self, now)

    def discard(self, id: str) -> str:
        """Move a staged memory to .trash/; returns its path there."""
        return staging.discard(self, id)

    def remember(self, text: str, *, title: str | None = None, tags: Sequence[str] = (),
                 supersedes: str | Sequence[str] | None = None, now: dt.datetime | None = None) -> Committed:
        """Stage and commit in one step (commits even on a conflict, and reports it).

        If a note already states it (conflicts.py), nothing is written and that note is
        returned (`existing`). `supersedes`: the note it replaces (linked both ways).
        """
        return staging.remember(self, text, title=title, tags=tags, supersedes=supersedes, now=now)

    def pin(self, target: str) -> PinResult:
        """Pin a note (node_id, path, title, alias or [[link]]): strength 1, never dormant."""
        return edits.set_pinned(self, target, True)

    def unpin(self, target: str) -> PinResult:
        """Unpin a note (node_id, path, title, alias or [[link]]): it decays like any other again."""
        return edits.set_pinned(self, target, False)

    def log(self, text: str, now: dt.datetime | None = None) -> str:
        """Append a timestamped line to today's episodic note; returns its path."""
        return edits.log_entry(self, text, now)

    # -- status ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, locations, embedder, and what a reconcile would do (without doing it)."""
        cat = self.catalog
        indexer = Indexer(self.vault, cat, None, self.embedder, self.rules)
        scan = indexer.scan()
        plan = indexer.plan(scan)
        counts = plan.counts()
        pending = {k: v for k, v in counts.items() if k != "unchanged" and v}
        store_info: dict[str, Any]
        try:
            store = self.store
            store_info = store.describe() | {"vectors": store.count()} if store else {"error": self.store_error}
        except VectorStoreUnavailableError as exc:
            store_info = {"error": str(exc)}
        if "error" in store_info:  # still say which server and collection this index uses
            store_info = describe_target(vault=self.vault, index_dir=self.index_dir,
                                         embedder_identity=self.embedder.identity,
                                         url=self.config.chroma_url) | store_info
        return {
            "vault": str(self.vault),
            "index_dir": str(self.index_dir),
            "notes": len(cat.notes()),
            "chunks": cat.chunk_count(),
            "embedder": cat.get_meta("embedder") or self.config.embedder,
            "vector_store": store_info,
            "pending": pending,
            "failures": {p: e for p, (_, e) in cat.failures().items()} | dict(scan.failures),
            "passed_over": dict(scan.passed),  # private notes and symlinks: never indexed, by design
            "writer_pid": self.lock.holder_pid() if not self.lock.held else None,
        }


def open_memory(vault: str | Path, **overrides: Any) -> Memory:
    """Shorthand: `with open_memory("~/notes") as mem: ...`."""
    return Memory(resolve_config({"vault": Path(vault), **overrides}))


__all__ = ["CATALOG_NAME", "Memory", "open_memory"]
