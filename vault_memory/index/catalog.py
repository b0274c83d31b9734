"""The catalog: a SQLite file in the index folder holding what the index knows.

Tables: `notes` (one row per indexed note, keyed by node_id, with the time it was stated
for date filters), `chunks` (one row per chunk), `vectors` (embedding cache keyed by the
hash of the embedded text, so the same text is never embedded twice), `chunks_fts` (FTS5,
the lexical BM25 index),
`lex_docs` (the same terms for the in-memory BM25 of lexical.py), `failures` (notes
that could not be parsed), `file_stamps` (each file's stat when it was last read, so
an unchanged file is not read again) and `meta` (embedder identity, state).
Everything here is derived from the vault and can be deleted.

Longer than 500 lines because every SQL statement against this file lives here, so
the schema and the queries that depend on it change together in one place.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import numpy as np

from ..errors import IndexStateError
from . import lexical
from .integrity import CHECK_SECONDS, IntegrityReport, check_database, open_error

log = logging.getLogger(__name__)

SCHEMA_VERSION = "7"  # 7: notes.stated (when each note was stated, for date filters); 6: failures record
# the file hash and kind (private, symlink); 5: lex_docs

#: meta: "1" once a full reconcile has compared every note's text with the text the index holds
#: (indexer `verify`); a catalog from before issue 41 is verified once by `index` (`repair`)
BODIES_CHECKED = "bodies_checked"

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    node_id TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    file_hash TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,
    aliases TEXT NOT NULL,
    links TEXT NOT NULL,
    meta TEXT NOT NULL,
    mtime REAL NOT NULL,
    id_in_file INTEGER NOT NULL,
    stated REAL  -- fields.stated_time as epoch seconds (NULL: no date known); filters.py ranges over it
);
CREATE INDEX IF NOT EXISTS notes_stated ON notes(stated);
CREATE TABLE IF NOT EXISTS chunks (
    rid INTEGER PRIMARY KEY,  -- also the chunks_fts rowid, so FTS rows are found without a scan
    chunk_id TEXT NOT NULL UNIQUE,
    node_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    heading TEXT NOT NULL,
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_node ON chunks(node_id);
-- which chunks use a text: pruning the vectors of replaced chunks asks it per text, not per vector
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(text_hash);
CREATE TABLE IF NOT EXISTS vectors (text_hash TEXT PRIMARY KEY, vec BLOB NOT NULL);
-- notes not indexed, with the hash they had (so each is reported once, not on every run):
-- kind 'unreadable' (could not be parsed), 'private' (`private: true`), 'symlink' (never followed)
CREATE TABLE IF NOT EXISTS failures (path TEXT PRIMARY KEY, file_hash TEXT NOT NULL, error TEXT NOT NULL,
                                     kind TEXT NOT NULL DEFAULT 'unreadable');
-- chunks whose vector is in the catalog but not yet confirmed written to the vector store
CREATE TABLE IF NOT EXISTS store_pending (chunk_id TEXT PRIMARY KEY);
-- what a note file's stat said when its bytes were last read and hashed (indexer.file_stamp):
-- while the stamp is unchanged the file is not read again
CREATE TABLE IF NOT EXISTS file_stamps (path TEXT PRIMARY KEY, stamp TEXT NOT NULL, file_hash TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    chunk_id UNINDEXED, body, title, tokenize = '"""
    + lexical.TOKENIZE
    + """'
);
"""
    + lexical.SCHEMA
)

# Words too common to help a lexical match; dropping them keeps FTS5 OR-queries fast.
STOPWORDS = frozenset(
    """a an and are as at be but by can could did do does for from had has have how i if in into is it its
    me my of on or our she he her his they them their so than that the this those to was we were what when
    where which who whom why will with would you your about after all also any been being both each just
    more most no not only other over same should some such then there these through too under up very""".split()
)


@dataclass(frozen=True)
class NoteRow:
    node_id: str
    path: str
    file_hash: str
    body_hash: str
    title: str
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    links: tuple[str, ...]
    meta: dict[str, Any]
    mtime: float
    id_in_file: bool
    stated: float | None = None  # when the note was stated (fields.stated_time), epoch seconds


@dataclass(frozen=True)
class ChunkRow:
    chunk_id: str
    node_id: str
    idx: int
    heading: str
    text: str
    text_hash: str

    @property
    def body(self) -> str:
        """The text without the heading-path line the indexer puts first (when it has one)."""
        if self.heading and self.text.startswith(self.heading + "\n"):
            return self.text[len(self.heading) + 1 :]
        return self.text


@dataclass(frozen=True)
class VectorProgress:
    """How many of the index's chunks have their vector: a first index writes every note's rows
    before it embeds them, and until all have one recall ranks by BM25 alone."""

    chunks: int
    embedded: int

    @property
    def pending(self) -> int:
        return self.chunks - self.embedded

    @property
    def complete(self) -> bool:
        return self.pending == 0

    def to_dict(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "embedded": self.embedded, "pending": self.pending, "complete": self.complete}


def recorded_embedder(path: Path) -> str | None:
    """The embedder identity the catalog at `path` records, read without opening it for writing
    (None if there is no catalog or it cannot be read: whoever opens it next says why)."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def chunk_owner(chunk_id: str) -> str:
    """The node_id a chunk id belongs to (chunk ids are `<node_id>#<index>`: indexer.chunk_note)."""
    return chunk_id.rsplit("#", 1)[0]


def _like_prefix(text: str) -> str:
    """`text` escaped for LIKE ... ESCAPE '\\' (its % and _ are literal)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def query_words(text: str) -> list[str]:
    """The words a lexical query ORs: its meaningful words (all words if none are), once each."""
    words = [w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS]
    if not words:
        words = re.findall(r"\w+", text.lower())
    return list(dict.fromkeys(words))


def fts_match(words: Sequence[str]) -> str:
    """The FTS5 MATCH expression that ORs these words, each quoted (so none is read as syntax)."""
    return " OR ".join(f'"{w}"' for w in words)


def fts_query(text: str) -> str | None:
    """Turn free text into a safe FTS5 OR-query of its meaningful words (None if none)."""
    return fts_match(query_words(text)) or None


LexicalEngine = Literal["auto", "fts5", "memory"]


#: chunk rows `chunks_by_ids` keeps in memory (their text is most of it: ~15 MB at 10k rows)
CHUNK_ROWS_KEPT = 10_000

_Row = TypeVar("_Row")


class _ByGeneration(Generic[_Row]):
    """Rows by id, valid while a meta generation (bumped by every committed write to their
    table, in any process) is the one they were read at; emptied past `limit` rows."""

    def __init__(self, key: str, limit: int) -> None:
        self.key, self.limit = key, limit
        self.gen: str | None = None
        self.rows: dict[str, _Row] = {}

    def current(self, catalog: Catalog) -> dict[str, _Row] | None:
        """The rows still valid, to read and add to; None inside a write transaction (rows read
        there may still roll back)."""
        if catalog.db.in_transaction:
            return None
        gen = catalog.get_meta(self.key) or "0"
        if gen != self.gen or len(self.rows) > self.limit:
            self.rows, self.gen = {}, gen
        return self.rows


class Catalog:
    """SQLite access for notes, chunks, cached vectors and the FTS5 index."""

    # The first lexical query of a process goes to FTS5, so a one-shot CLI recall loads nothing;
    # from the second on, lex_docs is loaded once (0.2 s at 26k chunks) and followed by generation.
    LOAD_POSTINGS_AFTER = 1

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        """Open (creating it if need be) the catalog; `read_only` opens it for reading only.

        Read-only works where nothing can be written: a WAL database normally needs its `-shm`
        file, so when plain read-only fails the file is opened `immutable` (it cannot change
        under us: nobody can write that folder). Errors: IndexNotWritableError (the folder cannot
        be written), CatalogCorruptError (the file is damaged), IndexStateError (anything else).
        """
        self.path = path
        self.read_only = read_only
        self._tokenizer: lexical.Tokenizer | None = None
        self._postings: lexical.Postings | None = None
        self._lexical_queries = 0
        self._lexical_lock = threading.Lock()
        # chunks (rid -> text, title) whose lex_docs row is written when their transaction commits:
        # FTS5's tokenizer costs less per chunk in batches (5 vs 8 ms a note, 20 notes at a time)
        self._lex_pending: dict[int, tuple[str, str]] = {}
        # decoded notes by their raw row: recall reads ~200 notes twice per query, and decoding
        # their JSON columns was a fifth of a warm hybrid recall at 10k notes. Keyed by every
        # column, so an edited row is simply another key. NoteRows are shared: read-only.
        self._note_rows: dict[tuple[Any, ...], NoteRow] = {}
        # ... and by node_id, valid while the notes' generation (bumped by every committed write to
        # `notes`, in any process) is the one they were read at: recall asks for the same ~200 twice.
        self._notes_by_id: _ByGeneration[NoteRow] = _ByGeneration("notes_gen", 50_000)
        # chunk rows by id, valid while the vectors' generation (bumped whenever any chunk is
        # written or deleted, in any process) is the one they were read at: a long-lived process
        # (MCP, a watcher) meets the same candidates again, and bm25, dense and hybrid share them.
        self._chunks_by_id: _ByGeneration[ChunkRow] = _ByGeneration("vectors_gen", CHUNK_ROWS_KEPT)
        self._orphans: set[str] = set()  # texts of chunks deleted since the last prune_vectors
        self._keeping = 0  # reconciles in flight in this process (keeping_vectors): prune waits for them
        try:
            if read_only:
                self.db = self._connect_read_only(path)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(path, timeout=30, check_same_thread=False)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
                self.db.executescript(_SCHEMA)
                if self.get_meta("schema") is None:
                    self.set_meta("schema", SCHEMA_VERSION)
                    self.set_meta(BODIES_CHECKED, "1")  # a new catalog holds nothing unverified
                if self.get_meta("uid") is None:  # this catalog, not a rebuilt one: keys caches beside it
                    self.set_meta("uid", secrets.token_hex(8))
                self.db.commit()
            version = self.get_meta("schema")
        except (sqlite3.DatabaseError, OSError) as exc:
            raise open_error(path, exc) from exc
        if version not in (None, SCHEMA_VERSION):
            raise IndexStateError(
                f"index catalog {path} has schema {version}, this version needs {SCHEMA_VERSION}; "
                "run `vault-memory index --rebuild`"
            )

    @staticmethod
    def _connect_read_only(path: Path) -> sqlite3.Connection:
        if not path.is_file():
            raise sqlite3.OperationalError("unable to open database file")
        uri = path.resolve().as_uri()
        try:
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30, check_same_thread=False)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db = sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=30, check_same_thread=False)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db

    # -- integrity ------------------------------------------------------------
    def check(self, max_seconds: float = CHECK_SECONDS) -> IntegrityReport:
        """SQLite's quick_check and FTS5's integrity check, each bounded in time (integrity.check_database)."""
        return check_database(self.db, read_only=self.read_only, max_seconds=max_seconds)

    def _migrate(self) -> None:
        """An index from another schema version keeps only its embedding cache (the costly part):
        everything else is rebuilt from the vault by the next reconcile, embedding nothing known."""
        has_meta = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        if not has_meta:
            return
        old = self.get_meta("schema")
        if old in (None, SCHEMA_VERSION):
            return
        log.warning(
            "index catalog %s has schema %s; upgrading to %s (cached vectors are kept)", self.path, old, SCHEMA_VERSION
        )
        for table in (
            "chunks_fts",
            "lex_docs",
            "lex_segment",
            "chunks",
            "notes",
            "failures",
            "store_pending",
            "file_stamps",
        ):
            self.db.execute(f"DROP TABLE IF EXISTS {table}")
        self.db.execute("DELETE FROM meta WHERE key NOT IN ('embedder')")
        self.db.execute("INSERT INTO meta(key, value) VALUES ('store_dirty', '1')")  # re-sync Chroma's ids
        self.db.commit()

    def close(self) -> None:
        self.db.close()
        if self._tokenizer is not None:
            self._tokenizer.close()

    @property
    def tokenizer(self) -> lexical.Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = lexical.Tokenizer()
        return self._tokenizer

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Commit on success, roll back on error. Every write goes through one: lex_docs rows of
        the chunks written inside it are added just before it commits."""
        try:
            yield
            if self._lex_pending:
                docs = [(rid, text, title) for rid, (text, title) in self._lex_pending.items()]
                lexical.write_docs(self.db, self.tokenizer, docs, self._bump_lexical())
                self._lex_pending.clear()
            self.db.commit()
        except BaseException:
            self._lex_pending.clear()
            self.db.rollback()
            raise

    # -- meta ---------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- notes --------------------------------------------------------------
    def notes(self) -> list[NoteRow]:
        return [_note_row(r) for r in self.db.execute(f"SELECT {_NOTE_COLS} FROM notes")]

    def note_by_id(self, node_id: str) -> NoteRow | None:
        r = self.db.execute(f"SELECT {_NOTE_COLS} FROM notes WHERE node_id = ?", (node_id,)).fetchone()
        return None if r is None else _note_row(r)

    def note_by_path(self, path: str) -> NoteRow | None:
        r = self.db.execute(f"SELECT {_NOTE_COLS} FROM notes WHERE path = ?", (path,)).fetchone()
        return None if r is None else _note_row(r)

    def notes_by_ids(self, node_ids: Sequence[str]) -> dict[str, NoteRow]:
        out: dict[str, NoteRow] = {}
        by_id = self._notes_by_id.current(self)
        if by_id is not None:
            out = {n: by_id[n] for n in node_ids if n in by_id}
            node_ids = [n for n in node_ids if n not in out]
        cache = self._note_rows
        if len(cache) > 50_000:
            cache.clear()
        for start in range(0, len(node_ids), 500):
            part = list(node_ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for r in self.db.execute(f"SELECT {_NOTE_COLS} FROM notes WHERE node_id IN ({marks})", part):
                row = cache.get(r)
                if row is None:
                    row = cache[r] = _note_row(r)
                out[row.node_id] = row
                if by_id is not None:
                    by_id[row.node_id] = row
        return out

    def note_names(self) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
        """(path, title, aliases, tags) of every note: what naming and linking need, meta left encoded."""
        return [
            (p, t, tuple(json.loads(a)), tuple(json.loads(g)))
            for p, t, a, g in self.db.execute("SELECT path, title, aliases, tags FROM notes")
        ]

    def entries(self) -> list[tuple[str, str, str, str]]:
        """(node_id, path, file_hash, body_hash) of every note: what planning needs, nothing decoded."""
        return [tuple(r) for r in self.db.execute("SELECT node_id, path, file_hash, body_hash FROM notes")]

    def path_hashes(self) -> dict[str, tuple[str, str, str]]:
        """path -> (file_hash, body_hash, node_id): all a no-op reconcile needs."""
        return {p: (f, b, n) for p, f, b, n in self.db.execute("SELECT path, file_hash, body_hash, node_id FROM notes")}

    def file_id_of(self, path: str) -> str | None:
        """The node_id the note at `path` carried when it was indexed (see `file_ids`)."""
        row = self.db.execute("SELECT json_extract(meta, '$.node_id') FROM notes WHERE path = ?", (path,)).fetchone()
        value = None if row is None else row[0]
        if value is None or (isinstance(value, str) and value.startswith(("[", "{"))):
            return None
        return str(value).strip() or None

    def file_ids(self) -> dict[str, str]:
        """path -> the node_id written in that note's frontmatter (notes without one are left out).

        The catalog's identity of a note is that id only when no other note claims it; this is
        what the file itself says, so identity can be decided again without reading the file.
        """
        out: dict[str, str] = {}
        for path, value in self.db.execute("SELECT path, json_extract(meta, '$.node_id') FROM notes"):
            if value is not None and not (isinstance(value, str) and value.startswith(("[", "{"))):
                text = str(value).strip()
                if text:
                    out[path] = text
        return out

    def upsert_note(self, row: NoteRow) -> None:
        old = self.db.execute(
            "SELECT title, aliases, tags, path FROM notes WHERE node_id = ?", (row.node_id,)
        ).fetchone()
        old_title = None if old is None else _names_text(old[0], json.loads(old[1]), json.loads(old[2]), old[3])
        self._bump_notes()
        if old is None or (old[3], old[0], old[1]) != (row.path, row.title, json.dumps(list(row.aliases))):
            self._bump("names_gen")  # a rehearsal (meta only) leaves the names as they were
        # A path may be taken over by another identity (delete + create): free it first.
        self.db.execute("DELETE FROM notes WHERE path = ? AND node_id != ?", (row.path, row.node_id))
        self.db.execute(
            "INSERT OR REPLACE INTO notes VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                row.node_id,
                row.path,
                row.file_hash,
                row.body_hash,
                row.title,
                json.dumps(list(row.tags)),
                json.dumps(list(row.aliases)),
                json.dumps(list(row.links)),
                json.dumps(row.meta, default=str, sort_keys=True),
                row.mtime,
                int(row.id_in_file),
                row.stated,
            ),
        )
        title = _fts_title(row)
        if title != old_title:  # frontmatter-only edits (rehearsals) leave the lexical index alone
            self.db.execute(
                "UPDATE chunks_fts SET title = ? WHERE rowid IN (SELECT rid FROM chunks WHERE node_id = ?)",
                (title, row.node_id),
            )
            for rid, text in self.db.execute("SELECT rid, text FROM chunks WHERE node_id = ?", (row.node_id,)):
                self._lex_pending[rid] = (text, title)

    def delete_note(self, node_id: str) -> list[str]:
        """Remove a note and its chunks; returns the removed chunk ids."""
        ids = [r[0] for r in self.db.execute("SELECT chunk_id FROM chunks WHERE node_id = ?", (node_id,))]
        self._delete_chunks(ids)
        self.db.execute("DELETE FROM notes WHERE node_id = ?", (node_id,))
        self._bump("names_gen")
        self._bump_notes()
        return ids

    # -- chunks -------------------------------------------------------------
    def chunks_of(self, node_id: str) -> list[ChunkRow]:
        return [
            ChunkRow(*r)
            for r in self.db.execute(
                "SELECT chunk_id, node_id, idx, heading, text, text_hash FROM chunks WHERE node_id = ? ORDER BY idx",
                (node_id,),
            )
        ]

    def chunk_ids_of(self, node_ids: Sequence[str]) -> list[str]:
        """The chunk ids of these notes, in note and chunk order."""
        out: list[str] = []
        for i in range(0, len(node_ids), 500):
            part = list(node_ids[i : i + 500])
            out += [
                r[0]
                for r in self.db.execute(
                    f"SELECT chunk_id FROM chunks WHERE node_id IN ({','.join('?' * len(part))}) ORDER BY node_id, idx",
                    part,
                )
            ]
        return out

    def stated_near(self, ranges: Sequence[tuple[float, float]]) -> list[str]:
        """node_ids of the notes stated in one of `ranges` (epoch seconds, `lo <= stated < hi`):
        search/days.py's question, whose caller keeps the notes whose own day it names."""
        if not ranges:
            return []
        where = " OR ".join(["(stated >= ? AND stated < ?)"] * len(ranges))
        sql = f"SELECT node_id FROM notes WHERE stated IS NOT NULL AND ({where}) ORDER BY node_id"
        return [r[0] for r in self.db.execute(sql, [x for r in ranges for x in r])]

    def headings_holding(self, words: Sequence[str]) -> list[tuple[str, str]]:
        """(chunk_id, heading) of the chunks whose heading path holds one of `words` (a year: the
        parts a heading may state on a day the query names, recall.on_named_days), in no set order:
        a scan of every chunk's heading, 3 ms at 8,123 chunks (`dexter`), twice that sorted."""
        if not words:
            return []
        where = " OR ".join(["instr(heading, ?) > 0"] * len(words))
        sql = f"SELECT chunk_id, heading FROM chunks WHERE {where}"
        return [(r[0], r[1]) for r in self.db.execute(sql, list(words))]

    def chunks_by_ids(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        out: dict[str, ChunkRow] = {}
        kept = self._chunks_by_id.current(self)
        if kept is not None:
            out = {c: kept[c] for c in chunk_ids if c in kept}
            chunk_ids = [c for c in chunk_ids if c not in out]
        for start in range(0, len(chunk_ids), 500):
            part = list(chunk_ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for r in self.db.execute(
                f"SELECT chunk_id, node_id, idx, heading, text, text_hash FROM chunks WHERE chunk_id IN ({marks})", part
            ):
                out[r[0]] = row = ChunkRow(*r)
                if kept is not None:
                    kept[r[0]] = row
        return out

    def chunk_text_hashes(self) -> dict[str, str]:
        """text hash -> the id of the first chunk (in rid order) holding that text: every text the
        index holds, once (sentences.SentenceStore.fill)."""
        out: dict[str, str] = {}
        for h, cid in self.db.execute("SELECT text_hash, chunk_id FROM chunks ORDER BY rid"):
            out.setdefault(h, cid)
        return out

    def chunk_hashes_of(self, node_id: str) -> dict[str, str]:
        return dict(self.db.execute("SELECT chunk_id, text_hash FROM chunks WHERE node_id = ?", (node_id,)))

    def add_store_pending(self, chunk_ids: Iterable[str]) -> None:
        self.db.executemany("INSERT OR IGNORE INTO store_pending VALUES (?)", [(c,) for c in chunk_ids])

    def store_pending(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT chunk_id FROM store_pending")}

    def clear_store_pending(self, chunk_ids: Iterable[str] | None = None) -> None:
        if chunk_ids is None:
            self.db.execute("DELETE FROM store_pending")
        else:
            self.db.executemany("DELETE FROM store_pending WHERE chunk_id = ?", [(c,) for c in chunk_ids])

    def chunk_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT chunk_id FROM chunks")}

    def embedded_chunk_ids(self) -> set[str]:
        """Chunks whose text has a cached vector: what a vector store should hold."""
        return {
            r[0] for r in self.db.execute("SELECT c.chunk_id FROM chunks c JOIN vectors v ON v.text_hash = c.text_hash")
        }

    def embedded_chunk_count(self) -> int:
        return int(
            self.db.execute("SELECT count(*) FROM chunks c JOIN vectors v ON v.text_hash = c.text_hash").fetchone()[0]
        )

    def unembedded_chunks(self, limit: int = -1) -> list[tuple[int, str, str]]:
        """(rid, chunk_id, text_hash) of chunks written before their vector (indexer: catalog
        first), in rid order."""
        return [
            (int(r), c, h)
            for r, c, h in self.db.execute(
                "SELECT rid, chunk_id, text_hash FROM chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.text_hash = c.text_hash) ORDER BY rid LIMIT ?",
                (limit,),
            )
        ]

    def has_unembedded(self) -> bool:
        """Whether any chunk's text has no vector: one pass over the `chunks_hash` index, not the
        chunks themselves (55 ms at 93k chunks, where the rid order of `unembedded_chunks` took 1.4 s)."""
        row = self.db.execute(
            "SELECT 1 FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.text_hash = c.text_hash) LIMIT 1"
        ).fetchone()
        return row is not None

    def vector_progress(self) -> VectorProgress:
        chunks = self.chunk_count()
        return VectorProgress(
            chunks, chunks - (self.unembedded_count() if self.get_meta("embedding_pending") == "1" else 0)
        )

    def unembedded_count(self) -> int:
        return int(
            self.db.execute(
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM vectors v WHERE v.text_hash = c.text_hash)"
            ).fetchone()[0]
        )

    def texts_by_rids(self, rids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for start in range(0, len(rids), 500):
            part = list(rids[start : start + 500])
            marks = ",".join("?" * len(part))
            out.update(self.db.execute(f"SELECT rid, text FROM chunks WHERE rid IN ({marks})", part))
        return out

    def note_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM notes").fetchone()[0])

    def chunk_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def replace_chunks(self, note: NoteRow, chunks: Sequence[ChunkRow]) -> list[str]:
        """Set a note's chunks; returns chunk ids that no longer exist."""
        old = {r[0] for r in self.db.execute("SELECT chunk_id FROM chunks WHERE node_id = ?", (note.node_id,))}
        self._delete_chunks(list(old))
        title = _fts_title(note)
        for c in chunks:
            cur = self.db.execute(
                "INSERT INTO chunks(chunk_id, node_id, idx, heading, text, text_hash) VALUES (?,?,?,?,?,?)",
                (c.chunk_id, c.node_id, c.idx, c.heading, c.text, c.text_hash),
            )
            assert cur.lastrowid is not None
            self.db.execute(
                "INSERT INTO chunks_fts(rowid, chunk_id, body, title) VALUES (?,?,?,?)",
                (cur.lastrowid, c.chunk_id, c.text, title),
            )
            self._lex_pending[cur.lastrowid] = (c.text, title)
        self._bump_generation()
        return sorted(old - {c.chunk_id for c in chunks})

    def _bump_lexical(self) -> int:
        """A new lexical generation (what rows written now are stamped with; readers reload on change)."""
        (value,) = self.db.execute(
            "INSERT INTO meta VALUES ('lexical_gen', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value"
        ).fetchone()
        return int(value)

    def _bump_notes(self) -> None:
        self._bump("notes_gen")

    def _bump_generation(self) -> None:
        self._bump("vectors_gen")

    def _bump(self, key: str) -> None:
        self.db.execute(
            "INSERT INTO meta VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1", (key,)
        )

    def vectors_generation(self) -> str:
        """Changes whenever the set of (chunk, vector) pairs may have changed, in any process."""
        return self.get_meta("vectors_gen") or "0"

    def names_generation(self) -> str:
        """Changes whenever a note's path, title or aliases may have changed, in any process."""
        return self.get_meta("names_gen") or "0"

    def _delete_chunks(self, ids: list[str]) -> None:
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for rid, text_hash in self.db.execute(
                f"SELECT rid, text_hash FROM chunks WHERE chunk_id IN ({marks})", part
            ):
                self._lex_pending.pop(rid, None)
                self._orphans.add(text_hash)  # its vector may now be unused: prune_vectors looks
            # FTS rows go by rowid (chunk_id is UNINDEXED there: matching on it scans the table)
            self.db.execute(
                f"DELETE FROM chunks_fts WHERE rowid IN (SELECT rid FROM chunks WHERE chunk_id IN ({marks}))", part
            )
            self.db.execute(
                f"DELETE FROM lex_docs WHERE rid IN (SELECT rid FROM chunks WHERE chunk_id IN ({marks}))", part
            )
            self.db.execute(f"DELETE FROM chunks WHERE chunk_id IN ({marks})", part)
        if ids:
            self._bump_generation()
            self._bump_lexical()

    def lexical_search(
        self, query: str, limit: int, allow: AbstractSet[str] | None = None, *, engine: LexicalEngine = "auto"
    ) -> list[tuple[str, float]]:
        """BM25 over chunk text (weight 1) and note title/tags/aliases (weight 2); higher is better.

        `allow`: only chunks of these notes (filters.py), always through FTS5: it takes a rowid
        constraint as its plan and then evaluates MATCH once per allowed row (3-8 s for 1,200
        notes of a 10k vault), so the allowed rows are picked from the scored matches instead
        (~1.5x an unfiltered FTS5 query at 10k notes).

        Best first, ties by rowid. Two engines give the same ranking (lexical.py): FTS5 itself,
        and `memory`, the same scores from postings kept in this process. `auto` asks FTS5 for
        the first query of a process and the postings from then on (`LOAD_POSTINGS_AFTER`).
        """
        words = query_words(query)
        if not words:
            return []
        if allow is not None:
            if not allow:
                return []
            # The subquery's LIMIT -1 keeps SQLite from pushing the rowid test into FTS5.
            rows = self.db.execute(
                "SELECT chunk_id, s FROM (SELECT chunk_id, rowid AS r, bm25(chunks_fts, 0.0, 1.0, 2.0) AS s "
                "FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT -1) WHERE r IN (SELECT rid FROM chunks WHERE "
                "node_id IN (SELECT value FROM json_each(?))) ORDER BY s, r LIMIT ?",
                (fts_match(words), json.dumps(sorted(allow)), limit),
            ).fetchall()
            return [(cid, -float(s)) for cid, s in rows]
        if engine == "auto":
            self._lexical_queries += 1
            engine = "memory" if self._lexical_queries > self.LOAD_POSTINGS_AFTER else "fts5"
        if engine == "memory":
            terms = self.tokenizer.words(words)
            # a word FTS5 reads as a phrase of several terms (foo_bar) or as none: FTS5's own semantics
            if all(len(t) == 1 for t in terms):
                postings = self._fresh_postings()
                if postings is not None:
                    with postings.lock:
                        return postings.search([t[0] for t in terms], limit)
        # Select the rowid, not chunk_id: reading a column makes FTS5 fetch each matching row's
        # content before sorting, two thirds of the query's time (13k matches at 26k chunks).
        rows = self.db.execute(
            "SELECT c.chunk_id, m.s FROM (SELECT rowid AS r, bm25(chunks_fts, 0.0, 1.0, 2.0) AS s FROM chunks_fts "
            "WHERE chunks_fts MATCH ? ORDER BY s, rowid LIMIT ?) AS m JOIN chunks c ON c.rid = m.r ORDER BY m.s, m.r",
            (fts_match(words), limit),
        ).fetchall()
        return [(cid, -float(s)) for cid, s in rows]

    def save_lexical_segment(self, *, force: bool = False) -> bool:
        """Re-sort lex_docs into lex_segment when more postings are newer than it than
        `lexical.merge_threshold` allows, so a process loads sorted postings instead of sorting
        them (the writer, after a reconcile)."""
        row = self.db.execute("SELECT data FROM lex_segment WHERE name = 'seq'").fetchone()
        (newer,) = self.db.execute(
            "SELECT coalesce(sum(length(terms)), 0) / 8 FROM lex_docs WHERE seq > ?", (int(row[0]) if row else 0,)
        ).fetchone()
        (held,) = self.db.execute(
            "SELECT coalesce(max(length(data)), 0) / 4 FROM lex_segment WHERE name = 'slots'"
        ).fetchone()
        if not force and newer <= lexical.merge_threshold(int(held)):
            return False
        with self.transaction():
            postings = lexical.Postings()
            postings.refresh(self.db, self.get_meta("lexical_gen") or "0")
            postings.save(self.db)
        return True

    def postings_size(self) -> tuple[int, float] | None:
        """(postings, MB) held in memory by the lexical engine, or None before its first load."""
        p = self._postings
        if p is None:
            return None
        arrays = (p.rids, p.lens, p.alive, p.vocab, p.starts, p.p_slots, p.p_freqs)
        return int(len(p.p_slots)), round(sum(a.nbytes for a in arrays) / 2**20, 1)

    def _fresh_postings(self) -> lexical.Postings | None:
        """The in-memory postings as of the catalog's current state, or None inside a write
        transaction (its rows may still roll back)."""
        if self.db.in_transaction or self._lex_pending:
            return None
        with self._lexical_lock:
            if self._postings is None:
                self._postings = lexical.Postings()
            self.db.execute("BEGIN")  # one snapshot for the generation and the rows it covers
            try:
                with self._postings.lock:
                    self._postings.refresh(self.db, self.get_meta("lexical_gen") or "0")
            finally:
                self.db.commit()
            return self._postings

    # -- filters, names, links, activity ------------------------------------
    def filter_note_ids(
        self,
        *,
        folder: str | None = None,
        tags: Sequence[str] = (),
        types: Sequence[str] = (),
        stated_from: float | None = None,
        stated_before: float | None = None,
    ) -> set[str]:
        """node_ids of the notes that pass every given condition (filters.py says what each means).

        folder: the path starts with `folder/` (ASCII case ignored); tags: for each tag, the note
        has it or a tag nested under it (`travel` matches `travel/japan`; tags are stored lower
        case); types: frontmatter `type` (else `kind`) is one of these, case ignored; stated:
        `stated_from <= stated < stated_before` (epoch seconds; a note with no date never passes).
        """
        where: list[str] = []
        args: list[Any] = []
        if folder:
            where.append("path LIKE ? ESCAPE '\\'")
            args.append(_like_prefix(folder) + "/%")
        if stated_from is not None:
            where.append("stated >= ?")
            args.append(stated_from)
        if stated_before is not None:
            where.append("stated < ?")
            args.append(stated_before)
        if types:
            where.append(
                "lower(coalesce(json_extract(meta, '$.type'), json_extract(meta, '$.kind'))) IN "
                f"({','.join('?' * len(types))})"
            )
            args += [t.lower() for t in types]
        for tag in tags:
            # a plain text test first (the column holds JSON: '"travel' starts "travel" and "travel/x"),
            # so json_each runs only on notes that may have it: 5 ms instead of 45 ms at 10k notes
            where.append(
                "tags LIKE ? ESCAPE '\\' AND EXISTS (SELECT 1 FROM json_each(notes.tags) AS t "
                "WHERE t.value = ? OR t.value LIKE ? ESCAPE '\\')"
            )
            args += [
                "%" + _like_prefix(json.dumps(tag.lower())[:-1]) + "%",
                tag.lower(),
                _like_prefix(tag.lower()) + "/%",
            ]
        sql = "SELECT node_id FROM notes" + (" WHERE " + " AND ".join(where) if where else "")
        return {r[0] for r in self.db.execute(sql, args)}

    def name_rows(self) -> list[tuple[str, str, str, tuple[str, ...]]]:
        """(node_id, path, title, aliases) of every note: what resolving a name needs, nothing more."""
        return [
            (n, p, t, tuple(json.loads(a)) if a != "[]" else ())
            for n, p, t, a in self.db.execute("SELECT node_id, path, title, aliases FROM notes")
        ]

    def link_rows(self, mentioning: Sequence[str] | None = None) -> list[tuple[str, str, tuple[str, ...]]]:
        """(node_id, path, wikilink targets) of every note that links somewhere; with `mentioning`,
        only notes whose link text contains one of these strings (ASCII case ignored; a cheap
        text test before the JSON is decoded: the caller still resolves each link)."""
        sql, args = "SELECT node_id, path, links FROM notes WHERE links != '[]'", []
        if mentioning is not None:
            if not mentioning:
                return []
            sql += " AND (" + " OR ".join("links LIKE ? ESCAPE '\\'" for _ in mentioning) + ")"
            args = ["%" + _like_prefix(json.dumps(m)[1:-1]) + "%" for m in mentioning]
        return [(n, p, tuple(json.loads(links))) for n, p, links in self.db.execute(sql, args)]

    def activity_rows(self) -> list[tuple[str, str, str, Any, Any]]:
        """(node_id, path, title, created, last_accessed) of every note (recent.py)."""
        return [
            tuple(r)
            for r in self.db.execute(
                "SELECT node_id, path, title, json_extract(meta, '$.created'), json_extract(meta, '$.last_accessed') "
                "FROM notes"
            )
        ]

    def chunk_hashes_of_notes(self, node_ids: Iterable[str]) -> dict[str, str]:
        """chunk_id -> text_hash of every chunk of these notes."""
        ids = list(node_ids)
        out: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            out.update(self.db.execute(f"SELECT chunk_id, text_hash FROM chunks WHERE node_id IN ({marks})", part))
        return out

    # -- vectors ------------------------------------------------------------
    def cached_hashes(self, hashes: Iterable[str]) -> set[str]:
        hs = list(hashes)
        found: set[str] = set()
        for start in range(0, len(hs), 500):
            part = hs[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(f"SELECT text_hash FROM vectors WHERE text_hash IN ({marks})", part)
            found.update(r[0] for r in rows)
        return found

    def put_vectors(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
            [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in zip(hashes, vectors, strict=True)],
        )
        if len(hashes):
            self._bump_generation()

    def put_vector_blobs(self, rows: dict[str, bytes]) -> None:
        """Cached vectors as stored (salvaged from a damaged catalog: `salvage_vectors`)."""
        self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", list(rows.items()))
        if rows:
            self._bump_generation()

    def get_vectors(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            part = list(hashes[start : start + 500])
            marks = ",".join("?" * len(part))
            for h, blob in self.db.execute(f"SELECT text_hash, vec FROM vectors WHERE text_hash IN ({marks})", part):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def all_chunk_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk id with its vector (for exact search and ANN checks), in rowid order."""
        rows = self.db.execute(
            "SELECT c.chunk_id, v.vec FROM chunks c JOIN vectors v ON v.text_hash = c.text_hash ORDER BY c.rid"
        ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        ids = [r[0] for r in rows]
        flat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return ids, flat.reshape(len(rows), -1)

    @contextmanager
    def keeping_vectors(self) -> Iterator[None]:
        """Within the block `prune_vectors` drops nothing: a reconcile deletes a note's old chunks
        before it writes the new ones (a note that got its first node_id is deleted under its
        path and written under its id), and a reconcile nested in it (the paths another process
        asked for, taken between two embedding steps) must not drop a vector the outer one is
        about to write again. The orphans wait for the outermost reconcile's prune (issue 41:
        a rehearsal then `remember` over MCP left the rehearsed note's chunk without a vector)."""
        self._keeping += 1
        try:
            yield
        finally:
            self._keeping -= 1

    def prune_vectors(self, *, everything: bool = False) -> int:
        """Drop cached vectors no chunk uses any more: those of the texts of chunks deleted or
        replaced since the last prune (each looked up by `chunks_hash`), or, with `everything`,
        all (a scan of every vector: 4.5 s at 102k chunks, which every edit used to pay).
        Nothing while a reconcile is in flight (`keeping_vectors`): they are pruned after it."""
        if self._keeping:
            return 0
        if everything:
            self._orphans.clear()
            return self.db.execute("DELETE FROM vectors WHERE text_hash NOT IN (SELECT text_hash FROM chunks)").rowcount
        todo, self._orphans = sorted(self._orphans), set()
        dropped = 0
        for start in range(0, len(todo), 500):
            part = todo[start : start + 500]
            marks = ",".join("?" * len(part))
            dropped += self.db.execute(
                f"DELETE FROM vectors WHERE text_hash IN ({marks}) "
                "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.text_hash = vectors.text_hash)",
                part,
            ).rowcount
        return dropped

    # -- file stamps ----------------------------------------------------------
    def file_stamps(self) -> dict[str, tuple[str, str]]:
        """path -> (stat stamp, file hash) of the files whose bytes were read and hashed."""
        return {p: (s, h) for p, s, h in self.db.execute("SELECT path, stamp, file_hash FROM file_stamps")}

    def set_file_stamps(self, stamps: dict[str, tuple[str, str]]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO file_stamps VALUES (?, ?, ?)", [(p, s, h) for p, (s, h) in stamps.items()]
        )

    def drop_file_stamps(self, paths: Iterable[str]) -> None:
        self.db.executemany("DELETE FROM file_stamps WHERE path = ?", [(p,) for p in paths])

    # -- failures and notes passed over -------------------------------------
    def set_failure(self, path: str, file_hash: str, error: str, kind: str = "unreadable") -> None:
        self.db.execute("INSERT OR REPLACE INTO failures VALUES (?,?,?,?)", (path, file_hash, error, kind))

    def clear_failures(self, keep: Iterable[str]) -> None:
        keep_set = set(keep)
        for (path,) in self.db.execute("SELECT path FROM failures").fetchall():
            if path not in keep_set:
                self.db.execute("DELETE FROM failures WHERE path = ?", (path,))

    def failures(self) -> dict[str, tuple[str, str]]:
        """Notes that could not be read: path -> (file_hash, error)."""
        return {
            p: (h, e)
            for p, h, e in self.db.execute("SELECT path, file_hash, error FROM failures WHERE kind = 'unreadable'")
        }

    def failure_records(self) -> dict[str, tuple[str, str, str]]:
        """Every note not indexed: path -> (file_hash, error or reason, kind)."""
        return {p: (h, e, k) for p, h, e, k in self.db.execute("SELECT path, file_hash, error, kind FROM failures")}


_NOTE_COLS = "node_id, path, file_hash, body_hash, title, tags, aliases, links, meta, mtime, id_in_file, stated"


def _note_row(r: Sequence[Any]) -> NoteRow:
    return NoteRow(
        node_id=r[0],
        path=r[1],
        file_hash=r[2],
        body_hash=r[3],
        title=r[4],
        tags=tuple(json.loads(r[5])),
        aliases=tuple(json.loads(r[6])),
        links=tuple(json.loads(r[7])),
        meta=json.loads(r[8]),
        mtime=float(r[9]),
        id_in_file=bool(r[10]),
        stated=None if r[11] is None else float(r[11]),
    )


def _fts_title(row: NoteRow) -> str:
    return _names_text(row.title, row.aliases, row.tags, row.path)


_NAME_WORD = re.compile(r"[^\W_]+")


def _names_text(title: str, aliases: Sequence[str], tags: Sequence[str], path: str) -> str:
    """What BM25 reads as a note's names, weighted as its title: its title, aliases and tags, and
    its file name when that holds a word of letters they do not. Obsidian names a note by its file:
    `ARCS method.md`, whose first heading is "# A - Attractive Quality", was not found by "the
    ARCS method" (search._names counts the file name for coverage too); a journal named by its
    date adds no word of letters."""
    names = [title, *aliases, *tags]
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    have = {w.casefold() for w in _NAME_WORD.findall(" ".join(names))}
    if any(w.casefold() not in have and not w.isdigit() for w in _NAME_WORD.findall(stem)):
        names.append(stem)
    return " ".join(names)
