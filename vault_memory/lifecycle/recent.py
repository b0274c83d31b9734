"""What was written, committed or used lately: notes by their latest activity, newest first.

    items = recent(ws, days=7, k=20)

A note's activity is read from what its frontmatter and its name say, never from file times
(a clone, a sync or a restore resets those, and every note would look new):

    staged     a memory in the staging folder, at its `created`
    created    a note's `created` (an agent memory gets it when it is written; a person's
               note may carry one too)
    used       its `last_accessed`: a memory's commit, a recall that answered with it
               (reactivating a dormant note is one too), or a person's edit while the watcher
               ran (the watcher records an edit as a rehearsal, with `revision`); one event,
               as it is one fact of the note (how many uses came before is not kept)
    logged     a note named for its day: an episode note (the episodes folder), a daily note
               (any note whose file name is a date, in the vault's daily-notes format), at the
               time of its last `- HH:MM` entry, else at its day alone (`when` is then a date,
               YYYY-MM-DD: a log entry is never shown at a made-up 00:00)

The latest of these is the note's entry (ties: the order above). Notes whose activity is older
than `days` are left out; so are notes with no such fact at all (a person's note never
recalled and never edited under the watcher). Reading (`read`, `related`) writes nothing, so it
is not activity.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any

from ..search.workspace import Workspace, now_utc
from ..text import folder_setting, in_folder
from ..vault.fields import parse_time
from ..vault.obsidian import date_from_name

K_MAX = 100
DAYS_MAX = 3650


@dataclass(frozen=True)
class RecentNote:
    """One note's latest activity."""

    path: str
    node_id: str
    title: str
    event: str  # staged | created | used | logged
    when: str  # ISO 8601: a time, or a day (YYYY-MM-DD) for a day note with no timed entry

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def recent(ws: Workspace, *, days: float = 7, k: int = 20, now: dt.datetime | None = None) -> list[RecentNote]:
    """See the module docstring."""
    now = now_utc(ws, now)
    since = now - dt.timedelta(days=max(0.0, min(float(days), DAYS_MAX)))
    k = max(1, min(int(k), K_MAX))
    staging = folder_setting(ws.config.staging_folder, "staging_folder")
    episodes = folder_setting(ws.config.episodes_folder, "episodes_folder")
    found: list[tuple[dt.datetime, int, RecentNote]] = []
    for node_id, path, title, created_raw, accessed_raw in ws.catalog.activity_rows():
        events: list[tuple[dt.datetime, int, str]] = []
        created = parse_time(created_raw)
        if in_folder(path, staging):
            if created is not None:
                events.append((created, 0, "staged"))
        else:
            if created is not None:
                events.append((created, 1, "created"))
            accessed = parse_time(accessed_raw)
            if accessed is not None:
                events.append((accessed, 2, "used"))
            day = date_from_name(PurePosixPath(path).stem, ws.decay.daily_format)
            if day is not None and (in_folder(path, episodes) or since.date() <= day <= now.date() + _DAY):
                start = dt.datetime.combine(day, dt.time(), tzinfo=now.tzinfo)
                events.append((start, 3, "logged"))
        if not events:
            continue
        when, order, event = max(events, key=lambda e: (e[0], -e[1]))
        if since <= when <= now + _DAY:
            stamp = when.isoformat()
            if event == "logged":
                at = _last_entry(ws, node_id)
                if at is None:
                    stamp = when.date().isoformat()
                else:
                    when = when.replace(hour=at.hour, minute=at.minute)
                    stamp = when.isoformat()
            found.append((when, order, RecentNote(path, node_id, title, event, stamp)))
    found.sort(key=lambda t: (-t[0].timestamp(), t[1], t[2].path))
    return [r for _, _, r in found[:k]]


_DAY = dt.timedelta(days=1)
_ENTRY = re.compile(r"^\s*[-*+]\s+(?:\[.\]\s+)?(\d{1,2}):(\d{2})\b", re.M)


def _last_entry(ws: Workspace, node_id: str) -> dt.time | None:
    """The time of a day note's last `- HH:MM` entry (what `log` writes), if it has one."""
    times = [
        dt.time(int(h), int(m))
        for chunk in ws.catalog.chunks_of(node_id)
        for h, m in _ENTRY.findall(chunk.body)
        if int(h) < 24 and int(m) < 60
    ]
    return max(times, default=None)


__all__ = ["RecentNote", "recent"]
