"""`IndexFolder`: the index folder's owner, and the workspace the operations run in.

It owns the index folder (catalog + vector store), the embedder and the writer lock, and
closes them: opening the folder read-only when it cannot be written, setting a damaged catalog
or vector store aside and rebuilding it, noticing the folder deleted under a long-running
writer (docs/reliability.md). That care needs the lock, the embedder and the reconcile
together, which only this object holds, next to the caches a long-running process keeps
(vectors, note names). It implements `workspace.Workspace`: the operations below `Memory`
(staging, edits, recall, prefetch, ...) take it. `Memory` (memory.py) is the facade of the
documented operations over it; the edges (CLI, MCP server, watch, doctor) reach it through
`memory.internals(mem)`.

Longer than most modules: the index folder's care (opening, damage, going away, the store
kept or not) is one concern with one state, and splitting it would hand that state around.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .config import Config, resolve_config
from .errors import (
    CatalogCorruptError,
    EmbedderError,
    IndexNotWritableError,
    IndexStateError,
    LockHeldError,
    VaultMemoryError,
    VaultNotFoundError,
    VectorStoreCorruptError,
    VectorStoreUnavailableError,
)
from .index import exactfile, requests
from .index.calibration import Calibration
from .index.calibration import resolve as resolve_calibration
from .index.catalog import Catalog, VectorProgress, chunk_owner, recorded_embedder
from .index.embedders import Embedder, make_embedder
from .index.indexer import Indexer, IndexReport, jsonable
from .index.integrity import is_corruption, is_unwritable, salvage_vectors
from .index.lock import WriterLock
from .index.moved import VAULT_KEY, adopt, find_moved
from .index.queryvectors import QueryEmbedder
from .index.vectorstore import STORE_FOLDER, VectorStore, describe_target, open_store
from .search.decay import DecayModel
from .search.rules import DEFAULT_RULES, ReadRules
from .search.search import Searcher
from .search.sentences import SENTENCES_NAME, FillReport, SentenceStore, open_sentences
from .search.vectorcache import WindowCache, open_cache
from .search.windows import WindowScorer
from .search.workspace import Bookkeeping
from .text import ignore_pattern
from .vault.fields import stated_epoch
from .vault.names import Names
from .vault.notefile import ParsedNote, file_node_id
from .vault.walk import IgnoreRules, walk_notes

if TYPE_CHECKING:
    from .index.keptout import KeptOutLog

    # Types only: the modules behind the agent's other verbs are imported when a verb is used,
    # so a CLI recall does not pay for them (bench `cold`).

log = logging.getLogger(__name__)

CATALOG_NAME = "catalog.sqlite"
STORE_RETRY_SECONDS = 30.0  # with lexical fallback, how long to serve BM25-only before trying the server again
# What a command that reads (recall, stage, remember, ...) embeds before it answers: a few seconds
# of MiniLM at most. Cost is proportional to tokens (FINDINGS), so the bound is in tokens; the
# count of texts only bounds how much is chunked ahead to find out. Measured on 2 shared cores,
# integer graph: sample_vault's first index is 108 texts, 10,126 tokens, embedded in 1.2-1.5 s
# (~7-8k tokens/s; the shipped graph ~2.5k/s), so 16,384 tokens is ~2 s (~6.5 s shipped) and the
# quick start's first recall answers by meaning. Beyond that it writes the changed notes to the
# catalog (found by keyword at once) and leaves their vectors to `index`, `watch` or the MCP
# server (docs/how-it-works.md, "First run").
READER_EMBED_BUDGET = 512
READER_EMBED_TOKENS = 16_384
# A reader's reconcile gives the answer sentences (search/sentences.py) of at most this many changed
# chunks their vectors (about 9 sentences a chunk: well under a second); more are left to `index`.
READER_SENTENCE_CHUNKS = 16
SENTENCES_PER_CHUNK = 8  # fill_vectors(limit=N) covers N / 8 chunks' sentences: a step as long as N chunks'
REQUESTS_EVERY = 0.5  # seconds between two looks for other processes' requests while embedding
T = TypeVar("T")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def unwritable_reason(folder: Path) -> str | None:
    """Why nothing can be written in `folder` (its nearest existing ancestor if it does not exist yet), or None.

    A read-only file system, missing write permission, or a full disk. Cheap (statvfs and
    access, no file created), so every command can ask; a write can still fail later (a disk
    that fills up meanwhile) and is then reported where it happens."""
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
    except (OSError, AttributeError):  # no statvfs on Windows
        st = None
    if st is not None and st.f_flag & getattr(os, "ST_RDONLY", 1):
        return "read-only file system"
    if not os.access(probe, os.W_OK):
        return "permission denied"
    if st is not None and st.f_blocks and st.f_bavail == 0:
        return "the disk is full"
    return None


def remedy(reason: str) -> str:
    """What to do about an `unwritable_reason`."""
    return {"read-only file system": "remount it writable", "the disk is full": "free some space"}.get(
        reason, "fix its permissions"
    )


class IndexFolder:
    """A vault and its derived index, opened: what the operations work against (see the module docstring)."""

    def __init__(
        self,
        config: Config | None = None,
        *,
        embedder: Embedder | str | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
        calibration: Calibration | None = None,
        rules: ReadRules | None = None,
        **overrides: Any,
    ) -> None:
        """See `Memory.__init__` (memory.py): the same arguments, documented once there."""
        if isinstance(embedder, str):  # Memory(vault=..., embedder="fake"): the setting, not an instance
            overrides["embedder"], embedder = embedder, None
        self.config = config if config is not None else resolve_config(overrides)
        if not self.config.vault.is_dir():
            given = self.config.vault
            if given.exists():  # a note passed for its vault, most often
                near = f" (--vault {given.parent}?)" if given.suffix.lower() == ".md" else ""
                raise VaultNotFoundError(
                    f"the vault {given} is a file, not a folder: pass the folder that holds your notes{near}"
                )
            raise VaultNotFoundError(f"vault folder {given} does not exist; pass --vault PATH")
        self.vault = self.config.vault.resolve()
        self.index_dir = self.config.resolved_index_dir
        if self.config.index_dir is None and not (self.index_dir / CATALOG_NAME).exists():
            self._adopt_moved_index()
        # A vault that cannot be written is served read-only, with one warning (docs/reliability.md).
        self.vault_problem: str | None = None if self.config.read_only else unwritable_reason(self.vault)
        if self.vault_problem is not None:
            log.warning(
                "the vault %s cannot be written (%s): working read-only (no rehearsal, no node_ids; stage, "
                "remember, log, pin and commit refuse). To write, %s; to say it is meant to be read-only "
                "(and silence this), pass --read-only",
                self.vault,
                self.vault_problem,
                remedy(self.vault_problem),
            )
            self.config = replace(self.config, read_only=True)
        self._index_problem: str | None = None  # why the index folder cannot be written (read it as it is)
        self._index_checked = False
        self._catalog_file: tuple[int, int] | None = None  # (st_dev, st_ino) of the catalog file opened
        self._store_broken: str | None = None  # the embedded store failed and could not be rebuilt here
        self._reopening = False
        self._repair = True  # set damaged index files aside and rebuild them when met (off: `inspecting`)
        self.clock = clock
        self._embedder = embedder
        self._embedder_from_index = False  # self._embedder was chosen to match what the index records
        self._queries: QueryEmbedder | None = None
        self._catalog: Catalog | None = None
        self._store: VectorStore | None = None
        self._store_failed: str | None = None
        self._store_failed_at = 0.0
        self._exact: tuple[str, list[str], np.ndarray] | None = None
        self._progress: tuple[str, VectorProgress] | None = None  # (vectors generation, counts)
        self._owners: tuple[Sequence[str], np.ndarray, dict[str, int]] | None = None
        self._rows: tuple[Sequence[str], dict[str, int]] | None = None
        self._names: tuple[str, Names] | None = None
        self._windows: WindowCache | None = None
        self._sentences: SentenceStore | None = None
        self._calibration: Calibration | None = calibration
        self.read_rules: ReadRules = DEFAULT_RULES if rules is None else rules
        self._kept_out: KeptOutLog | None = None
        self._hold = False
        self.bookkeeping = Bookkeeping()  # warnings given once, rehearsals to retry (edits.py)
        self._requests_due = 0.0  # the next time another process's requests are looked for
        self.lock = WriterLock(self.index_dir)
        self._rules = self._ignore_rules()
        self.decay = DecayModel.from_settings(self.config, daily_format=self._rules.obsidian.daily_format)

    def _adopt_moved_index(self) -> None:
        """This vault has no index yet: if it moved, take its old one (moved.py), saying so."""
        found = find_moved(self.vault, self.index_dir, CATALOG_NAME)
        if not found:
            return
        if len(found) > 1 or self.config.chroma_url is not None:
            why = (
                "its vectors live on a Chroma server, under the old path's collection"
                if len(found) == 1
                else "more than one could be this vault's"
            )
            log.warning(
                "no index for %s yet, but %s (%s): not taken, because %s; this vault gets a new index (built "
                "from the notes). To keep an old one, move its folder to %s before the next run (an index is derived: "
                "deleting the others loses nothing)",
                self.vault,
                " and ".join(f"{m.index_dir} was built for {m.old_vault}, which is gone" for m in found),
                ", ".join(f"{m.found} of its {m.notes} notes are here" for m in found),
                why,
                self.index_dir,
            )
            return
        moved = found[0]
        failed = adopt(moved, self.index_dir, self.vault, CATALOG_NAME)
        if failed is None:
            log.warning(
                "the vault moved from %s to %s: its index moved with it (%s -> %s; %d of its %d notes are "
                "here), so nothing is embedded again",
                moved.old_vault,
                self.vault,
                moved.index_dir,
                self.index_dir,
                moved.found,
                moved.notes,
            )
        else:
            log.warning(
                "the vault seems to have moved from %s (its index is %s) but that index could not be taken (%s): "
                "this vault gets a new index; to keep the old one, stop what uses it and move its folder to %s",
                moved.old_vault,
                moved.index_dir,
                failed,
                self.index_dir,
            )

    def close(self) -> None:
        """Close the index and release the writer lock (the context manager calls this)."""
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
            self._exact = None
            self._progress = None
            self._owners = None
            self._rows = None
            self._names = None
        if self._store is not None:
            self._store.close()
        self._store = None
        if self._queries is not None:
            self._queries.close()
        self._close_window_stores()
        if self._kept_out is not None:
            self._kept_out.close()
            self._kept_out = None
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
            # An index embedded by MiniLM's shipped graph stays on it under the default spec (embedders.py).
            recorded = recorded_embedder(self.index_dir / CATALOG_NAME)
            self._embedder = make_embedder(
                self.config.embedder,
                ollama_host=self.config.ollama_host,
                timeout=self.config.embed_timeout,
                index_identity=recorded,
            )
            self._embedder_from_index = recorded is not None
        return self._embedder

    @property
    def calibration(self) -> Calibration:
        """The cosine thresholds of this embedder (calibration.py): saved by `calibrate` in the
        index folder, built in (MiniLM), or MiniLM's as a fallback."""
        if self._calibration is None:
            try:
                identity = self.model.identity
            except EmbedderError:  # an Ollama server that does not answer: rank with the fallback
                return resolve_calibration(self.config.embedder)
            self._calibration = resolve_calibration(identity, self.index_dir)
        return self._calibration

    def warm_query(self, text: str) -> None:
        """Start embedding `text` on a background thread (loading the model), so a recall of it
        that follows does not wait for the model: the CLI calls this before it reconciles."""
        self.embedder.start(text)

    # -- the index folder: opening, damage, and going away ------------------------------
    @property
    def index_problem(self) -> str | None:
        """Why the index folder cannot be written (readers then read it as it is, once warned), or None."""
        if not self._index_checked:
            self._index_checked = True
            reason = unwritable_reason(self.index_dir)
            catalog = self.index_dir / CATALOG_NAME
            if reason is None and catalog.exists() and not os.access(catalog, os.W_OK):
                reason = f"no permission to write {catalog}"
            if reason is not None:
                self._index_read_only(reason)
        return self._index_problem

    def _index_read_only(self, reason: str) -> None:
        if self._index_problem is None:
            self._index_problem = reason
            log.warning(
                "the index folder %s cannot be written (%s): reading the index as it is (notes changed "
                "since it was last written are not seen). To update it, %s, or pass --index-dir to a "
                "writable folder",
                self.index_dir,
                reason,
                remedy(reason),
            )

    @property
    def catalog(self) -> Catalog:
        """The SQLite catalog (opened on first use; a damaged one is set aside and rebuilt, see `set_aside_catalog`)."""
        if self._catalog is None:
            self._catalog = self._open_catalog()
            with suppress(OSError):
                st = os.stat(self._catalog.path)
                self._catalog_file = (st.st_dev, st.st_ino)
        return self._catalog

    def _open_catalog(self) -> Catalog:
        path = self.index_dir / CATALOG_NAME
        if self.index_problem is None:
            try:
                return Catalog(path)
            except IndexNotWritableError as exc:  # a check above cannot see everything (e.g. a file's ACL)
                self._index_read_only(str(exc))
            except IndexStateError as exc:
                with self.lock.if_free() as writer:
                    if not writer or not self._repair:
                        raise
                    self.set_aside_catalog(str(exc))
                    return self.catalog
        if not path.is_file():
            raise IndexNotWritableError(
                f"there is no index at {self.index_dir} yet, and it cannot be written "
                f"({self._index_problem}): {remedy(str(self._index_problem))}, or pass "
                "--index-dir to a writable folder"
            )
        try:
            return Catalog(path, read_only=True)
        except CatalogCorruptError as exc:
            raise CatalogCorruptError(
                f"{exc}; this folder cannot be written ({self._index_problem}), so it "
                f"cannot be rebuilt here: {remedy(str(self._index_problem))}, or pass "
                "--index-dir to a writable folder"
            ) from exc

    def set_aside_catalog(self, why: str) -> None:
        """Rename the damaged catalog (never deleted: it is evidence) and start a new one. The index is
        derived, so nothing is lost; the embedding cache is saved as far as it can be read (the costly
        part), the rest is rebuilt by the next reconcile. The caller holds the writer lock."""
        path = self.index_dir / CATALOG_NAME
        self._close_index()
        aside = path.with_name(f"{CATALOG_NAME}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        n = 1
        while aside.exists():
            n += 1
            aside = aside.with_name(f"{CATALOG_NAME}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
        if path.exists():
            path.rename(aside)
        for suffix in ("-wal", "-shm"):  # kept beside it, so the set-aside file reads as it was
            side = path.with_name(CATALOG_NAME + suffix)
            if side.exists():
                side.rename(aside.with_name(aside.name + suffix))
        embedder, rows = salvage_vectors(aside) if aside.exists() else (None, {})
        if embedder is not None and embedder != self.embedder.identity:
            rows = {}  # vectors of another model: the new index is built with the configured one
        VectorStore.destroy(self.index_dir / STORE_FOLDER)  # derived from the catalog: rebuilt with it
        catalog = Catalog(path)
        if rows:
            with catalog.transaction():
                catalog.put_vector_blobs(rows)
                catalog.set_meta("embedder", self.embedder.identity)
        catalog.close()
        kept = (
            f"{len(rows)} cached vectors were saved from it, so only text they do not cover is embedded again"
            if rows
            else "its embedding cache could not be saved, so every note is embedded again"
        )
        log.warning(
            "index catalog %s is damaged (%s); set it aside as %s and rebuilding the index from the vault "
            "(nothing in the vault is lost; %s)",
            path,
            why,
            aside.name,
            kept,
        )

    def _close_index(self) -> None:
        """Close catalog and vector store (they are reopened on next use); keeps the lock."""
        if self._catalog is not None:
            with suppress(sqlite3.Error):
                self._catalog.close()
        self._catalog, self._catalog_file, self._exact = None, None, None
        self._close_store()

    def _close_store(self) -> None:
        if self._store is not None:
            self._store.close()
        self._store = None
        if self.config.chroma_url is None:
            VectorStore.forget(self.index_dir / STORE_FOLDER)

    def _catalog_replaced(self) -> bool:
        """The catalog file we have open is no longer the one at its path (deleted or replaced)."""
        if self._catalog is None or self._catalog_file is None:
            return False
        try:
            st = os.stat(self.index_dir / CATALOG_NAME)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self._catalog_file

    def check_index(self) -> bool:
        """Is the index folder still the one this process opened? False if it had to be reopened.

        For a process that keeps the writer lock (watch, the MCP server), called every second and
        before each write: if `writer.lock` was deleted or replaced (the folder was removed or
        recreated), it takes the lock on the new file and rebuilds the index there, or raises
        LockHeldError if another writer already has it (lock.py explains why). If only the catalog
        went away, it is rebuilt. A reader just reopens what is at the path. Costs a few stat calls."""
        if self._reopening:
            return True
        lock_lost = self.lock.held and not self.lock.still_ours()
        if not lock_lost and not self._catalog_replaced():
            return True
        self._reopening = True
        try:
            what = "its writer.lock" if lock_lost else "its catalog"
            self._close_index()
            self._index_checked, self._index_problem = False, None
            if not self.lock.held:
                log.info("index catalog %s was replaced; reopening it", self.index_dir / CATALOG_NAME)
                return False
            if lock_lost:
                self.lock.release()
                if not self.lock.try_acquire():
                    self._hold = False
                    pid = self.lock.holder_pid()
                    raise LockHeldError(
                        f"the index folder {self.index_dir} was deleted or replaced while this process wrote it, "
                        f"and {f'process {pid}' if pid else 'another process'} now writes the new one; this "
                        "process stops writing (restart it once that one is done)",
                        pid=pid,
                    )
            log.warning(
                "the index folder %s lost %s (deleted or replaced under this process); rebuilding the "
                "index there from the vault",
                self.index_dir,
                what,
            )
            self._reconcile()
            return False
        finally:
            self._reopening = False

    def guarded(self, op: Callable[[], T], *, retry: bool = True) -> T:
        """Run a read or write of the index; a damaged catalog or vector store is set aside and
        rebuilt (when this process may write the index) and the call made again, once.

        SQLite reports damage only when a query reaches the damaged page, so any call may be the
        first to see it: "database disk image is malformed" from a recall, an odd value from a
        damaged row (ValueError), or an integrity check that fails."""
        self.check_index()
        try:
            return op()
        except VectorStoreCorruptError as exc:
            if not retry or not self._repair:
                raise
            self._recover_store(exc)
        except (sqlite3.DatabaseError, ValueError, CatalogCorruptError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and is_unwritable(exc):
                raise IndexNotWritableError(
                    f"cannot write the index catalog {self.index_dir / CATALOG_NAME} ({exc}): free some space or "
                    "make the folder writable, or pass --index-dir to a writable folder"
                ) from exc
            if not retry or not self._repair or not self._catalog_damaged(exc):
                raise
            self._recover_catalog(exc)
        return self.guarded(op, retry=False)

    @contextmanager
    def inspecting(self) -> Iterator[None]:
        """Within the block damaged index files are reported (raised), not set aside and rebuilt:
        what `doctor` needs to say what it found."""
        saved, self._repair = self._repair, False
        try:
            yield
        finally:
            self._repair = saved

    def _catalog_damaged(self, exc: BaseException) -> bool:
        if isinstance(exc, CatalogCorruptError) or is_corruption(exc):
            return True
        try:
            return not self.catalog.check(max_seconds=2.0).ok
        except (sqlite3.Error, VaultMemoryError):
            return True

    def _recover_catalog(self, exc: BaseException) -> None:
        path = self.index_dir / CATALOG_NAME
        with self.lock.if_free() as writer:
            if not writer or self.index_problem is not None:
                why = (
                    f"this folder cannot be written ({self.index_problem})"
                    if self.index_problem
                    else f"process {self.lock.holder_pid() or '?'} is writing the index (e.g. `watch`): stop it"
                )
                raise CatalogCorruptError(
                    f"index catalog {path} is damaged ({exc}); {why}, then run "
                    "`vault-memory doctor --fix` to rebuild it from the vault"
                ) from exc
            self.set_aside_catalog(str(exc))
            self._reconcile()

    def _recover_store(self, exc: VectorStoreCorruptError) -> None:
        """Set a damaged embedded Chroma folder aside and rebuild it from the catalog's vectors
        (nothing is embedded); a process that may not write the index searches the catalog instead."""
        with self.lock.if_free() as writer:
            if not writer or self.index_problem is not None or self.config.chroma_url:
                self._store_broken = str(exc)
                self._close_store()
                log.warning("%s; searching the catalog's vectors instead this time", exc)
                return
            self.set_aside_store(str(exc))
            self._reconcile()

    def set_aside_store(self, why: str) -> str | None:
        """Rename the embedded Chroma folder (never deleted) and start an empty one; returns the new name.
        The next use re-syncs it from the catalog's vectors, embedding nothing. Hold the writer lock."""
        self._close_store()
        folder = self.index_dir / STORE_FOLDER
        aside = None
        if folder.exists():
            aside = folder.with_name(f"{STORE_FOLDER}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
            folder.rename(aside)
        self._store_broken = None
        moved = f"set it aside as {aside.name} and " if aside else ""
        log.warning(
            "%s; %srebuilding it from the catalog's vectors (nothing is embedded again)",
            why.split("; `vault-memory doctor --fix`")[0],
            moved,
        )
        return aside.name if aside else None

    @property
    def store_broken(self) -> str | None:
        """Why the embedded vector store is not used in this process (damaged, not rebuilt here), or None."""
        return self._store_broken

    @property
    def rules(self) -> IgnoreRules:
        """Which files are notes (dot-folders, `ignore` settings, `.vaultmemoryignore`)."""
        return self._rules

    def _ignore_rules(self) -> IgnoreRules:
        # The review note is the system's own page, never a memory: left out like an ignored file.
        patterns = (*self.config.ignore, *ignore_pattern(self.config))
        return IgnoreRules.for_vault(
            self.vault,
            patterns,
            use_obsidian=self.config.obsidian_settings,
            max_note_bytes=self.config.max_note_bytes,
        )

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
        if self._store is None and (
            self._store_failed is None or time.monotonic() - self._store_failed_at >= STORE_RETRY_SECONDS
        ):
            try:
                self._store = self._open_store()
                self._store_failed = None
            except VectorStoreUnavailableError as exc:
                self.lexical_only(exc)
        return self._store

    def _open_store(self) -> VectorStore:
        if self.config.chroma_url is None:
            if self.index_problem is not None:
                raise IndexNotWritableError(
                    f"the vector store in {self.index_dir} cannot be opened: the folder cannot "
                    f"be written ({self.index_problem})"
                )
            # A process that died with the store open may have died *of* it (a damaged HNSW file
            # crashes hnswlib in native code): check it in a child process before touching it here.
            from .index.storecheck import probe_store

            problem = probe_store(self.index_dir, self._probe_sample)
            if problem is not None:
                with self.lock.if_free() as writer:
                    if not writer or not self._repair:
                        raise VectorStoreCorruptError(problem)
                    self.set_aside_store(problem)
        return open_store(
            vault=self.vault,
            index_dir=self.index_dir,
            embedder_identity=self.embedder.identity,
            url=self.config.chroma_url,
        )

    def _probe_sample(self) -> tuple[str, list[tuple[str, list[float]]]]:
        """(collection, a few (chunk id, vector) of the catalog) for checking the store in a child process."""
        ids, mat = self._exact_vectors()
        pick = sorted({int(i) for i in np.linspace(0, len(ids) - 1, num=min(8, len(ids)))}) if ids else []
        name = describe_target(
            vault=self.vault, index_dir=self.index_dir, embedder_identity=self.embedder.identity, url=None
        )["collection"]
        return name, [(ids[i], [float(x) for x in mat[i]]) for i in pick]

    def lexical_only(self, exc: VectorStoreUnavailableError) -> None:
        """The server failed (at open or mid-run): raise, or with lexical fallback go BM25-only and warn."""
        if not self.config.lexical_fallback:
            raise exc
        if self._store is not None:
            self._store.close()
        self._store = None
        self._store_failed, self._store_failed_at = str(exc), time.monotonic()
        log.warning("vector store unavailable, serving lexical (BM25) recall only: %s", exc)

    def _reconcile(
        self,
        progress: Callable[[int, int], None] | None = None,
        paths: Sequence[str] | None = None,
        *,
        embed_budget: int | None = None,
        embed_tokens: int | None = None,
        verify: bool = False,
        repair: bool = False,
        sentence_progress: Callable[[int, int], None] | None = None,
    ) -> IndexReport:
        def run() -> IndexReport:
            return self.indexer().reconcile(
                progress,
                paths=paths,
                embed_budget=embed_budget,
                embed_tokens=embed_tokens,
                verify=verify,
                repair=repair,
            )

        try:
            report = run()
        except VectorStoreUnavailableError as exc:
            # The catalog is consistent (store_dirty stays set); with fallback, finish it without the store.
            self.lexical_only(exc)
            report = run()
        if self.catalog.get_meta(VAULT_KEY) != str(self.vault):  # what finds this index if the vault moves
            with self.catalog.transaction():
                self.catalog.set_meta(VAULT_KEY, str(self.vault))
        if self.config.chroma_url is None and self.keeps_store() and self.catalog.get_meta("store") != "live":
            # The index has just grown past exact_search_limit: fill Chroma from the catalog's vectors.
            log.info(
                "%d chunks: building the vector store's HNSW index (once; nothing is embedded)",
                self.catalog.chunk_count(),
            )
            indexer = Indexer(self.vault, self.catalog, self.store, self.model, self.rules)
            _ = indexer.store  # opening it re-syncs it with the catalog (it is empty: all rows go in)
            report.store_resynced += indexer.resynced
            with self.catalog.transaction():
                self.catalog.set_meta("store", "live")
        # Then the answer sentences of what now has its vectors; a reader's reconcile only a few
        # notes' worth (an edit), leaving a first index's to `index` and the watcher.
        started = time.perf_counter()
        try:
            sentences = self.fill_sentences(
                budget=None if embed_budget is None else READER_SENTENCE_CHUNKS, progress=sentence_progress
            )
        except (EmbedderError, OSError) as exc:
            # What the reconcile was for is done; these only make new questions faster. Each step
            # committed what it embedded: the next one (a watcher's idle step, `index`) resumes.
            log.warning("answer sentences not embedded now (%s); `vault-memory index` resumes them", exc)
            sentences = FillReport(chunks_pending=1)
        report.sentences_embedded, report.sentences_pending = sentences.embedded, sentences.chunks_pending
        report.seconds += time.perf_counter() - started
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
        limit = self.config.exact_search_limit
        # A limit of 0 asks for the store at any size, from the first write on.
        return self.catalog.get_meta("store") == "live" or limit <= 0 or self.catalog.chunk_count() > limit

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
            local = Indexer(self.vault, self.catalog, None, self.model, self.rules, store_deferred=True)
            local.between_steps = self._take_requests
            return local
        # While recall is served from the catalog's vectors (`exact_search`), Chroma is opened
        # only when a reconcile has something to write; otherwise it is opened (and checked)
        # first thing, as the ANN path and server mode need it.
        lazy = self._store is None and self.exact_search()
        indexer = Indexer(
            self.vault,
            self.catalog,
            (lambda: self.store) if lazy else self.store,
            self.model,
            self.rules,
            lazy_store=lazy,
        )
        indexer.between_steps = self._take_requests
        return indexer

    def take_requests(self) -> list[str]:
        """Paths other processes wrote while this one held the writer lock (requests.py); removed as taken."""
        if not self.lock.held:
            return []
        return requests.take(self.index_dir)

    def _take_requests(self) -> None:
        """Between embedding steps: index what other processes asked for (rows now, vectors later)."""
        now = time.monotonic()
        if now < self._requests_due or not self.lock.held:
            return
        self._requests_due = now + REQUESTS_EVERY
        paths = requests.take(self.index_dir)
        if not paths:
            return
        try:
            self._reconcile(None, paths=paths, embed_budget=0)
            log.info("indexed %s, written by another process meanwhile", ", ".join(paths[:5]))
        except (VaultMemoryError, OSError) as exc:
            requests.ask(self.index_dir, paths)
            log.warning("could not index %s yet (%s); later", ", ".join(paths[:5]), exc)

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
        if self._store_broken or self.index_problem:
            return True  # the embedded store cannot be used or opened here: the catalog's vectors can
        # Past the limit too while the local store is not built yet (the writer is filling it).
        return self.vectors().chunks <= self.config.exact_search_limit or self.catalog.get_meta("store") != "live"

    def vectors(self) -> VectorProgress:
        """How many chunks have their vector (a first index writes every note's rows before it
        embeds them). Counted again only when the catalog's chunks or vectors change."""
        gen = self.catalog.vectors_generation()
        if self._progress is None or self._progress[0] != gen:
            self._progress = (gen, self.catalog.vector_progress())
        return self._progress[1]

    def _exact_owners(self, ids: Sequence[str]) -> tuple[np.ndarray, dict[str, int]]:
        """For the rows of the exact vectors whose ids are `ids` (the list `_exact_vectors` gave):
        each row's note as a small integer, and note -> integer. Kept with those vectors, so a
        filtered search masks rows with one integer `isin` (search.py)."""
        if self._owners is None or self._owners[0] is not ids:
            codes: dict[str, int] = {}
            arr = np.fromiter(
                (codes.setdefault(chunk_owner(c), len(codes)) for c in ids), dtype=np.int64, count=len(ids)
            )
            self._owners = (ids, arr, codes)
        return self._owners[1], self._owners[2]

    def _exact_rows(self, ids: Sequence[str]) -> dict[str, int]:
        """chunk id -> its row of the exact vectors whose ids are `ids` (kept with them, like
        `_exact_owners`): asked of the ids in hand, since another process may change the vectors
        between two calls of `_exact_vectors` (a race test caught rows of one generation applied
        to the matrix of the next)."""
        if self._rows is None or self._rows[0] is not ids:
            self._rows = (ids, {c: i for i, c in enumerate(ids)})
        return self._rows[1]

    def _exact_vectors(self) -> tuple[list[str], np.ndarray]:
        """All chunk vectors, loaded once and again only after the catalog's chunks change: from the
        index folder's exact-vectors file when it holds this catalog's current ones (exactfile.py),
        else from the catalog, and then that file is written for the next process."""
        gen = self.catalog.vectors_generation()
        if self._exact is None or self._exact[0] != gen:
            uid = self.catalog.get_meta("uid")
            key = f"{uid}|{gen}|{self.embedder.identity}"
            path = self.index_dir / exactfile.FILE_NAME
            found = exactfile.read(path, key) if uid else None
            if found is None:
                found = self.catalog.all_chunk_vectors()
                if uid:
                    exactfile.write(path, key, *found)
            self._exact = (gen, *found)
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
            return Searcher(
                self.catalog,
                None,
                embedder or self.embedder,
                exact=self._exact_vectors,
                owners=self._exact_owners,
                rows=self._exact_rows,
            )
        return Searcher(self.catalog, self.store, embedder or self.embedder)

    def kept_out_log(self) -> KeptOutLog:
        """What prefetch left out because it was dormant, kept in the index folder for the review."""
        if self._kept_out is None:
            from .index.keptout import open_log

            self._kept_out = open_log(self.index_dir if self.index_dir.is_dir() else None)
        return self._kept_out

    def window_scorer(self) -> WindowScorer:
        """Scores candidates' answer windows; their vectors are cached in the index folder (windows.py)."""
        if self._windows is None:
            self._windows = open_cache(self.index_dir, self.embedder, self.sentences())
        return WindowScorer(self.catalog, self.embedder, self._windows, self.read_rules)

    def _close_window_stores(self) -> None:
        """Close the window cache and the sentence store it asks (both are opened again on use)."""
        for held in (self._windows, self._sentences):
            if held is not None:
                held.close()
        self._windows = self._sentences = None

    def sentences(self) -> SentenceStore:
        """The sentence vectors written with this index (sentences.py)."""
        if self._sentences is None:
            folder = self.index_dir if self.index_dir.is_dir() else None
            self._sentences = open_sentences(folder, self.model)
        return self._sentences

    def fill_sentences(
        self,
        *,
        limit: int | None = None,
        budget: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> FillReport:
        """Embed the answer sentences of the chunks that have their vectors (sentences.py), the
        writer lock held by the caller; nothing while chunks still wait for theirs (they come
        first: recall by meaning needs them) or with `index_sentences = false`."""
        if not self.config.index_sentences or self.catalog.get_meta("embedding_pending") == "1":
            return FillReport()
        if self._sentences is not None and self._sentences.path is None and self.index_dir.is_dir():
            self._close_window_stores()  # opened before the folder existed: both again, the cache asking the new one
        if self.sentences().up_to_date(self.catalog):
            return FillReport()  # most reconciles: one meta read, and the window cache stays unopened
        if self._windows is None:
            self._windows = open_cache(self.index_dir, self.embedder, self.sentences())
        return self.sentences().fill(
            self.catalog,
            self.model,
            cache=self._windows,
            limit=limit,
            budget=budget,
            progress=progress,
            between_steps=self._take_requests,
        )

    # -- indexing -------------------------------------------------------------
    def index(
        self,
        *,
        rebuild: bool = False,
        progress: Callable[[int, int], None] | None = None,
        wait: float = 3.0,
        embed_budget: int | None = None,
        embed_tokens: int | None = None,
        verify: bool = False,
        sentence_progress: Callable[[int, int], None] | None = None,
    ) -> IndexReport:
        """`Memory.index`, the documented operation, says what this does and what each argument means."""
        with self.writing(wait):
            if rebuild:
                self._drop_index()
                if self._embedder_from_index:  # built from nothing: with what the configuration says now
                    self._forget_embedder()
            report = self.guarded(
                lambda: self._reconcile(
                    progress,
                    embed_budget=embed_budget,
                    embed_tokens=embed_tokens,
                    verify=verify,
                    repair=True,
                    sentence_progress=sentence_progress,
                )
            )
        report.rebuilt = rebuild
        return report

    def fill_vectors(
        self, *, limit: int | None = None, progress: Callable[[int, int], None] | None = None, wait: float = 3.0
    ) -> IndexReport:
        """Embed up to `limit` (None: all) of the chunks written before their vectors (see `index`
        with `embed=False`); `report.texts_pending` is what is left. Takes the writer lock."""
        with self.writing(wait):
            try:
                report = self.indexer().fill_vectors(progress, limit=limit)
            except VectorStoreUnavailableError as exc:
                self.lexical_only(exc)
                report = self.indexer().fill_vectors(progress, limit=limit)
            if report.texts_embedded == 0:  # the chunks have theirs: the sentences' turn (a step as long)
                sentences = self.fill_sentences(limit=None if limit is None else max(1, limit // SENTENCES_PER_CHUNK))
                report.sentences_embedded, report.sentences_pending = sentences.embedded, sentences.chunks_pending
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

    def _forget_embedder(self) -> None:
        self._embedder, self._embedder_from_index = None, False
        if self._queries is not None:
            self._queries.close()
            self._queries = None
        if self._windows is not None:
            self._windows.close()
            self._windows = None

    def _drop_index(self) -> None:
        if self._catalog is not None:
            with suppress(sqlite3.Error):
                self._catalog.close()
            self._catalog = None
            self._exact = None
            self._owners = None
            self._rows = None
            self._names = None
        if self._store is not None or self.config.chroma_url:
            store = self.store
            if store is not None:
                store.drop()
        else:
            VectorStore.destroy(self.index_dir / STORE_FOLDER)
        # The sentence vectors go too (a rebuild trusts nothing the index holds); the window cache
        # that asks them is opened again with the new ones.
        self._close_window_stores()
        for suffix in ("", "-wal", "-shm"):
            (self.index_dir / (CATALOG_NAME + suffix)).unlink(missing_ok=True)
            (self.index_dir / (SENTENCES_NAME + suffix)).unlink(missing_ok=True)

    def sync_paths(self, paths: Sequence[str], *, embed_budget: int | None = None) -> IndexReport:
        """Reconcile only these vault-relative paths (the watcher's incremental step); `embed_budget`
        as for `index`."""
        with self.writing():
            return self.guarded(lambda: self._reconcile(None, paths=paths, embed_budget=embed_budget))

    def ensure_current(self, progress: Callable[[int, int], None] | None = None) -> IndexReport | None:
        """Bring the index up to date before reading, if no other process is writing it; otherwise
        read what is there. Never blocks on a long embedding: at most READER_EMBED_TOKENS tokens
        (READER_EMBED_BUDGET texts) are embedded here, so a small vault's first run answers by
        meaning; when more are needed, the changed notes are written to the catalog (found by
        keyword at once) and `vectors()` says how many chunks still wait for theirs.

        An index that cannot be written (read-only folder, full disk) is read as it is, with a warning."""
        if self.index_problem is not None:
            return None  # said once, when it was found
        try:
            with self.lock.if_free() as writer:
                if writer:
                    return self.guarded(
                        lambda: self._reconcile(
                            progress, embed_budget=READER_EMBED_BUDGET, embed_tokens=READER_EMBED_TOKENS
                        )
                    )
        except IndexNotWritableError as exc:
            log.warning("could not bring the index up to date (%s); reading it as it is", exc)
            return None
        if self.index_problem is None:
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
                requests.ask(self.index_dir, todo)  # the writer indexes them at its next step (requests.py)
                log.info(
                    "index is being written by process %s; it will pick up %s", self.lock.holder_pid(), ", ".join(todo)
                )
                return False
            try:
                self.sync_paths(todo)
                return True
            except VaultMemoryError as exc:
                log.warning(
                    "wrote %s but could not update the index (%s); run `vault-memory index`", ", ".join(todo), exc
                )
                return False

    def note_written(self, note: ParsedNote) -> None:
        """Keep the catalog in step with a frontmatter-only write we just made (`note`: what the write
        left in the file), if we may write the index.

        The row takes the new file hash only when the note's text is the text its chunks hold and its
        identity is unchanged. Otherwise the note is indexed again from the file: a person's edit the
        index had not seen yet (no `watch`), rehearsed before any reconcile, would be stamped as indexed
        over the old chunks, and `index` would call it unchanged for good (issue 41)."""
        with self.lock.if_free() as writer:
            if not writer:
                return  # the process holding the lock (a watcher) will see the change
            row = self.catalog.note_by_path(note.path)
            if row is None:
                return
            carried = row.node_id if row.id_in_file else None
            if row.body_hash != note.body_hash or file_node_id(note) != carried:
                # a text the index does not hold, or a new identity (our first write gave it an id)
                self.sync_paths([note.path])
                return
            stated = stated_epoch(note.meta, PurePosixPath(note.path).stem, self.decay.daily_format)
            with self.catalog.transaction():
                self.catalog.upsert_note(
                    replace(row, file_hash=note.file_hash, meta=jsonable(note.meta), mtime=note.mtime, stated=stated)
                )

    # -- status ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, locations, embedder, and what a reconcile would do (without doing it); `index_state`
        (missing, building, embedding, stale, current) and `next_step`, what to run about it ("": nothing)."""
        missing = not (self.index_dir / CATALOG_NAME).is_file()  # before opening it creates an empty one
        info = self.guarded(self._status)
        info["index_state"], info["next_step"] = self._index_state(info, missing)
        return info

    def _index_state(self, info: dict[str, Any], missing: bool) -> tuple[str, str]:
        vec, writer = info["vectors"], info["writer_pid"]
        by = f"process {writer} is writing the index (watch or the MCP server): nothing to run"
        if missing or (not info["notes"] and info["pending"].get("new")):  # no index, or an empty one
            return "missing", (
                f"the index {self.index_dir} is missing (deleted, or never built); "
                + (f"{by}, it is rebuilding it" if writer else "run `vault-memory index` to build it from the vault")
                + " (it is derived: nothing in the vault is lost)"
            )
        if writer and (info["pending"] or not vec["complete"]):
            return "building", f"{by}; recall answers by keyword until every chunk has its vector"
        if not vec["complete"]:
            return "embedding", (
                f"{vec['pending']:,} chunks wait for their vectors: run `vault-memory index` to embed them "
                "(with progress; it resumes if stopped); recall answers by keyword until then"
            )
        if info["pending"]:
            return "stale", "run `vault-memory index`, or just recall: it brings the index up to date first"
        return "current", ""

    def _sentence_status(self) -> dict[str, Any]:
        """The answer sentences written with the index (sentences.py): chunk texts whose sentences
        have their vectors, of how many, and the vectors held; `on`: `index_sentences`."""
        (texts,) = self.catalog.db.execute("SELECT count(DISTINCT text_hash) FROM chunks").fetchone()
        covered, held = self.sentences().count()
        return {
            "on": self.config.index_sentences,
            "chunks": int(texts),
            "covered": min(covered, texts),
            "vectors": held,
        }

    def _status(self) -> dict[str, Any]:
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
            store_info = {
                "backend": "exact",
                "url": None,
                "path": str(self.index_dir / CATALOG_NAME),
                "collection": None,
                "vectors": vectors.embedded,
                "exact_search_limit": self.config.exact_search_limit,
            }
        else:
            try:
                if self._store_broken or (self.index_problem and not self.config.chroma_url):
                    store_info = {
                        "error": self._store_broken
                        or f"not opened: the index folder cannot be written ({self.index_problem})"
                    }
                else:
                    store = self.store
                    store_info = store.describe() | {"vectors": store.count()} if store else {"error": self.store_error}
            except (VectorStoreUnavailableError, IndexStateError, IndexNotWritableError) as exc:
                store_info = {"error": str(exc)}
            if "error" in store_info:  # still say which server and collection this index uses
                store_info = (
                    describe_target(
                        vault=self.vault,
                        index_dir=self.index_dir,
                        embedder_identity=self.embedder.identity,
                        url=self.config.chroma_url,
                    )
                    | store_info
                )
        return {
            "vault": str(self.vault),
            "index_dir": str(self.index_dir),
            "notes": len(cat.notes()),
            "chunks": vectors.chunks,
            "embedder": cat.get_meta("embedder") or self.config.embedder,
            # the cosine thresholds it ranks with, and where they come from (calibration.py)
            "calibration": self.calibration.to_dict(),
            "vector_store": store_info,
            # chunks with their vector / all; until all have one, recall ranks by BM25 alone
            "vectors": vectors.to_dict(),
            "recall": "hybrid" if vectors.complete else "lexical-only",
            "sentences": self._sentence_status(),
            "pending": pending,
            "failures": {p: e for p, (_, e) in cat.failures().items()} | dict(scan.failures),
            "passed_over": dict(scan.passed),  # private notes and symlinks: never indexed, by design
            "writer_pid": self.lock.holder_pid() if not self.lock.held else None,
            "vault_read_only": self.vault_problem,  # why the vault cannot be written (served read-only), or None
            "index_read_only": self.index_problem,  # why the index folder cannot be written (read as is), or None
        }


__all__ = [
    "CATALOG_NAME",
    "READER_EMBED_BUDGET",
    "READER_EMBED_TOKENS",
    "IndexFolder",
    "VectorProgress",
    "remedy",
    "unwritable_reason",
    "utcnow",
]
