"""The days a query names: "what did I do on October 17", "on 1 February, 2023", "2026-10-17".

A day named in a query is evidence of which notes it asks about: those stated that day (a daily
note's name or `date`, a session's `date`, a memory's `created`: fields.stated_time). Recall puts
them first (search.py, ranking.relevance_order), and prefetch shows them even when their words are
far from the turn's ("what did I do" is far from any log). Pure: no I/O, no clock (`today` is a parameter).

Understood: ISO dates (2026-10-17); a month's name or its abbreviation with a day, either way
round, with or without the year ("October 17", "Oct 17th, 2026", "17 October", "the 3rd of June,
2023"). A day without a year is its occurrence nearest today. Not read as days: "today", "yesterday",
weekdays ("on Monday": which one?) and spans ("last week", "in October"). In a chat they are
mostly narration ("I went hiking yesterday"), not a question about that day's notes, and prefetch
would show that day to every such turn; their words still count for relevance.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

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


def _date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def named_days(query: str, today: dt.date) -> tuple[dt.date, ...]:
    """The days `query` names, in the order it names them, each once; () when it names none. A day
    without a year is its occurrence nearest `today`: "October 17" asked on 1 December is the one
    45 days back, "December 28" asked on 5 January the one of the year before, and "5 December"
    asked on 1 December is four days on (no note yet), never a December of years ago."""
    out: list[dt.date] = []
    for m in _NAMED.finditer(query):
        if m["iso"]:
            found = _date(int(m["iy"]), int(m["im"]), int(m["id"]))
        else:
            n = "1" if m["m1"] else "2"
            month, day, year = _MONTHS[m["m" + n].lower()], int(m["d" + n]), m["y" + n]
            if year:
                found = _date(int(year), month, day)
            else:
                near = [d for y in (today.year - 1, today.year, today.year + 1) if (d := _date(y, month, day))]
                found = min(near, key=lambda d: (abs((d - today).days), d)) if near else None
        if found is not None and found not in out:
            out.append(found)
    return tuple(out)


def spans(days: Sequence[dt.date]) -> list[tuple[float, float]]:
    """What the catalog is asked for the notes stated on `days` (Catalog.stated_near): epoch ranges
    a day wider on both sides (a note's day is the day in the offset it wrote, the catalog's is
    UTC's); the caller keeps the notes whose own day is one of `days`."""
    out = []
    for d in days:
        start = dt.datetime(d.year, d.month, d.day, tzinfo=dt.UTC)
        out.append(((start - dt.timedelta(days=1)).timestamp(), (start + dt.timedelta(days=2)).timestamp()))
    return out


__all__ = ["named_days", "spans"]
