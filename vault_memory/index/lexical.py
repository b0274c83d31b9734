"""BM25 over chunks in memory, scored exactly as SQLite FTS5's `bm25()`.

Why: FTS5 scores every row that matches any query word before it sorts, and OR-queries
of everyday words match a large share of a vault (4 synthetic words match ~50% of 25k
chunks): 36 ms of a 47 ms hybrid recall at 10k notes (bench/results/scale.md). Scoring
the same matches from postings held in numpy arrays costs about a millisecond.

Exact, not approximate: each chunk's terms come from FTS5's own tokenizer (run on a
private in-memory table, `Tokenizer`), and `Postings.search` applies FTS5's formula
(fts5_aux.c: k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6,
term frequency weighted per column, row size = all columns' tokens, avgdl over the table)
in the same order of operations, so scores match FTS5's to the last bit or two and the
ranking is the same (ties: lower rowid first, in both engines).

Storage: `lex_docs`, one row per chunk (its rowid, FTS5's row size, term hashes and
weighted frequencies), written by the catalog in the same transaction as the chunk and its
FTS5 row, so it is as crash-safe and derived as they are. Sorting those rows by term costs
about a second at 26k chunks, so the writer keeps them sorted in `lex_segment` too (saved
after a reconcile that left more than MERGE_AT postings outside it): a process loads the segment
(tens of ms), then the rows written since (`seq`), and follows the writer by generation.
Terms are stored as 64-bit hashes (no vocabulary table to keep in step; two terms share a
hash with probability ~1e-8 at a million distinct terms).
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import threading
from bisect import bisect_left
from collections.abc import Sequence

import numpy as np

TOKENIZE = "porter unicode61 remove_diacritics 2"
K1 = 1.2
B = 0.75
BODY_WEIGHT = 1.0
TITLE_WEIGHT = 2.0
MERGE_AT = 50_000  # postings written since the last merge that are searched unsorted before re-sorting
#: ... or this share of the sorted postings, when that is more: re-sorting 10M postings (40k
#: notes) takes ~6 s, which a 1% edit paid every time; 1M unsorted cost a query ~1 ms per term.
MERGE_SHARE = 0.1


def merge_threshold(sorted_postings: int) -> int:
    """Unsorted postings searched as they are before all are sorted again (see MERGE_AT)."""
    return max(MERGE_AT, int(sorted_postings * MERGE_SHARE))


SCHEMA = """
CREATE TABLE IF NOT EXISTS lex_docs (
    rid INTEGER PRIMARY KEY,  -- the chunk's rid, which is also its chunks_fts rowid
    seq INTEGER NOT NULL,     -- the lexical generation that wrote it: readers load newer rows only
    len INTEGER NOT NULL,     -- tokens in body and title: FTS5's row size
    terms BLOB NOT NULL,      -- int64 hashes of the distinct terms (term_hash)
    freqs BLOB NOT NULL       -- float64 body count * BODY_WEIGHT + title count * TITLE_WEIGHT, per term
);
CREATE INDEX IF NOT EXISTS lex_docs_seq ON lex_docs(seq);
-- lex_docs up to a seq, already sorted by term (Postings.save): what a process loads first
CREATE TABLE IF NOT EXISTS lex_segment (name TEXT PRIMARY KEY, data BLOB NOT NULL);
"""


def term_hash(term: str) -> int:
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


class Tokenizer:
    """FTS5's own tokenizer (`TOKENIZE`), run on a private in-memory table, so the terms
    stored here are exactly the terms FTS5 indexes and matches."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        # contentless, emptied with 'delete-all': deleting rows one by one leaves delete markers
        # that every later vocabulary scan reads (1 ms a note grew to 12 within 600 notes)
        self.db.execute(f"CREATE VIRTUAL TABLE s USING fts5(body, title, content = '', tokenize = '{TOKENIZE}')")
        self.db.execute("CREATE VIRTUAL TABLE sv USING fts5vocab(s, 'instance')")
        self.lock = threading.Lock()
        self._words: dict[str, tuple[str, ...]] = {}
        self._hashes: dict[str, int] = {}  # a vault's vocabulary is small; hashing was a fifth of docs()

    def docs(self, docs: Sequence[tuple[int, str, str]]) -> list[tuple[int, int, bytes, bytes]]:
        """(rowid, body, title) -> lex_docs values (rowid, len, terms, freqs)."""
        if not docs:
            return []
        with self.lock:
            self.db.executemany("INSERT INTO s(rowid, body, title) VALUES (?, ?, ?)", docs)
            rows = self.db.execute(
                "SELECT doc, term, sum(col = 'body'), sum(col = 'title') FROM sv GROUP BY doc, term ORDER BY doc"
            ).fetchall()
            self.db.execute("INSERT INTO s(s) VALUES ('delete-all')")
            if len(self._hashes) > 200_000:
                self._hashes.clear()
            hashes = self._hashes
            out = []
            for rid, _, _ in docs:
                lo = hi = bisect_left(rows, (rid,))
                while hi < len(rows) and rows[hi][0] == rid:
                    hi += 1
                mine = rows[lo:hi]
                terms = [hashes.get(r[1]) or hashes.setdefault(r[1], term_hash(r[1])) for r in mine]
                body = np.array([r[2] for r in mine], dtype=np.float64)
                title = np.array([r[3] for r in mine], dtype=np.float64)
                out.append(
                    (
                        rid,
                        int(body.sum() + title.sum()),
                        np.array(terms, dtype=np.int64).tobytes(),
                        (body * BODY_WEIGHT + title * TITLE_WEIGHT).tobytes(),
                    )
                )
        return out

    def words(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        """The terms FTS5 makes of each word (one, or several for e.g. `foo_bar`, or none)."""
        todo = [w for w in dict.fromkeys(words) if w not in self._words]
        if todo:
            with self.lock:
                self.db.executemany("INSERT INTO s(rowid, body, title) VALUES (?, ?, '')", list(enumerate(todo)))
                rows = self.db.execute("SELECT doc, term FROM sv ORDER BY doc, offset").fetchall()
                self.db.execute("INSERT INTO s(s) VALUES ('delete-all')")
            found: dict[int, list[str]] = {}
            for doc, term in rows:
                found.setdefault(doc, []).append(term)
            if len(self._words) > 50_000:
                self._words.clear()
            for i, w in enumerate(todo):
                self._words[w] = tuple(found.get(i, ()))
        return [self._words[w] for w in words]

    def close(self) -> None:
        self.db.close()


def write_docs(db: sqlite3.Connection, tokenizer: Tokenizer, docs: Sequence[tuple[int, str, str]], seq: int) -> None:
    """Store (rowid, body, title) chunks in lex_docs, replacing any row with the same rowid."""
    db.executemany(
        "INSERT OR REPLACE INTO lex_docs(rid, seq, len, terms, freqs) VALUES (?, ?, ?, ?, ?)",
        [(rid, seq, size, terms, freqs) for rid, size, terms, freqs in tokenizer.docs(docs)],
    )


class Postings:
    """lex_docs in memory: term-sorted postings over `slots` (one per loaded row), plus the
    rows loaded since the last sort (searched unsorted), refreshed from the catalog by
    generation. Dead slots (deleted or rewritten rows) stay in the arrays, masked out,
    until the next merge."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.gen: str | None = None
        self.seq = 0
        self.rids = np.zeros(0, dtype=np.int64)
        self.lens = np.zeros(0, dtype=np.float64)
        self.alive = np.zeros(0, dtype=bool)
        self.chunk_ids: list[str] = []
        self.slot_of: dict[int, int] | None = {}  # rid -> slot; None until a row is added after a load
        # sorted part: postings of term vocab[i] are entries starts[i]:starts[i+1]
        self.vocab = np.zeros(0, dtype=np.int64)
        self.starts = np.zeros(1, dtype=np.int64)
        self.p_slots: np.ndarray = np.zeros(0, dtype=np.int32)
        self.p_freqs: np.ndarray = np.zeros(0, dtype=np.float32)
        # unsorted part
        self.d_terms = np.zeros(0, dtype=np.int64)
        self.d_slots: np.ndarray = np.zeros(0, dtype=np.int32)
        self.d_freqs: np.ndarray = np.zeros(0, dtype=np.float32)  # small multiples of the weights: exact

    @property
    def size(self) -> int:
        return int(self.alive.sum())

    def refresh(self, db: sqlite3.Connection, gen: str) -> None:
        """Bring the arrays in line with lex_docs as of generation `gen` (read in the same snapshot)."""
        if gen == self.gen:
            return
        if self.gen is None:
            self._load_segment(db)
        cur = db.execute(
            # by the seq index: left to itself the planner scans the whole table in rowid order
            "SELECT d.rid, c.chunk_id, d.seq, d.len, d.terms, d.freqs FROM lex_docs d INDEXED BY lex_docs_seq "
            "JOIN chunks c ON c.rid = d.rid WHERE d.seq > ?",
            (self.seq,),
        )
        first = self.gen is None and not len(self.rids)
        base = len(self.rids)
        rids: list[int] = []
        lens: list[int] = []
        terms: list[np.ndarray] = [self.d_terms]
        freqs: list[np.ndarray] = [self.d_freqs]
        slots: list[np.ndarray] = [self.d_slots]
        # in batches: holding every row's blobs at once tripled the writer's peak memory at 100k chunks
        while rows := cur.fetchmany(4096):
            if self.slot_of is None:
                self.slot_of = {int(r): i for i, r in enumerate(self.rids)}
            start = base + len(rids)
            for i, r in enumerate(rows):
                old = self.slot_of.get(r[0])
                if old is not None and old < base:
                    self.alive[old] = False
                self.slot_of[r[0]] = start + i
            rids += [r[0] for r in rows]
            lens += [r[3] for r in rows]
            self.chunk_ids += [r[1] for r in rows]
            counts = np.array([len(r[4]) // 8 for r in rows], dtype=np.int64)
            terms.append(np.frombuffer(b"".join(r[4] for r in rows), dtype=np.int64))
            freqs.append(np.frombuffer(b"".join(r[5] for r in rows), dtype=np.float64).astype(np.float32))
            slots.append(np.repeat(np.arange(start, start + len(rows), dtype=np.int32), counts))
            self.seq = max(self.seq, max(r[2] for r in rows))
        if rids:
            self.rids = np.concatenate([self.rids, np.array(rids, dtype=np.int64)])
            self.lens = np.concatenate([self.lens, np.array(lens, dtype=np.float64)])
            self.alive = np.concatenate([self.alive, np.ones(len(rids), dtype=bool)])
            self.d_terms, self.d_freqs = np.concatenate(terms), np.concatenate(freqs)
            self.d_slots = np.concatenate(slots)
        if not first:
            # deletions: a row gone from lex_docs (its chunk was deleted) leaves its slot dead
            (count,) = db.execute("SELECT count(*) FROM lex_docs").fetchone()
            if count != self.size:
                present = np.array([r for (r,) in db.execute("SELECT rid FROM lex_docs")], dtype=np.int64)
                self.alive &= np.isin(self.rids, present)
        if len(self.d_terms) > merge_threshold(len(self.p_slots)) or (first and len(self.d_terms)):
            self._merge()
        self.gen = gen

    def _merge(self) -> None:
        """Sort every live posting by term, and drop dead slots and their postings."""
        sorted_terms = np.repeat(self.vocab, np.diff(self.starts)) if len(self.vocab) else self.d_terms[:0]
        terms = np.concatenate([sorted_terms, self.d_terms])
        slots = np.concatenate([self.p_slots, self.d_slots])
        freqs = np.concatenate([self.p_freqs, self.d_freqs])
        if not self.alive.all():
            keep = self.alive[slots]
            terms, slots, freqs = terms[keep], slots[keep], freqs[keep]
            del keep
            live = np.flatnonzero(self.alive)
            renumber = np.full(len(self.alive), -1, dtype=np.int64)
            renumber[live] = np.arange(len(live), dtype=np.int64)
            slots = renumber[slots]
            self.rids, self.lens = self.rids[live], self.lens[live]
            self.alive = np.ones(len(live), dtype=bool)
            self.chunk_ids = [self.chunk_ids[i] for i in live]
            self.slot_of = None
        order = np.argsort(terms)  # a term's postings may come in any order
        terms = terms[order]
        self.p_slots = slots[order].astype(np.int32, copy=False)
        del slots
        self.p_freqs = freqs[order].astype(np.float32, copy=False)
        del freqs, order
        edges = np.flatnonzero(np.diff(terms)) + 1
        self.vocab = terms[np.concatenate([[0], edges])] if len(terms) else np.zeros(0, dtype=np.int64)
        self.starts = (np.concatenate([[0], edges, [len(terms)]]) if len(terms) else np.zeros(1)).astype(np.int64)
        self.d_terms = np.zeros(0, dtype=np.int64)
        self.d_slots = np.zeros(0, dtype=np.int32)
        self.d_freqs = np.zeros(0, dtype=np.float32)

    def _load_segment(self, db: sqlite3.Connection) -> None:
        blobs = dict(db.execute("SELECT name, data FROM lex_segment").fetchall())
        if not blobs:
            return
        self.seq = int(blobs["seq"])
        self.rids = np.frombuffer(blobs["rids"], dtype=np.int64)
        self.lens = np.frombuffer(blobs["lens"], dtype=np.int32).astype(np.float64)
        self.alive = np.ones(len(self.rids), dtype=bool)
        self.chunk_ids = blobs["chunk_ids"].decode("utf-8").split("\0") if len(self.rids) else []
        self.slot_of = None
        self.vocab = np.frombuffer(blobs["vocab"], dtype=np.int64)
        self.starts = np.frombuffer(blobs["starts"], dtype=np.int64)
        self.p_slots = np.frombuffer(blobs["slots"], dtype=np.int32)  # as stored: converting costs more than
        self.p_freqs = np.frombuffer(blobs["freqs"], dtype=np.float32)  # the queries' slices do (search)

    def save(self, db: sqlite3.Connection) -> None:
        """Write these postings (merged: sorted, no dead slots) as lex_segment, in the caller's transaction.
        Frequencies are small multiples of the column weights, so float32 holds them exactly."""
        self._merge()
        # chunk ids come from YAML node_ids, which cannot hold a NUL
        db.execute("DELETE FROM lex_segment")
        db.executemany(
            "INSERT INTO lex_segment(name, data) VALUES (?, ?)",
            [
                ("seq", str(self.seq).encode()),
                ("rids", self.rids.tobytes()),
                ("lens", self.lens.astype(np.int32).tobytes()),
                ("chunk_ids", "\0".join(self.chunk_ids).encode("utf-8")),
                ("vocab", self.vocab.tobytes()),
                ("starts", self.starts.tobytes()),
                ("slots", self.p_slots.tobytes()),
                ("freqs", self.p_freqs.tobytes()),
            ],
        )

    def _postings(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        i = int(np.searchsorted(self.vocab, h))
        if i < len(self.vocab) and self.vocab[i] == h:
            lo, hi = self.starts[i], self.starts[i + 1]
            slots, freqs = self.p_slots[lo:hi], self.p_freqs[lo:hi]
        else:
            slots, freqs = self.p_slots[:0], self.p_freqs[:0]
        if len(self.d_terms):
            hit = self.d_terms == h
            if hit.any():
                slots = np.concatenate([slots, self.d_slots[hit]])
                freqs = np.concatenate([freqs, self.d_freqs[hit]])
        live = self.alive[slots]
        if not live.all():
            slots, freqs = slots[live], freqs[live]
        return slots, freqs

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """Top `limit` chunks for an OR of `terms` (one FTS5 phrase each, repeats counted like
        FTS5 counts repeated phrases), best first, BM25 higher-is-better."""
        n_rows = self.size
        if not terms or n_rows == 0 or limit <= 0:
            return []
        avgdl = float(self.lens[self.alive].sum()) / n_rows
        acc = np.zeros(len(self.rids), dtype=np.float64)
        matched = np.zeros(len(self.rids), dtype=bool)
        norm = K1 * ((1 - B) + B * self.lens / avgdl)
        for term in terms:
            slots, freqs = self._postings(term_hash(term))
            freqs = freqs.astype(np.float64, copy=False)  # FTS5 computes in double
            hits = len(slots)
            if not hits:
                continue
            idf = math.log((n_rows - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            acc[slots] += idf * ((freqs * (K1 + 1.0)) / (freqs + norm[slots]))
            matched[slots] = True
        cand = np.flatnonzero(matched)
        if len(cand) > limit:
            # the limit-th best score; everything at least as good is sorted below (ties included)
            kth = -np.partition(-acc[cand], limit - 1)[limit - 1]
            cand = cand[acc[cand] >= kth]
        order = np.lexsort((self.rids[cand], -acc[cand]))[:limit]
        return [(self.chunk_ids[s], float(acc[s])) for s in cand[order]]
