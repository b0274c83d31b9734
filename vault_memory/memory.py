"""`Memory`: the one object the CLI, the MCP server and Python callers use.

It owns the index folder (catalog + vector store), the embedder and the writer lock,
and closes them on exit. Time enters here: every method takes `now`, defaulting to
the clock only at this edge.

Longer than 500 lines because it is the facade: every entry point (index, fill, recall,
stage, status) decides here which of the store, the catalog and the embedder it needs,
and keeping those decisions together is what keeps a cold CLI from loading any it does not.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from . import edits, review, staging
from .catalog import Catalog, VectorProgress
from .config import Config, resolve_config
from .decay import DecayModel
from .embedders import Embedder, make_embedder
from .errors import IndexStateError, VaultMemoryError, VaultNotFoundError, VectorStoreUnavailableError
from .indexer import Indexer, IndexReport, jsonable
from .lock import WriterLock
from .notefile import ParsedNote, file_node_id
from .prefetch import PrefetchResult
from .prefetch import prefetch as _prefetch
from .queryvectors import QueryEmbedder
from .ranking import Mode
from .recall import Hit
from .recall import recall as _recall
from .records import CommitReport, Committed, Left, PinResult, StagedMemory
from .review import Review
from .review_note import render as render_review
from .search import Granularity, Searcher
from .vault import IgnoreRules
from .vectorstore import VectorStore, describe_target, open_store

log = logging.getLogger(__name__)

CATALOG_NAME = "catalog.sqlite"
STORE_RETRY_SECONDS = 30.0  # with lexical fallback, how long to serve BM25-only before trying the server again
# Texts a command that reads (recall, stage, remember) embeds before it answers: a few seconds of
# MiniLM at most. Beyond that it writes the changed notes to the catalog (found by keyword at
# once) and leaves their vectors to `index`, `watch` or the MCP server (README "First run").
READER_EMBED_BUDGET = 64


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
        self._queries: QueryEmbedder | None = None
        self._catalog: Catalog | None = None
        self._store: VectorStore | None = None
        self._store_failed: str | None = None
        self._store_failed_at = 0.0
        self._exact: tuple[str, list[str], np.ndarray] | None = None
        self._progress: tuple[str, VectorProgress] | None = None  # (vectors generation, counts)
        self._hold = False
        self.lock = WriterLock(self.index_dir)
        self._rules = self._ignore_rules()
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
            self._progress = None
        if self._store is not None:
            self._store.close()
        self._store = None
        if self._queries is not None:
            self._queries.close()
        self._hold = False
        self.lock.release()

    @property
    def embedder(self) -> QueryEmbedder:
        """The embedder (created on first use, from `config.embedder`), remembering query vectors
        in memory and in the index folder so that no query is embedded twice (queryvectors.py)."""
        if self._queries is None:
            self._queries = QueryEmbedder(self.model, self.index_dir)
        return self._queries

    @property
    def model(self) -> Embedder:
        """The embedder itself, without the query cache (what the indexer embeds chunks with)."""
        if self._embedder is None:
            self._embedder = make_embedder(self.config.embedder, ollama_host=self.config.ollama_host,
                                           timeout=self.config.embed_timeout)
        return self._embedder

    def warm_query(self, text: str) -> None:
        """Start embedding `text` on a background thread (loading the model), so a recall of it
        that follows does not wait for the model: the CLI calls this before it reconciles."""
        self.embedder.start(text)

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

    def _ignore_rules(self) -> IgnoreRules:
        # The review note is the system's own page, never a memory: left out like an ignored file.
        patterns = (*self.config.ignore, *review.ignore_pattern(self.config))
        return IgnoreRules.for_vault(self.vault, patterns, use_obsidian=self.config.obsidian_settings)

    def reload_rules(self) -> None:
        """Read the ignore rules again (the watcher calls this when `.vaultmemoryignore` changes)."""
        self._rules = self._ignore_rules()
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
                   paths: Sequence[str] | None = None, *, embed_budget: int | None = None,
                   verify: bool = False) -> IndexReport:
        try:
            report = self.indexer().reconcile(progress, paths=paths, embed_budget=embed_budget, verify=verify)
        except VectorStoreUnavailableError as exc:
            # The catalog is consistent (store_dirty stays set); with fallback, finish it without the store.
            self.lexical_only(exc)
            report = self.indexer().reconcile(progress, paths=paths, embed_budget=embed_budget, verify=verify)
        if self.config.chroma_url is None and self.keeps_store() and self.catalog.get_meta("store") != "live":
            # The index has just grown past exact_search_limit: fill Chroma from the catalog's vectors.
            log.info("%d chunks: building the vector store's HNSW index (once; nothing is embedded)",
                     self.catalog.chunk_count())
            indexer = Indexer(self.vault, self.catalog, self.store, self.model, self.rules)
            _ = indexer.store  # opening it re-syncs it with the catalog (it is empty: all rows go in)
            report.store_resynced += indexer.resynced
            with self.catalog.transaction():
                self.catalog.set_meta("store", "live")
        return report

    def keeps_store(self) -> bool:
        """Whether this index keeps a vector store (Chroma's HNSW).

        Always with a server. A local index keeps one only past `exact_search_limit` chunks:
        below it recall searches the catalog's vectors exactly and never queries Chroma, so
        writing HNSW is work nobody reads (it was a fifth of a first index's time at 10k notes
        and grows with the index). The store is filled from the catalog's vectors, embedding
        nothing, the first time the index grows past the limit, and kept from then on.
        """
        if self.config.chroma_url is not None:
            return True
        return self.catalog.get_meta("store") == "live" or self.catalog.chunk_count() > self.config.exact_search_limit

    def _drop_local_store(self) -> None:
        """No local store on purpose: remove one an earlier version (or a larger index) left, once."""
        if self.catalog.get_meta("store") == "none":
            return
        if self._store is not None:
            self._store.close()
            self._store = None
        if (self.index_dir / "chroma").exists():
            VectorStore.destroy(self.index_dir / "chroma")
        with self.catalog.transaction():
            self.catalog.set_meta("store", "none")
            self.catalog.clear_store_pending()
            self.catalog.set_meta("store_dirty", "0")

    def indexer(self) -> Indexer:
        """An Indexer over this vault and index (writing it needs the writer lock: see `writing`)."""
        if not self.keeps_store():
            self._drop_local_store()
            return Indexer(self.vault, self.catalog, None, self.model, self.rules, store_deferred=True)
        # While recall is served from the catalog's vectors (`exact_search`), Chroma is opened
        # only when a reconcile has something to write; otherwise it is opened (and checked)
        # first thing, as the ANN path and server mode need it.
        lazy = self._store is None and self.exact_search()
        return Indexer(self.vault, self.catalog, (lambda: self.store) if lazy else self.store, self.model,
                       self.rules, lazy_store=lazy)

    # -- dense search ---------------------------------------------------------
    def exact_search(self) -> bool:
        """Whether dense search runs exactly over the catalog's vectors instead of Chroma's ANN.

        True for a local index of at most `exact_search_limit` chunks: loading the vectors
        takes ~0.15 s at 26k chunks and a query ~5 ms, where a cold process spends ~1.2 s
        importing chromadb and loading its HNSW segment (bench/runners/cold.py), and exact
        search has no approximation error. Server mode always uses the server.
        """
        if self.config.chroma_url is not None:
            return False
        # Past the limit too while the local store is not built yet (the writer is filling it).
        return self.vectors().chunks <= self.config.exact_search_limit or self.catalog.get_meta("store") != "live"

    def vectors(self) -> VectorProgress:
        """How many chunks have their vector (a first index writes every note's rows before it
        embeds them). Counted again only when the catalog's chunks or vectors change."""
        gen = self.catalog.vectors_generation()
        if self._progress is None or self._progress[0] != gen:
            self._progress = (gen, self.catalog.vector_progress())
        return self._progress[1]

    def _exact_vectors(self) -> tuple[list[str], np.ndarray]:
        """All chunk vectors, loaded once and again only after the catalog's chunks change."""
        gen = self.catalog.vectors_generation()
        if self._exact is None or self._exact[0] != gen:
            ids, mat = self.catalog.all_chunk_vectors()
            self._exact = (gen, ids, mat)
        return self._exact[1], self._exact[2]

    def searcher(self, embedder: Embedder | None = None) -> Searcher:
        """A relevance-only Searcher over this index, on the dense backend `exact_search` picks."""
        if self.exact_search():
            return Searcher(self.catalog, None, embedder or self.embedder, exact=self._exact_vectors)
        return Searcher(self.catalog, self.store, embedder or self.embedder)

    # -- indexing -------------------------------------------------------------
    def index(self, *, rebuild: bool = False, progress: Callable[[int, int], None] | None = None,
              wait: float = 3.0, embed_budget: int | None = None, verify: bool = False) -> IndexReport:
        """Reconcile the index with the vault (or rebuild it from nothing). Takes the writer lock.

        `embed_budget`: embed at most this many texts before returning (None: all). When more
        are new, every changed note is written to the catalog first (searchable by keyword at
        once) and their vectors are left to `fill_vectors()` or the next `index()`
        (`report.texts_pending`): a server answers within seconds of start-up and embeds
        afterwards. `verify` reads every note instead of trusting the stat stamps of unchanged
        files (doctor --fix).
        """
        with self.writing(wait):
            if rebuild:
                self._drop_index()
            report = self._reconcile(progress, embed_budget=embed_budget, verify=verify)
        report.rebuilt = rebuild
        return report

    def fill_vectors(self, *, limit: int | None = None, progress: Callable[[int, int], None] | None = None,
                     wait: float = 3.0) -> IndexReport:
        """Embed up to `limit` (None: all) of the chunks written before their vectors (see `index`
        with `embed=False`); `report.texts_pending` is what is left. Takes the writer lock."""
        with self.writing(wait):
            try:
                return self.indexer().fill_vectors(progress, limit=limit)
            except VectorStoreUnavailableError as exc:
                self.lexical_only(exc)
                return self.indexer().fill_vectors(progress, limit=limit)

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
        if self._store is not None or self.config.chroma_url:
            store = self.store
            if store is not None:
                store.drop()
        else:
            VectorStore.destroy(self.index_dir / "chroma")
        for suffix in ("", "-wal", "-shm"):
            (self.index_dir / (CATALOG_NAME + suffix)).unlink(missing_ok=True)

    def sync_paths(self, paths: Sequence[str], *, embed_budget: int | None = None) -> IndexReport:
        """Reconcile only these vault-relative paths (the watcher's incremental step); `embed_budget`
        as for `index`."""
        with self.writing():
            return self._reconcile(None, paths=paths, embed_budget=embed_budget)

    def ensure_current(self, progress: Callable[[int, int], None] | None = None) -> IndexReport | None:
        """Bring the index up to date before reading, if no other process is writing it; otherwise
        read what is there. Never blocks on a long embedding: at most READER_EMBED_BUDGET texts
        are embedded here; when more are needed, the changed notes are written to the catalog
        (found by keyword at once) and `vectors()` says how many chunks still wait for theirs."""
        with self.lock.if_free() as writer:
            if writer:
                return self._reconcile(progress, embed_budget=READER_EMBED_BUDGET)
        log.info("index is being written by process %s; reading it as it is", self.lock.holder_pid())
        return None

    def resync_store(self) -> int:
        """Make the vector store's ids and vectors match the catalog (no embedding); returns rows fixed.
        A local index that keeps no store (`keeps_store`) has nothing to re-sync."""
        with self.writing():
            if not self.keeps_store():
                return 0
            indexer = self.indexer()
            if indexer.store is None:
                return 0
            fixed = indexer.resynced + indexer.resync_store()
            if self.config.chroma_url is None and self.catalog.get_meta("store") != "live":
                with self.catalog.transaction():
                    self.catalog.set_meta("store", "live")
            return fixed

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
            with self.catalog.transaction():
                self.catalog.upsert_note(replace(row, file_hash=note.file_hash, meta=jsonable(note.meta),
                                                 mtime=note.mtime))

    # -- recall and prefetch ---------------------------------------------------
    def recall(self, query: str, k: int = 5, *, mode: Mode = "hybrid", decay: bool = True,
               now: dt.datetime | None = None, touch: bool = True, granularity: Granularity = "note",
               include_staged: bool = False) -> list[Hit]:
        """The k most relevant notes, ranked with decay; returned notes are rehearsed unless touch=False."""
        return _recall(self, query, k, mode=mode, decay=decay, now=now, touch=touch, granularity=granularity,
                       include_staged=include_staged)

    def prefetch(self, text: str, *, budget: int | None = None, now: dt.datetime | None = None,
                 refresh_staged: bool = True, touch: bool = False) -> PrefetchResult:
        """The `[RELEVANT_LEARNED_MEMORY]` block for this turn, at most `budget` characters in all.

        Entries are the notes whose decayed cosine to `text` reaches `prefetch_min_score`, best
        first, one per note, near-duplicates merged; dormant (unless strongly matched),
        superseded and staged memories stay out. `result.block` is "" when nothing is relevant.
        Staged memories the turn is about get their expiry extended (`refresh_staged`); shown
        notes are rehearsed only with `touch=True`. Logic and rationale: prefetch.py.
        """
        return _prefetch(self, text, budget=budget, now=now, refresh_staged=refresh_staged, touch=touch)

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
                 now: dt.datetime | None = None) -> Committed:
        """Stage and commit in one step (commits even on a conflict, and reports it)."""
        return staging.remember(self, text, title=title, tags=tags, now=now)

    def pin(self, target: str) -> PinResult:
        """Pin a note (node_id or vault path): strength 1, never dormant."""
        return edits.set_pinned(self, target, True)

    def unpin(self, target: str) -> PinResult:
        """Unpin a note (node_id or vault path): it decays like any other again."""
        return edits.set_pinned(self, target, False)

    def log(self, text: str, now: dt.datetime | None = None) -> str:
        """Append a timestamped line to today's episodic note; returns its path."""
        return edits.log_entry(self, text, now)

    # -- the review -------------------------------------------------------------
    def review(self, now: dt.datetime | None = None, *, write: bool = True) -> Review:
        """What the memory is doing at `now`: drafts and their conflicts, what fades, went dormant, came
        back or was superseded, unreadable notes, and a chart. `result.markdown` is the review note;
        with `write` it is written to `review_note` (a person's edit to it is kept, see review.py);
        `result.to_dict()` is the same content as data. Reads the index as it is (`index` first)."""
        result = review.gather(self, now)
        result.markdown = render_review(result)
        if write:
            review.write_review(self, result)
        return result

    def refresh_review(self, now: dt.datetime | None = None) -> Review | None:
        """Rewrite the review note if there is one (the watcher calls this when the memory changed)."""
        rel = review.review_path(self.config)
        if not rel or self.config.read_only or not (self.vault / rel).is_file():
            return None
        return self.review(now)

    # -- status ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, locations, embedder, and what a reconcile would do (without doing it)."""
        cat = self.catalog
        indexer = Indexer(self.vault, cat, None, self.model, self.rules)
        scan = indexer.scan()
        plan = indexer.plan(scan)
        counts = plan.counts()
        pending = {k: v for k, v in counts.items() if k != "unchanged" and v}
        vectors = self.vectors()
        store_info: dict[str, Any]
        if not self.keeps_store():
            # No HNSW index on purpose: dense search is exact over the catalog's vectors.
            store_info = {"backend": "exact", "url": None, "path": str(self.index_dir / CATALOG_NAME),
                          "collection": None, "vectors": vectors.embedded,
                          "exact_search_limit": self.config.exact_search_limit}
        else:
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
            "chunks": vectors.chunks,
            "embedder": cat.get_meta("embedder") or self.config.embedder,
            "vector_store": store_info,
            # chunks with their vector / all; until all have one, recall ranks by BM25 alone
            "vectors": vectors.to_dict(),
            "recall": "hybrid" if vectors.complete else "lexical-only",
            "pending": pending,
            "failures": {p: e for p, (_, e) in cat.failures().items()} | dict(scan.failures),
            "passed_over": dict(scan.passed),  # private notes and symlinks: never indexed, by design
            "writer_pid": self.lock.holder_pid() if not self.lock.held else None,
        }


def open_memory(vault: str | Path, **overrides: Any) -> Memory:
    """Shorthand: `with open_memory("~/notes") as mem: ...`."""
    return Memory(resolve_config({"vault": Path(vault), **overrides}))


__all__ = ["CATALOG_NAME", "READER_EMBED_BUDGET", "Memory", "VectorProgress", "open_memory"]
