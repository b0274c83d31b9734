"""Recall: relevance search (search.py), ranked with decay (ranking.py), rehearsed (edits.py).

    hits = recall(ws, "which editor do I use?", k=5, now=now)

Relevance is decided first; dormant notes keep their place, marked (reactivated when the query
cues them), the statements of one fact are put newest first, and a superseded note never ranks
above its successor (ranking.order). A line copied into several notes is one hit (`fold_copies`).
The order is computed for every candidate and then cut to k, so k never changes it. What recall
returns is rehearsed unless `touch=False`.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import ConfigError, VectorStoreUnavailableError
from ..index.catalog import NoteRow
from ..repeats import days_from, has_iso_date
from ..search import days
from ..search.filters import NoteFilter, eligible
from ..search.question import asks, asks_how_things_are, name_forms, names_in, unstated_price
from ..search.ranking import Candidate, Mode, Ranked, change_label, is_weak, order, succession
from ..search.rules import DEFAULT_RULES, ReadRules
from ..search.search import Granularity, Searcher
from ..search.workspace import Workspace
from ..text import in_folder, says_something, snippet
from ..vault.fields import heading_day
from .relations import with_identities

MAX_K = 100


@dataclass
class Hit:
    """One recalled note (or chunk)."""

    path: str
    node_id: str
    title: str
    heading: str
    snippet: str
    score: float
    relevance: float
    #: the cosine of the query to the hit's answer (its best sentence, else its best chunk): an
    #: absolute scale, unlike `relevance` (whose best hit is always about 1)
    similarity: float
    strength: float
    tier: str
    pinned: bool
    dormant: bool
    reactivated: bool
    superseded_by: list[str] = field(default_factory=list)
    chunk_id: str = ""
    text: str = ""
    date: str | None = None  # when the note was stated (fields.stated_time), or its part (fields.heading_day), ISO 8601
    rehearsed: bool = False  # this recall counted as a use of the note and wrote that back
    lexical_only: bool = False  # ranked by BM25 alone: vectors still being filled in, or the store unreachable
    #: `similarity` is below the embedder's weak bar (calibration.py): it says little about the query
    weak: bool = False
    #: what the vault records about it and another hit: "superseded by #1", "supersedes #3"; "" otherwise
    change: str = ""
    #: how it was ranked, when asked for (`recall(..., explain=True)`): see `explain_hit`
    explain: dict[str, Any] | None = None
    #: the other notes that state what this hit states in the same words (a line copied from day
    #: to day), newest first: folded into this hit (`fold_copies`), not hits of their own
    also_in: list[str] = field(default_factory=list)

    def to_dict(self, *, with_text: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not with_text:
            out.pop("text")
        if self.explain is None:
            out.pop("explain")
        return out


def to_hit(query: str, r: Ranked, note: NoteRow, weak_below: float) -> Hit:
    c, state = r.cand, r.state
    stated, section = state.stated.when, heading_day(c.chunk.heading)  # a diary's part: its heading's day
    date = (stated.isoformat() if state.stated.exact else stated.date().isoformat()) if stated is not None else None
    if section is not None and (stated is None or section != stated.date()):
        date = section.isoformat()
    similarity = c.answer_similarity
    return Hit(
        path=note.path,
        node_id=note.node_id,
        title=note.title,
        heading=c.chunk.heading,
        snippet=snippet(c.chunk.text, query, terms=c.terms),  # its content words (issue 40)
        score=round(r.score, 6),
        relevance=round(c.relevance, 6),
        similarity=round(similarity, 6),
        strength=round(r.strength, 6),
        tier=state.tier,
        pinned=state.pinned,
        dormant=r.dormant,
        reactivated=r.reactivated,
        superseded_by=list(state.superseded_by),
        chunk_id=c.chunk.chunk_id,
        text=c.chunk.text,
        date=date,
        weak=is_weak(r, weak_below),
    )


@dataclass
class Ranking:
    """What recall's rule made of a query: every admitted candidate, in order (not cut to k)."""

    ranked: list[Ranked]
    notes: dict[str, NoteRow]
    mode: Mode
    lexical_only: bool
    #: the cosine below which a hit is weak, whatever the query names (-inf when no hit has a
    #: cosine: a keyword-only answer)
    measured_below: float
    #: the names the query asks about that no note mentions (`unknown_names`)
    unknown: list[str] = field(default_factory=list)
    #: the query asks a price that none of its first hits states (question.unstated_price)
    unstated_price: bool = False
    #: the bar the first hit is weak below when the query asks (the calibration's `asked`,
    #: `rules.first_hit_asked`); None: the first hit is judged as every other one
    first_below: float | None = None

    @property
    def weak_below(self) -> float:
        """The bar a hit is weak below: the measured one, or +inf when nothing in the vault answers
        the query (`silent`): every hit is weak."""
        return float("inf") if self.silent else self.measured_below

    @property
    def silent(self) -> bool:
        """Nothing in the vault answers the query: it names what no note mentions, or asks a price
        none of its first hits states."""
        return bool(self.unknown) or self.unstated_price

    def bar_for(self, first: bool) -> float:
        """The bar a hit is weak below: `first_below` for the first of the order when the query asks
        (`first`: the first hit, or the copy of it recall shows), `weak_below` for every other one (and
        for all when nothing answers the query: `silent`)."""
        return self.first_below if first and self.first_below is not None and not self.silent else self.weak_below

    def top(self, k: int, rules: ReadRules = DEFAULT_RULES) -> list[tuple[Ranked, tuple[str, ...]]]:
        """The first k hits, each with the copies it folds: the order with copies folded
        (`fold_copies`), cut to k."""
        return fold_copies(self.ranked, k, rules)

    def hits(self, query: str, top: Sequence[tuple[Ranked, tuple[str, ...]]]) -> list[Hit]:
        """`top` (`Ranking.top`) as hits."""
        hits = [to_hit(query, r, self.notes[r.node_id], self.bar_for(i == 0)) for i, (r, _) in enumerate(top)]
        for h, (_, also) in zip(hits, top, strict=True):
            h.lexical_only = self.lexical_only
            h.also_in = list(also)
        mark_changes(hits, [r for r, _ in top])
        return hits


def copy_keys(text: str, day: dt.date | None) -> tuple[str, ...]:
    """What a copy of this line shares with it: the text, case aside, and, when it holds an ISO
    date, the text with each date read as days from its note's day ("Water plants 📅 2026-10-22"
    on the 21st is "… dayplus1", as "📅 2026-11-13" is on the 12th November: repeats.days_from).
    Cheap on purpose: recall asks it of every candidate (a regex only when a date may be there)."""
    low = text.lower()
    if day is not None and ("-0" in low or "-1" in low) and has_iso_date(low):
        return (low, days_from(low, day))
    return (low,)


def fold_copies(
    ranked: Sequence[Ranked], k: int, rules: ReadRules = DEFAULT_RULES
) -> list[tuple[Ranked, tuple[str, ...]]]:
    """Stage 5, fold: the first k hits of the order with each line copied into several notes folded into one
    hit: a note whose statement (its best answer window, else its chunk) is a copy of a hit's
    above, the same text with its dates moved on with its note's day (`copy_keys`), is not a hit
    of its own but is named in that hit's `also_in`, newest first. The hit shows the newest dated
    copy, in the place of the first (the last time the vault says it), as a prefetch entry does.
    Two chunks of one note are never copies, and a note stated on a day the query names answers
    for its day: never a copy, and shown when its copies fold into it. A later note is a copy of
    the hit whatever k is, so k never changes the hits or what they fold (a note after the k-th
    hit that copies none of them is a later hit or its copy). On the labelled real vault, 56 of
    184 questions had a copy in recall's top 5. Without `rules.fold_copies`, every note is a hit."""
    if not rules.fold_copies:
        return [(r, ()) for r in ranked[:k]]
    kept: list[list[Ranked]] = []  # each hit and its copies, the first found first
    by_key: dict[str, int] = {}  # a copy's key -> its hit in `kept`
    for r in ranked:
        said = r.cand.window.text if r.cand.window is not None else r.cand.chunk.body
        keys = copy_keys(said, r.state.stated.day())
        # a note of a day the query names is that day's answer: shown, never a copy
        found = [] if r.cand.on_day else [by_key[x] for x in keys if x in by_key]
        at = min(found) if found else None  # the first hit it copies
        if at is not None and all(x.node_id != r.node_id for x in kept[at]) and says_something(said):
            kept[at].append(r)
        elif len(kept) < k:
            at = len(kept)
            kept.append([r])
        else:
            continue
        for x in keys:
            by_key.setdefault(x, at)
    return [_newest_copy(group) for group in kept]


def _newest_copy(group: Sequence[Ranked]) -> tuple[Ranked, tuple[str, ...]]:
    """A hit and its copies (the first found first) as the copy it shows, the newest dated one (the
    first when it is a named day's note), and the others' paths, newest first."""
    by_day = sorted(group, key=lambda x: x.state.stated.day() or dt.date.min, reverse=True)
    shown = by_day[0] if by_day[0].state.stated.day() is not None and not group[0].cand.on_day else group[0]
    return shown, tuple(x.path for x in by_day if x is not shown)


def on_named_days(ws: Workspace, query: str, now: dt.datetime) -> tuple[frozenset[str], frozenset[str]]:
    """The notes stated on a day the query names (search/days.py), by their own day, and the parts
    of notes a heading states on it (fields.heading_day: `## 2022-10-14 (3h)` of a diary kept in one
    note): what recall puts first and prefetch shows however far the turn's words are from theirs."""
    named = days.named_days(query, now.date())
    if not named:
        return frozenset(), frozenset()
    near = ws.catalog.notes_by_ids(ws.catalog.stated_near(days.spans(named)))
    notes = frozenset(i for i, n in near.items() if ws.decay.state(n.meta, n.path).stated.day() in named)
    years = sorted({str(d.year) for d in named})
    sections = frozenset(c for c, heading in ws.catalog.headings_holding(years) if heading_day(heading) in named)
    return notes, sections


def rank_query(
    ws: Workspace,
    query: str,
    *,
    mode: Mode = "hybrid",
    decay: bool = True,
    now: dt.datetime,
    granularity: Granularity = "note",
    include_staged: bool = False,
    allow: AbstractSet[str] | None = None,
    qvec: np.ndarray | None = None,
    judge: bool = False,
    need: int | None = None,
) -> Ranking:
    """The read path's first four stages for one query (search.py: pool, score, pick; ranking.order),
    under the workspace's rules (`ws.read_rules`): recall's rule, which prefetch shares (handing over
    the turn's vector, `qvec`, so it is embedded once). The answers' cosines are computed when decay
    needs them or `judge` asks (prefetch's weak bar)."""
    rules = ws.read_rules
    searcher = ws.searcher()
    mode, lexical_only = _mode(ws, searcher, mode)
    exclude = () if include_staged else (ws.config.staging_folder.rstrip("/") + "/",)
    on_day, day_sections = on_named_days(ws, query, now) if rules.named_days else (frozenset(), frozenset())
    # No chunk has a vector yet (the first seconds of a first index): no cosine to judge
    # dormancy by, so the query is not embedded and no model is loaded for this answer.
    similarity = (decay or judge) and ws.vectors().embedded > 0
    search = functools.partial(
        searcher.search,
        query,
        granularity=granularity,
        exclude_prefixes=exclude,
        allow=allow,
        need=need,
        on_day=on_day,
        day_sections=day_sections,
        rules=rules,
    )
    cands, died = _candidates(ws, search, mode=mode, lexical_only=lexical_only, similarity=similarity, qvec=qvec)
    lexical_only = lexical_only or died
    notes = ws.catalog.notes_by_ids(sorted({c.node_id for c in cands}))
    cands = [c for c in cands if c.node_id in notes]  # a watcher may have re-identified one meanwhile
    notes = with_identities(ws, notes)  # `supersedes: ['[[Old]]']` -> identities, which ranking compares
    # Cosines were computed (dense or hybrid, or bm25 when decay needed them): a hit below the bar
    # is weak even when every cosine is 0. None were (the store down, vectors still filling in for
    # bm25 without decay): nothing is judged weak, as nothing was measured.
    measured = not died and searcher.has_dense and (similarity or (mode != "bm25" and not lexical_only))
    judged = measured or any(c.similarity != 0.0 for c in cands)
    measured_below = ws.calibration.weak if judged else float("-inf")
    question = asks(query)
    ranked = order(
        cands,
        notes,
        model=ws.decay,
        now=now,
        decay=decay,
        k=len(cands),
        vectors=searcher.vectors_of,
        cal=ws.calibration,
        rules=rules,
        asks_now=asks_how_things_are(query),
        asks=question,
        weak_below=measured_below,  # a successor that answers nothing moves nothing
        query=query,
    )
    unknown = unknown_names(ws, query, allow) if rules.unknown_names_silence and ranked else []
    head = [r.cand.chunk.text for r in ranked[: rules.head]]
    no_price = rules.unstated_price_silence and bool(ranked) and unstated_price(query, head)
    # a question's first hit is what recall found when asked: judged by the lower `asked` bar
    first_below = ws.calibration.asked_bar if judged and rules.first_hit_asked and question else None
    return Ranking(ranked, notes, mode, lexical_only, measured_below, unknown, no_price, first_below)


def _candidates(
    ws: Workspace,
    search: functools.partial[list[Candidate]],
    *,
    mode: Mode,
    lexical_only: bool,
    similarity: bool,
    qvec: np.ndarray | None,
) -> tuple[list[Candidate], bool]:
    """The scored candidates (search.py's pool, score and pick), and whether the vector store died
    on the way: then the same search runs again over BM25 alone, on a Searcher without vectors."""
    try:
        # bm25 chosen on a complete index still finds the sentence that answers (what decides
        # between two statements of a fact) when decay needs it; not while vectors fill in or
        # the store is down
        windows = ws.window_scorer() if not lexical_only and (mode != "bm25" or similarity) else None
        return search(mode=mode, with_similarity=similarity, windows=windows, qvec=qvec), False
    except VectorStoreUnavailableError as exc:  # the server died mid-run
        ws.lexical_only(exc)
        fallback = Searcher(ws.catalog, None, ws.embedder).search
        return fallback(*search.args, **{**search.keywords, "mode": "bm25"}), True


def unknown_names(ws: Workspace, query: str, allow: AbstractSet[str] | None) -> list[str]:
    """The names the query asks about (question.names_in) that no note it may see mentions: then
    nothing in the vault answers it ("how do I set up a Kubernetes ingress" of a vault that never
    says Kubernetes), however close some note's words are. A name the question inflects is
    mentioned when its stem is ("I'm SSHing into the box" of a vault that says SSH)."""
    return [n for n in names_in(query) if not any(ws.catalog.lexical_search(f, 1, allow) for f in name_forms(n, query))]


def _mode(ws: Workspace, searcher: Searcher, mode: Mode) -> tuple[Mode, bool]:
    """The mode a query can be answered in, and whether that is BM25 alone for want of vectors."""
    if not searcher.has_dense and mode != "bm25":
        return "bm25", True  # the server is unreachable and lexical fallback is on
    if mode == "hybrid" and not ws.vectors().complete:
        # A first index writes every note before it embeds them: until all have vectors, rank
        # every note by BM25 rather than favour the ones embedded first.
        return "bm25", True
    return mode, False


def recall(
    ws: Workspace,
    query: str,
    k: int = 5,
    *,
    mode: Mode = "hybrid",
    decay: bool = True,
    now: dt.datetime | None = None,
    touch: bool = True,
    granularity: Granularity = "note",
    include_staged: bool = False,
    filters: NoteFilter | None = None,
    explain: bool = False,
) -> list[Hit]:
    """See `Memory.recall`. `filters` restrict the candidates before ranking (filters.py)."""
    if not 1 <= k <= MAX_K:
        raise ConfigError(f"k = {k}: recall returns 1 to {MAX_K} notes; ask for fewer")
    allow = eligible(ws, filters)
    if not query.strip() or allow == set():
        return []
    now = now or ws.clock()
    got = rank_query(
        ws,
        query,
        mode=mode,
        decay=decay,
        now=now,
        granularity=granularity,
        include_staged=include_staged,
        allow=allow,
        need=k,
    )
    folded = got.top(k, ws.read_rules)
    hits = got.hits(query, folded)
    if explain:
        top = [r for r, _ in folded]
        for i, (h, r) in enumerate(zip(hits, top, strict=True), 1):
            h.explain = explain_hit(i, r, hits, top, mode=got.mode, decay=decay)
            h.explain["unknown"] = list(got.unknown)
            h.explain["unstated_price"] = got.unstated_price
            if h.also_in:  # recall.fold_copies, in the README's words
                shown = "the day the query names" if r.cand.on_day else "the newest copy shown"
                h.explain["moved"].append(
                    f"a line copied into {len(h.also_in) + 1} notes, folded into one hit ({shown}; the others: also in)"
                )
    if touch and not ws.config.read_only:
        from .edits import comes_back_on_its_title_only, rehearse  # the write path: imported only to write

        strong = ws.calibration.strong  # a dormant note matched on its title alone is not used (issue 40)
        used = [h for h in used_hits(ws, hits) if not comes_back_on_its_title_only(folded[0][0], h.title, strong)]
        written = set(rehearse(ws, [h.node_id for h in used], now=now))
        for h in used:
            h.rehearsed = h.path in written
    return hits


def mark_changes(hits: list[Hit], ranked: list[Ranked]) -> None:
    """Mark the hits the vault says supersede one another (ranking.change_label)."""
    pos = {r.node_id: i + 1 for i, r in enumerate(ranked)}
    succ = succession(ranked)
    for h, r in zip(hits, ranked, strict=True):
        replaces, replaced_by = succ[r.node_id]
        h.change = change_label(pos[r.node_id], [pos[x] for x in replaces], [pos[x] for x in replaced_by])


def day_of(date: str | None) -> str | None:
    return date[:10] if date else None


def explain_hit(
    place: int, r: Ranked, hits: list[Hit], ranked: list[Ranked], *, mode: Mode, decay: bool
) -> dict[str, Any]:
    """How one hit was ranked: the parts of its relevance, its decay facts (and the cue that
    reactivated it, as the gate named it), and why it moved."""
    c, st = r.cand, r.state
    path_of = {x.node_id: h.path for x, h in zip(ranked, hits, strict=True)}
    why = list(r.moves)
    if r.relevance_rank and r.relevance_rank < place and not r.moves:
        why.append(
            f"moved below #{place - 1}: "
            + (
                "a later statement of the same thing ranks first"
                if r.same_fact
                else "the note that supersedes it ranks first"
            )
        )
    for s in st.superseded_by:  # below a successor that replaces what it says here (ranking.successors_first)
        why.append(f"superseded by {path_of.get(s, s)}: " + ("ranks below it" if r.replaced else "keeps its place"))
    return {
        "place": place,
        "relevance_rank": r.relevance_rank,
        "mode": mode,
        "bm25": round(c.lexical, 4),
        "dense": round(c.similarity, 4),
        "window": None if c.window is None else {"text": c.window.text, "similarity": round(c.window.similarity, 4)},
        "coverage": None if c.coverage is None else round(c.coverage, 4),
        "relevance": round(c.relevance, 4),
        "on_day": c.on_day,
        "decay": decay,
        "strength": round(r.strength, 4),
        "tier": st.tier,
        "pinned": st.pinned,
        "stated": None
        if st.stated.when is None
        else {"when": day_of(st.stated.when.isoformat()), "source": st.stated.source},
        "dormant": r.dormant,
        "reactivated": r.reactivated,
        "cued_by": r.cued_by or None,
        "same_fact": [path_of[n] for n in r.same_fact if n in path_of],
        "repeats": r.repeats or None,
        "moved": why,
    }


def used_hits(ws: Workspace, hits: list[Hit]) -> list[Hit]:
    """The hit that clearly answered the query: the one recall rehearses (`rehearse` policy).

    Only the first hit, and only when its cosine to the query reaches the embedder's clear-match
    bar (`calibration.strong`: an absolute scale, unlike fused relevance, whose top hit is always
    about 1), and the policy lets us write to it: `all`, or `memories` (notes in the memory folder
    only), or `none`. A lower hit is never rehearsed, however close: the person or agent read the
    answer, not the note below it (on a person's vault, "when is the boiler service" answered by
    Boiler.md rehearsed the daily note at #2 about the plumber).
    """
    cfg = ws.config
    if cfg.rehearse == "none" or not hits:
        return []
    from .edits import memory_folder

    top = hits[0]
    if top.similarity < ws.calibration.strong:
        return []
    folder = memory_folder(ws)
    if cfg.rehearse == "memories" and folder and not in_folder(top.path, folder):
        return []
    return [top]


__all__ = [
    "MAX_K",
    "Hit",
    "Ranking",
    "explain_hit",
    "copy_keys",
    "fold_copies",
    "mark_changes",
    "rank_query",
    "recall",
    "to_hit",
    "used_hits",
]
