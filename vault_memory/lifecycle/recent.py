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
    logged     an episode note (the episodes folder), at the day its name gives

The latest of these is the note's entry (ties: the order above). Notes whose activity is older
than `days` are left out; so are notes with no such fact at all (a person's note never
recalled and never edited under the watcher). Reading (`read`, `related`) writes nothing, so it
is not activity.
"""

from __future__ import annotations

import datetime as dt
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
    when: str  # ISO 8601

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
            if in_folder(path, episodes):
                day = date_from_name(PurePosixPath(path).stem, ws.decay.daily_format)
                if day is not None:
                    start = dt.datetime.combine(day, dt.time(), tzinfo=now.tzinfo)
                    events.append((start, 3, "logged"))
        if not events:
            continue
        when, order, event = max(events, key=lambda e: (e[0], -e[1]))
        if since <= when <= now + dt.timedelta(days=1):
            found.append((when, order, RecentNote(path, node_id, title, event, when.isoformat())))
    found.sort(key=lambda t: (-t[0].timestamp(), t[1], t[2].path))
    return [r for _, _, r in found[:k]]


__all__ = ["RecentNote", "recent"]
