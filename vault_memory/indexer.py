"""Reconciling the index with the vault: scan, plan (pure, planner.py), execute.

Order of writes is chosen for crash safety: vectors go into the catalog's cache first
(so an interrupted run resumes without re-embedding), then each note's catalog rows
and Chroma rows. A `store_dirty` flag marks a run in flight; if a process dies with it
set, the next run re-syncs Chroma's ids with the catalog before anything else.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .catalog import Catalog, ChunkRow, NoteRow
from .embedders import Embedder
from .errors import ConcurrentEditError, EmbedderMismatchError, NoteParseError
from .markdown import CHUNKER_VERSION, chunk_body, extract_info
from .notefile import ParsedNote, parse_note, write_note
from .planner import Change, Entry, Kind, Plan, plan_changes
from .vault import IgnoreRules, iter_note_paths
from .vectorstore import VectorStore

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
StoreSource = VectorStore | None | Callable[[], VectorStore | None]
WAVE_CHUNKS = 1024  # notes are embedded in waves of about this many chunks, committed as they finish
EMBED_SLICE = 128  # texts handed to the embedder per call (it sorts by length and batches inside)
COMMIT_CHUNKS = 128  # catalog rows are committed in groups of about this many chunks


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_node_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass
class IndexReport:
    """What a reconcile did."""

    counts: dict[str, int] = field(default_factory=dict)
    notes: int = 0
    chunks: int = 0
    chunks_written: int = 0
    texts_embedded: int = 0
    ids_assigned: list[str] = field(default_factory=list)
    ids_reassigned: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)
    seconds: float = 0.0
    rebuilt: bool = False
    store_resynced: int = 0

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class Scan:
    entries: list[Entry]
    parsed: dict[str, ParsedNote]
    failures: dict[str, str]
    busy: list[str]
    assigned: list[str]
    reassigned: list[str]
    scope: set[str] | None = None  # the paths scanned, when not the whole vault


class Indexer:
    """Brings the catalog and the vector store in line with the vault."""

    def __init__(self, vault: Path, catalog: Catalog, store: StoreSource, embedder: Embedder,
                 rules: IgnoreRules, *, assign_ids: bool, lazy_store: bool = False) -> None:
        """`store` is the vector store, None (catalog only), or a function that opens it.

        With `lazy_store`, the store is opened (and checked against the catalog) only when a
        reconcile has something to write: an unchanged vault never loads Chroma, which is most
        of a one-shot CLI recall's start-up (README "Cold start").
        """
        self.vault = vault
        self.catalog = catalog
        self._store_source = store
        self._store: VectorStore | None = None
        self._store_checked = False
        self.lazy_store = lazy_store
        self.resynced = 0
        self.embedder = embedder
        self.rules = rules
        self.assign_ids = assign_ids

    @property
    def store(self) -> VectorStore | None:
        """The vector store, brought in line with the catalog the first time it is used.

        Dirty: a run died mid-way. Count mismatch: the store is not the one this catalog filled
        (first run against a server, a server that lost or dropped its data, a recreated catalog,
        a deleted chroma folder).
        """
        if not self._store_checked:
            self._store_checked = True
            source = self._store_source
            self._store = source() if callable(source) else source
            if self._store is not None and (self.catalog.get_meta("store_dirty") == "1"
                                            or self._store.count() != self.catalog.chunk_count()):
                self.resynced += self.resync_store()
        return self._store

    # -- identity -----------------------------------------------------------
    def check_embedder(self) -> None:
        recorded = self.catalog.get_meta("embedder")
        if recorded is not None and recorded != self.embedder.identity:
            raise EmbedderMismatchError(
                f"the index at {self.catalog.path.parent} was built with embedder '{recorded}', not "
                f"'{self.embedder.identity}'; run `vault-memory index --rebuild` to re-embed with the new one, "
                f"or pass --embedder matching '{recorded}'"
            )

    # -- scan ---------------------------------------------------------------
    def scan(self, paths: Iterable[str] | None = None) -> Scan:
        """Read the vault (or only `paths`, for the watcher) and identify every note."""
        known = self.catalog.path_hashes()
        entries: dict[str, Entry] = {}
        parsed: dict[str, ParsedNote] = {}
        failures: dict[str, str] = {}
        vault_dir = str(self.vault)
        if paths is None:
            candidates: Iterable[str] = iter_note_paths(self.vault, self.rules)
        else:
            candidates = sorted(p for p in set(paths) if self.rules.is_note(p) and self._is_vault_file(p))
        for rel in candidates:
            full = os.path.join(vault_dir, rel)
            try:
                with open(full, "rb") as fh:
                    raw = fh.read()
                    mtime = os.fstat(fh.fileno()).st_mtime
            except OSError as exc:
                failures[rel] = f"cannot read: {exc.strerror or exc}"
                continue
            file_hash = hashlib.sha256(raw).hexdigest()
            hit = known.get(rel)
            if hit is not None and hit[0] == file_hash and not (self.assign_ids and hit[2].startswith("path:")):
                entries[rel] = Entry(hit[2], rel, file_hash, hit[1])
                continue
            try:
                note = parse_note(rel, raw, mtime)
            except NoteParseError as exc:
                failures[rel] = str(exc)
                continue
            parsed[rel] = note
        scan = self._assign_identities(entries, parsed, failures, partial=paths is not None)
        scan.scope = None if paths is None else set(paths)
        return scan

    def _is_vault_file(self, rel: str) -> bool:
        full = self.vault / rel
        try:
            return full.is_file() and full.resolve().is_relative_to(self.vault.resolve())
        except OSError:
            return False

    def _assign_identities(self, entries: dict[str, Entry], parsed: dict[str, ParsedNote],
                           failures: dict[str, str], partial: bool = False) -> Scan:
        known = self.catalog.path_hashes()
        known_paths = {row_path: node_id for row_path, (_, _, node_id) in known.items()}
        claims: dict[str, list[str]] = {}
        if partial:
            # Only some files were read: the rest of the vault still claims its ids.
            for row_path, (_, _, node_id) in known.items():
                if row_path not in entries and row_path not in parsed and (self.vault / row_path).is_file():
                    claims.setdefault(node_id, []).append(row_path)
        for rel, e in entries.items():
            claims.setdefault(e.node_id, []).append(rel)
        for rel, note in parsed.items():
            nid = file_node_id(note)
            if nid:
                claims.setdefault(nid, []).append(rel)
        assigned: list[str] = []
        reassigned: list[str] = []
        busy: list[str] = []
        losers: set[str] = set()
        for nid, paths in claims.items():
            if len(paths) > 1:
                keeper = next((p for p in sorted(paths) if known_paths.get(p) == nid), sorted(paths)[0])
                for p in paths:
                    if p != keeper and (p in parsed or p in entries):
                        losers.add(p)
                        log.warning("%s: node_id %s is also used by %s (a copied note?); %s", p, nid, keeper,
                                    "giving it a fresh id" if self.assign_ids else "identifying it by path")
        for rel in sorted(parsed):
            note = parsed[rel]
            nid = file_node_id(note)
            duplicate = rel in losers
            if nid and not duplicate:
                entries[rel] = Entry(nid, rel, note.file_hash, note.body_hash)
                continue
            if self.assign_ids:
                fresh = new_node_id()
                try:
                    note = write_note(self.vault, rel, expected_hash=note.file_hash, set_fields={"node_id": fresh})
                except ConcurrentEditError:
                    busy.append(rel)  # a human is editing it right now: pick it up next time
                    continue
                except OSError as exc:
                    failures[rel] = f"cannot write node_id: {exc}"
                    continue
                parsed[rel] = note
                (reassigned if duplicate else assigned).append(rel)
                entries[rel] = Entry(fresh, rel, note.file_hash, note.body_hash)
            else:
                entries[rel] = Entry(f"path:{rel}", rel, note.file_hash, note.body_hash)
        return Scan(list(entries.values()), parsed, failures, busy, assigned, reassigned)

    # -- plan + execute -------------------------------------------------------
    def plan(self, scan: Scan) -> Plan:
        indexed = [Entry(*r) for r in self.catalog.entries()]
        if scan.scope is not None:
            # A partial scan speaks only for its paths and for the identities it found (moves).
            ids = {e.node_id for e in scan.entries}
            indexed = [e for e in indexed if e.path in scan.scope or e.node_id in ids]
        return plan_changes(scan.entries, indexed, keep=[*scan.failures, *scan.busy])

    def reconcile(self, progress: Progress | None = None, paths: Iterable[str] | None = None) -> IndexReport:
        """Bring the index in line with the vault, or with just `paths` (created, changed, moved or gone)."""
        started = time.perf_counter()
        self.check_embedder()
        report = IndexReport()
        if not self.lazy_store:
            _ = self.store  # opens and checks it
        scan = self.scan(paths)
        plan = self.plan(scan)
        recorded = self.catalog.get_meta("chunker")
        if recorded is not None and recorded != self.chunker_identity:
            log.warning("chunking rules changed (%s -> %s): re-chunking every note; only new text is embedded",
                        recorded, self.chunker_identity)
            plan = Plan(tuple(c if c.kind in (Kind.NEW, Kind.DELETED) else Change(Kind.MODIFIED, c.entry, c.previous)
                              for c in plan.changes))
        report.counts = plan.counts()
        report.failures = dict(scan.failures)
        report.busy = scan.busy
        report.ids_assigned = scan.assigned
        report.ids_reassigned = scan.reassigned
        for rel, err in scan.failures.items():
            log.warning("%s", err if err.startswith(rel) else f"{rel}: {err}")
        if not plan.is_noop:
            _ = self.store  # open and check it before this run marks the store dirty
            self._execute(plan, scan, report, progress)
        elif scan.failures or (paths is None and self.catalog.failures()):
            with self.catalog.transaction():
                self._record_failures(scan)
        report.store_resynced = self.resynced
        report.notes = len(scan.entries)
        report.chunks = self.catalog.chunk_count()
        report.seconds = time.perf_counter() - started
        return report

    def _execute(self, plan: Plan, scan: Scan, report: IndexReport, progress: Progress | None) -> None:
        cat = self.catalog
        with cat.transaction():
            cat.set_meta("embedder", self.embedder.identity)
            cat.set_meta("chunker", self.chunker_identity)
            cat.set_meta("store_dirty", "1")
            self._record_failures(scan)
        # Deletions first, so a path freed by a delete can be taken by a new note.
        removed: list[str] = []
        for change in plan.of(Kind.DELETED):
            with cat.transaction():
                removed += cat.delete_note(change.entry.node_id)
        if self.store is not None and removed:
            self.store.delete(removed)
        for change in plan.of(Kind.MOVED, Kind.META):
            note = scan.parsed.get(change.entry.path) or self._parse(change.entry.path)
            if note is None:
                continue
            with cat.transaction():
                cat.upsert_note(note_row(change.entry, note))
        self._embed_and_write(plan.of(Kind.NEW, Kind.MODIFIED), scan, report, progress)
        with cat.transaction():
            cat.prune_vectors()
            # Without a store (lexical fallback while the server is down) it stays dirty: resync next time.
            cat.set_meta("store_dirty", "0" if self.store is not None else "1")
        cat.save_lexical_segment()

    def _record_failures(self, scan: Scan) -> None:
        cat = self.catalog
        for rel, err in scan.failures.items():
            cat.set_failure(rel, "", err)
        if scan.scope is None:
            cat.clear_failures(scan.failures)
        else:
            cat.clear_failures(set(cat.failures()) - (scan.scope - set(scan.failures)))

    def _parse(self, rel: str) -> ParsedNote | None:
        try:
            full = self.vault / rel
            return parse_note(rel, full.read_bytes(), full.stat().st_mtime)
        except (OSError, NoteParseError) as exc:
            log.warning("%s: changed while indexing (%s); it will be picked up next time", rel, exc)
            return None

    def _embed_and_write(self, changes: Sequence[Change], scan: Scan, report: IndexReport,
                         progress: Progress | None) -> None:
        # Chunk everything first so progress can show a true total.
        work: list[tuple[Change, ParsedNote, list[ChunkRow]]] = []
        for change in changes:
            note = scan.parsed.get(change.entry.path) or self._parse(change.entry.path)
            if note is None:
                continue
            work.append((change, note, self.chunk_note(change.entry.node_id, note)))
        needed = {c.text_hash: c.text for _, _, chunks in work for c in chunks}
        cached = self.catalog.cached_hashes(needed)
        total = len(needed) - len(cached)
        done = 0
        if progress:
            progress(0, total)
        wave: list[tuple[Change, ParsedNote, list[ChunkRow]]] = []
        wave_size = 0
        for item in [*work, None]:
            if item is not None:
                wave.append(item)
                wave_size += len(item[2])
                if wave_size < WAVE_CHUNKS:
                    continue
            if not wave:
                break
            missing = {c.text_hash: c.text for _, _, chunks in wave for c in chunks if c.text_hash not in cached}
            done += self._embed_missing(missing, self._ticker(progress, done, total))
            cached.update(missing)
            report.texts_embedded += len(missing)
            # One store write per wave, not per note: a Chroma call has a fixed cost of ~15 ms
            # (embedded or server), which capped indexing at ~60 chunks/s (bench/server_mode.py).
            # store_dirty covers the gap between the catalog's commits and the flush.
            # One catalog transaction per COMMIT_CHUNKS chunks, not per note: a commit cost 1.5 ms
            # per chunk, and lexical rows are tokenized in batches. A crash loses at most that many
            # rows, whose vectors are already cached: the next run writes them and embeds nothing.
            batch = StoreBatch()
            group: list[tuple[Change, ParsedNote, list[ChunkRow]]] = []
            for i, item in enumerate(wave):
                group.append(item)
                if sum(len(g[2]) for g in group) < COMMIT_CHUNKS and i < len(wave) - 1:
                    continue
                with self.catalog.transaction():
                    for change, note, chunks in group:
                        self._write_note(change, note, chunks, batch)
                        report.chunks_written += len(chunks)
                group = []
            if self.store is not None:
                batch.flush(self.store, self.catalog)
            wave, wave_size = [], 0

    @staticmethod
    def _ticker(progress: Progress | None, base: int, total: int) -> Callable[[int], None]:
        """Progress for one wave: `n` texts embedded in it, after `base` in earlier waves."""
        def tick(n: int) -> None:
            if progress:
                progress(base + n, total)
        return tick

    def _embed_missing(self, missing: dict[str, str], tick: Callable[[int], None]) -> int:
        items = sorted(missing.items(), key=lambda kv: len(kv[1]))
        embedded = 0
        for start in range(0, len(items), EMBED_SLICE):
            part = items[start : start + EMBED_SLICE]
            vectors = self.embedder.embed([t for _, t in part])
            with self.catalog.transaction():
                self.catalog.put_vectors([h for h, _ in part], vectors)
            embedded += len(part)
            tick(embedded)
        return embedded

    def _write_note(self, change: Change, note: ParsedNote, chunks: list[ChunkRow], batch: StoreBatch) -> None:
        """A note's catalog rows, inside the caller's transaction; its store writes go to `batch`,
        flushed by the caller after that transaction commits."""
        row = note_row(change.entry, note)
        vectors = self.catalog.get_vectors([c.text_hash for c in chunks])
        if change.previous is None:
            # identity is new; a note previously indexed at this path under another id is replaced
            old = self.catalog.note_by_path(row.path)
            if old is not None and old.node_id != row.node_id:
                batch.delete(self.catalog.delete_note(old.node_id))
        before = self.catalog.chunk_hashes_of(row.node_id)
        self.catalog.upsert_note(row)
        stale = self.catalog.replace_chunks(row, chunks)
        # Only new or changed chunks go to the store (an edit touches one chunk of many, and
        # Chroma updating an id it has costs ~10 ms per 1,000 at 100k). Until the store
        # confirms them they are pending, so a crash in between cannot leave an id in the
        # store with its old vector (resync_store rewrites them).
        changed = [c for c in chunks if before.get(c.chunk_id) != c.text_hash]
        self.catalog.add_store_pending(c.chunk_id for c in changed)
        if changed:
            batch.upsert([c.chunk_id for c in changed], np.vstack([vectors[c.text_hash] for c in changed]))
        if stale:
            batch.delete(stale)

    @property
    def chunker_identity(self) -> str:
        return f"{CHUNKER_VERSION}/{self.embedder.max_tokens}"

    def chunk_note(self, node_id: str, note: ParsedNote) -> list[ChunkRow]:
        chunks = chunk_body(note.body, max_tokens=self.embedder.max_tokens, count_tokens=self.embedder.count_tokens)
        return [ChunkRow(f"{node_id}#{c.index}", node_id, c.index, c.heading, c.text, sha256(c.text)) for c in chunks]

    # -- repair ---------------------------------------------------------------
    def resync_store(self) -> int:
        """Make Chroma's ids equal the catalog's, and rewrite vectors a crash left unconfirmed
        (store_pending); returns rows fixed. Embeds nothing."""
        assert self.store is not None
        want = self.catalog.chunk_ids()
        have = self.store.ids()
        extra = sorted(have - want)
        missing = sorted((want - have) | (self.catalog.store_pending() & want))
        if extra:
            self.store.delete(extra)
        if missing:
            rows = self.catalog.chunks_by_ids(missing)
            vecs = self.catalog.get_vectors([r.text_hash for r in rows.values()])
            ok = [cid for cid in missing if rows[cid].text_hash in vecs]
            if ok:
                self.store.upsert(ok, np.vstack([vecs[rows[c].text_hash] for c in ok]))
        with self.catalog.transaction():
            self.catalog.clear_store_pending()
            self.catalog.set_meta("store_dirty", "0")
        return len(extra) + len(missing)


@dataclass
class StoreBatch:
    """Vector-store writes gathered over several notes. Their ids are disjoint (chunk ids carry
    the note's node_id, and a note's stale ids are not among its new ones), so the order is free."""

    ids: list[str] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    def upsert(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        self.ids += ids
        self.vectors.append(vectors)

    def delete(self, ids: Sequence[str]) -> None:
        self.stale += ids

    def flush(self, store: VectorStore, catalog: Catalog) -> None:
        if self.stale:
            store.delete(self.stale)
        if self.ids:
            store.upsert(self.ids, np.vstack(self.vectors))
            with catalog.transaction():
                catalog.clear_store_pending(self.ids)
        self.ids, self.vectors, self.stale = [], [], []


def file_node_id(note: ParsedNote) -> str | None:
    value = note.meta.get("node_id")
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def note_row(entry: Entry, note: ParsedNote) -> NoteRow:
    info = extract_info(note.meta, note.body, Path(entry.path).stem)
    return NoteRow(
        node_id=entry.node_id, path=entry.path, file_hash=note.file_hash, body_hash=note.body_hash,
        title=info.title, tags=info.tags, aliases=info.aliases, links=info.links,
        meta=jsonable(note.meta), mtime=note.mtime, id_in_file=not entry.node_id.startswith("path:"),
    )


def jsonable(meta: dict[str, object]) -> dict[str, object]:
    """Frontmatter as JSON-safe values (dates become ISO strings)."""
    import datetime as _dt

    def conv(v: object) -> object:
        if isinstance(v, (_dt.datetime, _dt.date)):
            return v.isoformat()
        if isinstance(v, dict):
            return {str(k): conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        if v is None or isinstance(v, (str, int, float, bool)):
            return v
        return str(v)

    return {str(k): conv(v) for k, v in meta.items()}
