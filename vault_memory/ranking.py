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
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .catalog import STOPWORDS, ChunkRow, NoteRow
from .decay import DecayModel, MemoryState, is_episodic

Mode = Literal["hybrid", "bm25", "dense"]
FloatArray = npt.NDArray[np.float64]

# Measured on SciFact/LoCoMo/updates (bench/, README "Ranking").
FUSION_ALPHA = 0.5  # dense weight in the convex fusion (LoCoMo R@10 flat over 0.4-0.6; see calibrate.json)
# "The same question" (rank step 3), calibrated on bench updates_hard and updates together
# (README "Ranking"): two comparably relevant notes (fused relevance within RELEVANCE_BAND)
# whose answers are alike (cosine >= SAME_SUBJECT_COSINE: the old chunk-to-chunk rule, on the
# sentences that answer), or that both answer the query (each answer's cosine to it >=
# ANSWER_FLOOR, prefetch's admission bar) about equally well (within ANSWER_MARGIN).
SAME_SUBJECT_COSINE = 0.5
RELEVANCE_BAND = 0.35
ANSWER_FLOOR = 0.35
ANSWER_MARGIN = 0.05
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


def fuse(
    mode: Mode,
    lexical: npt.ArrayLike,
    dense: npt.ArrayLike,
    coverage: npt.ArrayLike | None = None,
    alpha: float = FUSION_ALPHA,
) -> FloatArray:
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
class Window:
    """The best answer window (sentence) of one chunk for one query (windows.py)."""

    text: str
    similarity: float  # cosine of the query to this window alone
    vector: np.ndarray = field(compare=False, repr=False)  # what "the same answer" compares


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
    coverage: float | None = None  # share of those words in the chunk (hybrid only)
    window: Window | None = None  # the chunk's best answer window, when it was scored

    @property
    def answer_similarity(self) -> float:
        """How well the chunk answers the query: its cosine, or its best window's when higher."""
        return max(self.similarity, self.window.similarity) if self.window is not None else self.similarity

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
    same_question: tuple[str, ...] = ()  # node ids of the others in the list that answer the same question
    moves: tuple[str, ...] = ()  # why it is not where relevance put it ("moved above #2: ...")
    relevance_rank: int = 0  # its 1-based place by relevance alone, among the k

    @property
    def score(self) -> float:
        """The relevance that chose it (freshness may reorder, never rescore)."""
        return self.cand.relevance

    @property
    def node_id(self) -> str:
        return self.cand.node_id


# -- ordering -------------------------------------------------------------------------


def rank(
    cands: Sequence[Candidate],
    notes: Mapping[str, NoteRow],
    *,
    model: DecayModel,
    now: dt.datetime,
    decay: bool,
    k: int,
    vectors: Mapping[str, np.ndarray] | None = None,
    same_subject: float = SAME_SUBJECT_COSINE,
    band: float = RELEVANCE_BAND,
) -> list[Ranked]:
    """Decide relevance first, then let strength order what says the same thing.

    1. Dormant notes (strength < threshold, not pinned) drop out unless their best chunk's
       cosine to the query reaches `model.reactivation_threshold(strength)` (then they are
       `reactivated`): the longer a note has been forgotten, the closer the cue must be. A
       chunk containing every content word of a query of two or more words is a specific
       cue too (`Candidate.full_cue`): it comes back whatever its cosine.
    2. The k most relevant remaining notes are chosen by relevance alone, so decay never
       costs recall: a multiplicative decay factor buys recency with recall (FINDINGS.md).
    3. Among those k, notes that answer the same question trade places so the fresher one
       (pinned, else stated later: `freshness`) comes first. "The same question" is decided by
       what the query asks (issue 14): comparably relevant (relevance within `band`) and
       either their answers (best windows, else best chunks) are alike (cosine >=
       `same_subject`) or both answer the query about equally well (`Candidate.answer_similarity`
       >= ANSWER_FLOOR, within ANSWER_MARGIN of each other); a clearly better match is never
       moved below a weak fresh one. Notes labelled episodic (`type: conversation`, `log`,
       `meeting`..., decay.is_episodic) keep their places: a newer record does not update them.
    4. A superseded note never ranks above its successor.
    Chosen on bench `updates_hard` (and checked on `updates`, LoCoMo, SciFact): README "Ranking".
    """
    kept: list[Ranked] = []
    # Relevance order first, and only until k are kept: the gate (a strength, maybe a text
    # scan for the cue) is asked of the candidates that can still make the list, not all ~200.
    for c in sorted(cands, key=lambda c: (-c.relevance, c.key)):
        if len(kept) >= k:
            break
        note = notes[c.node_id]
        state = model.state(note.meta, note.mtime, note.path)
        gate = model.gate(state, now, c.answer_similarity, cue=lambda: c.full_cue)  # noqa: B023 (called at once)
        if decay and not gate.admitted:
            continue
        kept.append(Ranked(c, state, gate.strength, gate.dormant, decay and gate.dormant))
    top = [replace(r, relevance_rank=i) for i, r in enumerate(kept, 1)]
    if decay:
        if vectors is not None:
            top = fresher_first(top, vectors, same_subject, band)
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


def answer_vector(r: Ranked, vectors: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """What a hit answers with: its best window's vector, else its best chunk's (None: unknown)."""
    if r.cand.window is not None:
        return r.cand.window.vector
    return vectors.get(r.cand.chunk.text_hash)


def fresher_first(
    items: list[Ranked],
    vectors: Mapping[str, np.ndarray],
    same_subject: float = SAME_SUBJECT_COSINE,
    band: float = RELEVANCE_BAND,
    answer_floor: float = ANSWER_FLOOR,
    answer_margin: float = ANSWER_MARGIN,
) -> list[Ranked]:
    """Group the items that answer the same question; refill each group's positions freshest first.

    Each item learns the others of its group (`same_question`) and, when it moved, why (`moves`).
    """
    answers = [answer_vector(r, vectors) for r in items]
    if len(items) < 2 or any(a is None for a in answers):
        return items
    mat = np.vstack([np.asarray(a, dtype=np.float32) for a in answers if a is not None])
    fixed = [is_episodic(r.state) for r in items]
    fresh = [freshness(r.state, r.strength) for r in items]
    groups = same_question_groups(
        mat,
        [r.score for r in items],
        [r.node_id for r in items],
        same_subject,
        band,
        fixed,
        [r.cand.answer_similarity for r in items],
        answer_floor,
        answer_margin,
    )
    order = refill(groups, fresh, len(items))
    out = list(items)
    for members in groups:
        if len(members) < 2:
            continue
        ids = tuple(items[m].node_id for m in members)
        for m in members:
            out[m] = replace(items[m], same_question=tuple(i for i in ids if i != items[m].node_id))
    moved = [out[i] for i in order]
    for pos, r in enumerate(moved):
        if order[pos] < pos:
            continue  # moved down, or stayed: the one that moved above it says why
        if order[pos] > pos:
            passed = [moved[p].relevance_rank for p in range(pos + 1, len(moved)) if order[p] < order[pos]]
            why = f"moved above #{min(passed)} (by relevance): answers the same question, stated later"
            moved[pos] = replace(r, moves=(*r.moves, why))
    return moved


def same_question_groups(
    vectors: np.ndarray,
    relevance: Sequence[float],
    owners: Sequence[str],
    same_subject: float,
    band: float,
    fixed: Sequence[bool] | None = None,
    answers: Sequence[float] | None = None,
    answer_floor: float = ANSWER_FLOOR,
    answer_margin: float = ANSWER_MARGIN,
) -> list[list[int]]:
    """Which items (in relevance order) answer the same question: connected components, each in order.

    Items i < j are linked when they belong to different notes, neither is `fixed` (episodic:
    it keeps its place), their relevance differs by <= `band`, and either their vectors'
    cosine is >= `same_subject` or both `answers` (cosine of each answer to the query) reach
    `answer_floor` and differ by <= `answer_margin`.
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
            if fixed[i] or fixed[j] or owners[i] == owners[j] or relevance[i] - relevance[j] > band:
                continue
            both_answer = (
                answers is not None
                and min(answers[i], answers[j]) >= answer_floor
                and abs(answers[i] - answers[j]) <= answer_margin
            )
            if sims[i, j] >= same_subject or both_answer:
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def refill(groups: Sequence[Sequence[int]], freshness: Sequence[Any], n: int) -> list[int]:
    """The permutation that refills each group's positions freshest first (stable: equals keep
    their relevance order). Output position p holds input item order[p]."""
    order = list(range(n))
    for members in groups:
        if len(members) > 1:
            for pos, src in zip(members, sorted(members, key=lambda m: freshness[m], reverse=True), strict=True):
                order[pos] = src
    return order


def same_subject_order(
    vectors: np.ndarray,
    relevance: Sequence[float],
    freshness: Sequence[Any],
    owners: Sequence[str],
    same_subject: float,
    band: float,
    fixed: Sequence[bool] | None = None,
    answers: Sequence[float] | None = None,
    answer_floor: float = ANSWER_FLOOR,
    answer_margin: float = ANSWER_MARGIN,
) -> list[int]:
    """The permutation `rank` applies (pure; bench/studies/calibrate.py replays it).

    `vectors` are the items' answers (best windows, else best chunks); groups are
    `same_question_groups`, refilled freshest first. Without `answers` only the
    answers' likeness links items (the rule before issue 14, on chunk vectors).
    Returns `order` such that output position p holds input item order[p].
    """
    groups = same_question_groups(
        vectors, relevance, owners, same_subject, band, fixed, answers, answer_floor, answer_margin
    )
    return refill(groups, freshness, len(relevance))


def change_label(place: int, day: str | None, others: Sequence[tuple[int, str | None]]) -> str:
    """What an entry says about the other statements of its question (issue 14), pure.

    `place` and `day` (YYYY-MM-DD or None) are this entry's; `others` the (place, day) of the
    other entries that answer the same question. The newest says so; an older one names the
    newer one above it; statements of the same day say that instead of guessing.
    """
    if not others:
        return ""
    mine = day or ""
    above = sorted(o for o in others if o[0] < place)
    if not above:
        if all((d or "") < mine for _, d in others):
            return f"newest of {len(others) + 1} statements"
        return f"same question as #{min(p for p, _ in others)}, stated {'the same day' if day else 'undated'}"
    top, top_day = above[0]
    if (top_day or "") > mine:
        return f"older: newer statement ({top_day}) is #{top}"
    if top_day == day:
        return f"same question as #{top}, stated the same day"
    return f"same question as #{top} (stated {top_day or 'undated'})"


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


__all__ = [
    "ANSWER_FLOOR",
    "ANSWER_MARGIN",
    "FUSION_ALPHA",
    "RELEVANCE_BAND",
    "SAME_SUBJECT_COSINE",
    "Candidate",
    "Mode",
    "Ranked",
    "Window",
    "answer_vector",
    "change_label",
    "coverage",
    "freshness",
    "fuse",
    "is_full_cue",
    "minmax",
    "query_terms",
    "rank",
    "refill",
    "same_question_groups",
    "same_subject_order",
    "successors_first",
]
