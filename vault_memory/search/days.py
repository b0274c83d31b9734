"""The days a query names: "what did I do on October 17", "on 1 February, 2023", "2026-10-17".

A day named in a query is evidence of which notes it asks about: those stated that day (a daily
note's name or `date`, a session's `date`, a memory's `created`: fields.stated_time). Recall puts
them first (search.py, ranking.relevance_order), and prefetch shows them even when their words are
far from the turn's ("what did I do" is far from any log). Pure: no I/O, no clock.

Understood: ISO dates (2026-10-17); a month's name or its abbreviation with a day, either way
round, with or without the year ("October 17", "Oct 17th, 2026", "17 October", "the 3rd of June,
2023"). A day without a year is that day in any year. Not read as days: "today", "yesterday",
weekdays ("on Monday": which one?) and spans ("last week", "in October"). In a chat they are
mostly narration ("I went hiking yesterday"), not a question about that day's notes, and prefetch
would show that day to every such turn; their words still count for relevance.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<{}>\d{{4}}))?"
_NAMED = re.compile(
    r"\b(?:"
    + r"(?P<iso>(?P<iy>\d{4})-(?P<im>\d{2})-(?P<id>\d{2})(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?)"
    + r"|"
    + _MONTH.format("m1")
    + r"\s+"
    + _DAY.format("d1")
    + _YEAR.format("y1")
    + r"|"
    + r"(?:the\s+)?"
    + _DAY.format("d2")
    + r"\s+(?:of\s+)?"
    + _MONTH.format("m2")
    + _YEAR.format("y2")
    + r")(?![\w-])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Day:
    """A day a query names: `year` None for "October 17" (that day in any year)."""

    month: int
    day: int
    year: int | None = None

    def holds(self, day: dt.date | None) -> bool:
        return day is not None and (day.month, day.day) == (self.month, self.day) and self.year in (None, day.year)


def _valid(year: int | None, month: int, day: int) -> bool:
    try:
        dt.date(2024 if year is None else year, month, day)  # 2024: a leap year, so February 29 is a day
    except ValueError:
        return False
    return True


def named_days(query: str) -> tuple[Day, ...]:
    """The days `query` names, in the order it names them, each once; () when it names none."""
    out: list[Day] = []
    for m in _NAMED.finditer(query):
        if m["iso"]:
            found = Day(int(m["im"]), int(m["id"]), int(m["iy"]))
        else:
            n = "1" if m["m1"] else "2"
            year = m["y" + n]
            found = Day(_MONTHS[m["m" + n].lower()], int(m["d" + n]), int(year) if year else None)
        if _valid(found.year, found.month, found.day) and found not in out:
            out.append(found)
    return tuple(out)


def spans(days: Sequence[Day]) -> tuple[list[tuple[float, float]], list[str]]:
    """What the catalog is asked for the notes stated on `days` (Catalog.stated_near): epoch
    ranges for the days with a year and `MM-DD` strings for those without, each a day wider on
    both sides (a note's day is the day in the offset it wrote, the catalog's is UTC's); the caller
    keeps the notes whose own day a Day `holds`."""
    ranges: list[tuple[float, float]] = []
    month_days: set[str] = set()
    for d in days:
        if d.year is not None:
            start = dt.datetime(d.year, d.month, d.day, tzinfo=dt.UTC)
            ranges.append(((start - dt.timedelta(days=1)).timestamp(), (start + dt.timedelta(days=2)).timestamp()))
        else:
            leap = dt.date(2024, d.month, d.day)
            month_days |= {f"{x:%m-%d}" for x in (leap - dt.timedelta(days=1), leap, leap + dt.timedelta(days=1))}
    return ranges, sorted(month_days)


__all__ = ["Day", "named_days", "spans"]
