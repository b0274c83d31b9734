"""Sentence vectors written with the index, so a new question embeds only itself (issue 38).

Recall scores its best chunks also by their best answer sentence (windows.py). Those sentences
used to be embedded at query time: a question never asked before embedded up to 90 of them,
343 ms at 10,000 notes where the rest of recall is about 20 (bench `new_question`). Which
sentences a question picks depends on its words, but the sentences a chunk can ever offer do not:
every sentence of at least `windows.MIN_WINDOW_WORDS` words of a chunk of two or more, and each
property line also as read with its note's title (`windows.about`). This store holds their
vectors, embedded after the chunks' own (a second pass of `index`, resumable, with its progress),
so recall finds them where it found the cached ones, and a new question costs its own vector.

It is derived and disposable like the rest of the index: `sentences.sqlite` beside the catalog,
written only by the process that holds the writer lock (readers open it read-only and treat any
error as "not there": the sentence is then embedded at query time, as before, and kept in the
window cache). Vectors are keyed by the sentence's text hash, so a sentence shared by many
chunks, or left unchanged by an edit, is embedded once; a chunk's row lists the sentences it
offers, and a sentence no chunk offers any longer is dropped. `Config.index_sentences = false`
leaves it empty (a first index then costs about half as much; docs/benchmarks.md).

    sentence_texts(body, subject)     what one chunk offers (pure)
    SentenceStore                     the file: get (readers), fill (the writer)
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..hashing import sha256_hex
from ..index.catalog import Catalog
from ..index.embedders import Embedder, takes_whole
from .vectorcache import WindowCache, rows_in
from .windows import _WORD, MIN_WINDOW_WORDS, Subject, split_windows, subject_of

log = logging.getLogger(__name__)

SENTENCES_NAME = "sentences.sqlite"
#: What decides which sentences a chunk offers; a change re-reads every chunk (vectors are kept).
SPLIT_IDENTITY = f"split_sentences/min{MIN_WINDOW_WORDS}/titled1/runs-on1/code1/links1/closers1/numbered2/keyed1"
PAGE_SIZE = 16384
RECHECK_SECONDS = 5.0
FILL_CHUNKS = 256  # chunks read, embedded and committed per step (a step is resumable)
EMBED_SLICE = 256  # sentences per embedder call (it sorts by length and batches inside)


def sentence_texts(body: str, subject: Subject | None = None) -> list[str]:
    """Every text recall may embed for a window of this chunk body, whatever the question: its
    sentences of at least MIN_WINDOW_WORDS words when it has two or more (`windows.picks`), and
    each of its property lines also with its note's title (`windows.about`), in order, each once."""
    wins = split_windows(body)
    if len(wins) < 2:
        return []
    out: dict[str, None] = {}
    for w in wins:
        if len(_WORD.findall(w)) < MIN_WINDOW_WORDS:
            continue
        out[w] = None
        if subject is not None and w in subject.properties:
            out[f"{subject.title}: {w}"] = None
    return list(out)


@dataclass
class FillReport:
    """What one `SentenceStore.fill` did: sentences embedded, copied from the window cache
    (embedded by a question before), and chunks still waiting for theirs."""

    embedded: int = 0
    copied: int = 0
    chunks_done: int = 0
    chunks_pending: int = 0


class SentenceStore:
    """The sentence vectors of an index folder (module docstring). `path=None`: nothing is kept."""

    def __init__(self, path: Path | None, identity: str, *, timeout: float = 0.5) -> None:
        self.path, self.identity, self.timeout = path, identity, timeout
        self._db: sqlite3.Connection | None = None
        self._usable = False  # the file is there, of this embedder and splitter
        self._looked_at = 0.0  # when a reader last asked the file whether it is usable now
        self._open()

    def _open(self) -> None:
        path = self.path
        if path is None:
            return
        try:
            self._db = sqlite3.connect(path, timeout=self.timeout, check_same_thread=False)
            self._db.execute("PRAGMA synchronous=NORMAL")
            tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"meta", "sentences", "covered"} <= tables:  # new: made once (a reader's open writes nothing)
                # A row is a 1.5 KB vector: 4 KB pages hold two and leave a fifth of the file empty
                # (496 MB at 10,000 synthetic notes); 16 KB pages hold ten (bench new_question).
                self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS sentences (sid INTEGER PRIMARY KEY, text_hash TEXT UNIQUE NOT NULL, "
                    "vec BLOB NOT NULL)"
                )
                # a chunk's text hash -> the sids of the sentences it offers (int64, packed)
                self._db.execute("CREATE TABLE IF NOT EXISTS covered (chunk_hash TEXT PRIMARY KEY, sids BLOB NOT NULL)")
                self._db.commit()
            self._usable = self._matches()
        except (sqlite3.Error, OSError) as exc:
            log.debug("sentence vectors %s unavailable (%s): answer sentences are embedded at query time", path, exc)
            self.close()

    def _matches(self) -> bool:
        """Whether the file's vectors are this embedder's, read with this splitter."""
        return self._meta("embedder") == self.identity and self._meta("split") == SPLIT_IDENTITY

    def _meta(self, key: str) -> str | None:
        assert self._db is not None
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def close(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    def __enter__(self) -> SentenceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- readers --------------------------------------------------------------------------
    def get(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """text hash -> vector, for those of `hashes` the store holds (errors only log)."""
        if self._db is None or not hashes or not self._usable_now():
            return {}
        out: dict[str, np.ndarray] = {}
        try:
            for h, blob in rows_in(
                self._db, "SELECT text_hash, vec FROM sentences WHERE text_hash IN ({marks})", hashes
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.Error as exc:
            log.debug("sentence vectors read failed (%s)", exc)
        return out

    def _usable_now(self) -> bool:
        """Whether the file holds this embedder's vectors; a reader that opened it before the
        writer first filled it asks again, at most every RECHECK_SECONDS (a server that reads for
        weeks beside a watcher that writes)."""
        if self._usable or self._db is None:
            return self._usable
        now = time.monotonic()
        if now - self._looked_at >= RECHECK_SECONDS:
            self._looked_at = now
            try:
                self._usable = self._matches()
            except sqlite3.Error:
                return False
        return self._usable

    def count(self) -> tuple[int, int]:
        """(chunks covered, sentence vectors held): what `status` shows."""
        if self._db is None or not self._usable_now():
            return (0, 0)
        try:
            (c,) = self._db.execute("SELECT count(*) FROM covered").fetchone()
            (s,) = self._db.execute("SELECT count(*) FROM sentences").fetchone()
        except sqlite3.Error:
            return (0, 0)
        return (int(c), int(s))

    # -- the writer -----------------------------------------------------------------------
    def _token(self, catalog: Catalog) -> str:
        """What a finished fill is valid for: the catalog's chunks as written at one generation."""
        return f"{catalog.get_meta('uid') or ''}|{catalog.vectors_generation()}"

    def up_to_date(self, catalog: Catalog) -> bool:
        """Whether every chunk of `catalog` has its sentences here (one meta read: no diff)."""
        if self._db is None or not self._usable:
            return False
        try:
            return self._meta("filled") == self._token(catalog)
        except sqlite3.Error:
            return False

    def _start(self) -> None:
        """Make the file this embedder's and splitter's (the writer only): another model's vectors
        are worth nothing; another splitter's are, but which chunk offers what is read again."""
        db = self._db
        assert db is not None
        with db:
            if self._meta("embedder") != self.identity:
                db.execute("DELETE FROM sentences")
                db.execute("DELETE FROM covered")
                db.execute("DELETE FROM meta")
                db.execute("INSERT INTO meta VALUES ('embedder', ?)", (self.identity,))
            if self._meta("split") != SPLIT_IDENTITY:
                db.execute("DELETE FROM covered")
                db.execute("DELETE FROM meta WHERE key = 'filled'")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('split', ?)", (SPLIT_IDENTITY,))
        self._usable = True

    def fill(
        self,
        catalog: Catalog,
        embedder: Embedder,
        *,
        cache: WindowCache | None = None,
        limit: int | None = None,
        budget: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        between_steps: Callable[[], None] | None = None,
    ) -> FillReport:
        """Give every chunk of `catalog` its sentences' vectors: drop what chunks no longer offer,
        then read the chunks not covered yet, FILL_CHUNKS at a time, and embed their sentences that
        neither this store nor `cache` holds (each text once). `limit`: cover at most that many
        chunks now (the watcher's steps); `budget`: when the chunks to cover are more than that,
        cover none (a reader's reconcile: `index` or the watcher will). Resumable: each step
        commits. Errors only log (recall then embeds those sentences at query time)."""
        report = FillReport()
        if self._db is None and self.path is not None:
            self._replace()
        if self._db is None or self.up_to_date(catalog):
            return report
        try:
            self._start()
            token = self._token(catalog)
            deferred = (self._meta("deferred") or "").rpartition("|")
            if budget is not None and deferred[0] == token:
                # too many for a reader at this generation already: not listed again each command
                report.chunks_pending = int(deferred[2])
                return report
            live = catalog.chunk_text_hashes()
            covered = {h for (h,) in self._db.execute("SELECT chunk_hash FROM covered")}
            gone = covered - live.keys()
            todo = [h for h in live if h not in covered]
            report.chunks_pending = len(todo)
            if budget is not None and len(todo) > budget:
                self._drop(gone, cache)
                with self._db:
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('deferred', ?)", (f"{token}|{len(todo)}",))
                return report
            todo = todo[:limit] if limit is not None else todo
            if progress:
                progress(0, len(todo))
            for start in range(0, len(todo), FILL_CHUNKS):
                part = todo[start : start + FILL_CHUNKS]
                self._cover(part, live, catalog, embedder, cache, report)
                report.chunks_done += len(part)
                report.chunks_pending -= len(part)
                if progress:
                    progress(report.chunks_done, len(todo))
                if between_steps is not None:
                    between_steps()
            # After the new chunks took what they share with the old (an edit keeps most sentences),
            # what only the old offered goes (to the window cache: an undo embeds nothing)
            self._drop(gone, cache)
            if report.chunks_pending == 0:
                with self._db:
                    self._db.execute("INSERT OR REPLACE INTO meta VALUES ('filled', ?)", (token,))
        except sqlite3.Error as exc:
            log.warning("sentence vectors not written (%s): new questions embed their answer sentences", exc)
        return report

    def _replace(self) -> None:
        """The file could not be opened (not a database, a torn copy): the writer starts it again,
        saying so; it is derived, and a reader kept answering without it."""
        assert self.path is not None
        if not self.path.exists():
            return
        log.warning("sentence vectors %s could not be read; starting them again", self.path)
        for suffix in ("", "-wal", "-shm"):
            try:
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError:
                return
        self._open()

    def _drop(self, gone: set[str], cache: WindowCache | None) -> None:
        """Forget the chunks no longer in the catalog, and the sentences no chunk offers now (their
        vectors kept in `cache`, with what questions embedded: the window cache's own bound)."""
        if not gone:
            return
        db = self._db
        assert db is not None
        with db:
            freed: set[int] = set()
            for h in gone:
                row = db.execute("SELECT sids FROM covered WHERE chunk_hash = ?", (h,)).fetchone()
                if row is not None:
                    freed.update(np.frombuffer(row[0], dtype=np.int64).tolist())
                db.execute("DELETE FROM covered WHERE chunk_hash = ?", (h,))
            if freed:
                for (blob,) in db.execute("SELECT sids FROM covered"):
                    freed.difference_update(np.frombuffer(blob, dtype=np.int64).tolist())
                    if not freed:
                        break
                freed_sids = sorted(freed)
                if cache is not None:
                    rows = rows_in(db, "SELECT text_hash, vec FROM sentences WHERE sid IN ({marks})", freed_sids)
                    kept = [(h, np.frombuffer(blob, dtype=np.float32)) for h, blob in rows]
                    if kept:
                        cache.put([h for h, _ in kept], np.vstack([v for _, v in kept]))
                db.executemany("DELETE FROM sentences WHERE sid = ?", [(s,) for s in freed_sids])

    def _cover(
        self,
        part: Sequence[str],
        live: dict[str, str],
        catalog: Catalog,
        embedder: Embedder,
        cache: WindowCache | None,
        report: FillReport,
    ) -> None:
        """Give these chunks (by text hash) their sentences' vectors, and record what each offers."""
        db = self._db
        assert db is not None
        offered, texts = _offered(part, live, catalog)
        known = self._known(sorted(texts))
        rows = _vectors([th for th in sorted(texts) if th not in known], texts, embedder, cache, report)
        with db:
            db.executemany("INSERT OR IGNORE INTO sentences (text_hash, vec) VALUES (?, ?)", rows)
            sid_of = known | self._known([th for th, _ in rows])
            db.executemany(
                "INSERT OR REPLACE INTO covered VALUES (?, ?)",
                [
                    (h, np.asarray([sid_of[th] for th in ths if th in sid_of], dtype=np.int64).tobytes())
                    for h, ths in offered.items()
                ],
            )

    def _known(self, hashes: Sequence[str]) -> dict[str, int]:
        """text hash -> sid, for those of `hashes` held."""
        assert self._db is not None
        return dict(rows_in(self._db, "SELECT text_hash, sid FROM sentences WHERE text_hash IN ({marks})", hashes))


def _offered(
    part: Sequence[str], live: dict[str, str], catalog: Catalog
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(chunk text hash -> the hashes of the texts it offers, text hash -> text) for these chunks;
    one gone since `live` was read is left out (the next fill sees it)."""
    chunks = catalog.chunks_by_ids([live[h] for h in part])
    notes = catalog.notes_by_ids(sorted({c.node_id for c in chunks.values()}))
    offered: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    for h in part:
        ch = chunks.get(live[h])
        if ch is None:
            continue
        note = notes.get(ch.node_id)
        hashes = []
        for t in sentence_texts(ch.body, subject_of(note) if note is not None else None):
            th = sha256_hex(t)
            texts.setdefault(th, t)
            hashes.append(th)
        offered[h] = hashes
    return offered, texts


def _vectors(
    need: Sequence[str], texts: dict[str, str], embedder: Embedder, cache: WindowCache | None, report: FillReport
) -> list[tuple[str, bytes]]:
    """(text hash, vector bytes) for the texts `need` names: from the window cache when a question
    embedded them before, else embedded now, shortest first, EMBED_SLICE at a time (a text longer
    than the model's window gets none, as at query time)."""
    found = cache.get(need) if cache is not None and need else {}
    rows = [(th, np.asarray(v, dtype=np.float32).tobytes()) for th, v in found.items()]
    report.copied += len(rows)
    missing = sorted((texts[th] for th in need if th not in found and takes_whole(embedder, texts[th])), key=len)
    for start in range(0, len(missing), EMBED_SLICE):
        batch = missing[start : start + EMBED_SLICE]
        vecs = np.asarray(embedder.embed(batch), dtype=np.float32)
        rows += [(sha256_hex(t), v.tobytes()) for t, v in zip(batch, vecs, strict=True)]
        report.embedded += len(batch)
    return rows


def open_sentences(index_dir: Path | None, embedder: Embedder) -> SentenceStore:
    """The sentence vectors of an index folder (none kept when there is no folder)."""
    return SentenceStore(index_dir / SENTENCES_NAME if index_dir is not None else None, embedder.identity)
