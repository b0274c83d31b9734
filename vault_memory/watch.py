"""Live sync: follow the vault with watchdog and apply changes incrementally.

A tool over `Memory` (like doctor, the MCP server and the CLI): it imports memory.py, never the reverse.

Events arrive on watchdog's thread and only become vault-relative paths in a pending
set; everything that touches the index runs in the thread that calls `run()`. A batch
is applied once no event has come for `debounce` seconds (but at most `max_wait` after
its first event, so a continuous stream still makes progress), through
`IndexFolder.sync_paths`. Our own writes (node ids, rehearsal, the edit record below) are
frontmatter-only, so their echo is a META sync that writes nothing: no loop.

"A person's edit is a use": when a sync sees a note's *body* change (content hash, never
mtime) and the file then stays quiet for `quiet` seconds, the edit is recorded as recall records
a use (`last_accessed`, through `edits.use_fields`: never backwards, once per 10 minutes, not for a
pinned or undated note) with a compare-and-swap write. Not `revision`: nothing reads it (it is kept
where a note has one). Only what a person did: a change git brought (its state files written at
that moment), a sync client's download (renamed from its temp file) or a bulk change (more than
REHEARSE_MAX_BATCH notes) is indexed and never written into (vault/origin.py).

The index going away: every second (and before each batch) the watcher asks
`IndexFolder.check_index` whether its `writer.lock` and catalog are still the files at their paths.
If the index folder was deleted or recreated, it takes the lock on the new folder and rebuilds
the index there from the vault (nothing is lost: it is derived); if another writer took the new
lock first, `run()` stops with LockHeldError (exit 6) rather than write beside it.


Longer than 500 lines because the watcher owns its own recovery (the index deleted or its lock
replaced under it, Obsidian's settings changing), and its one loop interleaves work that must not
block each other (batches of events, body-edit rehearsal, embedding what a first index left, the
review note): each must be read beside the event loop.
"""

from __future__ import annotations

import datetime as dt
import errno
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .config import IGNORE_FILE_NAME
from .errors import ConcurrentEditError, NoteError, VaultMemoryError
from .index.indexer import INLINE_TEXTS, IndexReport
from .internals import internals
from .lifecycle.edits import first_write_fields, retired_fields, use_fields
from .memory import READER_EMBED_BUDGET, READER_EMBED_TOKENS, Memory
from .vault.fields import local_zone, parse_int
from .vault.notefile import read_note, write_note
from .vault.origin import GitState, sync_temp
from .vault.walk import IgnoreRules, walk_notes

log = logging.getLogger(__name__)

MAX_WAIT = 2.0  # a batch is applied at most this long after its first event, even under a stream
IDLE_TICK = 1.0  # the loop wakes this often when idle, to notice a stop request
# While a first index fills in its vectors, the watcher embeds this many texts at a time and
# looks at the vault's events in between (~8 s of MiniLM), so edits are not held up for the
# half hour a new 10k-note vault takes to embed.
FILL_STEP = 128
INDEX_CHECK_SECONDS = 1.0  # how often the index folder is checked for having gone away (two stat calls)
RETRY_SECONDS = (1.0, 5.0, 30.0)  # back-off when a batch fails (embedder down, disk full)
REHEARSE_MAX_BATCH = 10  # more body edits than this in one batch is a bulk change (git pull), not a human edit
REVIEW_DELAY = 2.0  # the review note is rewritten this long after the memory last changed (and once a day)


@dataclass
class BatchResult:
    """What one applied batch did (passed to `on_batch`)."""

    paths: int
    report: IndexReport | None = None
    seconds: float = 0.0
    full: bool = False
    edits_seen: list[str] = field(default_factory=list)  # notes whose body changed (rehearsal candidates)
    rehearsed: list[str] = field(default_factory=list)  # edits recorded in frontmatter in this step
    error: str | None = None
    rebuilt: bool = False  # the index folder went away and was rebuilt (check_index)

    @property
    def changed(self) -> bool:
        counts = self.report.counts if self.report else {}
        return bool(
            any(v for k, v in counts.items() if k != "unchanged")
            or self.rehearsed
            or self.error
            or (self.report and self.report.failures)
            or self.rebuilt
        )

    def line(self) -> str:
        """One human line for stderr."""
        if self.rebuilt:
            return f"the index folder went away; rebuilt it from the vault in {self.seconds:.1f} s"
        if self.error:
            return f"sync of {self.paths} paths failed: {self.error}; retrying"
        if self.report is None:
            return f"recorded {len(self.rehearsed)} edit(s) as rehearsal: {', '.join(self.rehearsed)}"
        c = self.report.counts
        parts = [f"{c.get(k, 0)} {k}" for k in ("new", "modified", "moved", "meta", "deleted") if c.get(k)]
        extra = []
        if self.report.texts_embedded:
            extra.append(f"embedded {self.report.texts_embedded}")
        if self.report.failures:
            extra.append(f"{len(self.report.failures)} unreadable: {', '.join(sorted(self.report.failures)[:3])}")
        what = ", ".join(parts) or "no changes"
        scope = "full reconcile" if self.full else f"{self.paths} path(s)"
        tail = f"; {'; '.join(extra)}" if extra else ""
        return f"synced {scope}: {what}{tail} in {self.seconds * 1000:.0f} ms"


@dataclass
class _Edit:
    node_id: str
    body_hash: str
    seen: float  # monotonic time the sync saw the body change
    since: float = 0.0  # wall-clock time of the first event of the batch that brought it (git's files compare)


def _settings_file(rel: str) -> bool:
    """An Obsidian settings file that decides which files are notes (obsidian.py): in `.obsidian/`, or
    in the dot-folder a person renamed it to (obsidian.settings_dir)."""
    return (
        rel.startswith(".")
        and "/" in rel
        and rel.endswith(("/app.json", "/templates.json", "/daily-notes.json", "/templater-obsidian/data.json"))
    )


class _Handler:
    """Runs on watchdog's thread: turns events into vault-relative paths, nothing else."""

    def __init__(self, watcher: Watcher) -> None:
        self.w = watcher
        self.root = str(internals(watcher.mem).vault)

    def _rel(self, raw: bytes | str) -> str | None:
        path = os.fsdecode(raw)
        if not path.startswith(self.root + os.sep):
            return None
        return path[len(self.root) + 1 :].replace(os.sep, "/")

    def dispatch(self, event: Any) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        if event.is_directory and kind == "modified":
            return  # a folder's listing changed: the file events say what
        rules = self.w.rules
        src = self._rel(event.src_path)
        dest = self._rel(event.dest_path) if kind == "moved" and event.dest_path else None
        if IGNORE_FILE_NAME in (src, dest) or any(_settings_file(p) for p in (src, dest) if p):
            self.w._push(full=True)  # which files are notes may have changed: new rules, full reconcile
            return
        if event.is_directory:
            # Expanded later, in the main thread, against the catalog (old path) and the disk (new path).
            self.w._push(dirs=[d for d in (src, dest) if d and not rules.ignored(d, is_dir=True)])
        else:
            # A temp file renamed onto a note (atomic save) counts for the note; a note moved into
            # .trash/ counts as its deletion: each side is kept only if it is a note path.
            if src and dest and sync_temp(src) and rules.is_note(dest):
                self.w._synced.add(dest)  # a sync client's download, not a person's save
            self.w._push(files=[p for p in (src, dest) if p and rules.is_note(p)])


class Watcher:
    """Keeps `mem`'s index in step with its vault. `start()`, then `run()` until `stop()`."""

    def __init__(
        self,
        mem: Memory,
        *,
        debounce: float | None = None,
        quiet: float | None = None,
        max_wait: float = MAX_WAIT,
        rehearse_edits: bool = True,
        rehearse_max_batch: int = REHEARSE_MAX_BATCH,
        on_batch: Callable[[BatchResult], None] | None = None,
        on_fill: Callable[[int, int], None] | None = None,
    ) -> None:
        """`on_batch` hears of every applied batch; `on_fill(done, total)` of every step of
        embedding what a first index (or a large batch) wrote to the catalog first."""
        self.mem = mem
        self.debounce = internals(mem).config.debounce_seconds if debounce is None else debounce
        self.quiet = internals(mem).config.quiet_seconds if quiet is None else quiet
        self.max_wait = max(max_wait, self.debounce)
        self.rehearse_edits = rehearse_edits and not internals(mem).config.read_only
        self.rehearse_max_batch = rehearse_max_batch
        self.on_batch = on_batch
        self.on_fill = on_fill
        self.filling = False  # chunks wait for their vectors: embedded FILL_STEP at a time when idle
        self._filled = 0
        self._fill_not_before = 0.0
        self._cond = threading.Condition()
        self._files: set[str] = set()
        self._dirs: set[str] = set()
        self._full = False
        self._inflight = False
        self._first = 0.0  # monotonic time of the first / last event of the pending batch
        self._first_wall = 0.0  # ... and the first's wall-clock time, to compare with git's file times
        self._synced: set[str] = set()  # notes a sync client renamed into place (origin.sync_temp)
        self.git = GitState(internals(mem).vault)
        self._last = 0.0
        self._touched: dict[str, float] = {}  # path -> monotonic time of its last event
        self._not_before = 0.0  # retry back-off after a failed batch
        self._failures = 0
        self._stop = threading.Event()
        self._edits: dict[str, _Edit] = {}  # node_id -> body edit waiting for quiet
        self._observer: Any = None
        self._watched: tuple[int, int] | None = None  # (st_dev, st_ino) of the vault folder being observed
        self._vault_gone = False
        self._review_due: float | None = None  # monotonic time the review note is to be rewritten
        self._review_day: dt.date | None = None  # the day it was last rewritten by this watcher
        self._saved_level = logging.NOTSET
        self.batches = 0  # applied batches, for tests and logs

    @property
    def rules(self) -> IgnoreRules:
        return internals(self.mem).rules

    # -- lifecycle ------------------------------------------------------------
    def start(self, wait: float = 3.0) -> IndexReport:
        """Take the writer lock for good, start observing, then reconcile everything once.

        Returns once every note is in the catalog (keyword search serves): on a new vault the
        vectors are embedded afterwards, by `run()`, between batches of events."""
        internals(self.mem).hold_writer_lock(wait)
        self._start_observer()
        # Observing first: a change made during the initial reconcile is not lost.
        report = self.mem.index(embed_budget=READER_EMBED_BUDGET, embed_tokens=READER_EMBED_TOKENS)
        self.filling = report.texts_pending > 0 or report.sentences_pending > 0
        return report

    def _start_observer(self) -> None:
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileAttribEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
        )
        from watchdog.observers import Observer

        overflow_log = logging.getLogger("watchdog.observers.inotify_c")
        self._saved_level = overflow_log.level
        overflow_log.setLevel(logging.WARNING)  # the CLI quiets watchdog; we need to hear this one
        overflow_log.addFilter(self._overflow_filter)
        observer = Observer()
        # No open/close-without-write events: our own reads of notes must not wake us. A file's
        # attributes do: a note made unreadable (`chmod 000`) is no longer served.
        kinds = [
            FileCreatedEvent,
            FileModifiedEvent,
            FileAttribEvent,
            FileClosedEvent,
            FileDeletedEvent,
            FileMovedEvent,
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
        ]
        self._watched = self._vault_identity()
        observer.schedule(
            _Handler(self),  # type: ignore[arg-type]
            str(internals(self.mem).vault),
            recursive=True,
            event_filter=kinds,
            follow_symlink=False,
        )
        try:
            observer.start()
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EMFILE):
                raise VaultMemoryError(
                    f"cannot watch {internals(self.mem).vault}: the system limit on watched folders is reached "
                    f"({exc}); "
                    "raise it, e.g. `sudo sysctl fs.inotify.max_user_watches=524288`"
                ) from exc
            raise
        self._observer = observer

    def _overflow_filter(self, record: logging.LogRecord) -> bool:
        # watchdog only logs a kernel queue overflow; events were lost, so reconcile everything.
        if "overflow" in record.getMessage().lower():
            self._push(full=True)
        return True

    def stop(self) -> None:
        """Ask `run()` to return after the batch in flight (safe from a signal handler)."""
        self._stop.set()
        with self._cond:  # a re-entrant lock: fine even if the handler interrupted our own `with`
            self._cond.notify_all()

    def close(self) -> None:
        """Stop observing. The writer lock is released when the Memory closes."""
        self.stop()
        if self._observer is not None:
            overflow_log = logging.getLogger("watchdog.observers.inotify_c")
            overflow_log.removeFilter(self._overflow_filter)
            overflow_log.setLevel(self._saved_level)
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the event side (watchdog's thread) -------------------------------------
    def _push(self, files: Iterable[str] = (), dirs: Iterable[str] = (), full: bool = False) -> None:
        files, dirs = list(files), list(dirs)
        if not (files or dirs or full):
            return
        now = time.monotonic()
        with self._cond:
            if not (self._files or self._dirs or self._full):
                self._first, self._first_wall = now, time.time()
            self._last = now
            self._files.update(files)
            self._dirs.update(dirs)
            self._full = self._full or full
            for p in [*files, *dirs]:
                self._touched[p] = now
            self._cond.notify()

    def pending(self) -> bool:
        """True while events wait to be applied or a batch is being applied."""
        with self._cond:
            return bool(self._files or self._dirs or self._full or self._inflight)

    # -- the main loop (the caller's thread) -------------------------------------
    def run(self, stop: threading.Event | None = None) -> None:
        """Apply batches until `stop()` (or `stop` is set). A batch in flight is finished first."""
        checked = time.monotonic()
        while not (self._stop.is_set() or (stop is not None and stop.is_set())):
            if time.monotonic() - checked >= INDEX_CHECK_SECONDS:
                checked = time.monotonic()
                if self._check_vault():
                    self._check_index()
                    # Notes other processes wrote but could not index (we hold the lock): as if seen.
                    self._push(files=[p for p in internals(self.mem).take_requests() if self.rules.is_note(p)])
            if self._vault_gone:  # nothing to sync until it is back (events meanwhile name paths that are not there)
                self._stop.wait(INDEX_CHECK_SECONDS / 4)
                continue
            batch = self._next_batch()
            if batch is not None:
                try:
                    self._apply(*batch)
                finally:
                    with self._cond:
                        self._inflight = False
            elif self.filling and not self.pending() and time.monotonic() >= self._fill_not_before:
                self._fill_step()
            self._record_edits()
            self._refresh_review()

    def _fill_step(self) -> None:
        """Embed the next FILL_STEP texts that were written to the catalog before their vectors."""
        try:
            report = internals(self.mem).fill_vectors(limit=FILL_STEP)
        except (VaultMemoryError, OSError) as exc:
            delay = RETRY_SECONDS[min(self._failures, len(RETRY_SECONDS) - 1)]
            self._failures += 1
            self._fill_not_before = time.monotonic() + delay
            log.error("embedding failed (%s); retrying in %.0f s", exc, delay)
            return
        self._failures = 0
        self._filled += report.texts_embedded
        # then the answer sentences, a step at a time as well (search/sentences.py); said by nobody:
        # recall works as before meanwhile, a new question only costs more
        self.filling = report.texts_pending > 0 or report.sentences_pending > 0
        if self.on_fill is not None and report.texts_embedded:
            self.on_fill(self._filled, self._filled + report.texts_pending)

    def _vault_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(internals(self.mem).vault)
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if os.path.isdir(internals(self.mem).vault) else None

    def _check_vault(self) -> bool:
        """Whether the vault folder is there to watch. When it went away (moved, unmounted, a sync
        client replacing it) and came back, or is another folder now, or the observer stopped, the
        observer is started again on it and everything is reconciled; each is said once."""
        here = self._vault_identity()
        if here is None:
            if not self._vault_gone:
                self._vault_gone = True
                log.warning(
                    "the vault folder %s is gone (moved, deleted or unmounted); waiting for it to come back",
                    internals(self.mem).vault,
                )
            return False
        observer = self._observer
        dead = observer is not None and not all(e.is_alive() for e in getattr(observer, "emitters", ()))
        if not self._vault_gone and here == self._watched and not dead:
            return True
        how = (
            "came back" if self._vault_gone else ("was replaced" if here != self._watched else "stopped being watched")
        )
        log.warning(
            "the vault folder %s %s: watching it again and reconciling everything", internals(self.mem).vault, how
        )
        self._vault_gone = False
        if observer is not None:
            observer.stop()
            observer.join(timeout=5)
            self._observer = None
        self._start_observer()
        with self._cond:  # what was pushed while it was gone named paths that were not there
            self._files, self._dirs = set(), set()
        self._push(full=True)
        return True

    def _check_index(self) -> None:
        """Rebuild the index if its folder went away (LockHeldError if another writer now has it)."""
        started = time.perf_counter()
        if internals(self.mem).check_index():
            return
        log.info(
            "rebuilt the index in %s (%d chunks)",
            internals(self.mem).index_dir,
            internals(self.mem).catalog.chunk_count(),
        )
        if self.on_batch is not None:
            self.on_batch(BatchResult(paths=0, full=True, seconds=time.perf_counter() - started, rebuilt=True))

    def _next_batch(self) -> tuple[set[str], set[str], bool, float] | None:
        with self._cond:
            now = time.monotonic()
            if self._files or self._dirs or self._full:
                due = max(min(self._last + self.debounce, self._first + self.max_wait), self._not_before)
                if now < due:
                    self._cond.wait(min(due - now, IDLE_TICK))
                    return None
                batch = (self._files, self._dirs, self._full, self._first_wall)
                self._files, self._dirs, self._full = set(), set(), False
                self._inflight = True
                return batch
            if self.filling and now >= self._fill_not_before:
                return None  # no events waiting: the caller embeds the next step at once
            wake = IDLE_TICK
            if self._edits:
                soonest = min(e.seen for e in self._edits.values()) + self.quiet
                wake = min(wake, max(0.05, soonest - now))
            self._cond.wait(wake)
            return None

    def _expand(self, folder: str) -> set[str]:
        """Notes under a folder: as the catalog knows them (old path) and as the disk has them (new path)."""
        prefix = folder + "/"
        found = {p for p in internals(self.mem).catalog.path_hashes() if p.startswith(prefix)}
        found.update(walk_notes(internals(self.mem).vault, self.rules, folder).notes)
        return found

    def _apply(self, files: set[str], dirs: set[str], full: bool, since: float = 0.0) -> BatchResult:
        """Apply one batch of events (the first of them seen at wall-clock `since`)."""
        started = time.perf_counter()
        paths = set(files)
        for d in dirs:
            paths |= self._expand(d)
        result = BatchResult(paths=len(paths), full=full)
        try:
            # More new texts than INLINE_TEXTS (a pull of many notes): written to the catalog
            # first and embedded step by step, as at start-up.
            if full:
                internals(self.mem).reload_rules()
                result.report = self.mem.index(embed_budget=INLINE_TEXTS)
            elif paths:
                before = self._bodies(paths)
                result.report = internals(self.mem).sync_paths(sorted(paths), embed_budget=INLINE_TEXTS)
                result.edits_seen = self._note_edits(paths, before, result.report, since or time.time())
        except (VaultMemoryError, OSError) as exc:
            # Keep the paths and retry later; the index is crash-safe, so a half-applied batch is fine.
            delay = RETRY_SECONDS[min(self._failures, len(RETRY_SECONDS) - 1)]
            self._failures += 1
            with self._cond:
                self._files |= paths
                self._full = self._full or full
                self._first = self._last = time.monotonic()
                self._not_before = time.monotonic() + delay
            result.error = str(exc)
            log.error("sync failed (%s); retrying in %.0f s", exc, delay)
        else:
            self._failures = 0
            self._not_before = 0.0
            if result.report is not None and (result.report.texts_pending or result.report.sentences_pending):
                self.filling = True
            if result.changed:
                self._review_due = time.monotonic() + REVIEW_DELAY
        result.seconds = time.perf_counter() - started
        self.batches += 1
        if self.on_batch is not None:
            self.on_batch(result)
        return result

    # -- a human edit is a rehearsal ------------------------------------------------
    def _bodies(self, paths: set[str]) -> dict[str, tuple[str, int]]:
        """node_id -> (body_hash, revision) of the notes at these paths, before the sync."""
        out: dict[str, tuple[str, int]] = {}
        if not self.rehearse_edits:
            return out
        for p in paths:
            row = internals(self.mem).catalog.note_by_path(p)
            if row is not None:
                out[row.node_id] = (row.body_hash, parse_int(row.meta.get("revision")))
        return out

    def _note_edits(
        self, paths: set[str], before: dict[str, tuple[str, int]], report: IndexReport, since: float
    ) -> list[str]:
        """The notes of this batch whose body a person changed (candidates to record once quiet); none
        when git brought the batch, and never a note a sync client downloaded (vault/origin.py)."""
        with self._cond:
            synced, self._synced = self._synced & paths, self._synced - paths
        if not before or not report.counts.get("modified"):
            return []
        edited: list[tuple[str, str, str]] = []
        for p in sorted(paths):
            row = internals(self.mem).catalog.note_by_path(p)
            if row is None or not row.id_in_file or row.node_id not in before:
                continue
            old_body, old_rev = before[row.node_id]
            if old_body == row.body_hash:
                continue  # unchanged body: our own frontmatter writes never count
            if parse_int(row.meta.get("revision")) != old_rev:
                continue  # whoever wrote it recorded the revision already (an agent's update)
            if p in synced:
                log.info("%s arrived from a sync client; not recording it as an edit", p)
                continue
            edited.append((row.node_id, row.path, row.body_hash))
        if edited and (git := self.git.touched_since(since)):
            log.info("%d note(s) changed by git (%s written); not recording them as edits", len(edited), git)
            return []
        if len(edited) > self.rehearse_max_batch:
            log.info("%d notes changed at once (a pull or sync?); not recording them as edits", len(edited))
            return []
        now = time.monotonic()
        for node_id, _, body_hash in edited:
            self._edits[node_id] = _Edit(node_id, body_hash, now, since)
        return [p for _, p, _ in edited]

    def _record_edits(self) -> None:
        """Record as a use (`last_accessed`) the body edits whose file has been quiet long enough, unless
        git turns out to have brought them (its state files are written a moment after some changes)."""
        if not self._edits:
            return
        now = time.monotonic()
        written: list[str] = []
        for node_id, edit in list(self._edits.items()):
            if now - edit.seen < self.quiet:
                continue
            row = internals(self.mem).catalog.note_by_id(node_id)
            if row is None:
                del self._edits[node_id]
                continue
            with self._cond:
                if row.path in self._files or self._dirs or self._full:
                    continue  # more events to apply first
                touched = self._touched.get(row.path, 0.0)
            if now - touched < self.quiet:
                continue  # still being written
            if self.git.touched_since(edit.since):
                del self._edits[node_id]  # a checkout's HEAD, a pull's reflog, written after the notes
                continue
            try:
                note = read_note(internals(self.mem).vault, row.path)
            except (NoteError, OSError):
                del self._edits[node_id]
                continue
            if note.body_hash != edit.body_hash:
                del self._edits[node_id]  # edited again: the sync of that edit makes a new candidate
                continue
            if note.file_hash != row.file_hash:
                edit.seen = now  # a frontmatter change the index has not applied yet: wait for it
                continue
            del self._edits[node_id]
            if not note.body.strip():
                continue  # an emptied note (or a Ctrl-N in progress) records nothing
            # witnessed: we saw the edit land. As recall records a use: never backwards (a pulled
            # `last_accessed` in the future stays), once per 10 minutes, not for a pinned or undated note.
            used = use_fields(internals(self.mem), note, internals(self.mem).clock())
            if not used:
                continue
            fields = {**first_write_fields(internals(self.mem), note), **used}
            try:
                write_note(
                    internals(self.mem).vault,
                    row.path,
                    expected_hash=note.file_hash,
                    set_fields=fields,
                    remove_fields=retired_fields(note),
                )
            except ConcurrentEditError:
                # An editor is saving it again: theirs wins, and the edit is recorded once the note is
                # quiet (a new body is a new candidate of its own; the same body retries this one).
                self._edits[node_id] = _Edit(node_id, edit.body_hash, time.monotonic(), edit.since)
                continue
            except NoteError as exc:
                log.warning("could not record the edit of %s: %s", row.path, exc)
                continue
            written.append(row.path)
        with self._cond:
            horizon = now - max(self.quiet, self.max_wait) * 4
            for p in [p for p, t in self._touched.items() if t < horizon]:
                del self._touched[p]
        if written and self.on_batch is not None:
            self.on_batch(BatchResult(paths=len(written), rehearsed=written))

    # -- the review note ----------------------------------------------------------------------
    def _refresh_review(self) -> None:
        """Rewrite the review note (if there is one) a little after the memory changed, and once a day.

        Never a loop: the review note's path is ignored (Memory's rules), so its write sends no event,
        and a kept copy of an edited one is passed over by the indexer, which changes nothing.
        """
        now = time.monotonic()
        today = internals(self.mem).clock().astimezone(local_zone()).date()
        if self._review_due is None and self._review_day == today:
            return
        if (self._review_due is not None and now < self._review_due) or self.pending():
            return
        self._review_due, self._review_day = None, today
        try:
            result = self.mem.refresh_review()
        except (VaultMemoryError, OSError) as exc:
            log.warning("could not refresh the review note: %s", exc)
            return
        if result is None:
            return
        if result.busy:
            self._review_due = now + max(self.quiet, REVIEW_DELAY)  # someone is editing it: later
        elif result.skipped:
            log.warning("review note not written: %s", result.skipped)
        if result.kept_edit:
            log.warning("the review note had been edited; that version is kept as %s", result.kept_edit)


@dataclass
class _Signals:
    """SIGINT/SIGTERM ask the watcher to stop after the batch in flight; a second one abandons it."""

    watcher: Watcher
    saved: dict[int, Any] = field(default_factory=dict)
    count: int = 0

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count > 1:
            raise KeyboardInterrupt  # abandon the batch: the index is crash-safe
        self.watcher.stop()

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self.handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self.saved.items():
            signal.signal(sig, old)


def serve(watcher: Watcher) -> None:
    """Run the watcher in this thread until Ctrl-C or SIGTERM, then stop observing."""
    with _Signals(watcher):
        try:
            watcher.run()
        finally:
            watcher.close()


__all__ = ["BatchResult", "Watcher", "serve"]
