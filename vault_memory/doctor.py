"""`doctor`: compare the vault with its derived index and say what has drifted.

A tool over `Memory` (like watch, the MCP server and the CLI): it imports memory.py, never the reverse.

Read-only: the vault is scanned without assigning ids, the index is only read. `fix`
reconciles (which also re-syncs Chroma after a crash) and clears leftovers.

It also checks that the index files themselves are sound: SQLite's `quick_check` and FTS5's
integrity check on the catalog (each bounded in time), and the embedded Chroma store opened in
a child process (a damaged HNSW file can crash the process that reads it: let that be the
child) — its count, a sample of ids read back with their vectors, queries finding most of them
(HNSW is approximate: a sound graph can hold a vector no query returns). `fix`
sets a damaged file aside (renamed, never deleted) and rebuilds it: the catalog from the vault
(keeping what can be read of its embedding cache), Chroma from the catalog's vectors.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from .errors import CatalogCorruptError, VaultMemoryError, naming_once
from .index.indexer import Indexer
from .index.planner import Kind
from .index.storecheck import changed_behind_our_back, check_store
from .index.vectorstore import STORE_FOLDER, describe_target
from .internals import internals
from .lifecycle.edits import PATIENCE, staging_folder
from .memory import Memory
from .text import note_name
from .vault.atomic import TMP_PREFIX
from .vault.notefile import move_note, new_node_id, read_note, write_note
from .vault.synccopies import conflict_copy

log = logging.getLogger(__name__)

TMP_GRACE_SECONDS = 60.0  # a temp file younger than this may be a write in flight in another process


@dataclass
class DoctorReport:
    """Drift between vault and index. `ok` is False when the index does not match the vault."""

    notes_in_vault: int = 0
    notes_in_index: int = 0
    missing: list[str] = field(default_factory=list)  # notes in the vault, not in the index
    stale: dict[str, str] = field(default_factory=dict)  # path -> modified | moved | meta (index hash differs)
    orphans: list[str] = field(default_factory=list)  # index rows whose note is gone from the vault
    vectors_orphaned: int = 0  # ids in Chroma with no chunk in the catalog
    vectors_missing: int = 0  # catalog chunks with no vector in Chroma
    vectors_pending: int = 0  # catalog chunks whose text has no vector (counted always, flag or not)
    drifted: list[str] = field(default_factory=list)  # notes recorded as indexed whose text is not the index's
    store_dirty: bool = False  # a write was interrupted (a crash); the next reconcile repairs it
    store_error: str | None = None
    vector_store: dict[str, Any] = field(default_factory=dict)  # backend, server URL, collection
    embedder_index: str | None = None
    embedder_configured: str = ""
    duplicate_ids: dict[str, list[str]] = field(default_factory=dict)  # node_id -> paths sharing it
    conflict_copies: dict[str, str] = field(default_factory=dict)  # copy -> what it is a copy of (never drift)
    unaccounted: list[str] = field(default_factory=list)  # files in the staging folder no scan sees
    unreadable: dict[str, str] = field(default_factory=dict)  # path -> why (a property of the vault, not drift)
    #: notes indexed by their text whose frontmatter is not valid YAML (never written into): path -> why
    properties_unread: dict[str, str] = field(default_factory=dict)
    stale_lock_pid: int | None = None  # a lock file naming a process that no longer holds it
    writer_pid: int | None = None  # a live writer (e.g. `watch`), for information
    temp_files: list[str] = field(default_factory=list)  # leftover .vm-tmp-* files of interrupted writes
    catalog_damage: list[str] = field(default_factory=list)  # what SQLite's integrity checks found
    checks_cut_short: list[str] = field(default_factory=list)  # integrity checks stopped by their time bound
    store_damage: str | None = None  # the embedded Chroma store cannot be read (or crashed its reader)
    index_read_only: str | None = None  # why the index folder cannot be written (so --fix cannot)

    @property
    def embedder_mismatch(self) -> bool:
        return self.embedder_index is not None and self.embedder_index != self.embedder_configured

    @property
    def ok(self) -> bool:
        """True when the index matches the vault. Unreadable notes are reported but are not drift:
        the index records them, and only the human can repair them."""
        return not (
            self.missing
            or self.stale
            or self.orphans
            or self.vectors_orphaned
            or self.vectors_missing
            or self.vectors_pending
            or self.drifted
            or self.store_dirty
            or self.store_error
            or self.embedder_mismatch
            or self.duplicate_ids
            or self.unaccounted
            or self.stale_lock_pid
            or self.temp_files
            or self.catalog_damage
            or self.store_damage
        )

    def problems(self) -> list[str]:
        """One line per finding, drift first."""
        out: list[str] = []

        def some(items: list[str]) -> str:
            return ", ".join(items[:5]) + (f" (+{len(items) - 5} more)" if len(items) > 5 else "")

        if self.catalog_damage:
            out.append(
                f"the index catalog is damaged ({'; '.join(self.catalog_damage[:3])}): `--fix` sets it aside "
                "and rebuilds it from the vault"
            )
        if self.store_damage:
            out.append(f"{self.store_damage}: `--fix` sets it aside and rebuilds it from the catalog's vectors")
        if self.checks_cut_short:
            out.append(
                f"integrity check incomplete: {', '.join(self.checks_cut_short)}; what was read is sound (not drift)"
            )
        if self.index_read_only:
            out.append(
                f"the index folder cannot be written ({self.index_read_only}); it was read as it is, "
                "the vector store not checked (not drift)"
            )
        if self.embedder_mismatch:
            out.append(
                f"index built with embedder '{self.embedder_index}', configured '{self.embedder_configured}': "
                "run `vault-memory index --rebuild` or pass the matching --embedder"
            )
        if self.missing:
            out.append(f"{len(self.missing)} note(s) not in the index: {some(self.missing)}")
        if self.stale:
            out.append(
                f"{len(self.stale)} note(s) changed since indexed: "
                f"{some([f'{p} ({k})' for p, k in sorted(self.stale.items())])}"
            )
        if self.drifted:
            out.append(
                f"{len(self.drifted)} note(s) recorded as indexed, but the index holds other text for them: "
                f"{some(self.drifted)} (`vault-memory index` or `--fix` indexes them again)"
            )
        if self.orphans:
            out.append(f"{len(self.orphans)} index row(s) for notes gone from the vault: {some(self.orphans)}")
        if self.vectors_orphaned or self.vectors_missing:
            out.append(
                f"vector store out of step with the catalog: {self.vectors_orphaned} orphan vector(s), "
                f"{self.vectors_missing} missing"
            )
        if self.vectors_pending:
            by = (
                f"process {self.writer_pid} is embedding them"
                if self.writer_pid
                else "`vault-memory index` embeds them"
            )
            out.append(
                f"{self.vectors_pending} chunk(s) have no vector yet ({by}); recall by meaning cannot find them "
                "until then"
            )
        if self.store_dirty:
            out.append("an indexing run was interrupted (store_dirty); the next reconcile repairs it")
        if self.store_error:
            out.append(f"vector store unavailable: {self.store_error}")
        for nid, paths in sorted(self.duplicate_ids.items()):
            out.append(f"node_id {nid} is used by {len(paths)} notes: {', '.join(paths)} (copies?)")
        for path in self.unaccounted:
            out.append(
                f"{path}: in the staging folder but hidden from every scan (a dot-file); `staged` cannot list it: "
                "`--fix` gives it a visible name"
            )
        for path, what in sorted(self.conflict_copies.items()):
            out.append(f"{path}: {what} (not drift): merge it into the note by hand, then delete it")
        if self.stale_lock_pid:
            out.append(
                f"stale writer lock left by process {self.stale_lock_pid} (no longer running); "
                "recovered automatically by the next writer"
            )
        if self.temp_files:
            out.append(f"{len(self.temp_files)} leftover temp file(s) of interrupted writes: {some(self.temp_files)}")
        for path, why in sorted(self.unreadable.items()):
            out.append(f"unreadable (skipped, not drift): {naming_once(path, why)}")
        for path, why in sorted(self.properties_unread.items()):
            out.append(f"properties not valid YAML (indexed by its text, never written into): {naming_once(path, why)}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "ok": self.ok,
            "embedder_mismatch": self.embedder_mismatch,
            "problems": self.problems(),
        }


def diagnose(mem: Memory) -> DoctorReport:
    """Compare vault and index without writing to either; first check the index files are sound."""
    report = DoctorReport(embedder_configured=internals(mem).embedder.identity)
    # before anything here opens the store; this very process having it open is not "behind our back"
    changed = changed_behind_our_back(internals(mem).index_dir, open_here_counts=True)
    report.stale_lock_pid, report.writer_pid = _probe_lock(mem)
    report.temp_files = _leftover_temp_files(mem)
    try:
        with internals(mem).inspecting():
            cat = internals(mem).catalog
        integrity = cat.check()
        report.index_read_only = internals(mem).index_problem
        report.checks_cut_short = integrity.partial
        report.catalog_damage = integrity.problems
        if not report.catalog_damage:
            _compare(mem, report)
        if changed and report.store_damage is None and (internals(mem).index_dir / STORE_FOLDER).exists():
            # Chroma's HNSW files carry no checksums: random bytes in them may answer every sampled
            # query and still be damage. Rebuilding from the catalog's vectors embeds nothing.
            report.store_damage = (
                f"the vector store {internals(mem).index_dir / STORE_FOLDER} changed while no process had it "
                "open (restored, copied or damaged)"
            )
    except CatalogCorruptError as exc:
        report.catalog_damage = [str(exc)]
    except (sqlite3.DatabaseError, ValueError) as exc:  # damage the checks did not see, met while reading
        report.catalog_damage = [f"{exc.__class__.__name__}: {exc}"]
    return report


def _compare(mem: Memory, report: DoctorReport) -> None:
    cat = internals(mem).catalog
    report.embedder_index = cat.get_meta("embedder")
    indexer = Indexer(internals(mem).vault, cat, None, internals(mem).model, internals(mem).rules)
    scan = indexer.scan(verify=True)  # every file read: no stat stamp taken on trust
    plan = indexer.plan(scan)
    rows = cat.notes()
    report.notes_in_vault = len(scan.entries) + len(scan.failures)
    report.notes_in_index = len(rows)
    drifted = set(scan.drifted)
    report.drifted = sorted(drifted)
    for change in plan.changes:
        if change.kind is Kind.NEW:
            report.missing.append(change.entry.path)
        elif change.kind is Kind.DELETED:
            report.orphans.append(change.entry.path)
        elif change.kind is not Kind.UNCHANGED and change.entry.path not in drifted:
            report.stale[change.entry.path] = change.kind.value
    report.unreadable = dict(scan.failures)
    report.properties_unread = dict(scan.lenient)
    # Duplicate ids, as the files say (the scan decides them from the files, writing nothing).
    report.duplicate_ids = dict(scan.duplicates)
    present = {e.path for e in scan.entries} | set(scan.failures) | set(scan.passed)
    shared = {p: nid for nid, ps in scan.duplicates.items() for p in ps}
    for rel in sorted(present):
        found = conflict_copy(rel, present)
        if found is None or (found[1] == "iCloud" and (rel not in shared or shared.get(found[0]) != shared[rel])):
            continue  # `Sprint 2.md` beside `Sprint.md` is iCloud's copy only if it carries the same node_id
        report.conflict_copies[rel] = f"a {found[1]} conflict copy of {found[0]}"
    report.unaccounted = _unaccounted_staged(mem)
    report.store_dirty = cat.get_meta("store_dirty") == "1"
    report.vector_store = describe_target(
        vault=internals(mem).vault,
        index_dir=internals(mem).index_dir,
        embedder_identity=internals(mem).embedder.identity,
        url=internals(mem).config.chroma_url,
    )
    # Every chunk without a vector, not only while a run says it is embedding: recall by meaning
    # never finds a chunk that has none, whatever left it so.
    report.vectors_pending = cat.unembedded_count()
    if report.embedder_mismatch:
        return
    if not internals(mem).keeps_store():
        # No store on purpose (a local index within exact_search_limit): dense search reads the
        # catalog's vectors, so what needs checking is that every chunk has one (vectors_pending).
        report.vector_store = {"backend": "exact", "url": None, "path": None, "collection": None}
        return
    if internals(mem).config.chroma_url is None:
        if internals(mem).index_problem is None:  # Chroma cannot open a folder it cannot write
            _check_embedded_store(mem, report)
        return
    try:
        store = internals(mem).store
    except VaultMemoryError as exc:
        store, report.store_error = None, str(exc)
    if store is None and report.store_error is None:
        report.store_error = internals(mem).store_error  # lexical fallback is serving: still say the server is down
    if store is not None:
        want, have = cat.embedded_chunk_ids(), store.ids()  # a chunk waiting for its vector is not in it
        report.vectors_orphaned = len(have - want)
        report.vectors_missing = len(want - have)


def _check_embedded_store(mem: Memory, report: DoctorReport) -> None:
    """The embedded store, checked in a child process (vectorstore.check_store)."""
    cat = internals(mem).catalog
    want = sorted(cat.embedded_chunk_ids())  # a chunk waiting for its vector is not in it
    folder = internals(mem).index_dir / STORE_FOLDER
    if not folder.exists():
        report.vectors_missing = len(want)
        return
    ids, mat = cat.all_chunk_vectors()
    picks = sorted({round(i * (len(ids) - 1) / 7) for i in range(8)}) if ids else []
    sample = [(ids[i], [float(x) for x in mat[i]]) for i in picks]
    result = check_store(folder, str(report.vector_store.get("collection")), sample, want)
    problem = result.get("problem")
    if isinstance(problem, str):
        report.store_damage = problem
    elif "error" in result:
        report.store_error = str(result["error"])
    else:
        report.vectors_missing = int(result.get("missing", 0))
        report.vectors_orphaned = int(result.get("orphaned", 0))


def _probe_lock(mem: Memory) -> tuple[int | None, int | None]:
    """(stale pid, live writer pid). Probes the lock without taking ownership of the file."""
    if internals(mem).lock.held:
        return None, None
    probe = internals(mem).lock.probe()
    if probe.held:
        return None, probe.pid  # someone holds it: a live writer
    return probe.stale_pid, None  # nobody holds it, yet a pid was left behind: that process died


def _leftover_temp_files(mem: Memory, grace: float = TMP_GRACE_SECONDS) -> list[str]:
    now = time.time()
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(internals(mem).vault, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".obsidian", ".trash")]
        for name in filenames:
            if name.startswith(TMP_PREFIX):
                full = os.path.join(dirpath, name)
                try:
                    if now - os.lstat(full).st_mtime >= grace:
                        out.append(os.path.relpath(full, internals(mem).vault).replace(os.sep, "/"))
                except OSError:
                    continue
    return sorted(out)


def _unaccounted_staged(mem: Memory) -> list[str]:
    """Markdown files in the staging folder that the scan never sees (hidden names), temp files aside."""
    folder = staging_folder(internals(mem))
    root = internals(mem).vault / folder
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.startswith(".") and not name.startswith(TMP_PREFIX) and name.lower().endswith(".md"):
                out.append(os.path.relpath(os.path.join(dirpath, name), internals(mem).vault).replace(os.sep, "/"))
    return sorted(out)


def _show_unaccounted(mem: Memory, paths: list[str]) -> None:
    """Give hidden staged files a visible name beside them (never over anything), so `staged` lists them."""
    for rel in paths:
        pure = PurePosixPath(rel)
        visible = f"{pure.parent}/{note_name(pure.stem)}{pure.suffix}"
        try:
            where = move_note(internals(mem).vault, rel, visible, expected_hash=None)
            log.warning("%s was hidden from every scan; it is now %s", rel, where)
        except (VaultMemoryError, OSError) as exc:
            log.warning("%s: could not give it a visible name (%s); rename it by hand", rel, exc)


def _give_copies_their_own_ids(mem: Memory, duplicates: dict[str, list[str]]) -> None:
    """Of the notes carrying one node_id, the live note keeps it: not a file named as a sync or git
    conflict copy of another (synccopies.py), and then the oldest (a plain copy is younger; ties: first
    path); each other gets a fresh one, through the one write path. Asked for by `--fix` only."""
    for paths in duplicates.values():

        def age(rel: str, paths: list[str] = paths) -> tuple[bool, float, str]:
            copy = conflict_copy(rel, paths) is not None  # a sync client's copy never keeps the id, old or not
            try:
                return (copy, os.stat(internals(mem).vault / rel).st_mtime, rel)
            except OSError:
                return (copy, float("inf"), rel)

        for rel in sorted(paths, key=age)[1:]:
            try:
                note = read_note(internals(mem).vault, rel)
                write_note(
                    internals(mem).vault,
                    rel,
                    expected_hash=note.file_hash,
                    set_fields={"node_id": new_node_id()},
                    wait=PATIENCE,
                )
            except (VaultMemoryError, ValueError, OSError) as exc:
                log.warning("%s: could not give it a node_id of its own (%s); edit it by hand", rel, exc)


def fix(mem: Memory, before: DoctorReport | None = None) -> DoctorReport:
    """Reconcile the index with the vault (re-syncing Chroma) and remove leftovers; returns a fresh diagnosis.

    The one write into the vault it may make: copies that carry another note's node_id get their own.
    A damaged catalog or vector store (`before`, diagnosed again if not given) is set aside and rebuilt first."""
    before = before if before is not None else diagnose(mem)
    with internals(mem).writing():
        if before.catalog_damage:
            internals(mem).set_aside_catalog("; ".join(before.catalog_damage[:3]))
        elif before.store_damage:
            internals(mem).set_aside_store(before.store_damage)
        mem.index(verify=True)
        if not internals(mem).config.read_only:
            _show_unaccounted(mem, _unaccounted_staged(mem))
            _give_copies_their_own_ids(mem, internals(mem).indexer().scan().duplicates)
            mem.index(verify=True)
        internals(mem).resync_store()
        for rel in _leftover_temp_files(mem):
            (internals(mem).vault / rel).unlink(missing_ok=True)
        # Holding the lock rewrote the pid file; releasing it (below) clears a stale pid.
    return diagnose(mem)


__all__ = ["DoctorReport", "diagnose", "fix"]
