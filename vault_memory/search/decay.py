"""Forgetting, computed when reading: pure functions of frontmatter and `now`.

strength = 0.5 ** (age / half_life), where age runs from the later of the last rehearsal
(`last_accessed`, written when recall used the note) and the time the note was stated
(fields.stated_time: its own date properties, `created` among them, or a daily note's name).
Both are evidence written in the note, so the same bytes give the same strength on every
machine, whatever its file times say. A note with neither has no age: strength 1, as for a
pinned note. Below `dormant_below` a note is dormant: left out of recall unless a query
matches it strongly (then it is reactivated). Nothing is deleted.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Protocol

from ..vault.fields import UNDATED, Stated, parse_bool, parse_list, parse_time, stated_time
from ..vault.obsidian import DEFAULT_DAILY_FORMAT, date_from_name, date_in_name

TIERS = ("short", "long")
_DAY = 86400.0
STATE_MEMO = 50_000  # notes whose decay facts a DecayModel remembers (see DecayModel._states)


@dataclass(frozen=True)
class MemoryState:
    """The decay-relevant facts of one note, read from its frontmatter."""

    anchor: dt.datetime | None  # when the curve last restarted
    anchor_source: str  # last_accessed, or where `stated` came from (fields.Stated.source)
    tier: str
    pinned: bool
    superseded_by: tuple[str, ...]
    supersedes: tuple[str, ...]
    status: str  # "" for ordinary notes, "staged" for staged memories
    expires: dt.datetime | None
    needs_review: bool
    kind: str = ""  # the frontmatter's `type` (or `kind`), lower case
    #: notes our write path found this one states differently when it was saved (conflicts.py)
    conflicts_with: tuple[str, ...] = ()
    stated: Stated = UNDATED  # when the content was stated (fields.stated_time)
    #: a document kept up: last dated by an edit (`date modified`, `updated`) and not named by its day
    kept_up: bool = False


# A note of one of these types records what happened at a time; a newer one does not update it.
EPISODIC_TYPES = frozenset({"episode", "episodic", "log", "session", "meeting", "conversation", "transcript", "chat"})


def about_a_subject(state: MemoryState) -> bool:
    """A note about a subject, not a day's log: undated, or last dated by an edit (a document kept
    up: the Obsidian Linter stamps every note it touches with `date modified`, Dendron with
    `updated`) and not named by its day (a daily note or journal page edited later is still that
    day's log). A note dated only by when it was written or happened (`created`, `date`, a chat
    session, a committed memory) is a day's statements. The block's first entry reads on in a note
    about a subject (rules.first_entry_fills)."""
    return state.stated.day() is None or state.kept_up


def is_episodic(state: MemoryState) -> bool:
    """An episodic record (frontmatter `type` or `kind` in EPISODIC_TYPES), not a statement of fact.

    Freshness decides between two statements of a fact ("I use Vim" / "I switched to Helix"),
    not between the records of two different days: recall never reorders episodic notes by
    strength (they still decay, go dormant and reactivate like any note). It is a label, not
    a guess: daily notes and journals often state facts that do change ("switched to Helix
    today"), so dated file names, folders and `type: journal` do not make a note episodic.
    """
    return state.kind in EPISODIC_TYPES


def state_from_meta(meta: Mapping[str, Any], stem: str = "", daily_format: str = DEFAULT_DAILY_FORMAT) -> MemoryState:
    """The decay facts of a note from its frontmatter and its file name's stem (a daily note's date)."""
    stated = stated_time(meta, stem, daily_format)
    # An edit dates what a document says, not when it was last needed: a document kept up (its last
    # date an edit's, its name no day) has no age, as an undated note has none (recall does not
    # rehearse it either). Its date still orders it among statements of one fact, and labels it.
    kept_up = stated.edited and not (stem and (date_from_name(stem, daily_format) or date_in_name(stem)))
    anchor, source = (None, "none") if kept_up else (stated.when, stated.source)
    rehearsed = parse_time(meta.get("last_accessed"))
    if rehearsed is not None and (anchor is None or rehearsed >= anchor):
        anchor, source = rehearsed, "last_accessed"
    tier = str(meta.get("tier") or "long").strip().lower()
    return MemoryState(
        anchor=anchor,
        anchor_source=source,
        tier=tier if tier in TIERS else "long",
        pinned=parse_bool(meta.get("pinned")),
        superseded_by=parse_list(meta.get("superseded_by")),
        supersedes=parse_list(meta.get("supersedes")),
        status=str(meta.get("status") or "").strip().lower(),
        expires=parse_time(meta.get("expires")),
        needs_review=parse_bool(meta.get("needs_review")),
        kind=str(meta.get("type") or meta.get("kind") or "").strip().lower(),
        stated=stated,
        conflicts_with=parse_list(meta.get("conflicts_with")),
        kept_up=kept_up,
    )


class DecaySettings(Protocol):
    """The settings a DecayModel is built from (a Config has them all)."""

    @property
    def half_life_short_days(self) -> float: ...
    @property
    def half_life_long_days(self) -> float: ...
    @property
    def dormant_below(self) -> float: ...


CLEAR_MATCH = "a clear match"  # Gate.cue when the cosine reached the clear-match bar


@dataclass(frozen=True)
class Gate:
    """What the dormancy gate decided for one note and one query."""

    strength: float
    dormant: bool
    admitted: bool  # not dormant, or dormant and cued strongly enough to come back (reactivated)
    cue: str = ""  # what brought a dormant note back, in `--explain`'s words ("" when nothing did)

    @property
    def reactivated(self) -> bool:
        return self.dormant and self.admitted


@dataclass(frozen=True)
class DecayModel:
    half_life_short_days: float = 7.0
    half_life_long_days: float = 60.0
    dormant_below: float = 0.1
    daily_format: str = DEFAULT_DAILY_FORMAT  # the vault's daily-note file names date those notes
    # The facts of notes seen before: recall asks for ~200 candidates per query, mostly the same
    # notes again, and reading their dates was a fifth of a warm recall. The catalog hands back
    # the same NoteRow (and frontmatter dict, read-only) while a note is unchanged, so the memo is
    # keyed by that dict's identity and holds the dict, so the id cannot be reused meanwhile.
    _states: dict[int, tuple[Mapping[str, Any], str, MemoryState]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @classmethod
    def from_settings(cls, s: DecaySettings, *, daily_format: str = DEFAULT_DAILY_FORMAT) -> DecayModel:
        """The model a Config (or anything with the same fields) describes."""
        return cls(
            half_life_short_days=s.half_life_short_days,
            half_life_long_days=s.half_life_long_days,
            dormant_below=s.dormant_below,
            daily_format=daily_format,
        )

    def state(self, meta: Mapping[str, Any], path: str = "") -> MemoryState:
        """The decay facts of the note at `path` (its stem may be a daily note's date)."""
        hit = self._states.get(id(meta))
        if hit is not None and hit[0] is meta and hit[1] == path:
            return hit[2]
        state = state_from_meta(meta, PurePosixPath(path).stem if path else "", self.daily_format)
        if len(self._states) >= STATE_MEMO:
            self._states.clear()
        self._states[id(meta)] = (meta, path, state)
        return state

    def gate(
        self,
        state: MemoryState,
        now: dt.datetime,
        similarity: float,
        cue: Callable[[], str] | None = None,
        *,
        strong: float = 0.5,
    ) -> Gate:
        """The one dormancy gate (recall and prefetch share it through ranking.rank): a dormant note
        comes back only when the query matches it clearly (cosine >= `strong`, the embedder's
        clear-match bar: calibration.py), or `cue()` names how the query points at it specifically
        (asked only then: it may cost a text scan; "" for no cue). The gate says which held."""
        strength = self.strength(state, now)
        dormant = not state.pinned and strength < self.dormant_below
        if not dormant:
            return Gate(strength, dormant, True)
        # One bar, not a threshold rising with each half-life forgotten (0.1 + 0.12 per halving,
        # capped at `strong`): on the simulated year the single bar gave block precision 0.366
        # against 0.319 for stale share 0.024 against 0.022 (bench lifetime, variant
        # `clear_reactivation` at 8b3a43b).
        if similarity >= strong:
            return Gate(strength, dormant, True, CLEAR_MATCH)
        why = cue() if cue is not None else ""
        return Gate(strength, dormant, bool(why), why)

    def half_life(self, tier: str) -> float:
        return self.half_life_short_days if tier == "short" else self.half_life_long_days

    def strength(self, state: MemoryState, now: dt.datetime) -> float:
        """0.5 ** (age / half_life) in [0, 1]; 1 when pinned or with no known age (undated, never used)."""
        if state.pinned or state.anchor is None:
            return 1.0
        age_days = max(0.0, (now - state.anchor).total_seconds() / _DAY)
        value = math.pow(0.5, age_days / self.half_life(state.tier))
        return min(1.0, max(0.0, value))

    def dormant(self, state: MemoryState, now: dt.datetime) -> bool:
        return not state.pinned and self.strength(state, now) < self.dormant_below

    def rehearse(self, state: MemoryState, now: dt.datetime) -> dict[str, Any]:
        """The frontmatter fields a rehearsal at `now` writes: the curve restarts from `now`.

        No promotion: a `short` memory stays short however often it is used (bench lifetime: a
        promotion to `long` after three days of use kept replaced statements alive for months,
        20 -> 30 stale entries per 100 turns, and bought no recall of old facts). No count of uses
        either: only the last one moves the curve (`access_count` moved no row of bench lifetime;
        retired, removed on our next write). Owned times never move backwards: a `now` before the
        note's last rehearsal (a replay with --now in the past, a clock set back) writes nothing.
        """
        last = state.anchor if state.anchor_source == "last_accessed" else None
        if last is not None and now < last:
            return {}
        return {"last_accessed": now.replace(microsecond=0)}
