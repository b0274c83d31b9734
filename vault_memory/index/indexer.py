"""Reconciling the index with the vault: scan, plan (pure, planner.py), execute.

Order of writes is chosen for crash safety: vectors go into the catalog's cache first
(so an interrupted run resumes without re-embedding), then each note's catalog rows
and Chroma rows. A `store_dirty` flag marks a run in flight; if a process dies with it
set, the next run re-syncs Chroma's ids with the catalog before anything else.

Many new texts (a first index) are written catalog first: every note's rows, then their
vectors in waves (`_fill_vectors`), so keyword search serves within seconds while the model
works; `embedding_pending` marks that state until every chunk has its vector.

Longer than 500 lines because the execute step's write order is the crash-safety
argument; split across modules it could no longer be read top to bottom.
"""

from __future__ import annotations

import itertools
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import numpy as np

from ..errors import EmbedderMismatchError, NoteError, NoteParseError
from ..hashing import sha256_hex
from ..vault.fields import parse_bool, stated_epoch
from ..vault.markdown import CHUNKER_VERSION, Chunk, chunk_note, extract_info
from ..vault.notefile import (
    GENERATED_BY,
    ParsedNote,
    file_node_id,
    parse_note,
    read_bounded,
    read_note,
    stated_properties,
)
from ..vault.obsidian import DEFAULT_DAILY_FORMAT
from ..vault.synccopies import conflict_copy
from ..vault.templates import NONE as NO_SCAFFOLDING
from ..vault.templates import Scaffolding
from ..vault.walk import IgnoreRules, walk_notes
from .catalog import BODIES_CHECKED, Catalog, ChunkRow, NoteRow
from .embedders import Embedder
from .planner import Change, Entry, Kind, Plan, plan_changes
from .vectorstore import VectorStore

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
StoreSource = VectorStore | None | Callable[[], VectorStore | None]
WAVE_CHUNKS = 1024  # notes are embedded in waves of about this many chunks, committed as they finish
# More new texts than this (a minute of MiniLM) and notes are written to the catalog before they
# are embedded, so keyword search serves meanwhile; fewer, and each is written with its vector.
INLINE_TEXTS = 1024
EMBED_SLICE = 128  # texts handed to the embedder per call (it sorts by length and batches inside)
COMMIT_CHUNKS = 128  # catalog rows are committed in groups of about this many chunks
FIRST_COMMIT_CHUNKS = 16  # ... the first group of a catalog-first write smaller (searchable sooner)
# (texts, tokens) a reconcile may embed before it returns; None: no limit (indexer.reconcile).
Budget = tuple[int | None, int | None]
RESYNC_BATCH = 5000  # chunks re-sent to the store per step when it is re-synced or filled


@dataclass
class IndexReport:
    """What a reconcile did."""

    counts: dict[str, int] = field(default_factory=dict)
    notes: int = 0
    chunks: int = 0
    chunks_written: int = 0
    texts_embedded: int = 0
    texts_pending: int = 0  # texts whose chunks are in the catalog without a vector yet (recall: lexical only)
    sentences_embedded: int = 0  # answer sentences embedded after the chunks (search/sentences.py)
    sentences_pending: int = 0  # chunks whose sentences wait (a new question embeds its own meanwhile)
    failures: dict[str, str] = field(default_factory=dict)
    passed: dict[str, str] = field(default_factory=dict)  # private notes and symlinks, not indexed
    #: notes read in this run whose frontmatter is not valid YAML: indexed, their properties read one
    #: line at a time (notefile.lenient_properties), never written into: path -> the YAML error
    properties_unread: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    rebuilt: bool = False
    store_resynced: int = 0

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class Scan:
    entries: list[Entry]
    parsed: dict[str, ParsedNote]
    failures: dict[str, str]  # unreadable: path -> why
    scope: set[str] | None = None  # the paths scanned, when not the whole vault
    passed: dict[str, str] = field(default_factory=dict)  # private notes and symlinks: path -> why
    hashes: dict[str, str] = field(default_factory=dict)  # file hash of each failure / passed-over note
    fresh: set[str] = field(default_factory=set)  # failures and passed-over notes not reported before
    duplicates: dict[str, list[str]] = field(default_factory=dict)  # node_id -> paths claiming it
    stamps: dict[str, tuple[str, str]] = field(default_factory=dict)  # files read now: path -> (stamp, hash)
    stamped: int = 0  # files not read because their stamp was unchanged
    recorded_stamps: dict[str, tuple[str, str]] = field(default_factory=dict)  # the catalog's, before
    # (verify) notes whose bytes are recorded as indexed but whose text is not the index's
    drifted: list[str] = field(default_factory=list)
    # files that are there but may not be read now (`chmod 000`, an I/O error): unlike a note whose
    # folder cannot be listed, or whose YAML is half typed, their rows go, so recall serves nothing
    # the file system refuses (issue 41); they come back once they can be read
    unreadable: set[str] = field(default_factory=set)
    # notes read now whose frontmatter is not valid YAML, indexed from their text: path -> why
    lenient: dict[str, str] = field(default_factory=dict)

    def present(self) -> dict[str, str]:
        """path -> file hash of every file this scan found: notes, and notes passed over."""
        out = {e.path: e.file_hash for e in self.entries}
        for rel in itertools.chain(self.failures, self.passed):
            out[rel] = self.hashes.get(rel, "")
        return out


def _read_leniently_now(rec: tuple[str, str, str]) -> bool:
    """Whether a recorded failure is a note an earlier version skipped for its YAML: the index reads
    such a note now (notefile.lenient_properties), so it is read again, not passed over as recorded."""
    return rec[2] == "unreadable" and "invalid YAML in frontmatter" in rec[1] and rec[1].endswith("skipped until then")


#: What the scan reads that it passed over before (part of the settled mark, so a vault settled by
#: an earlier version is scanned once): notes whose frontmatter is not valid YAML (`_read_leniently_now`).
READS = "yaml-lenient"


#: catalog meta: the token (`Indexer._settled_token`) of the last full reconcile that left every
#: note stamped, or "" when it did not
SETTLED_KEY = "settled"


class Indexer:
    """Brings the catalog and the vector store in line with the vault."""

    def __init__(
        self,
        vault: Path,
        catalog: Catalog,
        store: StoreSource,
        embedder: Embedder,
        rules: IgnoreRules,
        *,
        lazy_store: bool = False,
        store_deferred: bool = False,
    ) -> None:
        """`store` is the vector store, None (catalog only), or a function that opens it.

        With `lazy_store`, the store is opened (and checked against the catalog) only when a
        reconcile has something to write: an unchanged vault never loads Chroma, which is most
        of a one-shot CLI recall's start-up (docs/how-it-works.md, "Cold start"). `store_deferred`: there is no
        store on purpose (a local index small enough for exact search: IndexFolder.keeps_store), so
        nothing is owed to one; it is filled from the catalog's vectors if it is ever needed.
        """
        self.vault = vault
        self.catalog = catalog
        self._store_source = store
        self._store: VectorStore | None = None
        self._store_checked = False
        self.lazy_store = lazy_store
        self.store_deferred = store_deferred
        self.resynced = 0
        self.embedder = embedder
        self.rules = rules
        # Called between embedding steps of a long run (Memory: index the paths other processes
        # wrote meanwhile, requests.py), so a first index that embeds for minutes hides nothing.
        self.between_steps: Callable[[], None] | None = None

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
            if self._store is not None and (
                self.catalog.get_meta("store_dirty") == "1"
                or self._store.count() != self.catalog.embedded_chunk_count()
            ):
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
    def scan(self, paths: Iterable[str] | None = None, *, verify: bool = False) -> Scan:
        """Read the vault (or only `paths`, for the watcher) and identify every note. Writes nothing.

        A file whose stat stamp (`file_stamp`) is the one recorded when its bytes were last
        hashed is not read again, unless `verify` (doctor reads every file).
        """
        known = self.catalog.path_hashes()
        recorded = self.catalog.failure_records()
        stamps = self.catalog.file_stamps()
        entries: dict[str, tuple[str, str]] = {}  # unchanged since indexed: path -> (file_hash, body_hash)
        parsed: dict[str, ParsedNote] = {}
        scan = Scan([], parsed, {}, recorded_stamps=stamps)
        trusted = {} if verify else stamps
        vault_dir = str(self.vault)
        if paths is None:
            walk = walk_notes(self.vault, self.rules)
            candidates: Iterable[str] = walk.notes
            links = walk.skipped
            for folder, problem in walk.unreadable.items():
                # Not deleted, just unreadable now (permissions, a flaky mount): keep what was indexed.
                for rel in (p for p in known if p.startswith(folder + "/")):
                    scan.failures[rel] = f"{folder}/: {problem}; kept as last indexed"
                    scan.fresh.add(rel)
        else:
            notes = sorted(p for p in set(paths) if self.rules.is_note(p))
            links = {p: why for p in notes if (why := self._link_reason(p))}
            candidates = [p for p in notes if p not in links and (self.vault / p).is_file()]
        for rel, why in links.items():
            self._pass_over(scan, recorded, rel, "", why, "symlink")
        limit = self.rules.max_note_bytes
        for rel in candidates:
            full = os.path.join(vault_dir, rel)
            old = trusted.get(rel)
            try:
                st: os.stat_result | None = os.stat(full)
            except OSError:
                st = None  # gone or unreadable: reading it says which
            if st is not None and (st.st_size > limit or not stat.S_ISREG(st.st_mode)):
                # Refused before it is opened: an 8 GB sparse export is never read, a FIFO never blocks us.
                self._pass_over(scan, recorded, rel, f"size:{file_stamp(st)}", too_big(st, limit), "unreadable")
                continue
            if old is not None:
                same = st is not None and file_stamp(st) == old[0]
                if same:
                    hit = known.get(rel)
                    if hit is not None and hit[0] == old[1]:
                        entries[rel] = (hit[0], hit[1])
                        scan.stamped += 1
                        continue
                    rec = recorded.get(rel)
                    if rec is not None and rec[0] == old[1] and not _read_leniently_now(rec):
                        self._pass_over(scan, recorded, rel, rec[0], rec[1], rec[2])
                        scan.stamped += 1
                        continue
            try:
                with open(full, "rb") as fh:
                    before = os.fstat(fh.fileno())
                    raw = read_bounded(fh, before.st_size, limit)  # bounded even if it grew since the stat
                    after = os.fstat(fh.fileno())
                    read_at = time.time()
            except OSError as exc:
                scan.failures[rel] = f"cannot read: {exc.strerror or exc}"
                scan.fresh.add(rel)
                scan.unreadable.add(rel)
                continue
            except MemoryError:
                self._pass_over(
                    scan, recorded, rel, f"size:{file_stamp(st) if st else ''}", no_memory(st), "unreadable"
                )
                continue
            if len(raw) > limit:
                del raw
                self._pass_over(scan, recorded, rel, f"size:{file_stamp(after)}", too_big(after, limit), "unreadable")
                continue
            mtime = after.st_mtime
            file_hash = sha256_hex(raw)
            stamp = file_stamp(after)
            if file_stamp(before) == stamp and not racy(after, read_at):
                scan.stamps[rel] = (stamp, file_hash)
            hit = known.get(rel)
            if hit is not None and hit[0] == file_hash and not verify:
                entries[rel] = (file_hash, hit[1])
                continue
            rec = recorded.get(rel)
            if rec is not None and rec[0] == file_hash and not _read_leniently_now(rec):  # passed over: say it once
                self._pass_over(scan, recorded, rel, file_hash, rec[1], rec[2])
                continue
            try:
                note = parse_note(rel, raw, mtime, lenient=True)
            except NoteParseError as exc:
                self._pass_over(scan, recorded, rel, file_hash, str(exc), "unreadable")
                continue
            except MemoryError:
                del raw
                self._pass_over(scan, recorded, rel, file_hash, no_memory(after), "unreadable")
                continue
            if parse_bool(note.meta.get("private")):
                self._pass_over(
                    scan, recorded, rel, file_hash, "private: true (never indexed, recalled or prefetched)", "private"
                )
                continue
            if str(note.meta.get("generated_by") or "").strip() == GENERATED_BY:
                self._pass_over(
                    scan,
                    recorded,
                    rel,
                    file_hash,
                    f"generated_by: {GENERATED_BY} (the review note or "
                    "a kept copy of it: never indexed; remove the property to make it a note)",
                    "private",
                )
                continue
            if note.properties_error:
                scan.lenient[rel] = note.properties_error
                if hit is None or hit[0] != file_hash:  # said when first read or changed, like a failure
                    log.warning("%s", note.properties_error)
            if hit is not None and hit[0] == file_hash:
                # `verify`: the bytes are the ones indexed; is the text the index holds theirs too?
                if note.body_hash == hit[1]:
                    entries[rel] = (file_hash, hit[1])
                    continue
                scan.drifted.append(rel)  # recorded as indexed with text it does not hold: re-chunked
            parsed[rel] = note
        scope = None if paths is None else set(paths)
        if scope is not None:
            # A copy resolved or made elsewhere changes who owns an id: the other holders of any id
            # touched here are decided again too (from the catalog; their files did not change).
            file_ids = self.catalog.file_ids()
            touched = {file_ids.get(p) for p in scope} | {file_node_id(n) for n in parsed.values()}
            for rel, nid in file_ids.items():
                if nid in touched and rel not in scope and rel in known and (self.vault / rel).is_file():
                    entries[rel] = (known[rel][0], known[rel][1])
                    scope.add(rel)
        self._identify(scan, entries, known, partial=paths is not None)
        scan.scope = scope
        return scan

    @staticmethod
    def _pass_over(
        scan: Scan, recorded: dict[str, tuple[str, str, str]], rel: str, file_hash: str, why: str, kind: str
    ) -> None:
        (scan.failures if kind == "unreadable" else scan.passed)[rel] = why
        scan.hashes[rel] = file_hash
        rec = recorded.get(rel)
        if rec is None or rec[0] != file_hash or rec[2] != kind:
            scan.fresh.add(rel)

    def _link_reason(self, rel: str) -> str | None:
        """Why a path is passed over as a symlink (one rule with the walker), or None if it is not one."""
        full = self.vault / rel
        try:
            if not full.is_symlink():
                return None
        except OSError:
            return None
        return walk_notes(
            self.vault, self.rules, str(PurePosixPath(rel).parent) if "/" in rel else "", recursive=False
        ).skipped.get(rel, "symlink; not followed")

    def _identify(
        self,
        scan: Scan,
        unchanged: dict[str, tuple[str, str]],
        known: dict[str, tuple[str, str, str]],
        *,
        partial: bool,
    ) -> None:
        """A note's identity is the node_id its file carries, when no other note carries it too;
        otherwise (no id, or a copy's duplicate id) its path. Decided from what the files say
        (the catalog remembers the id of each unchanged file), so a rebuild decides the same."""
        file_ids = self.catalog.file_ids()
        claim: dict[str, str | None] = {rel: file_ids.get(rel) for rel in unchanged}
        claim.update({rel: file_node_id(note) for rel, note in scan.parsed.items()})
        claims: dict[str, list[str]] = {}
        for rel, nid in claim.items():
            if nid:
                claims.setdefault(nid, []).append(rel)
        if partial:
            # Only some files were read: the rest of the vault still claims its ids.
            for rel, nid in file_ids.items():
                if (
                    rel not in claim
                    and rel not in scan.failures
                    and rel not in scan.passed
                    and (self.vault / rel).is_file()
                ):
                    claims.setdefault(nid, []).append(rel)
        scan.duplicates = {nid: sorted(ps) for nid, ps in claims.items() if len(ps) > 1}
        for nid, ps in scan.duplicates.items():
            if any(p in scan.parsed or known.get(p, ("", "", ""))[2] == nid for p in ps):
                log.warning(
                    "node_id %s is carried by %s (copies?); each is identified by its path until one "
                    "gets a fresh id (`vault-memory doctor --fix` does that, or any write of ours)",
                    nid,
                    ", ".join(sorted(ps)),
                )
        # An id carried twice stays with the live note when the others are named as its sync or git
        # conflict copies (Syncthing gives its copy the older mtime: age cannot tell); else no one has it.
        owner: dict[str, str] = {}
        for nid, ps in claims.items():
            live = ps if len(ps) == 1 else [p for p in ps if conflict_copy(p, ps) is None]
            if len(live) == 1:
                owner[nid] = live[0]
        for rel, nid in claim.items():
            identity = nid if nid and owner.get(nid) == rel else f"path:{rel}"
            if rel in unchanged:
                file_hash, body_hash = unchanged[rel]
            else:
                note = scan.parsed[rel]
                file_hash, body_hash = note.file_hash, note.body_hash
            scan.entries.append(Entry(identity, rel, file_hash, body_hash))

    # -- plan + execute -------------------------------------------------------
    def plan(self, scan: Scan) -> Plan:
        indexed = [Entry(*r) for r in self.catalog.entries()]
        if scan.scope is not None:
            # A partial scan speaks only for its paths and for the identities it found (moves).
            ids = {e.node_id for e in scan.entries}
            indexed = [e for e in indexed if e.path in scan.scope or e.node_id in ids]
        return plan_changes(scan.entries, indexed, keep=[p for p in scan.failures if p not in scan.unreadable])

    def reconcile(
        self,
        progress: Progress | None = None,
        paths: Iterable[str] | None = None,
        *,
        embed_budget: int | None = None,
        embed_tokens: int | None = None,
        verify: bool = False,
        repair: bool = False,
    ) -> IndexReport:
        """Bring the index in line with the vault, or with just `paths` (created, changed, moved or gone).

        `embed_budget`: embed at most this many texts (None: all), and, with `embed_tokens`, texts
        of at most that many tokens in all (what embedding costs is proportional to tokens). When
        more are needed the changed notes are still written to the catalog, searchable by keyword,
        and their vectors are left to the next reconcile without a budget (`report.texts_pending`).
        `verify`: read every file, trusting no stat stamp, and compare the text of every note
        recorded as indexed with the text the index holds (scan). `repair` (`index`, `doctor --fix`,
        a watcher starting): a chunk without a vector is embedded whether or not a run left
        `embedding_pending` set, and a catalog never verified since this check exists
        (BODIES_CHECKED) is verified once, so an index that drifted under an earlier version
        converges without `--rebuild`.
        """
        started = time.perf_counter()
        self.check_embedder()
        report = IndexReport()
        if not self.lazy_store:
            _ = self.store  # opens and checks it
        if repair and paths is None and self.catalog.get_meta(BODIES_CHECKED) != "1":
            verify = True
        if paths is None and not verify and self.unchanged_since_settled():
            report.notes = self._report_unchanged(report)
            return self._finish(report, report.notes, progress, (embed_budget, embed_tokens), started, repair=repair)
        scan = self.scan(paths, verify=verify)
        plan = self.plan(scan)
        recorded = self.catalog.get_meta("chunker")
        if recorded is not None and recorded != self.chunker_identity:
            log.warning(
                "chunking rules changed (%s -> %s): re-chunking every note; only new text is embedded",
                recorded,
                self.chunker_identity,
            )
            plan = Plan(
                tuple(
                    c if c.kind in (Kind.NEW, Kind.DELETED) else Change(Kind.MODIFIED, c.entry, c.previous)
                    for c in plan.changes
                )
            )
        report.counts = plan.counts()
        report.failures = dict(scan.failures)
        report.passed = dict(scan.passed)
        report.properties_unread = dict(scan.lenient)
        for rel in sorted(scan.fresh):
            # Said once, when first seen or changed; `status` and `doctor` list them every time.
            err = scan.failures.get(rel) or scan.passed.get(rel, "")
            level = logging.INFO if rel in scan.passed and not err.startswith("symlink") else logging.WARNING
            log.log(level, "%s", err if err.startswith(rel) else f"{rel}: {err}")
        if not plan.is_noop:
            _ = self.store  # open and check it before this run marks the store dirty
            self._execute(plan, scan, report, progress, (embed_budget, embed_tokens))
        elif scan.fresh or (paths is None and set(self.catalog.failure_records()) - set(scan.hashes)):
            with self.catalog.transaction():
                self._record_failures(scan)
        stamps = self._record_stamps(scan)
        if paths is None:
            self._settle(scan, stamps)
            if verify and self.catalog.get_meta(BODIES_CHECKED) != "1":
                with self.catalog.transaction():
                    self.catalog.set_meta(BODIES_CHECKED, "1")
        return self._finish(report, len(scan.entries), progress, (embed_budget, embed_tokens), started, repair=repair)

    def _finish(
        self,
        report: IndexReport,
        notes: int,
        progress: Progress | None,
        budget: Budget,
        started: float,
        *,
        repair: bool = False,
    ) -> IndexReport:
        pending = self.catalog.get_meta("embedding_pending") == "1"
        if repair and not pending and self.catalog.has_unembedded():
            # A chunk without its vector and no run owing it one: an index an earlier version
            # left so (issue 41). Recall by meaning never found that note; embed it now.
            log.warning("some chunks had no vector (an index left so by an earlier version); embedding them")
            with self.catalog.transaction():
                self.catalog.set_meta("embedding_pending", "1")
            pending = True
        if pending:
            self._fill_vectors(report, progress, budget)
        report.store_resynced = self.resynced
        report.notes = notes
        report.chunks = self.catalog.chunk_count()
        report.seconds = time.perf_counter() - started
        return report

    # -- the settled vault: a no-op reconcile without reading the catalog's notes ----------------
    def _settled_token(self) -> str:
        """What a settled mark is valid for: the notes as written at one notes generation (any
        write to them, in any process, bumps it), the same ignore rules, chunker and embedder."""
        gen = self.catalog.get_meta("notes_gen") or "0"
        return f"{gen}|{self.rules.fingerprint()}|{self.chunker_identity}|{self.embedder.identity}|{READS}"

    def _settle(self, scan: Scan, stamps: dict[str, tuple[str, str]]) -> None:
        """After a full reconcile: mark the catalog settled when every note and every note passed
        over has the stamp of the bytes it was indexed from, and nothing else is stamped. Then a
        later reconcile that finds the same files with the same stamps knows its plan is a no-op
        (`unchanged_since_settled`). Otherwise (a file too fresh to stamp, a symlink) the mark is
        taken away and the next reconcile scans as before."""
        present = scan.present()
        whole = len(stamps) == len(present) and all(stamps.get(p, ("", None))[1] == h for p, h in present.items())
        token = self._settled_token() if whole and not scan.duplicates else ""
        if self.catalog.get_meta(SETTLED_KEY) != token:
            with self.catalog.transaction():
                self.catalog.set_meta(SETTLED_KEY, token)

    def unchanged_since_settled(self) -> bool:
        """The vault's notes are the files, with the stamps, that the settled mark was made from:
        a full scan would read nothing and plan nothing. One walk (rules asked only of paths not
        stamped) and one stat per note: at 10k notes ~70 ms against ~300 ms for scan + plan."""
        mark = self.catalog.get_meta(SETTLED_KEY)
        if not mark or mark != self._settled_token():
            return False
        stamps = self.catalog.file_stamps()
        walk = walk_notes(self.vault, self.rules, known=stamps)
        if walk.skipped or walk.unreadable or len(walk.notes) != len(stamps):
            return False
        root = str(self.vault)
        for rel in walk.notes:
            old = stamps.get(rel)
            try:
                if old is None or file_stamp(os.stat(os.path.join(root, rel))) != old[0]:
                    return False
            except OSError:
                return False
        return True

    def _report_unchanged(self, report: IndexReport) -> int:
        """Fill `report` as a scan of the settled vault would (every note unchanged; the notes passed
        over as recorded, none of them new); returns the number of notes."""
        for rel, (_, why, kind) in sorted(self.catalog.failure_records().items()):
            (report.failures if kind == "unreadable" else report.passed)[rel] = why
        notes = self.catalog.note_count()
        report.counts = {k.value: 0 for k in Kind} | {Kind.UNCHANGED.value: notes}
        return notes

    def _execute(self, plan: Plan, scan: Scan, report: IndexReport, progress: Progress | None, budget: Budget) -> None:
        cat = self.catalog
        with cat.transaction():
            cat.set_meta("embedder", self.embedder.identity)
            cat.set_meta("chunker", self.chunker_identity)
            cat.set_meta("store_dirty", "1")
            self._record_failures(scan)
        # Vectors of deleted chunks are pruned once every note is written again (keeping_vectors).
        with cat.keeping_vectors():
            # Deletions first, so a path freed by a delete can be taken by a new note.
            removed: list[str] = []
            for change in plan.of(Kind.DELETED):
                with cat.transaction():
                    removed += cat.delete_note(change.entry.node_id)
            if self.store is not None and removed:
                self.store.delete(removed)
            rechunk: list[Change] = []
            for change in plan.of(Kind.MOVED, Kind.META):
                note = scan.parsed.get(change.entry.path) or self._parse(change.entry.path)
                if note is None:
                    continue
                if note.body_hash != change.entry.body_hash:
                    # Read again and its text changed since the scan: its chunks must change too.
                    entry = replace(change.entry, file_hash=note.file_hash, body_hash=note.body_hash)
                    scan.parsed[entry.path] = note
                    rechunk.append(Change(Kind.MODIFIED, entry, change.previous))
                    continue
                with cat.transaction():
                    cat.upsert_note(note_row(change.entry, note, self.rules.obsidian.daily_format))
            self._embed_and_write([*plan.of(Kind.NEW, Kind.MODIFIED), *rechunk], scan, report, progress, budget)
        with cat.transaction():
            cat.prune_vectors()
            # Without a store (lexical fallback while the server is down) it stays dirty: resync next time.
            cat.set_meta("store_dirty", "0" if self.store is not None or self.store_deferred else "1")
        cat.save_lexical_segment()

    def _record_stamps(self, scan: Scan) -> dict[str, tuple[str, str]]:
        """Remember the stamps of the files read in this scan (facts about the files, not about the
        index, so they may be written at any time); a full scan also forgets files gone.
        Returns the stamps as recorded now."""
        before = scan.recorded_stamps
        new = {p: v for p, v in scan.stamps.items() if before.get(p) != v}
        gone: set[str] = set()
        if scan.scope is None:
            gone = set(before) - scan.present().keys()
        if new or gone:
            with self.catalog.transaction():
                self.catalog.drop_file_stamps(gone)
                self.catalog.set_file_stamps(new)
        return {p: v for p, v in before.items() if p not in gone} | new

    def _record_failures(self, scan: Scan) -> None:
        cat = self.catalog
        for rel, err in scan.failures.items():
            cat.set_failure(rel, scan.hashes.get(rel, ""), err)
        for rel, why in scan.passed.items():
            cat.set_failure(rel, scan.hashes.get(rel, ""), why, "symlink" if why.startswith("symlink") else "private")
        listed = set(scan.failures) | set(scan.passed)
        if scan.scope is None:
            cat.clear_failures(listed)
        else:
            cat.clear_failures(set(cat.failure_records()) - (scan.scope - listed))

    def _parse(self, rel: str) -> ParsedNote | None:
        try:
            return read_note(self.vault, rel, max_bytes=self.rules.max_note_bytes, lenient=True)
        except (OSError, NoteError) as exc:
            log.warning("%s: changed while indexing (%s); it will be picked up next time", rel, exc)
            return None

    def _embed_and_write(
        self,
        changes: Sequence[Change],
        scan: Scan,
        report: IndexReport,
        progress: Progress | None,
        budget: Budget,
    ) -> None:
        """New and modified notes: their catalog rows, and vectors for text not seen before.

        Few new texts (at most INLINE_TEXTS, or the budget's texts and tokens): embedded first, in
        waves, each wave's rows written once its vectors are cached, so every row has its vector.
        More: the rows of every note are written first (lexical search finds them within seconds,
        with no model loaded), marked `embedding_pending`, and `_fill_vectors` embeds them afterwards.
        """
        # Chunk ahead so progress can show a true total, but only while the new texts fit the
        # budget: past it, what is chunked is written at once and the rest note by note as it is
        # chunked (chunking 2,000 notes first took ~25 s on a loaded machine before any row).
        embed_budget, embed_tokens = budget
        limit = INLINE_TEXTS if embed_budget is None else min(INLINE_TEXTS, embed_budget)
        if len(changes) > limit:
            # More notes than texts to embed inline (each has a chunk or more): catalog first from
            # the first note, rather than after chunking ~400 of them to find that out (the first
            # rows of a 2,000-note first index commit at 0.8 s instead of 1.2 s).
            chunked = (it for it in (self._chunked(c, scan) for c in changes) if it is not None)
            self._write_catalog_first(chunked, set(), report)
            return
        work: list[tuple[Change, ParsedNote, list[ChunkRow]]] = []
        needed: dict[str, str] = {}
        cached: set[str] = set()
        tokens = 0  # of the new texts without a vector, counted only under a token budget
        ahead = iter(changes)
        for change in ahead:
            item = self._chunked(change, scan)
            if item is None:
                continue
            work.append(item)
            new = {c.text_hash: c.text for c in item[2] if c.text_hash not in needed}
            needed.update(new)
            known = self.catalog.cached_hashes(new)
            cached |= known
            if embed_tokens is not None:
                tokens += sum(self.embedder.count_tokens(t) for h, t in new.items() if h not in known)
            if len(needed) - len(cached) > limit or (embed_tokens is not None and tokens > embed_tokens):
                rest = (it for it in (self._chunked(c, scan) for c in ahead) if it is not None)
                self._write_catalog_first(itertools.chain(work, rest), cached, report)
                return
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
            self._write_wave(wave, report)
            wave, wave_size = [], 0

    def _write_wave(self, wave: Sequence[tuple[Change, ParsedNote, list[ChunkRow]]], report: IndexReport) -> None:
        # One store write per wave, not per note: a Chroma call has a fixed cost of ~15 ms
        # (embedded or server), which capped indexing at ~60 chunks/s (bench/studies/server_mode.py).
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

    def _chunked(self, change: Change, scan: Scan) -> tuple[Change, ParsedNote, list[ChunkRow]] | None:
        note = scan.parsed.get(change.entry.path) or self._parse(change.entry.path)
        if note is None:
            return None
        try:
            return change, note, self.chunk_note(change.entry.node_id, note)
        except MemoryError:
            # Passed over like a note that cannot be read (said once, listed by status and doctor),
            # and never a traceback; its earlier rows, if any, stay as they were.
            why = no_memory(None).replace("to read it (it)", f"to chunk it ({note.size:,} bytes)")
            log.warning("%s: %s", note.path, why)
            with self.catalog.transaction():
                self.catalog.set_failure(note.path, note.file_hash, why)
            return None

    def _write_catalog_first(
        self, work: Iterable[tuple[Change, ParsedNote, list[ChunkRow]]], cached: set[str], report: IndexReport
    ) -> None:
        """Every note's rows now, vectors later (`_fill_vectors`): a first index of 2,000 notes is
        searchable by keyword in seconds instead of after minutes of embedding. `work` may be
        chunked lazily: rows are committed every COMMIT_CHUNKS chunks, as they are chunked."""
        with self.catalog.transaction():
            # Set before any row without a vector commits; cleared only when none is left.
            self.catalog.set_meta("embedding_pending", "1")
        pending: set[str] = set()
        wave: list[tuple[Change, ParsedNote, list[ChunkRow]]] = []
        wave_size = 0
        first_written = False
        for item in itertools.chain(work, [None]):
            if item is not None:
                wave.append(item)
                wave_size += len(item[2])
                # The first group small: a first index is searchable a few notes in.
                if wave_size < (COMMIT_CHUNKS if first_written else FIRST_COMMIT_CHUNKS):
                    continue
            if not wave:
                break
            new = {c.text_hash for _, _, chunks in wave for c in chunks} - cached - pending
            pending |= new - self.catalog.cached_hashes(new)
            # No vectors to send, so no store write to amortise: one commit per COMMIT_CHUNKS
            # chunks makes each group of notes searchable as soon as it is chunked.
            self._write_wave(wave, report)
            wave, wave_size, first_written = [], 0, True
        report.texts_pending = len(pending)

    def fill_vectors(self, progress: Progress | None = None, *, limit: int | None = None) -> IndexReport:
        """Embed up to `limit` (None: all) of the texts whose chunks were written before their
        vectors; `report.texts_pending` says how many are left. The watcher calls this between
        batches of events, so a first index embeds without holding up the vault's changes."""
        started = time.perf_counter()
        self.check_embedder()
        report = IndexReport()
        if self.catalog.get_meta("embedding_pending") == "1":
            self._fill_vectors(report, progress, (None, None), limit=limit)
        report.chunks = self.catalog.chunk_count()
        report.store_resynced = self.resynced
        report.seconds = time.perf_counter() - started
        return report

    def _fill_vectors(
        self, report: IndexReport, progress: Progress | None, budget: Budget, *, limit: int | None = None
    ) -> None:
        """Embed the chunks that have no vector yet (rows written catalog-first, by this run or by an
        earlier one that stopped), in waves, and send them to the store. Over the budget (texts,
        or tokens), embeds nothing and leaves them for the next reconcile without a budget; `limit`
        embeds that many and leaves the rest."""
        embed_budget, embed_tokens = budget
        cat = self.catalog
        rows = cat.unembedded_chunks()
        todo: dict[str, int] = {}  # text hash -> the rid of a chunk holding it, in rid order
        for rid, _, text_hash in rows:
            todo.setdefault(text_hash, rid)
        report.texts_pending = len(todo)
        if not todo:
            with cat.transaction():
                cat.set_meta("embedding_pending", "0")
            return
        if (embed_budget is not None and len(todo) > embed_budget) or (
            embed_tokens is not None and self._tokens_over(list(todo.values()), embed_tokens)
        ):
            log.info("%d texts have no vector yet; leaving them to `vault-memory index`", len(todo))
            return
        ids_of: dict[str, list[str]] = {}
        for _, chunk_id, text_hash in rows:
            ids_of.setdefault(text_hash, []).append(chunk_id)
        hashes = list(todo)[:limit]
        total, done = len(hashes), 0
        if progress:
            progress(0, total)
        with cat.transaction():
            cat.set_meta("store_dirty", "1")
        for start in range(0, total, WAVE_CHUNKS):
            part = hashes[start : start + WAVE_CHUNKS]
            texts = cat.texts_by_rids([todo[h] for h in part])
            missing = {h: texts[todo[h]] for h in part}
            done += self._embed_missing(missing, self._ticker(progress, done, total))
            report.texts_embedded += len(missing)
            report.texts_pending -= len(missing)
            if self.store is not None:
                # These chunks are not in the store (new, or deleted from it when their text
                # changed), so a crash before this write leaves them missing, which resync adds.
                vectors = cat.get_vectors(part)
                ids = [cid for h in part for cid in ids_of[h]]
                self.store.upsert(ids, np.vstack([vectors[h] for h in part for _ in ids_of[h]]))
        with cat.transaction():
            if not cat.unembedded_chunks(limit=1):
                cat.set_meta("embedding_pending", "0")
            cat.set_meta("store_dirty", "0" if self.store is not None or self.store_deferred else "1")

    def _tokens_over(self, rids: Sequence[int], most: int) -> bool:
        """Whether the texts of these chunks hold more than `most` tokens (read and counted in
        slices, stopping once they do: a first index of 10k notes is not read whole to find out)."""
        total = 0
        for start in range(0, len(rids), EMBED_SLICE):
            for text in self.catalog.texts_by_rids(rids[start : start + EMBED_SLICE]).values():
                total += self.embedder.count_tokens(text)
                if total > most:
                    return True
        return False

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
            if self.between_steps is not None:
                self.between_steps()  # no transaction open: another process's fresh note gets its rows now
        return embedded

    def _write_note(self, change: Change, note: ParsedNote, chunks: list[ChunkRow], batch: StoreBatch) -> None:
        """A note's catalog rows, inside the caller's transaction; its store writes go to `batch`,
        flushed by the caller after that transaction commits."""
        row = note_row(change.entry, note, self.rules.obsidian.daily_format)
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
        changed = [c for c in chunks if before.get(c.chunk_id) != c.text_hash and c.text_hash in vectors]
        if not self.store_deferred:
            self.catalog.add_store_pending(c.chunk_id for c in changed)
        if len(vectors) < len({c.text_hash for c in chunks}) and self.catalog.get_meta("embedding_pending") != "1":
            # A chunk without its vector is always owed one: `_fill_vectors` (at the end of this
            # reconcile, or the next) embeds it, and `vectors()` counts it meanwhile.
            self.catalog.set_meta("embedding_pending", "1")
        if changed:
            batch.upsert([c.chunk_id for c in changed], np.vstack([vectors[c.text_hash] for c in changed]))
        # A chunk written before its vector (catalog first) must not keep its old text's vector
        # in the store meanwhile: out it goes, and _fill_vectors adds it back.
        unembedded = [
            c.chunk_id
            for c in chunks
            if c.text_hash not in vectors and c.chunk_id in before and before[c.chunk_id] != c.text_hash
        ]
        if stale or unembedded:
            batch.delete([*stale, *unembedded])

    @property
    def chunker_identity(self) -> str:
        templates = self.rules.scaffolding.identity
        return f"{CHUNKER_VERSION}/{self.embedder.max_tokens}" + (f"/{templates}" if templates else "")

    def chunk_note(self, node_id: str, note: ParsedNote) -> list[ChunkRow]:
        chunks = note_chunks(
            note,
            max_tokens=self.embedder.max_tokens,
            count_tokens=self.embedder.count_tokens,
            scaffolding=self.rules.scaffolding,
        )
        return [
            ChunkRow(f"{node_id}#{c.index}", node_id, c.index, c.heading, c.text, sha256_hex(c.text)) for c in chunks
        ]

    # -- repair ---------------------------------------------------------------
    def resync_store(self) -> int:
        """Make Chroma's ids equal the catalog's, and rewrite vectors a crash left unconfirmed
        (store_pending); returns rows fixed. Embeds nothing."""
        assert self.store is not None
        want = self.catalog.embedded_chunk_ids()  # a chunk still waiting for its vector is not in the store
        have = self.store.ids()
        extra = sorted(have - want)
        missing = sorted((want - have) | (self.catalog.store_pending() & want))
        if extra:
            self.store.delete(extra)
        for start in range(0, len(missing), RESYNC_BATCH):  # filling a whole store holds one batch at a time
            part = missing[start : start + RESYNC_BATCH]
            rows = self.catalog.chunks_by_ids(part)
            vecs = self.catalog.get_vectors([r.text_hash for r in rows.values()])
            ok = [cid for cid in part if cid in rows and rows[cid].text_hash in vecs]
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


RACY_SECONDS = 5.0


def no_memory(st: os.stat_result | None) -> str:
    """Why a note is passed over when reading it ran out of memory (a limit raised past what this
    machine, or `ulimit -v`, allows): never a traceback, the rest of the vault indexed."""
    size = f"{st.st_size:,} bytes" if st is not None else "it"
    return (
        f"not enough memory to read it ({size}); skipped. Lower max_note_bytes (the setting that let it be "
        "read), split the note, or move it out of the vault"
    )


def too_big(st: os.stat_result, limit: int) -> str:
    """Why a file is passed over without being read: over `max_note_bytes`, or not a regular file."""
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, socket or device); never read; move it out of the vault"
    return (
        f"{st.st_size:,} bytes, over the {limit:,}-byte limit for a note (max_note_bytes); never read. "
        "Move it out of the vault, or raise max_note_bytes"
    )


def file_stamp(st: os.stat_result) -> str:
    """What stat says of a file's bytes: modification and change times (ns), size, inode, device.

    Any write to a file sets its change time (ctime) to the current time, and no call sets it
    back, so a file with the same stamp as when it was read and hashed has the same bytes:
    an edit in place (same size, modification time set back by a sync tool or `touch -d`)
    still moves ctime, a replace by rename changes the inode. Except on Windows, where
    st_ctime is the creation time: there a tool that rewrites a note keeping its size and
    then sets its modification time back is not noticed (`doctor` reads every file).
    """
    return f"{st.st_mtime_ns}.{st.st_ctime_ns}.{st.st_size}.{st.st_ino}.{st.st_dev}"


def racy(st: os.stat_result, read_at: float) -> bool:
    """A file changed within RACY_SECONDS of being read may change again within the same
    timestamp tick (coarse file systems: FAT keeps 2 s) without its stamp moving: its stamp is
    not trusted (it is read again next time), as git does with racily clean files."""
    return read_at - max(st.st_mtime, st.st_ctime) < RACY_SECONDS


def note_chunks(
    note: ParsedNote,
    *,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    scaffolding: Scaffolding = NO_SCAFFOLDING,
) -> list[Chunk]:
    """A note's chunks as the index keeps them: its body's without its vault's template
    `scaffolding`, then its stated properties' (markdown.chunk_note). Everything that chunks a
    note for embedding asks here."""
    props = stated_properties(note.meta)
    # the title heads properties that need chunks of their own: not read for a note without any
    title = extract_info(note.meta, note.body, Path(note.path).stem).title if props else ""
    return chunk_note(
        note.body, props, title, max_tokens=max_tokens, count_tokens=count_tokens, scaffolding=scaffolding
    )


def note_row(entry: Entry, note: ParsedNote, daily_format: str = DEFAULT_DAILY_FORMAT) -> NoteRow:
    stem = Path(entry.path).stem
    info = extract_info(note.meta, note.body, stem)
    return NoteRow(
        node_id=entry.node_id,
        path=entry.path,
        file_hash=note.file_hash,
        body_hash=note.body_hash,
        title=info.title,
        tags=info.tags,
        aliases=info.aliases,
        links=info.links,
        meta=jsonable(note.meta),
        mtime=note.mtime,
        id_in_file=not entry.node_id.startswith("path:"),
        stated=stated_epoch(note.meta, stem, daily_format),
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
