"""The days a query names: "what did I do on October 17", "on 1 February, 2023", "2026-10-17".

A day named in a query is evidence of which notes it asks about: those stated that day (a daily
note's name or `date`, a session's `date`, a memory's `created`: fields.stated_time). Recall puts
them first (search.py, ranking.relevance_order), and prefetch shows them even when their words are
far from the turn's ("what did I do" is far from any log). Pure: no I/O, no clock (`today` is a parameter).

Understood: ISO dates (2026-10-17); a month's name or its abbreviation with a day, either way
round, with or without the year ("October 17", "Oct 17th, 2026", "17 October", "the 3rd of June,
2023"). A day without a year is its occurrence nearest today. With no such date, a day a question
names by its distance from today, in what it asks ("what did I do two weeks ago", "who did I go
with to the music event last Saturday", "summarise what I did yesterday": `days_back`). Not read as
days: a weekday alone ("on Monday": which one?), spans ("last week", "in October"), and "yesterday"
or "two days ago" in a clause that tells: in a chat that is mostly narration ("I went hiking
yesterday, what should I eat?"), not a question about that day's notes, and prefetch would show
that day to every such turn; their words still count for relevance.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

# absolute: bench/runners/locomo.py loads this file by its path, outside the package
from vault_memory.search.question import asked_spans

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


#: The counts a question writes in words ("two weeks ago", "a month ago").
_COUNTS = dict(
    zip(
        "a an one two three four five six seven eight nine ten eleven twelve".split(),
        (1, 1, *range(1, 13)),
        strict=True,
    )
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_AGO = re.compile(
    r"\b(?P<n>\d{1,3}|" + "|".join(_COUNTS) + r")\s+(?P<unit>day|week|month)s?\s+ago\b"
    r"|\b(?:last|this\s+past)\s+(?P<wd>" + "|".join(_WEEKDAYS) + r")\b"
    r"|\b(?P<before>the\s+day\s+before\s+)?yesterday\b",
    re.IGNORECASE,
)


def _months_back(today: dt.date, n: int) -> dt.date:
    """The day `n` months before `today` (the month's last day when it is shorter)."""
    y, m = divmod(today.year * 12 + today.month - 1 - n, 12)
    for day in (today.day, 30, 29, 28):
        if (found := _date(y, m + 1, day)) is not None:
            return found
    raise AssertionError("every month has a 28th")


def days_back(query: str, today: dt.date) -> tuple[dt.date, ...]:
    """The days a question names by their distance from `today`, in what it asks (question.asked_spans:
    a clause that asks, or the question a request asks to have answered): "what did I do two weeks
    ago", "who did I go with to the music event last Saturday", "summarise what I did on the thesis
    three days ago". "N days ago", a weekday ("last Friday": the latest before today) and
    "yesterday" name one day; "N weeks ago" and "N months ago" are said loosely, and name their day
    and the days either side ("a month ago" asked on 18 April is 17 to 19 March). Not read: a span
    asked for ("how many days ago did I ..."), a clause that tells ("I went hiking yesterday, what
    should I eat?"), a request with no question in it ("diff develop from a week ago"), "last week"
    or "last month" (a span, not a day), "a moment ago", "years ago"."""
    out: list[dt.date] = []
    for clause in asked_spans(query):
        for m in _AGO.finditer(clause):
            if m["unit"]:
                raw = m["n"].lower()
                n = int(raw) if raw.isdigit() else _COUNTS[raw]
                unit = m["unit"].lower()
                if unit == "day":
                    found = [today - dt.timedelta(days=n)]
                else:
                    mid = today - dt.timedelta(weeks=n) if unit == "week" else _months_back(today, n)
                    found = [mid + dt.timedelta(days=d) for d in (-1, 0, 1)]
            elif m["wd"]:
                back = (today.weekday() - _WEEKDAYS.index(m["wd"].lower())) % 7 or 7
                found = [today - dt.timedelta(days=back)]
            else:
                found = [today - dt.timedelta(days=2 if m["before"] else 1)]
            out += [d for d in found if d not in out]
    return tuple(out)


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
    # A day named by its date is the day meant: "what did Joanna finish last Friday, 23 January"
    return tuple(out) or days_back(query, today)


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
