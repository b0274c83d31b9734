"""Ranking, pure: fusing lexical and dense scores, and ordering what relevance chose.

Nothing here touches the disk, the index or the clock: every function takes values and
returns values, so recall (recall.py), prefetch and every bench script compute relevance
with the same code, and the calibration replays (bench/) replay exactly what recall does.

    fuse(...)               relevance of each candidate, from BM25, cosine and coverage
    rank(...)               dormancy gate, the k by relevance, freshness among equals,
                            supersession last (see `rank`'s docstring and README "Ranking")
    same_subject_order(...) the freshness permutation `rank` applies (replayed by bench/)
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .catalog import STOPWORDS, ChunkRow, NoteRow
from .decay import DecayModel, MemoryState, is_episodic

Mode = Literal["hybrid", "bm25", "dense"]
FloatArray = npt.NDArray[np.float64]

# Measured on SciFact/LoCoMo/updates (bench/, README "Ranking").
FUSION_ALPHA = 0.5  # dense weight in the convex fusion (LoCoMo R@10 flat over 0.4-0.6; see calibrate.json)
SAME_SUBJECT_COSINE = 0.5
RELEVANCE_BAND = 0.3
FULL_CUE_MIN_TERMS = 2  # a dormant chunk containing all of a query's (>= 2) content words comes back


# -- fusion ---------------------------------------------------------------------------

def minmax(scores: npt.ArrayLike) -> FloatArray:
    """Min-max to [0, 1] over the candidates (all 1 when they are equal, e.g. a single one)."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr
    lo, hi = float(arr.min()), float(arr.max())
    if hi - lo < 1e-12:
        return np.ones_like(arr)
    return (arr - lo) / (hi - lo)


def fuse(mode: Mode, lexical: npt.ArrayLike, dense: npt.ArrayLike, coverage: npt.ArrayLike | None = None,
         alpha: float = FUSION_ALPHA) -> FloatArray:
    """Relevance in [0, 1] of each candidate (arrays aligned by candidate; absent scores are 0).

    hybrid: `alpha * minmax(cosine) + (1 - alpha) * minmax(bm25) * coverage`. BM25 is scaled
    among the candidates, which makes the best lexical match worth 1 even when it shares only
    an everyday word with the query; weighting it by the share of the query's content words
    the chunk contains (`coverage`) keeps such matches from outranking a clear semantic match
    (a paraphrase shares no words at all). bm25 / dense: that side alone, min-max scaled.
    """
    if mode == "bm25":
        return minmax(lexical)
    if mode == "dense":
        return minmax(dense)
    lex = minmax(lexical)
    if coverage is not None:
        lex = lex * np.asarray(coverage, dtype=np.float64)
    return alpha * minmax(dense) + (1 - alpha) * lex


_WORD = re.compile(r"\w+")


_STEM_CHARS = 5
_STEM = re.compile(rf"\w{{1,{_STEM_CHARS}}}")  # what a stem can be: anything else is in no text


def _stem(word: str) -> str:
    return word[:_STEM_CHARS]  # crude but symmetric; FTS5 does the real (porter) matching


def query_terms(query: str) -> frozenset[str]:
    """The query's content words (stop words dropped), crudely stemmed, for `coverage`."""
    return frozenset(_stem(w) for w in _WORD.findall(query.lower()) if w not in STOPWORDS and len(w) > 1)


def coverage(terms: Set[str], text: str) -> float:
    """Share of the query's content terms that occur in the text: terms that are the crude stem
    (`_stem`) of one of the text's words.

    Searched for rather than computed from the text's word set: recall asks this of ~300
    candidate chunks per query, and tokenizing them was most of a warm hybrid recall's Python;
    searching costs a ninth of it, with the same results (tests/test_ranking.py checks it
    against the word set).
    """
    if not terms:
        return 1.0
    low = text.lower()
    return sum(1 for t in terms if _STEM.fullmatch(t) and _has_stem(low, t)) / len(terms)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # exactly what \w matches in a str pattern (a test checks every code point)


def _has_stem(low: str, term: str) -> bool:
    """Some `\\w+` word of `low` has `term` as its stem: `term` starts a word there and, when it is
    shorter than a stem (the whole word), also ends it."""
    whole = len(term) < _STEM_CHARS
    i = low.find(term)
    while i >= 0:
        if i == 0 or not _is_word_char(low[i - 1]):
            j = i + len(term)
            if not whole or j == len(low) or not _is_word_char(low[j]):
                return True
        i = low.find(term, i + 1)
    return False


def is_full_cue(terms: Set[str], text: str) -> bool:
    """Every content word of a query of two or more is in the text (rank's reactivation cue)."""
    return len(terms) >= FULL_CUE_MIN_TERMS and coverage(terms, text) >= 1.0


# -- records --------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """One note (or chunk) as relevance sees it: its best chunk and that chunk's scores."""

    key: str  # note id, or chunk id at chunk granularity
    node_id: str
    chunk: ChunkRow
    relevance: float  # fused, in [0, 1]
    similarity: float  # exact cosine of the best chunk to the query
    lexical: float  # raw BM25 of that chunk (0 when it had none)
    terms: frozenset[str] = frozenset()  # the query's content words (query_terms)

    @property
    def full_cue(self) -> bool:
        """The chunk contains every content word of a query of two or more: a specific cue.
        Computed on demand: only dormant candidates are asked."""
        return is_full_cue(self.terms, self.chunk.text)


@dataclass(frozen=True)
class Ranked:
    """A candidate that survived the dormancy gate, with the decay facts that placed it."""

    cand: Candidate
    state: MemoryState
    strength: float
    dormant: bool
    reactivated: bool

    @property
    def score(self) -> float:
        """The relevance that chose it (freshness may reorder, never rescore)."""
        return self.cand.relevance

    @property
    def node_id(self) -> str:
        return self.cand.node_id


# -- ordering -------------------------------------------------------------------------

def rank(cands: Sequence[Candidate], notes: Mapping[str, NoteRow], *, model: DecayModel, now: dt.datetime,
         decay: bool, k: int, vectors: Mapping[str, np.ndarray] | None = None,
         same_subject: float = SAME_SUBJECT_COSINE, band: float = RELEVANCE_BAND) -> list[Ranked]:
    """Decide relevance first, then let strength order what says the same thing.

    1. Dormant notes (strength < threshold, not pinned) drop out unless their best chunk's
       cosine to the query reaches `model.reactivation_threshold(strength)` (then they are
       `reactivated`): the longer a note has been forgotten, the closer the cue must be. A
       chunk containing every content word of a query of two or more words is a specific
       cue too (`Candidate.full_cue`): it comes back whatever its cosine.
    2. The k most relevant remaining notes are chosen by relevance alone, so decay never
       costs recall: a multiplicative decay factor buys recency with recall (FINDINGS.md).
    3. Among those k, notes about the same subject (best chunks' cosine >= `same_subject`)
       and comparably relevant (relevance within `band`) trade places so the fresher one
       (pinned, else stated later: `freshness`) comes first; a clearly better match is never moved
       below a weak fresh one. Notes labelled episodic (`type: conversation`, `log`,
       `meeting`..., decay.is_episodic) keep their places: a newer record does not update them.
    4. A superseded note never ranks above its successor.
    Chosen on bench/studies/calibrate.py: see README "Ranking".
    """
    kept: list[Ranked] = []
    for c in cands:
        note = notes[c.node_id]
        state = model.state(note.meta, note.mtime, note.path)
        gate = model.gate(state, now, c.similarity, cue=lambda: c.full_cue)  # noqa: B023 (called at once)
        if decay and not gate.admitted:
            continue
        kept.append(Ranked(c, state, gate.strength, gate.dormant, decay and gate.dormant))
    kept.sort(key=lambda r: (-r.score, r.cand.key))
    top = kept[:k]
    if decay:
        if vectors is not None:
            top = fresher_first(top, notes, vectors, same_subject, band)
        top = successors_first(top)
    return top


def freshness(state: MemoryState, strength: float) -> tuple[int, int, float, float]:
    """What decides between two statements of one subject: pinned first, then the one stated
    later, then the stronger.

    Not strength first: recall rehearses every note it returns, so after one recall an old
    and a new statement are equally strong, and the order would fall back to relevance.
    When a note was stated is only as exact as its source (fields.stated_time): a note's
    own time of day counts; a date, our `stated` record and a file's mtime count to the
    day, so two files written seconds apart by a clone or a sync tie (relevance decides),
    and strength (from the same times) only breaks ties to two decimals.
    """
    st = state.stated
    if st.when is None:
        return (int(state.pinned), 0, 0.0, round(strength, 2))
    day = st.day()
    assert day is not None
    seconds = st.when.timestamp() - dt.datetime.combine(day, dt.time(), st.when.tzinfo).timestamp() if st.exact else 0
    return (int(state.pinned), day.toordinal(), float(seconds), round(strength, 2))


def fresher_first(items: list[Ranked], notes: Mapping[str, NoteRow], vectors: Mapping[str, np.ndarray],
                  same_subject: float = SAME_SUBJECT_COSINE, band: float = RELEVANCE_BAND) -> list[Ranked]:
    """Group same-subject, comparably relevant items; refill each group's positions freshest first."""
    keys = [r.cand.chunk.text_hash for r in items]
    if len(items) < 2 or any(h not in vectors for h in keys):
        return items
    mat = np.vstack([vectors[h] for h in keys]).astype(np.float32)
    fixed = [is_episodic(r.state) for r in items]
    fresh = [freshness(r.state, r.strength) for r in items]
    order = same_subject_order(mat, [r.score for r in items], fresh, [r.node_id for r in items],
                               same_subject, band, fixed)
    return [items[i] for i in order]


def same_subject_order(vectors: np.ndarray, relevance: Sequence[float], freshness: Sequence[Any],
                       owners: Sequence[str], same_subject: float, band: float,
                       fixed: Sequence[bool] | None = None) -> list[int]:
    """The permutation `rank` applies (pure; bench/studies/calibrate.py replays it).

    Items i < j (in relevance order) are about the same subject when their vectors' cosine is
    >= `same_subject`, their relevance differs by <= `band`, they belong to different notes
    and neither is `fixed` (episodic: it keeps its place); groups are the connected
    components, and each group's positions are refilled freshest first. Returns `order`
    such that output position p holds input item order[p].
    """
    n = len(relevance)
    sims = vectors @ vectors.T
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    fixed = fixed or [False] * n
    for i in range(n):
        for j in range(i + 1, n):
            if fixed[i] or fixed[j]:
                continue
            if sims[i, j] >= same_subject and relevance[i] - relevance[j] <= band and owners[i] != owners[j]:
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    order = list(range(n))
    for members in groups.values():
        if len(members) > 1:
            # freshest first (comparable keys: `freshness` tuples, or plain strengths in the
            # calibration replay); the sort is stable, so equals keep their relevance order
            for pos, src in zip(members, sorted(members, key=lambda m: freshness[m], reverse=True), strict=True):
                order[pos] = src
    return order


def successors_first(items: list[Ranked]) -> list[Ranked]:
    """A superseded note never ranks above a successor that is also in the list."""
    order = list(items)
    changed = True
    guard = 0
    while changed and guard < len(order) ** 2 + 1:
        changed = False
        guard += 1
        pos = {r.node_id: i for i, r in enumerate(order)}
        for i, r in enumerate(order):
            succ = [pos[s] for s in r.state.superseded_by if s in pos and pos[s] > i]
            # a human may record the link only on the new note (`supersedes`)
            succ += [j for j, u in enumerate(order) if j > i and r.node_id in u.state.supersedes]
            if succ:
                j = max(succ)
                order.insert(j, order.pop(i))
                changed = True
                break
    return order


__all__ = ["FUSION_ALPHA", "RELEVANCE_BAND", "SAME_SUBJECT_COSINE", "Candidate", "Mode", "Ranked", "coverage",
           "freshness", "fuse", "is_full_cue", "minmax", "query_terms", "rank", "same_subject_order",
           "successors_first"]
