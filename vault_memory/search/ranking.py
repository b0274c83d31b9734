"""Ranking, pure: fusing lexical and dense scores, and ordering what relevance chose.

Nothing here touches the disk, the index or the clock: every function takes values and
returns values, so recall (recall.py), prefetch and every bench script compute relevance
with the same code, and the calibration replays (bench/) replay exactly what recall does.

    fuse(...)             relevance of each candidate, from BM25, cosine and coverage (stage 2)
    order(...)            stage 4: relevance order with decay marks (`marks`), newest first among
                          the statements of one fact (`newest_first`), successors above what
                          they supersede (`successors_first`)
    same_fact_groups(...) which of the head state one fact (`state_alike`)
    refill(...)           a group's places, newest statement first (a repeat counts from the first)

Longer than 500 lines because it is the whole read-time rule (docs/ranking.md's six steps) in
one place: the records fusion makes are what ordering reads, and the bench replays import both
from here, so a split would only move the rule's halves apart and give them a cycle to break.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..index.calibration import MINILM, Calibration
from ..index.catalog import STOPWORDS, ChunkRow, NoteRow
from ..repeats import adds_nothing, is_repeat
from ..text import other_people, said_by, split_sentences, without_links
from .decay import DecayModel, MemoryState, is_episodic
from .rules import DEFAULT_RULES, ReadRules

Mode = Literal["hybrid", "bm25", "dense"]
FloatArray = npt.NDArray[np.float64]

# Every number and switch the rule reads is in the read path's rules record (rules.py), with the
# benchmark row that chose it in docs/ranking.md; cosine thresholds are the embedder's (calibration.py).
ON_DAY = "the day the query names"  # a cue: the query names the day the note was stated (Candidate.cue)
FIRST_OF_A_QUESTION = "the first hit of a question"  # a cue: what a question asks for (Candidate.cue)


# -- fusion ---------------------------------------------------------------------------


def minmax(scores: npt.ArrayLike, scaled_on: npt.ArrayLike | None = None) -> FloatArray:
    """Min-max to [0, 1] over the candidates (all 1 when they are equal, e.g. a single one).

    `scaled_on`: a mask of the candidates whose lowest and highest score set the scale; the others
    are placed on it, clipped to [0, 1] (search.first_of's extra chunks change no one's score)."""
    arr = np.asarray(scores, dtype=np.float64)
    if arr.size == 0:
        return arr
    ref = arr if scaled_on is None or not np.any(scaled_on) else arr[np.asarray(scaled_on, dtype=bool)]
    lo, hi = float(ref.min()), float(ref.max())
    if hi - lo < 1e-12:
        return np.ones_like(arr) if scaled_on is None else np.where(arr >= lo, 1.0, 0.0)
    out = (arr - lo) / (hi - lo)
    return out if scaled_on is None else np.clip(out, 0.0, 1.0)


def relevance_order(c: Candidate) -> tuple[bool, bool, float, str, str]:
    """Relevance order: notes stated on a day the query names (Candidate.on_day), then the pool's by
    relevance (ties by path, not by a note's id, which is random once we write one), then those found
    beyond it (Candidate.beyond), likewise."""
    return (not c.on_day, c.beyond and not c.on_day, -c.relevance, c.path, c.key)


def fuse(
    mode: Mode,
    lexical: npt.ArrayLike,
    dense: npt.ArrayLike,
    coverage: npt.ArrayLike | None = None,
    alpha: float = DEFAULT_RULES.fusion_alpha,
    scaled_on: npt.ArrayLike | None = None,
) -> FloatArray:
    """Relevance in [0, 1] of each candidate (arrays aligned by candidate; absent scores are 0).

    hybrid: `alpha * minmax(cosine) + (1 - alpha) * minmax(bm25) * coverage`. BM25 is scaled
    among the candidates, which makes the best lexical match worth 1 even when it shares only
    an everyday word with the query; weighting it by the share of the query's content words
    the chunk contains (`coverage`) keeps such matches from outranking a clear semantic match
    (a paraphrase shares no words at all). bm25 / dense: that side alone, min-max scaled.
    """
    if mode == "bm25":
        return minmax(lexical, scaled_on)
    if mode == "dense":
        return minmax(dense, scaled_on)
    lex = minmax(lexical, scaled_on)
    if coverage is not None:
        lex = lex * np.asarray(coverage, dtype=np.float64)
    return alpha * minmax(dense, scaled_on) + (1 - alpha) * lex


_WORD = re.compile(r"\w+")
_STEM_CHARS = 5
_STEM = re.compile(rf"\w{{1,{_STEM_CHARS}}}")  # what a stem can be: anything else is in no text


def _stem(word: str) -> str:
    return word[:_STEM_CHARS]  # crude but symmetric; FTS5 does the real (porter) matching


def query_terms(query: str) -> frozenset[str]:
    """The query's content words (stop words dropped), crudely stemmed, for `coverage`."""
    return frozenset(_stem(w) for w in _WORD.findall(query.lower()) if w not in STOPWORDS and len(w) > 1)


def coverage(terms: Set[str], text: str) -> float:
    """Share of the query's content terms that are the crude stem (`_stem`) of a word of the text.
    Searched for, not computed from the text's word set: recall asks it of ~300 chunks a query, and
    tokenizing them was most of a warm recall's Python; a ninth of that, same results (tests)."""
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


def word_cue(terms: Set[str], text: str, rules: ReadRules = DEFAULT_RULES) -> str:
    """Which word cue the text gives a dormant note, in `--explain`'s words ("" for none): every
    content word of a query of two or more (`rules.full_cue_min_terms`). order's reactivation cue."""
    share = coverage(terms, text) if len(terms) >= rules.full_cue_min_terms else 0.0
    return "every word of the query" if share >= 1.0 else ""


# -- records --------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """The best answer window (sentence) of one chunk for one query (windows.py)."""

    text: str
    similarity: float  # cosine of the query to this window alone
    vector: np.ndarray = field(compare=False, repr=False)  # what "the same answer" compares
    others: tuple[str, ...] = ()  # the chunk's other windows scored for the query, best first


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
    #: found beyond the pool that sets relevance's scale (search.first_of's extra chunks): it ranks
    #: after every candidate of the pool, so the notes the pool holds keep their order and places
    beyond: bool = False
    path: str = ""  # the note's path: ties in relevance go by it (relevance_order)
    on_day: bool = False  # stated on a day the query names (search/days.py): first, shown, cued

    @property
    def answer_similarity(self) -> float:
        """How well the chunk answers the query: its cosine, or its best window's when higher."""
        return max(self.similarity, self.window.similarity) if self.window is not None else self.similarity

    def cue(self, first: bool = False, rules: ReadRules = DEFAULT_RULES) -> str:
        """How the query points at it, named, or "": it names its day, it is the first hit of a query
        that asks (`first`, `rules.first_hit_cue`), or its chunk gives a word cue (module `word_cue`).
        Asked only of dormant candidates."""
        if self.on_day:
            return ON_DAY
        if first and rules.first_hit_cue:
            return FIRST_OF_A_QUESTION
        return word_cue(self.terms, self.chunk.text, rules)

    @property
    def answer_text(self) -> str | None:
        """The sentence that answers: the best window, or the chunk's only sentence when it states
        one in its own words (not only inside a `[[link]]`); None for prose answered as a whole."""
        if self.window is not None:
            return self.window.text
        sentences = split_sentences(self.chunk.body)
        if len(sentences) != 1 or (self.terms and coverage(self.terms, without_links(sentences[0])) == 0.0):
            return None
        return sentences[0]


# -- ordering -------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranked:
    """A candidate that survived the dormancy gate, with the decay facts that placed it."""

    cand: Candidate
    state: MemoryState
    strength: float
    dormant: bool
    reactivated: bool
    path: str = ""  # the note's vault path (what the same-folder rule compares)
    cued_by: str = ""  # when reactivated, the cue that brought it back (decay.Gate.cue)
    same_fact: tuple[str, ...] = ()  # node ids of the others in the list that state the same fact
    moves: tuple[str, ...] = ()  # why it is not where relevance put it ("moved above #2: ...")
    repeats: str = ""  # the path of the note that said its statement first, when it repeats one (`statements`)
    relevance_rank: int = 0  # its 1-based place by relevance alone
    #: superseded, and a successor in the list answers what it says here (`successors_first`):
    #: it ranks below that successor and is never a block entry
    replaced: bool = False

    @property
    def score(self) -> float:
        """The relevance that chose it (freshness may reorder, never rescore)."""
        return self.cand.relevance

    @property
    def node_id(self) -> str:
        return self.cand.node_id


VectorsOf = Callable[[Sequence[ChunkRow]], Mapping[str, np.ndarray]]


def order(
    cands: Sequence[Candidate],
    notes: Mapping[str, NoteRow],
    *,
    model: DecayModel,
    now: dt.datetime,
    decay: bool,
    k: int,
    vectors: VectorsOf | Mapping[str, np.ndarray] | None = None,
    cal: Calibration = MINILM,
    rules: ReadRules = DEFAULT_RULES,
    asks_now: bool = True,
    asks: bool = False,
    weak_below: float = float("-inf"),
    query: str = "",
) -> list[Ranked]:
    """Stage 4, order: decide relevance first; then let the date decide only between statements
    of one fact, when the question asks how things are (`asks_now`: question.asks_how_things_are).

    1. Relevance order, the notes stated on a day the query names first (`relevance_order`); each
       candidate marked with its strength at `now` and, below the dormant bar, `dormant`, and
       `reactivated` when the query cues it (`marks`; `asks`: the query asks, question.asks). With
       `rules.recall_hides_dormant`, a dormant note the query does not cue drops out.
    2. For a question about how things are, among the first `rules.head`, the best answer and the
       notes that state the same fact differently (`same_fact_groups`) are put newest first, in the
       places they held, a later note that adds no word to one above it counted from that one's day
       (`newest_first`).
    3. A superseded note is `replaced` where a successor in the list replaces what it says for the
       query (`replaces_here`: the successor answers it, not weak below `weak_below`, or answers
       alike), and never ranks above that successor (`successors_first`). The mark holds with decay
       off too: prefetch leaves replaced notes out either way.
    The whole list is ordered, then cut to k: the first n of any k are the same notes.
    `vectors`: text hash -> chunk vector (or a function giving them for chunks), for answers
    that are a note's only sentence; window vectors come with the candidates.
    """
    kept = marks(cands, notes, model=model, now=now, decay=decay, cal=cal, rules=rules, asks=asks, query=query)
    replaced = replaced_by(kept, replaces_here(weak_below, vectors, cal))
    if replaced:
        kept = [replace(r, replaced=True) if r.node_id in replaced else r for r in kept]
    if decay:
        if vectors is not None and rules.one_fact and (asks_now or not rules.one_fact_present_only):
            kept = newest_first(kept, vectors, cal, rules, now)
        if rules.successors_first:
            kept = successors_first(kept, replaced)
    return kept[:k]


def marks(
    cands: Sequence[Candidate],
    notes: Mapping[str, NoteRow],
    *,
    model: DecayModel,
    now: dt.datetime,
    decay: bool,
    cal: Calibration = MINILM,
    rules: ReadRules = DEFAULT_RULES,
    asks: bool = False,
    query: str = "",
) -> list[Ranked]:
    """The candidates in relevance order, each with its decay facts: strength at `now`, dormant
    (strength below the bar, not pinned) and reactivated when the query cues it: the answer's cosine
    reaches the clear-match bar (`cal.strong`), the chunk holds every content word of the query, it
    is the first hit of a query that asks (`asks`: question.asks; `rules.first_hit_cue`), or the
    query names the day it was stated (`Candidate.cue`). With `rules.cues_its_people`, a note about
    other people than the query names (text.other_people: "the user's sister Nora" for "which
    language am I learning") is never cued back, nor counted as the question's first hit. A dormant
    note keeps its place, marked, unless `rules.recall_hides_dormant`."""
    kept: list[Ranked] = []
    people = rules.cues_its_people and bool(query)

    def about_others(c: Candidate) -> bool:
        """About other people than the query names (text.other_people): the sentence that answers and
        its chunk both (a day's journal names people in passing; "my grandma" may be a sentence before
        the answer), or the chunk alone when it is what someone said (text.said_by)."""
        if not other_people(query, c.chunk.text):
            return False  # what someone else said is theirs, whichever of its sentences answers
        return bool(said_by(c.chunk.text)) or other_people(query, c.answer_text or query)

    found = not asks  # the first hit of a question, about the people it names, is behind us
    for c in sorted(cands, key=relevance_order):
        note = notes[c.node_id]
        state = model.state(note.meta, note.path)
        searching = not found  # judged only where it decides: the question's first hit, and a cued note
        others = people and searching and about_others(c)
        first = searching and not others
        found = found or first
        gate = model.gate(state, now, c.answer_similarity, cue=lambda: c.cue(first, rules), strong=cal.strong)  # noqa: B023
        if gate.reactivated and people and (others or not searching and about_others(c)):
            gate = replace(gate, admitted=False, cue="")  # a faded note comes back for its own people
        if decay and rules.recall_hides_dormant and not gate.admitted:
            continue
        kept.append(
            Ranked(
                c,
                state,
                gate.strength,
                gate.dormant,
                decay and gate.reactivated,
                note.path,
                cued_by=gate.cue if decay and gate.reactivated else "",
                relevance_rank=len(kept) + 1,
            )
        )
    return kept


def freshness(state: MemoryState, strength: float) -> tuple[int, int, float, float]:
    """What decides between two statements of one fact: pinned first, then the one stated later
    (to the day; to the second when both give a time), then the stronger."""
    st = state.stated
    if st.when is None:
        return (int(state.pinned), 0, 0.0, round(strength, 2))
    day = st.when.date()
    seconds = (st.when - dt.datetime.combine(day, dt.time(), st.when.tzinfo)).total_seconds() if st.exact else 0.0
    return (int(state.pinned), day.toordinal(), seconds, round(strength, 2))


def answer_vector(r: Ranked, vectors: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """What a hit answers with: its best window's vector, else its only sentence's (its chunk's)."""
    if r.cand.window is not None:
        return r.cand.window.vector
    return vectors.get(r.cand.chunk.text_hash) if r.cand.answer_text is not None else None


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def same_fact_groups(
    items: Sequence[Ranked],
    answers: Sequence[np.ndarray | None],
    cal: Calibration,
    rules: ReadRules = DEFAULT_RULES,
    now: dt.datetime | None = None,
) -> list[list[int]]:
    """Which of `items` (relevance order, the head) state one fact: the group of the first, and
    every other item alone. A note stated after `now` (a plan, a session from after the question)
    is no statement of how things are now: it joins no group.

    Two items are linked when they `state_alike`. The group is the connected component of the first
    item, recall's answer, when its answer is clear (answer cosine >= `cal.weak`), else of the item
    whose answer is closest to the query, when that one is clear: a statement worded far from the
    query still joins by saying what a clear answer says (bench updates_hard: newer first 0.951 with
    every member held to the bar, 0.975 without; the real vault's moves unchanged).
    Until stop 71 the group was the one of the item whose answer sentence was closest to the query,
    wherever it ranked: `dexter`'s "did we end up making it to the family cabin in July?" grouped
    around a note about a crib (its sentence closer, 0.498 against 0.45) and left the cabin's two
    days apart, the older first; `updates_hard` newer first 0.963, now 0.975. Everything else keeps
    its place: on a person's vault nothing else this rule looks at told a changed value from a
    related statement (bench same_fact, docs/ranking.md)."""
    n = len(items)
    if n == 0:
        return []
    ok = [
        a is not None and not is_episodic(r.state) and _stated_by(r, now) for r, a in zip(items, answers, strict=True)
    ]
    links = [
        (i, j)
        for i in range(n)
        for j in range(i + 1, n)
        if ok[i] and ok[j] and state_alike(items[i], items[j], answers[i], answers[j], cal, rules)
    ]
    # the first hit's group; when its answer is not clear, the group of the answer closest to the query
    best = (
        0
        if items[0].cand.answer_similarity >= cal.weak
        else max(range(n), key=lambda i: (items[i].cand.answer_similarity, -i))
    )
    if items[best].cand.answer_similarity < cal.weak:
        return [[i] for i in range(n)]
    group = next(g for g in components(range(n), links) if best in g)
    return [group] + [[i] for i in range(n) if i not in group]


def _stated_by(r: Ranked, now: dt.datetime | None) -> bool:
    """Whether the note is dated, on or before `now`'s day (any day, without one). By the day: a
    note of today is today's news whatever hour it gives (the pool's sessions of a question's day
    are stamped after the question's minute)."""
    day = r.state.stated.day()
    return day is not None and (now is None or day <= now.date())


def state_alike(
    a: Ranked, b: Ranked, va: np.ndarray | None, vb: np.ndarray | None, cal: Calibration, rules: ReadRules
) -> bool:
    """Whether two dated facts that answer the query in a sentence of their own (`va`, `vb`: those
    sentences' vectors) state one fact differently: two notes, in the same folder (a note updates
    notes of its own kind: a daily note the daily notes, a memory the memories; `rules.same_folder`),
    stated on different days, comparably relevant (within `rules.relevance_band`), answering alike
    (the two answers' cosine clears the weak bar) and not one statement repeated (repeats.is_repeat:
    a daily note's copied line is not a change, nor is one whose dates moved on with its day)."""
    if a.node_id == b.node_id or va is None or vb is None:
        return False
    if rules.same_folder and _folder(a.path) != _folder(b.path):
        return False
    if a.state.stated.day() == b.state.stated.day() or abs(a.score - b.score) > rules.relevance_band:
        return False
    said = (a.cand.answer_text or "", b.cand.answer_text or "")
    return float(np.dot(va, vb)) >= cal.weak and not is_repeat(*said, (a.state.stated.day(), b.state.stated.day()))


def components(members: Iterable[int], links: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The connected sets of `members` that `links` join, each in ascending order, ordered by their
    first member (what `same_fact_groups` and `statements` group by)."""
    parent = {m: m for m in members}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        parent[find(b)] = find(a)
    out: dict[int, list[int]] = {}
    for m in sorted(parent):
        out.setdefault(find(m), []).append(m)
    return list(out.values())


def newest_first(
    items: list[Ranked],
    vectors: VectorsOf | Mapping[str, np.ndarray],
    cal: Calibration,
    rules: ReadRules = DEFAULT_RULES,
    now: dt.datetime | None = None,
) -> list[Ranked]:
    """Refill the places of the head's one-fact group (`same_fact_groups`, of the notes stated by
    `now`) newest first; record in each item the others of its group and, when it moved up, why."""
    head = items[: rules.head]
    if len(head) < 2:
        return items
    need = [r.cand.chunk for r in head if r.cand.window is None and r.cand.answer_text is not None]
    vecs = (vectors if isinstance(vectors, Mapping) else vectors(need)) if need else {}
    answers = [answer_vector(r, vecs) for r in head]
    return refill(items, same_fact_groups(head, answers, cal, rules, now)[:1], rules)


def statements(items: Sequence[Ranked], group: Sequence[int], rules: ReadRules = DEFAULT_RULES) -> list[list[int]]:
    """The members of one group as statements: a member stated later than one above it (in
    relevance order) whose answer adds no word to that one's (`repeats.adds_nothing`, dates counted
    from each note's day) repeats it, and is one statement with it, in relevance order. A line
    carried forward, or a plan written down again, says nothing new the second time. Only a later
    note below: "Home for the user is Denver now." adds no word to an older, lower "Home for the
    user's dad is Denver now.", and is still the news (bench lifetime). Without
    `rules.repeats_count_from_first` each member is a statement of its own."""
    if not rules.repeats_count_from_first:
        return [[m] for m in sorted(group)]
    links = [
        (a, b)
        for a in group
        for b in group
        if a < b
        and stated(items[b]) > stated(items[a])
        and adds_nothing(
            items[b].cand.answer_text or "",
            items[a].cand.answer_text or "",
            (items[b].state.stated.day(), items[a].state.stated.day()),
        )
    ]
    return components(group, links)


def stated(r: Ranked) -> tuple[int, float]:
    """When a note was stated, as `freshness` orders it: the day, then the second when it gives a time."""
    _, day, seconds, _ = freshness(r.state, r.strength)
    return day, seconds


def said_first(items: Sequence[Ranked], members: Sequence[int]) -> tuple[int, int, float, float]:
    """A statement's freshness: pinned when any of its notes is, stated when its first note states
    it (repeating a line does not make it newer), then its strongest note's strength."""
    day, seconds = min(stated(items[m]) for m in members)
    pinned = max(int(items[m].state.pinned) for m in members)
    return (pinned, day, seconds, max(round(items[m].strength, 2) for m in members))


def refill(items: list[Ranked], groups: Sequence[Sequence[int]], rules: ReadRules = DEFAULT_RULES) -> list[Ranked]:
    """Refill each group's places newest statement first (`statements`, `said_first`; the notes of
    one statement in relevance order); each member learns the others of its group (`same_fact`),
    the note it repeats (`repeats`) and, when it moved up, why (`moves`)."""
    groups = [g for g in groups if len(g) > 1]
    out = list(items)
    for group in groups:
        ids = tuple(items[m].node_id for m in group)
        for m in group:
            out[m] = replace(items[m], same_fact=tuple(i for i in ids if i != items[m].node_id))
    moved = list(out)
    for group in groups:
        said = sorted(statements(items, group, rules), key=lambda st: said_first(items, st), reverse=True)
        for st in (st for st in said if len(st) > 1):
            first = min(st, key=lambda m: stated(items[m]))
            for m in (m for m in st if m != first):
                out[m] = replace(out[m], repeats=items[first].path)
        for pos, src in zip(group, (m for st in said for m in st), strict=True):
            moved[pos] = out[src]
    for group in groups:
        for pos in group:
            moved[pos] = _why_moved(moved, group, pos)
    return moved


def _why_moved(moved: Sequence[Ranked], group: Sequence[int], pos: int) -> Ranked:
    """The item at `pos` of a refilled group, saying which more relevant member it moved above."""
    r = moved[pos]
    passed = [moved[p].relevance_rank for p in group if p > pos and moved[p].relevance_rank < r.relevance_rank]
    if not passed:
        return r
    why = f"moved above #{min(passed)} (by relevance): states the same thing differently, stated later"
    return replace(r, moves=(*r.moves, why))


def is_weak(r: Ranked, weak_below: float) -> bool:
    """A hit whose answer's cosine is below the weak bar says little about the query, unless the
    query names the day it was stated ("what did I do on October 17" is far from any log)."""
    return r.cand.answer_similarity < weak_below and not r.cand.on_day


def replaces_here(
    weak_below: float, vectors: VectorsOf | Mapping[str, np.ndarray] | None, cal: Calibration
) -> Callable[[Ranked, Ranked], bool]:
    """Whether a successor replaces, for this query, what the note it supersedes says: it answers
    the query (not weak), or its answer is alike the old note's (the two answers' cosine clears the
    weak bar, as `state_alike` links two statements of one fact)."""
    got: dict[str, np.ndarray | None] = {}

    def vector(r: Ranked) -> np.ndarray | None:
        if r.cand.window is not None:
            return r.cand.window.vector
        if vectors is None:
            return None
        key = r.cand.chunk.text_hash
        if key not in got:
            got[key] = (vectors if isinstance(vectors, Mapping) else vectors([r.cand.chunk])).get(key)
        return got[key]

    def replaces(new: Ranked, old: Ranked) -> bool:
        if not is_weak(new, weak_below):
            return True
        a, b = vector(new), vector(old)
        return a is not None and b is not None and float(np.dot(a, b)) >= cal.weak

    return replaces


def replaced_by(items: Sequence[Ranked], replaces: Callable[[Ranked, Ranked], bool]) -> dict[str, set[str]]:
    """Old note -> the successors in `items` that replace what it says here (`replaces(successor,
    old)`: `replaces_here`), from its `superseded_by` and from their `supersedes` (a person may
    record the link only on the new note).

    Only what a successor replaces: a vault records supersession note by note, and a memory of where
    the shed key now hangs, committed with `--supersedes Garden.md`, replaces one line of the garden
    note, not its beds. Asked what grows in the north bed, the key memory is weak and says nothing
    alike the beds' line: the garden note is not replaced there, and keeps its place and its block
    entry (issue 38: it fell from 1st to 7th, and prefetch left it out)."""
    pairs = list(supersessions(items))
    if not pairs:  # most queries: no candidate records a supersession
        return {}
    ids = {r.node_id: r for r in items}
    by: dict[str, set[str]] = {}
    for old, new in pairs:
        if replaces(ids[new], ids[old]):
            by.setdefault(old, set()).add(new)
    return by


def supersessions(items: Sequence[Ranked]) -> Iterator[tuple[str, str]]:
    """(old, new): the node ids of two notes in `items` the vault says one supersedes the other,
    from the old one's `superseded_by` or the new one's `supersedes` (a person may record the link
    on one side only; a pair recorded on both sides comes twice)."""
    if not any(r.state.superseded_by or r.state.supersedes for r in items):
        return
    ids = {r.node_id for r in items}
    for r in items:
        for s in r.state.superseded_by:
            if s in ids and s != r.node_id:
                yield r.node_id, s
        for s in r.state.supersedes:
            if s in ids and s != r.node_id:
                yield s, r.node_id


def successors_first(items: list[Ranked], replaced: Mapping[str, Set[str]]) -> list[Ranked]:
    """A replaced note (`replaced_by`: old note -> its successors that replace it here) never ranks
    above those successors: it moves to just below the lowest of them."""
    if not replaced:
        return items
    order = list(items)
    for _ in range(len(order) ** 2 + 1):  # bounded: a cycle of supersessions cannot loop forever
        pos = {r.node_id: i for i, r in enumerate(order)}
        move = None
        for i, r in enumerate(order):
            succ = [pos[s] for s in replaced.get(r.node_id, ()) if pos[s] > i]
            if succ:
                move = (i, max(succ))
                break
        if move is None:
            break
        i, j = move
        order.insert(j, order.pop(i))
    return order


def succession(items: Sequence[Ranked]) -> dict[str, tuple[list[str], list[str]]]:
    """node id -> (the ids in `items` it supersedes, the ids in `items` that supersede it)."""
    out: dict[str, tuple[list[str], list[str]]] = {r.node_id: ([], []) for r in items}
    for old, new in supersessions(items):
        out[new][0].append(old)
        out[old][1].append(new)
    return {k: (sorted(set(a)), sorted(set(b))) for k, (a, b) in out.items()}


def change_label(place: int, replaces: Sequence[int], replaced_by: Sequence[int]) -> str:
    """What an entry says about a supersession the vault records, pure: `supersedes` /
    `superseded_by` are the only evidence that two notes state one fact with different values
    that a reader can trust (issue 21; freshness alone is never labelled)."""
    if replaced_by:
        return "superseded by " + ", ".join(f"#{p}" for p in sorted(replaced_by))
    if replaces:
        return "supersedes " + ", ".join(f"#{p}" for p in sorted(replaces))
    return ""


__all__ = [
    "Candidate",
    "Mode",
    "Ranked",
    "Window",
    "answer_vector",
    "change_label",
    "coverage",
    "freshness",
    "fuse",
    "word_cue",
    "minmax",
    "newest_first",
    "query_terms",
    "marks",
    "order",
    "refill",
    "components",
    "said_first",
    "same_fact_groups",
    "state_alike",
    "stated",
    "statements",
    "succession",
    "supersessions",
    "is_weak",
    "replaced_by",
    "replaces_here",
    "successors_first",
]
