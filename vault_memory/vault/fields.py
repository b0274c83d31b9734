"""Frontmatter values, read in one place: times, booleans, numbers, lists, and when a note was stated.

YAML hands us `2025-10-24` as a date, `yes` as True, `"yes"` as a string, `[[2024-01-01]]`
as a list in a list: every reader of a note's fields goes through these functions, so
`pinned: "yes"` and `pinned: yes` mean the same everywhere, and so does `pinned: 'false'`.

Time comes only from evidence in the vault (issue 21). When a note was *stated* comes from
its own dates: `updated`/`modified`-like and `created`/`date`-like properties (the latest of
them wins: an edit restates the note; `[[2024-01-01]]` link-valued dates included), else a
daily note's file name (`2024-03-05.md`, the vault's daily-notes format, or, for a note with no
date property, one whole date the name holds: `May 5th, 2022, Thursday.md`, obsidian.date_in_name;
a memory named "My dentist appointment is on 2026-12-03" was stated when it was written, not then). Our own commit
time is such a property (`created`, written when a memory is committed). Nothing else: a file
time is what a clone, a copy, a checkout or a sync download set, so it is never read, and a
note with no date of its own is *undated* (`Stated.when is None`): relevance alone places it.
The owned key `stated`, which earlier versions wrote from a file's mtime, is no longer read.
A time without an offset is read as UTC, so every machine that holds the same bytes computes
the same dates and strengths (a day is the day the note wrote, whatever the machine's zone).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .obsidian import DEFAULT_DAILY_FORMAT, NAMED_DATE, date_from_name, date_in_name

TRUE_WORDS = frozenset({"true", "yes", "on", "1", "y"})
FALSE_WORDS = frozenset({"false", "no", "off", "0", "n", ""})

# Property names (lower case, without spaces, '_' or '-') that date a note's content.
UPDATED_KEYS = (
    "updated",
    "modified",
    "lastmodified",
    "datemodified",
    "dateupdated",
    "lastupdated",
    "updatedat",
    "modifiedat",
    "edited",
    "lastedited",
    "lastmod",  # Hugo, Front Matter CMS
    "lastmodifiedat",  # Jekyll
    "lasteditedtime",  # a Notion export
)
CREATED_KEYS = (
    "created",
    "date",
    "datecreated",
    "createdat",
    "creationdate",
    "createddate",
    "day",
    "createdtime",  # a Notion export
    "published",  # a blog post's
    "publishdate",
)
#: Retired owned key: earlier versions wrote the day a file's mtime carried here. Not read any
#: more (a clone's mtime is the day of the clone); removed from a note when we next write into it.
STATED_KEY = "stated"

_LINK = re.compile(r"^\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]$")


def local_zone() -> dt.tzinfo:
    """The machine's local time zone (for times we write for a person: today's daily note)."""
    tz = dt.datetime.now().astimezone().tzinfo
    return tz if tz is not None else dt.UTC


def parse_time(value: Any) -> dt.datetime | None:
    """A frontmatter time in any form YAML gives us, timezone-aware; naive times are UTC.

    A date (no time of day) is its midnight, UTC: the same instant on every machine.
    `[[2024-01-01]]` (an Obsidian link to a daily note, quoted or not) is that day. Besides ISO,
    the forms tools write for people: a month's name with the day and year (`Thursday, October
    14th 2021, 2:42:26 pm`, the Obsidian Linter's default for `date created`; `November 5th,
    2021, Friday`), and epoch seconds or milliseconds (Dendron's `created: 1636492098692`).
    """
    return _read_time(value)[0]


def has_time_of_day(value: Any) -> bool:
    """Whether a frontmatter time says more than the day (`2024-03-05T10:00` vs `2024-03-05`)."""
    return _read_time(value)[1]


#: A clock time after a written date: `2:42:26 pm`, `14:05`.
_CLOCK = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\s*([AaPp])\.?[Mm]\.?)?(?![\w:])")
#: Epoch seconds and milliseconds, 2001-09-09 to 2286: no year, day or count of a note is that long.
_EPOCH_S = (10**9, 10**10)
_EPOCH_MS = (10**12, 10**13)


def _read_time(value: Any) -> tuple[dt.datetime | None, bool]:
    """`parse_time`, and whether the value gave a time of day."""
    while isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]  # `date: [[2024-01-01]]` unquoted is YAML for a list in a list
    if value is None or isinstance(value, bool):
        return None, False
    exact = False
    if isinstance(value, dt.datetime):
        out, exact = value, True
    elif isinstance(value, dt.date):
        out = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, int):
        for (low, high), unit in ((_EPOCH_S, 1), (_EPOCH_MS, 1000)):
            if low <= value < high:
                return dt.datetime.fromtimestamp(value / unit, tz=dt.UTC), True
        return None, False
    elif isinstance(value, str):
        text = value.strip()
        link = _LINK.match(text)
        if link:
            text = link.group(1).strip()
        if not text:
            return None, False
        try:
            out = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            exact = "T" in text or " " in text
        except ValueError:
            written = _written_time(text)
            if written is None:
                return None, False
            out, exact = written
    else:
        return None, False
    return (out if out.tzinfo is not None else out.replace(tzinfo=dt.UTC)), exact


def _written_time(text: str) -> tuple[dt.datetime, bool] | None:
    """A date written for people (one whole date with its year, as `obsidian.date_in_name` reads
    a file name) and the clock time after it, if any; None when the text holds no such date, or two."""
    day = date_in_name(text)
    if day is None:
        return None
    out = dt.datetime(day.year, day.month, day.day)
    clock = _CLOCK.search(text)
    if clock is None:
        return out, False
    hour, minute, second = int(clock[1]), int(clock[2]), int(clock[3] or 0)
    if clock[4]:
        if not 1 <= hour <= 12:
            return out, False
        hour = hour % 12 + (12 if clock[4] in "Pp" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return out, False
    return out.replace(hour=hour, minute=minute, second=second), True


def parse_bool(value: Any) -> bool:
    """True for true/yes/on/1 (any case, quoted or not); False for everything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in TRUE_WORDS
    if isinstance(value, (int, float)):
        return value != 0
    return False


def parse_int(value: Any, default: int = 0) -> int:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else default
    except (TypeError, ValueError, OverflowError):
        return default


def parse_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value if v is not None and str(v).strip())
    text = str(value).strip()
    return (text,) if text else ()


def property_key(name: str) -> str:
    """A property's name as rules compare it: lower case, without spaces, '_' or '-'."""
    return re.sub(r"[\s_\-]+", "", name).lower()


def property_line(name: str, value: str) -> str:
    """A stated property as text (notefile.stated_properties' pairs): `installed: 2019`. What the
    index embeds (markdown.chunk_note), hashes (notefile.content_hash) and reads as a window
    (windows.about) is this one line."""
    return f"{name}: {value}"


@dataclass(frozen=True)
class Stated:
    """When a note's content was stated, and how sure that is."""

    when: dt.datetime | None
    source: str  # "property:<key>" | "file name" | "none"
    exact: bool  # a time of day from the note itself; else only the day counts

    @property
    def dated(self) -> bool:
        return self.when is not None

    def day(self) -> dt.date | None:
        """The day the note wrote (in the offset it wrote, UTC when it gave none)."""
        return None if self.when is None else self.when.date()

    @property
    def edited(self) -> bool:
        """Whether this date is an edit's (`updated`, `modified`, `date modified`...): the note is
        one its owner keeps up, not only one written on a day."""
        return self.source.startswith("property:") and property_key(self.source.split(":", 1)[1]) in UPDATED_KEYS


def text_dates(meta: Mapping[str, Any], stem: str = "", daily_format: str = DEFAULT_DAILY_FORMAT) -> list[Stated]:
    """Every date the note itself gives (properties and a daily note's file name)."""
    out: list[Stated] = []
    for name, value in meta.items():
        key = property_key(str(name))
        if key in UPDATED_KEYS or key in CREATED_KEYS:
            when = parse_time(value)
            if when is not None:
                out.append(Stated(when, f"property:{name}", has_time_of_day(value)))
    named = date_from_name(stem, daily_format) if stem else None
    if named is None and stem and not out:  # a date in the name of a note with no date of its own
        named = date_in_name(stem)  # ("May 5th, 2022, Thursday.md" named by another format than the vault's)
    if named is not None:
        out.append(Stated(dt.datetime(named.year, named.month, named.day, tzinfo=dt.UTC), "file name", False))
    return out


UNDATED = Stated(None, "none", False)

#: A heading that opens with a date (as a file name holds one: obsidian.NAMED_DATE), a weekday before
#: it or not: `## 2022-10-03 (2h)`, `### [[September 7th, 2021, Tuesday]]`, `## Monday, March 4, 2024`.
_OPENS_WITH_DATE = re.compile(
    r"(?:(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday)?\.?,?\s+)?"
    rf"({NAMED_DATE.pattern})",
    re.IGNORECASE,
)
#: Between the headings of a chunk's heading path ("Thesis diary > 2022-10-14 (3h)"): markdown.py
#: writes it, heading_day reads it.
HEADING_SEP = " > "
_HEADING_LINK = re.compile(r"\[\[([^\]|#]*)(?:#[^\]|]*)?(?:\|([^\]]*))?\]\]")


def heading_day(heading: str) -> dt.date | None:
    """The day a part of a note is stated by its heading: the innermost heading of its path (`A > B >
    C`, as chunks carry it) that opens with a date, in the forms a note's name is read in
    (obsidian.date_in_name), a wikilink's text included and a weekday before it or not. A diary or
    log kept in one note (`## 2022-10-03 (2h)`, a journal's `### [[September 7th, 2021, Tuesday]]`,
    a person's meetings under `## [[2020-12-23]]`) states each part on its own day. Not a day: a
    heading that only mentions one ("Plans for 2024-03-05"), a month ("Summary of September 2020")
    or a week ("Week of April 18th, 2022")."""
    for segment in reversed(heading.split(HEADING_SEP)):
        # a link read as its text, and as its target (`[[daily/2024-03-05|Tuesday]]`)
        as_text = _HEADING_LINK.sub(lambda m: m[2] or _base(m[1]), segment)
        for text in dict.fromkeys((as_text, _HEADING_LINK.sub(lambda m: _base(m[1]), segment))):
            m = _OPENS_WITH_DATE.match(text.lstrip(" \t#*_~`'\"([{<>-–—:•·📅🗓"))
            if m is not None and (day := date_in_name(m[1])) is not None:
                return day
    return None


def _base(target: str) -> str:
    return target.rsplit("/", 1)[-1]


def stated_time(meta: Mapping[str, Any], stem: str = "", daily_format: str = DEFAULT_DAILY_FORMAT) -> Stated:
    """When the note was stated: the latest of its own dates (the module docstring), else undated."""
    dates = text_dates(meta, stem, daily_format)
    return max(dates, key=lambda s: (s.when, s.exact, s.edited)) if dates else UNDATED  # a tie: the edit names it


def stated_epoch(meta: Mapping[str, Any], stem: str = "", daily_format: str = DEFAULT_DAILY_FORMAT) -> float | None:
    """`stated_time` as epoch seconds (None: undated), as the catalog keeps it for date filters."""
    when = stated_time(meta, stem, daily_format).when
    return None if when is None else when.timestamp()


__all__ = [
    "HEADING_SEP",
    "STATED_KEY",
    "UNDATED",
    "Stated",
    "heading_day",
    "local_zone",
    "parse_bool",
    "parse_int",
    "parse_list",
    "parse_time",
    "property_key",
    "property_line",
    "stated_epoch",
    "stated_time",
    "text_dates",
]
