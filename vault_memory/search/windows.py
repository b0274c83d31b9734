"""Answer windows: the sentence of a chunk that answers the query, scored on its own.

A chunk is a few hundred words of a note, and the fact a query asks about is often one
sentence of it: in a note of chat, "I left Lisbon behind and moved cities, to Porto" sits
among four turns about other things. The query's cosine to the whole chunk is diluted by
the rest (bench `updates_hard`: median 0.33 to the chunk against 0.56 to the sentence
alone), so relevance, the dormancy gate and prefetch's admission all judged how much
other talk surrounded a fact rather than whether the note states it.

Recall and prefetch therefore score every candidate also by its best *window*: the
chunk's sentences (a line of chat is usually one; prose lines are split at sentence
ends), of which only those sharing a content word with the query are scored — the
dense side of a chunk becomes max(cosine to the chunk, cosine to its best window)
(search.score). Which windows are scored is decided at query time, at most
`ReadRules.windows_per_chunk` a chunk. Their vectors are written with the index (sentences.py:
every sentence a chunk can offer, after the chunks' own vectors); one the index does not hold
yet (a first index still filling, `index_sentences = false`) is embedded at query time, for
the `ReadRules.embed_candidates` most relevant chunks only, and cached by text hash in
`windows.sqlite` beside the catalog (vectorcache.py), so a text is never embedded twice. Episodic records (`type:
conversation`...) are scored whole, as before. What it buys and costs: docs/ranking.md.

    split_windows(body)            the sentences of a chunk (pure)
    window_terms(query)            the query's words as windows match them (pure)
    pick_windows(windows, terms)   those worth embedding for a query (pure)
    about(window, subject, terms)  a property line as it is read: with its note's title, when it
                                   names what the query asks that the title does not (pure)
    subject_of(note)               what a note's property lines are about
    best_windows(...)              chunk id -> its best window and that window's cosine
    WindowScorer                   search.WindowScorer over an index (what Memory hands out)
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

import numpy as np

from ..index.catalog import STOPWORDS, Catalog, ChunkRow, NoteRow
from ..index.embedders import Embedder
from ..text import split_sentences, without_links
from ..vault.fields import property_line
from ..vault.notefile import stated_properties
from .decay import EPISODIC_TYPES
from .ranking import Window
from .rules import DEFAULT_RULES, ReadRules
from .vectorcache import WindowCache

log = logging.getLogger(__name__)

#: A window shorter than this many words ("Wow!", "Really?") says nothing on its own.
MIN_WINDOW_WORDS = 3

_WORD = re.compile(r"\w+")


# -- pure ---------------------------------------------------------------------------


def split_windows(body: str) -> list[str]:
    """The sentences of a chunk's body, in order (text.split_sentences): each line is split at
    sentence ends. A line of chat is one turn of one or two sentences; a line of prose is a
    paragraph. The sentence is the unit a fact is stated in (bench `answer_windows` compared
    lines, sentences and both: sentences lift the prose benchmark and leave LoCoMo's turn recall
    as it was); a table row is read with its header (text.split_sentences)."""
    return split_sentences(body)


def _light_stem(word: str) -> str:
    # ranking's 5-letter prefix, after dropping a plural: "cities" ~ "city", "notes" ~ "note"
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


#: _light_stem, remembered per word: a vault's words repeat.
_stem_of = functools.lru_cache(maxsize=1 << 16)(_light_stem)


def window_terms(query: str) -> frozenset[str]:
    """The query's content words as `pick_windows` matches them (plurals folded)."""
    return frozenset(_light_stem(w) for w in _WORD.findall(query.lower()) if w not in STOPWORDS and len(w) > 1)


def pick_windows(windows: Sequence[str], terms: Set[str], cap: int = DEFAULT_RULES.windows_per_chunk) -> list[str]:
    """The windows worth embedding for a query with these content `terms` (window_terms): those
    of at least MIN_WINDOW_WORDS words sharing a term with it, most shared terms first, at most `cap`.

    Sharing a word is what makes a sentence a candidate answer cheaply (a query and the
    sentence that answers it name the same thing: "city", "editor", a person); the cosine
    then decides how well it answers. A query without content words picks nothing. Words
    inside `[[links]]` do not count: "See [[Move staging URL]]." names the note that answers
    "what is the staging URL", it does not answer it (on the labelled real-vault set such
    pointers scored above the answer: bench real_vault). Nor do they in a sentence with words of its
    own ("My [[window manager]] of choice."): lending a sentence its links' words (stops 51-73,
    `link_words`) earned nothing on the question files written after it and cost the team's
    labelled vault (docs/ranking.md, stop 74).
    """
    return _pick([(w, w.lower()) for w in windows], terms, cap)


def _pick(windows: Sequence[tuple[str, str]], terms: Set[str], cap: int) -> list[str]:
    """pick_windows over (window, its lowercase) pairs (`picks` first keeps only those holding one of the terms'
    `_needles`: the others can share no term)."""
    if not terms:
        return []
    scored = []
    for i, (w, low) in enumerate(windows):
        stems = _stems(low)
        shared = len(terms & stems) if stems is not None else 0
        if shared > 0:
            scored.append((-shared, i, w))
    scored.sort()
    return [w for _, _, w in scored[:cap]]


@functools.lru_cache(maxsize=1 << 16)
def _stems(low: str) -> frozenset[str] | None:
    """The stems of the words a window (lowercase) says outside its links, as `_pick` matches them,
    or None when it says fewer than MIN_WINDOW_WORDS (an LRU: a long-lived process reads the same
    sentences again)."""
    words = _WORD.findall(without_links(low))
    if len(words) < MIN_WINDOW_WORDS:
        return None
    return frozenset(map(_stem_of, words))


@dataclass(frozen=True)
class Subject:
    """What a note's property lines are about: its title, and the lines as its first chunk holds
    them (`key: value`, markdown.chunk_note)."""

    title: str
    properties: frozenset[str]


def subject_of(note: NoteRow) -> Subject | None:
    """What a note's property lines are about, or None when it states no property."""
    props = stated_properties(note.meta)
    return Subject(note.title, frozenset(property_line(k, v) for k, v in props)) if props else None


@functools.lru_cache(maxsize=8192)
def _split_lowered(body: str) -> tuple[tuple[tuple[str, str], ...], str, tuple[int, ...]]:
    """split_windows(body), each window with its lowercase; and those lowercases joined by newlines,
    with where each starts (an LRU: a long-lived process asks of the same chunks again)."""
    wins = tuple((w, w.lower()) for w in split_windows(body))
    starts, at = [], 0
    for _, low in wins:
        starts.append(at)
        at += len(low) + 1
    return wins, "\n".join(low for _, low in wins), tuple(starts)


def _holding(joined: str, starts: Sequence[int], needles: Sequence[str]) -> list[int]:
    """The windows (by number, in order) whose lowercase contains one of `needles`, found by
    searching the chunk's joined text once per needle (a needle holds no newline, so it never
    spans two windows): a chunk of many sentences costs a few substring searches, not one per
    sentence and needle."""
    hit: set[int] = set()
    end = len(joined)
    for n in needles:
        i = joined.find(n)
        while i != -1:
            k = bisect.bisect_right(starts, i) - 1
            hit.add(k)
            i = joined.find(n, starts[k + 1] if k + 1 < len(starts) else end)
    return sorted(hit)


def _needles(terms: Set[str]) -> tuple[str, ...]:
    """Strings one of which a window's lowercase contains whenever one of its words has a stem in
    `terms`: a stem is a prefix of its word, except where "-ies" became "-y" ("city" of "cities")."""
    return tuple(sorted(set(terms) | {t[:-1] + "ies" for t in terms if t.endswith("y")}))


def about(window: str, subject: Subject | None, terms: Set[str]) -> str:
    """A window as it is read for a query with these `terms`: a property line (`installed: 2019`)
    states a value of its note, so when it names something the query asks that the note's title
    does not ("when was the boiler installed"), it is read with the title as its subject ("Boiler:
    installed: 2019"); any other window as it is. (Read with the title whenever it shares a word,
    `location: Lisbon` answered every question about the Lisbon trip: bench real_vault.)"""
    if subject is None or window not in subject.properties:
        return window
    said = {_stem_of(w) for w in _WORD.findall(without_links(window.lower()))}
    titled = {_stem_of(w) for w in _WORD.findall(subject.title.lower())}
    return f"{subject.title}: {window}" if terms & (said - titled) else window


def picks(
    body: str,
    terms: Set[str],
    needles: Sequence[str] | None = None,
    subject: Subject | None = None,
    rules: ReadRules = DEFAULT_RULES,
) -> list[str]:
    """The windows of `body` that `best_windows` embeds for a query with these `terms`:
    `pick_windows(split_windows(body), terms)` (at most `rules.windows_per_chunk`), or none for a
    body of one window; property lines read with their note's title (`about`, when
    `rules.titled_properties`).

    Only windows containing one of the terms' `_needles` are tokenized (a word's stem is found
    in its text, `_holding`), so a chunk costs a few substring searches rather than tokenizing
    and stemming all its words. A property line read with its note's title (`about`) shares a
    word of its own with the query, so it holds a needle before it is read so.
    """
    wins, joined, starts = _split_lowered(body)
    if len(wins) < 2 or not terms:
        return []
    wins = tuple(wins[i] for i in _holding(joined, starts, _needles(terms) if needles is None else needles))
    if subject is not None and subject.properties and rules.titled_properties:
        wins = tuple((w, low) if w == (a := about(w, subject, terms)) else (a, a.lower()) for w, low in wins)
    return _pick(wins, terms, rules.windows_per_chunk)


def best_windows(
    chunks: Sequence[ChunkRow],
    qvec: np.ndarray,
    query: str,
    embedder: Embedder,
    cache: WindowCache,
    subjects: Mapping[str, Subject] | None = None,
    rules: ReadRules = DEFAULT_RULES,
    embed: int | None = None,
) -> dict[str, Window]:
    """chunk id -> its best window for the query (only chunks with a window worth scoring).

    `chunks` are the candidates to score, most relevant first. The windows of the first `embed`
    of them (all when None) that the cache does not hold go to the embedder in one batch; the
    others' are scored when the index holds them (sentences.py; `WindowCache.index_vectors`).
    A chunk that is a single window already (a one-line note) gains nothing and is skipped.
    What is picked for each chunk is `picks`; `subjects`: node id -> its note's `Subject`, for
    the notes with properties.
    """
    terms = window_terms(query)
    if not terms:
        return {}
    picked: dict[str, list[str]] = {}
    embedding: set[str] = set()  # the windows that may be embedded
    needles = _needles(terms)
    for i, ch in enumerate(chunks):
        chosen = picks(ch.body, terms, needles, subjects.get(ch.node_id) if subjects else None, rules)
        if chosen:
            picked[ch.chunk_id] = chosen
            if embed is None or i < embed:
                embedding.update(chosen)
    if not picked:
        return {}
    vecs = cache.vectors(sorted(embedding), embedder)
    vecs |= cache.index_vectors(sorted({w for ws in picked.values() for w in ws} - embedding))
    q = np.asarray(qvec, dtype=np.float32)
    out: dict[str, Window] = {}
    for cid, ws in picked.items():
        scored_w = sorted(((float(vecs[w] @ q), w) for w in ws if w in vecs), key=lambda t: (-t[0], ws.index(t[1])))
        if scored_w:
            sim, text = scored_w[0]
            out[cid] = Window(text, sim, vecs[text], tuple(w for _, w in scored_w[1:]))
    return out


def is_record(meta: Mapping[str, object]) -> bool:
    """An episodic record by its frontmatter label (decay.is_episodic, from the meta alone)."""
    return str(meta.get("type") or meta.get("kind") or "").strip().lower() in EPISODIC_TYPES


class WindowScorer:
    """search.WindowScorer over an index: scores the windows of facts, not of records.

    Episodic records (transcripts, logs: `type: conversation`...) are scored whole, as they
    always were: a line of chat answers a question about that chat, and LoCoMo's evidence
    recall was calibrated on whole chunks; records keep their places (ranking.rank).
    """

    def __init__(
        self, catalog: Catalog, embedder: Embedder, cache: WindowCache, rules: ReadRules = DEFAULT_RULES
    ) -> None:
        self.catalog, self.embedder, self.cache, self.rules = catalog, embedder, cache, rules

    def __call__(
        self, chunks: Sequence[ChunkRow], qvec: np.ndarray, query: str, embed: int | None = None
    ) -> dict[str, Window]:
        """`embed`: how many of the first `chunks` may embed a window the index does not hold."""
        notes = self.catalog.notes_by_ids(sorted({c.node_id for c in chunks}))
        records = {c.chunk_id for c in chunks if c.node_id not in notes or is_record(notes[c.node_id].meta)}
        facts = [c for c in chunks if c.chunk_id not in records]
        if embed is not None:  # the first `embed` chunks, records among them, may embed
            embed -= sum(1 for c in chunks[:embed] if c.chunk_id in records)
        subjects = {nid: sub for nid in {c.node_id for c in facts} if (sub := subject_of(notes[nid])) is not None}
        return best_windows(facts, qvec, query, self.embedder, self.cache, subjects, self.rules, embed) if facts else {}


__all__ = [
    "Subject",
    "WindowScorer",
    "about",
    "best_windows",
    "is_record",
    "pick_windows",
    "picks",
    "split_windows",
    "window_terms",
]
