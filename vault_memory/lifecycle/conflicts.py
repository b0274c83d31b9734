"""Does a new memory contradict, or repeat, what a note already says? Checked against every
indexed note (people's notes included), statement by statement.

    found = check(ws, title, text)     # [Conflict(kind="conflict"|"duplicate", statement=...)]

Why statements and not chunks: a person's note states many facts in one chunk ("Coffee:
a double espresso every morning, no sugar. Dark roast, 18 g in... A flat white after lunch...
Decaf is pointless."). The new memory "I drink a double espresso every morning with sugar now"
has cosine 0.65 to that chunk, under any useful threshold, and 0.97 to the sentence that says
the same thing differently (MiniLM). So the check:

1. finds candidate chunks with the hybrid search (BM25 finds the chunk that shares the
   memory's words even when the chunk's vector is an average of many facts), outside the
   staging folder (drafts) and the episodes folder (records of what happened, not facts);
2. splits each into statements: its sentences and list items, without the heading line;
3. compares the memory (each of its sentences, and the whole of it) to each statement and to
   each whole chunk by cosine, statement vectors embedded now, chunk vectors from the index;
4. flags a note whose best statement reaches the embedder's `conflict` cosine (calibration.py).

Contradiction and repetition are equally similar to a sentence embedder (a contradiction and
a restatement of "no sugar" both score ~0.96), so the line between them is drawn in words:
a flagged statement is a **duplicate** when it contains every content word of the memory
(numbers included, 5-letter stems, stop words aside), clause by clause, in the same order and
with the same polarity (both or neither say no/not/never/without...); otherwise it is a
**conflict**: the note states the same subject differently, or says the same in other words,
which a person should look at. The rule errs towards conflict on purpose: a duplicate writes
nothing (`remember`), so a changed fact must never be taken for a repeated one; a paraphrase
taken for a conflict only costs a review. Calibrated with MiniLM by `python -m bench tools --part conflicts`
(bench/studies/tools.py; docs/memory-model.md, "Conflicts and duplicates").

An added fact is not a conflict (issue 40): a whole chunk is compared with the memory only when it
is about as short as the memory (`_comparable`: a short note), not a person's note of seven facts,
whose average a new fact about that person resembles ("Jonas's new favourite restaurant is ..."
scored 0.53 against Jonas's note, which says nothing about restaurants); and a dated record (a
daily note, a note named for its day, an episodic `type`) states what was said that day, which a
newer fact does not contradict: it can repeat one (duplicate), never conflict with one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from ..errors import VectorStoreUnavailableError
from ..hashing import sha256_hex
from ..index.catalog import STOPWORDS, ChunkRow
from ..index.embedders import embed_query, takes_whole
from ..records import Conflict
from ..search.decay import is_episodic
from ..search.workspace import Workspace
from ..text import folder_setting, in_folder, other_people, unlink
from ..vault.obsidian import date_from_name

#: Candidate chunks taken from the hybrid search, best first.
CANDIDATE_CHUNKS = 12
#: Statements embedded per check at most (the ones sharing most words with the memory first).
STATEMENT_MAX = 32
#: Memory sentences compared one by one (a longer memory is also compared whole).
MEMORY_SENTENCES_MAX = 8
MAX_CONFLICTS = 5
#: Words that flip what a sentence claims; two statements that differ in them are not the same.
NEGATIONS = frozenset(
    {
        "no",
        "not",
        "never",
        "without",
        "none",
        "nothing",
        "nobody",
        "neither",
        "nor",
        "cannot",
        "dont",
        "doesnt",
        "didnt",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "wont",
        "cant",
        "hasnt",
        "havent",
        "shouldnt",
        "wouldnt",
        "anymore",
        "longer",
        "stopped",
        "quit",
    }
)

_SENTENCE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[*_`])")
_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|>)\s+(?:\[[ xX]\]\s+)?")
_TASK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[.\]\s")  # "- [ ] Reply to Maya", "- [x] Morning run"
_WORD = re.compile(r"\w+")
_CLAUSE = re.compile(r";|,(?!\d)|\s[-\u2013\u2014]\s|:\s")
_MIN_WORDS = 3


@dataclass(frozen=True)
class _Statement:
    text: str  # what is embedded: "<heading>: <sentence>"
    sentence: str
    context: str
    node_id: str


def _stems(text: str) -> list[str]:
    return [
        w[:5]
        for w in _WORD.findall(text.lower().replace("'", "").replace("\u2019", ""))
        if w not in STOPWORDS and w not in NEGATIONS
    ]


def words(text: str) -> set[str]:
    """Content words of a text, crudely stemmed (5 letters), negations and stop words aside."""
    return set(_stems(text))


def negated(text: str) -> bool:
    """Whether the text says no/not/never/without... (its polarity)."""
    return any(w in NEGATIONS for w in _WORD.findall(text.lower().replace("'", "").replace("\u2019", "")))


def _clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.split(text) if c.strip()]


def _said_in(mine: str, clause: str, context: str) -> bool:
    if negated(mine) != negated(clause):
        return False
    seq = _stems(clause)
    around = set(_stems(context)) - set(seq)
    rest = iter(seq)
    return all(w in around or any(w == t for t in rest) for w in dict.fromkeys(_stems(mine)))


def says_the_same(memory: str, statement: str, context: str = "") -> bool:
    """The lexical half of the duplicate rule: the memory has two or more content words, and
    each of its clauses is said by one clause of the statement: all its content words, in the
    same order (so "Karl owes Maya" is not "Maya owes Karl"), with the same polarity. Clauses
    are split at ';', ',' and dashes, so "best reached on Slack; reads email once a day" does
    not say "best reached by email". A word may also come from `context`, the heading the
    statement sits under ("Jonas Weber" for "Vegetarian.")."""
    if len(set(_stems(memory))) < 2:
        return False
    theirs = _clauses(statement)
    return all(any(_said_in(mine, clause, context) for clause in theirs) for mine in _clauses(memory))


def statements(text: str, heading: str = "", *, tasks: bool = True) -> list[str]:
    """The sentences and list items of a chunk's text, without its heading-path line.

    Hard-wrapped lines of a paragraph or an item are joined first; a list item, a table row,
    a quote line or a blank line starts a new block. Links read as their text (`[[Maya Chen|Maya]]`
    -> Maya): agent memories link the notes they name (linking.py), the memory compared does not.
    `tasks=False` leaves out task items (`- [ ] Reply to Maya about the Atlas timeline`): a to-do
    states nothing a fact can contradict (`check`, when the memory is not a task itself).
    """
    if heading and text.startswith(heading + "\n"):
        text = text[len(heading) + 1 :]
    text = unlink(text)
    blocks: list[str] = []
    current: list[str] = []
    skip = False  # the block being read is a task item left out
    for line in text.split("\n"):
        bare = line.strip()
        starts = not bare or _MARKER.match(line) is not None or bare.startswith(("|", "#"))
        if starts:
            if current and not skip:
                blocks.append(" ".join(current))
            current, skip = [], not tasks and _TASK.match(line) is not None
        if bare and not bare.startswith("#"):
            current.append(_MARKER.sub("", line).strip().strip("|").strip())
    if current and not skip:
        blocks.append(" ".join(current))
    out: list[str] = []
    for block in blocks:
        out += [p.strip() for p in _SENTENCE.split(block) if _WORD.search(p)]
    return out


def _sentences(text: str) -> list[str]:
    found = [p for p in statements(text) if len(_WORD.findall(p)) >= _MIN_WORDS]
    return found[:MEMORY_SENTENCES_MAX] or [" ".join(text.split())]


def _candidates(ws: Workspace, query: str) -> list[ChunkRow]:
    folders = (ws.config.staging_folder, ws.config.episodes_folder)
    exclude = tuple(f.strip("/") + "/" for f in folders if f.strip("/"))
    try:
        found = ws.searcher().search(query, mode="hybrid", granularity="chunk", candidates=30, exclude_prefixes=exclude)
    except VectorStoreUnavailableError as exc:
        ws.lexical_only(exc)
        found = ws.searcher().search(query, mode="bm25", granularity="chunk", candidates=30, exclude_prefixes=exclude)
    return [c.chunk for c in found[:CANDIDATE_CHUNKS]]


def _embed(ws: Workspace, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors of these texts: from the index's cache when known, else embedded now (not stored:
    this process may not hold the index's writer lock)."""
    hashes = {t: sha256_hex(t) for t in texts}
    cached = ws.catalog.get_vectors(list(hashes.values()))
    out = {t: cached[h] for t, h in hashes.items() if h in cached}
    missing = [t for t in hashes if t not in out]
    emb = ws.embedder
    fits = [t for t in missing if takes_whole(emb, t)]
    if fits:
        out.update(zip(fits, emb.embed(fits), strict=True))
    for t in missing:  # a memory longer than the embedder takes: the mean of its windows, as a long query
        if t not in out:
            out[t] = embed_query(emb, t)
    return out


def check(
    ws: Workspace, title: str, text: str, *, threshold: float | None = None, limit: int = MAX_CONFLICTS
) -> list[Conflict]:
    """Notes that state what `text` says, differently (conflict) or already (duplicate), most similar first.

    One entry per note (its best statement); duplicates before conflicts at equal similarity.
    """
    cat = ws.catalog
    if not cat.chunk_count() or not text.strip():
        return []
    threshold = ws.calibration.conflict if threshold is None else threshold
    body = " ".join(text.split())
    query = f"{title}\n{body}" if title and title.rstrip("…") not in body else body
    chunks = _candidates(ws, _fit(ws, query))
    mine = _sentences(text)
    facts = not any(_TASK.match(line) for line in text.split("\n"))  # a fact is not compared with to-dos
    probes = list(dict.fromkeys([*mine, body] if len(mine) > 1 else [body]))
    parts = [i for i, p in enumerate(probes) if p != body or len(probes) == 1]  # what a duplicate must cover
    memory_words = words(body)
    rows_of = cat.notes_by_ids(sorted({c.node_id for c in chunks}))
    titles = {nid: row.title for nid, row in rows_of.items()}
    records = {nid for nid, row in rows_of.items() if _is_record(ws, row.meta, row.path)}
    pieces_of: dict[str, int] = {}
    found: list[_Statement] = []
    to_dos_only: set[str] = set()  # chunks with nothing but to-dos, for a memory that states a fact
    for ch in chunks:
        # "Jonas Weber: Vegetarian." -- a note states things about its subject without naming it
        context = ch.heading or titles.get(ch.node_id, "")
        pieces = statements(ch.text, ch.heading, tasks=not facts)
        pieces_of[ch.chunk_id] = len(pieces)
        if facts and not pieces:
            to_dos_only.add(ch.chunk_id)
        for piece in pieces:
            said = f"{context}: {piece}" if context else piece
            if len(_WORD.findall(said)) >= _MIN_WORDS:
                found.append(_Statement(said, piece, context, ch.node_id))
    # Only statements that share a content word with the memory (their heading counts): one that
    # shares none is compared as part of its whole chunk below. Most shared first, then search order.
    shared = [len(words(st.text) & memory_words) for st in found]
    order = sorted((i for i in range(len(found)) if shared[i]), key=lambda i: -shared[i])
    found = [found[i] for i in order[:STATEMENT_MAX]]
    vecs = _embed(ws, [*probes, *(s.text for s in found)])
    chunk_vecs = cat.get_vectors(sorted({c.text_hash for c in chunks}))
    pvecs = np.vstack([vecs[p] for p in probes])
    best: dict[str, tuple[float, str]] = {}  # node_id -> (similarity, statement)
    covered: dict[str, set[int]] = {}  # node_id -> memory sentences it already states, in their words

    def consider(node_id: str, sims: np.ndarray, statement: str, sentence: str, context: str) -> None:
        sim = float(sims.max())
        if sim < threshold:
            return
        if node_id not in best or sim > best[node_id][0]:
            best[node_id] = (sim, statement)
        said = {i for i in parts if float(sims[i]) >= threshold and says_the_same(probes[i], sentence, context)}
        covered.setdefault(node_id, set()).update(said)

    for st in found:
        if not other_people(body, st.text):
            consider(st.node_id, pvecs @ vecs[st.text], st.text, st.sentence, st.context)
    for ch in chunks:  # the whole chunk too: a short note, or a long memory that matches it as a whole
        vec = chunk_vecs.get(ch.text_hash)
        if vec is not None and ch.chunk_id not in to_dos_only and _comparable(pieces_of.get(ch.chunk_id, 0), len(mine)):
            flat = " ".join(ch.body.split())
            if not other_people(body, f"{ch.heading}: {flat}" if ch.heading else flat):
                consider(ch.node_id, pvecs @ np.asarray(vec), flat, flat, ch.heading)

    def kind(node_id: str) -> str:
        return "duplicate" if covered.get(node_id, set()) >= set(parts) else "conflict"

    # a dated record can repeat the memory, never conflict with it
    best = {nid: v for nid, v in best.items() if nid not in records or kind(nid) == "duplicate"}
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kind(kv[0]) != "duplicate", kv[0]))[:limit]
    rows = cat.notes_by_ids([nid for nid, _ in ranked])
    return [
        Conflict(
            nid,
            rows[nid].title if nid in rows else "",
            rows[nid].path if nid in rows else "",
            round(sim, 4),
            kind(nid),
            _clip(statement),
            replaceable(ws, rows[nid].path) if nid in rows else False,
        )
        for nid, (sim, statement) in ranked
    ]


#: A whole chunk is compared with the memory when it holds at most this many statements more than
#: the memory has sentences: a short note is one fact said in a few sentences; a longer chunk is a
#: note about a subject, whose average an added fact about that subject resembles.
COMPARABLE_EXTRA = 1


def _comparable(chunk_statements: int, memory_sentences: int) -> bool:
    return chunk_statements <= max(1, memory_sentences) + COMPARABLE_EXTRA


def _is_record(ws: Workspace, meta: Mapping[str, Any], path: str) -> bool:
    """A dated record: a daily note (or any note named for its day) or an episodic `type`."""
    state = ws.decay.state(meta, path)
    return is_episodic(state) or date_from_name(PurePosixPath(path).stem, ws.decay.daily_format) is not None


def replaceable(ws: Workspace, path: str) -> bool:
    """Whether `supersedes` may replace the note at `path` whole: an agent memory (one fact each, in
    the memory folder, not a draft); a person's note states more than the line that matched."""
    memory = folder_setting(ws.config.memory_folder, "memory_folder", allow_root=True)
    staging = folder_setting(ws.config.staging_folder, "staging_folder")
    return bool(path) and in_folder(path, memory) and not in_folder(path, staging) if memory else False


def _clip(text: str, width: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + "…"


def _fit(ws: Workspace, text: str) -> str:
    """Shorten text to what the embedder accepts (a long memory is searched by its beginning)."""
    emb = ws.embedder
    parts = text.split(" ")
    while len(parts) > 1 and emb.count_tokens(" ".join(parts)) > emb.max_tokens:
        parts = parts[: max(1, int(len(parts) * 0.8))]
    return " ".join(parts)


def duplicates(found: Iterable[Conflict]) -> list[Conflict]:
    """The duplicates among a check's results."""
    return [c for c in found if c.kind == "duplicate"]


__all__ = ["NEGATIONS", "check", "duplicates", "negated", "replaceable", "says_the_same", "statements", "words"]
