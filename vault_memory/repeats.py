"""Whether two statements say the same thing in the same words, pure.

A person copies lines forward (a task list carried from day to day, its due date moved on with
each day), writes a plan down twice, repeats a log line. Recall folds such copies into one hit,
prefetch shows them once, and the one-fact group dates a repeat by the note that said it first;
all three ask the questions here, so they agree on what a repeat is. No vector threshold decides
it: one changed word is another statement ("The team chat is on Slack." and "... on Discord.").
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterator

from .text import unlink

_WORD_RE = re.compile(r"\w+")


@functools.lru_cache(maxsize=4096)
def words_of(text: str) -> frozenset[str]:
    """The words of a text as it reads (links shown as their text), lower case. Remembered:
    prefetch asks it of the same entries for every candidate below them (a third of a SciFact
    turn's prefetch, where a turn keeps a long list)."""
    return frozenset(_WORD_RE.findall(unlink(text).lower()))


def is_repeat(a: str, b: str, days: tuple[dt.date | None, dt.date | None] = (None, None)) -> bool:
    """Whether two statements say the same thing in the same words: the words of one are all
    words of the other ("Appointment moved to 14 November, 9:30." and "Dentist appointment moved
    to November 14 at 9:30."). One changed word is a different statement: "The team chat is on
    Slack." and "... on Discord." are not repeats, so no vector threshold decides it.

    `days`: the days the two were stated, when known. A line copied from day to day with its dates
    moved on says the same of each day: "Water plants 📅 2026-10-26" in the daily note of the 25th
    and "Water plants 📅 2026-11-05" in the 4th's are one statement, "the day after" (each ISO date
    is also read as days from its note's day). A date that moved against its note's day is a change."""
    return any(wa <= wb or wb <= wa for wa, wb in _readings(a, b, days))


def adds_nothing(a: str, b: str, days: tuple[dt.date | None, dt.date | None] = (None, None)) -> bool:
    """Whether `a` adds no word to `b`: its words are all words of `b`, or are once each ISO date
    is read as days from its note's day (`days`: the days `a` and `b` were stated). One direction
    of `is_repeat`: "I no longer use Vim" adds words to "I use Vim"; "I use Vim" adds none to it."""
    return any(wa <= wb for wa, wb in _readings(a, b, days))


def _readings(
    a: str, b: str, days: tuple[dt.date | None, dt.date | None]
) -> Iterator[tuple[frozenset[str], frozenset[str]]]:
    """The two texts' word sets as read, then (only when asked for, and both hold an ISO date and
    were stated on two known days) with each date read as days from its note's day; nothing when
    either says no word."""
    wa, wb = words_of(a), words_of(b)
    if not (wa and wb):
        return
    yield wa, wb
    da, db = days
    if da is not None and db is not None and da != db and has_iso_date(a) and has_iso_date(b):
        yield words_of(days_from(a, da)), words_of(days_from(b, db))


_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def has_iso_date(text: str) -> bool:
    """Whether the text holds an ISO date (what `is_repeat` may count from its note's day)."""
    return _ISO_DATE.search(text) is not None


def days_from(text: str, day: dt.date) -> str:
    """`text` with each ISO date written as days from `day` ("2026-10-26" from the 25th: "dayplus1")."""

    def offset(m: re.Match[str]) -> str:
        try:
            n = (dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) - day).days
        except ValueError:  # "2026-13-45" is not a date
            return m.group(0)
        return f"day{'plus' if n >= 0 else 'minus'}{abs(n)}"

    return _ISO_DATE.sub(offset, text)


__all__ = ["adds_nothing", "days_from", "has_iso_date", "is_repeat", "words_of"]
