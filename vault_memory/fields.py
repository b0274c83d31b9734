"""Frontmatter values, read in one place: times, booleans, numbers, lists, and when a note was stated.

YAML hands us `2025-10-24` as a date, `yes` as True, `"yes"` as a string, `[[2024-01-01]]`
as a list in a list: every reader of a note's fields goes through these functions, so
`pinned: "yes"` and `pinned: yes` mean the same everywhere, and so does `pinned: 'false'`.

Time lives in the text. When a note was *stated* comes, in this order, from:
1. its own dates: `updated`/`modified`-like and `created`/`date`-like properties (the latest
   of them wins: an edit restates the note), `[[2024-01-01]]` link-valued dates included;
2. a daily note's file name (`2024-03-05.md`, or the vault's daily-notes format);
3. `stated`, the one date key we own: the time the file carried when we first wrote into a
   note that had no date of its own, so that our write does not make it new;
4. the file's modification time, last, and only to the day: after a clone, a copy or a sync
   download mtimes say little, and two a few seconds apart say nothing about which came first.
Naive times are local time.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .obsidian import DEFAULT_DAILY_FORMAT, date_from_name

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
)
CREATED_KEYS = ("created", "date", "datecreated", "createdat", "creationdate", "createddate", "day")
STATED_KEY = "stated"  # owned: see the module docstring, rule 3

_LINK = re.compile(r"^\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]$")


def local_zone() -> dt.tzinfo:
    """The machine's local time zone (what a naive time in a note means)."""
    tz = dt.datetime.now().astimezone().tzinfo
    return tz if tz is not None else dt.UTC


def parse_time(value: Any) -> dt.datetime | None:
    """A frontmatter time in any form YAML gives us, timezone-aware; naive times are local time.

    A date (no time of day) is its local midnight. `[[2024-01-01]]` (an Obsidian link to a
    daily note, quoted or not) is that day.
    """
    while isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]  # `date: [[2024-01-01]]` unquoted is YAML for a list in a list
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, dt.datetime):
        out = value
    elif isinstance(value, dt.date):
        out = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        link = _LINK.match(text)
        if link:
            text = link.group(1).strip()
        if not text:
            return None
        try:
            out = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return out if out.tzinfo is not None else out.replace(tzinfo=local_zone())


def has_time_of_day(value: Any) -> bool:
    """Whether a frontmatter time says more than the day (`2024-03-05T10:00` vs `2024-03-05`)."""
    while isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, dt.datetime):
        return True
    if isinstance(value, str):
        text = value.strip().strip("[]")
        return "T" in text or " " in text.strip()
    return False


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


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).lower()


@dataclass(frozen=True)
class Stated:
    """When a note's content was stated, and how sure that is."""

    when: dt.datetime | None
    source: str  # "property:<key>" | "file name" | "stated" | "mtime" | "none"
    exact: bool  # a time of day from the note itself; else only the day counts

    @property
    def from_text(self) -> bool:
        """Dated by the note itself (a property or its file name), not by us or the file system."""
        return self.source.startswith("property:") or self.source == "file name"

    def day(self) -> dt.date | None:
        return None if self.when is None else self.when.astimezone(local_zone()).date()


def text_dates(meta: Mapping[str, Any], stem: str = "", daily_format: str = DEFAULT_DAILY_FORMAT) -> list[Stated]:
    """Every date the note itself gives (properties and a daily note's file name)."""
    out: list[Stated] = []
    for name, value in meta.items():
        key = _key(str(name))
        if key in UPDATED_KEYS or key in CREATED_KEYS:
            when = parse_time(value)
            if when is not None:
                out.append(Stated(when, f"property:{name}", has_time_of_day(value)))
    named = date_from_name(stem, daily_format) if stem else None
    if named is not None:
        out.append(Stated(dt.datetime(named.year, named.month, named.day, tzinfo=local_zone()), "file name", False))
    return out


def day_of(mtime: float) -> dt.datetime:
    """A file time, to the (local) day: all an mtime can say about when something was written."""
    local = dt.datetime.fromtimestamp(mtime, tz=local_zone())
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def stated_time(
    meta: Mapping[str, Any], mtime: float | None = None, stem: str = "", daily_format: str = DEFAULT_DAILY_FORMAT
) -> Stated:
    """When the note was stated (the module docstring's order)."""
    dates = text_dates(meta, stem, daily_format)
    if dates:
        return max(dates, key=lambda s: (s.when, s.exact))
    ours = parse_time(meta.get(STATED_KEY))
    if ours is not None:
        return Stated(ours, "stated", has_time_of_day(meta.get(STATED_KEY)))
    if mtime:
        return Stated(day_of(mtime), "mtime", False)
    return Stated(None, "none", False)


def stated_epoch(
    meta: Mapping[str, Any], mtime: float | None = None, stem: str = "", daily_format: str = DEFAULT_DAILY_FORMAT
) -> float | None:
    """`stated_time` as epoch seconds (None: no date known), as the catalog keeps it for date filters."""
    when = stated_time(meta, mtime, stem, daily_format).when
    return None if when is None else when.timestamp()


def stated_record(mtime: float) -> dt.date:
    """What we write as `stated` into a note with no date of its own: the day its file carried."""
    return day_of(mtime).date()


__all__ = [
    "STATED_KEY",
    "Stated",
    "day_of",
    "local_zone",
    "parse_bool",
    "parse_int",
    "parse_list",
    "parse_time",
    "stated_epoch",
    "stated_record",
    "stated_time",
    "text_dates",
]
