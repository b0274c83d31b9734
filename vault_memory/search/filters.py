"""Filters on recall and prefetch: which notes may be returned at all, decided before ranking.

    flt = make_filter(tags=["travel"], folder="Projects", after="30d", now=now)
    allow = eligible(ws, flt)        # the node_ids that pass, or None when nothing is filtered

What each filter means:
- tags: the note has every given tag, or a tag nested under it (`travel` matches
  `travel/japan`, not `travelling`); `#` and case are ignored. Tags are the note's
  frontmatter `tags` and its inline `#tags` (markdown.extract_info).
- folder: the note's path is under this vault folder, at any depth (ASCII case ignored).
- type: the note's frontmatter `type` (else `kind`) equals it, case ignored.
- after / before: the note was *stated* on or after `after` and before `before`
  (fields.stated_time: its own date properties or a daily note's file name). A date is its
  midnight UTC, as a note's own dates are read; `7d`, `2w`, `3m`, `1y` count back from now
  (a month is 30 days); an undated note never passes a date filter.

Why an allowlist computed first, not a predicate on the candidates: the search then sees only
eligible notes on both sides (dense: the allowed rows of the vector matrix; lexical: the allowed
matches, best first), so the k are the best eligible notes however selective the filter, at a
fixed cost. Measured on 10,000 notes (bench/studies/tools.py --part filters; docs/ranking.md, "Filters"): the allowlist
costs a few milliseconds of SQL (dates are a column the indexer fills), while widening a pruned
candidate pool until a 1 % filter yields k notes costs several times a whole recall.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ConfigError
from .workspace import Workspace

_RELATIVE = re.compile(r"^(\d{1,5})\s*([dwmy])$", re.IGNORECASE)
_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
WHEN_HELP = "an ISO date or time (2026-10-01, 2026-10-01T09:00+02:00) or a span back from now (7d, 2w, 3m, 1y)"


@dataclass(frozen=True)
class NoteFilter:
    """Which notes recall and prefetch may return (see the module docstring); empty = all."""

    tags: tuple[str, ...] = ()
    folder: str = ""
    type: str = ""
    after: dt.datetime | None = None  # stated on or after
    before: dt.datetime | None = None  # stated before

    @property
    def empty(self) -> bool:
        return not (self.tags or self.folder or self.type or self.after or self.before)

    def describe(self) -> str:
        """One line for messages: `tags travel; folder Projects; after 2026-10-01`."""
        parts = []
        if self.tags:
            parts.append("tags " + ", ".join(self.tags))
        if self.folder:
            parts.append(f"folder {self.folder}")
        if self.type:
            parts.append(f"type {self.type}")
        if self.after:
            parts.append(f"after {self.after.isoformat()}")
        if self.before:
            parts.append(f"before {self.before.isoformat()}")
        return "; ".join(parts) or "no filter"


def parse_when(value: str | dt.date | dt.datetime | None, now: dt.datetime, name: str) -> dt.datetime | None:
    """A filter bound as an aware datetime: ISO date (midnight UTC), ISO time, or a `7d`-style span back."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    text = str(value).strip()
    if not text:
        return None
    m = _RELATIVE.match(text)
    if m:
        return now - dt.timedelta(days=int(m.group(1)) * _DAYS[m.group(2).lower()])
    try:
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
        out = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{name} {text!r} is not a date; give {WHEN_HELP}") from None
    return out if out.tzinfo else out.replace(tzinfo=dt.UTC)


def _tag(raw: str) -> str:
    tag = str(raw).strip().lstrip("#").strip("/").lower()
    if not tag or any(c.isspace() for c in tag):
        raise ConfigError(f"tag {raw!r} is not a tag; give it without spaces, e.g. travel or travel/japan")
    return tag


def _folder(raw: str) -> str:
    parts = [p for p in str(raw).replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ConfigError(f"folder {raw!r} leaves the vault; give a vault folder such as Projects or People/Family")
    return "/".join(parts)


def make_filter(
    *,
    tags: Iterable[str] | str | None = None,
    folder: str | None = None,
    type: str | None = None,
    after: str | dt.date | None = None,
    before: str | dt.date | None = None,
    now: dt.datetime,
) -> NoteFilter | None:
    """A NoteFilter from user input (CLI flags, MCP arguments, API keywords), or None if nothing is set.

    Raises ConfigError naming the bad value and what would work.
    """
    tag_list = [tags] if isinstance(tags, str) else list(tags or [])
    flt = NoteFilter(
        tags=tuple(dict.fromkeys(_tag(t) for t in tag_list)),
        folder=_folder(folder or ""),
        type=str(type or "").strip().lower(),
        after=parse_when(after, now, "after"),
        before=parse_when(before, now, "before"),
    )
    if flt.after and flt.before and flt.after >= flt.before:
        raise ConfigError(f"after ({flt.after.isoformat()}) must come before before ({flt.before.isoformat()})")
    return None if flt.empty else flt


def eligible(ws: Workspace, flt: NoteFilter | None) -> set[str] | None:
    """The node_ids of the notes `flt` lets through (None: no filter, every note may come back)."""
    if flt is None or flt.empty:
        return None
    return ws.catalog.filter_note_ids(
        folder=flt.folder or None,
        tags=flt.tags,
        types=(flt.type,) if flt.type else (),
        stated_from=flt.after.timestamp() if flt.after else None,
        stated_before=flt.before.timestamp() if flt.before else None,
    )


__all__ = ["WHEN_HELP", "NoteFilter", "eligible", "make_filter", "parse_when"]
