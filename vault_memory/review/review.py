"""The review: what the memory is doing, gathered at `now`, and the review note written into the vault.

    review = gather(ws, now)          # drafts, fading, dormant, reactivated, superseded, unreadable, chart
    review.markdown = render(review)  # review_note.py
    write_review(ws, review)          # the note at `review_note` (default Memory/Review.md)

Everything comes from the vault as it is: the staged drafts from the staging folder, the
rest from the index's rows (frontmatter) and decay.DecayModel at `now`, so a review at a
later `--now` shows what will have faded by then.

**The review note belongs to the system.** It carries `generated_by: vault-memory` and a
`review_hash` of its content (frontmatter values and body). The indexer never indexes a note
marked so (it is no memory: never recalled, prefetched or linked to), and the ignore rules
leave the review path itself out, so the watcher does not see its own write. Rewriting it
never loses a person's edit:

- unchanged since we wrote it (hash matches): rewritten in place (compare-and-swap);
- edited by someone (hash differs, or its YAML no longer parses): their file is moved, as is,
  to `Review (edited YYYY-MM-DD).md` beside it (` 2`... never overwriting), and a fresh review
  is written; the record says where their version went;
- saved within the last `quiet_seconds` (someone is typing in it): not touched now (busy);
- a note at that path without `generated_by: vault-memory` is someone's own note: refused.

Longer than 500 lines because each section of the review note (drafts, fading, dormant, back,
superseded, unreadable) is gathered here from the same reading of the vault and the same clock.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..errors import ConcurrentEditError, NoteError, NoteNotFoundError, VaultMemoryError
from ..index.catalog import NoteRow
from ..index.keptout import KeptOutNote
from ..lifecycle.linking import link_text, note_stems
from ..lifecycle.relations import Identities, relation_values
from ..lifecycle.staging import scan_staged
from ..records import StagedMemory, iso
from ..search.decay import MemoryState
from ..search.workspace import Workspace, now_utc
from ..text import folder_setting, ignore_pattern, in_folder, review_path, split_title, unlink
from ..vault import atomic
from ..vault.fields import local_zone, parse_time
from ..vault.markdown import strip_comments
from ..vault.notefile import GENERATED_BY, ParsedNote, move_note, read_note, write_note

CHART_WEEKS = 8  # the chart looks this many weeks ahead, a point a week
CONFLICT_EXCERPT = 220  # characters of a conflicting note shown beside the draft (around what it shares)
LN_2 = math.log(2)


# -- records ------------------------------------------------------------------------------


@dataclass
class ConflictView:
    """A committed note a draft conflicts with, and what it says."""

    node_id: str
    path: str
    title: str
    link: str
    text: str  # the start of its body ("" when it cannot be read)


@dataclass
class DraftView:
    """A staged memory awaiting commit, with its conflicts and the commands that resolve it."""

    node_id: str
    path: str
    title: str
    link: str
    text: str
    created: dt.datetime | None
    expires: dt.datetime | None
    expired: bool
    needs_review: bool
    conflicts: list[ConflictView]
    commands: list[tuple[str, str]]  # (what it means, command)


@dataclass
class NoteView:
    """A note's decay at `now`: when it goes (or went) dormant."""

    node_id: str
    path: str
    title: str
    link: str
    tier: str
    strength: float
    dormant_on: dt.datetime | None
    last_used: dt.datetime | None
    reactivated: dt.datetime | None = None
    why: str = ""  # why it fades: since when nothing used it, and how fast its tier forgets


@dataclass
class SupersededView:
    old_path: str
    old_title: str
    old_link: str
    new_path: str
    new_title: str
    new_link: str
    when: dt.datetime | None


@dataclass
class ChartLine:
    note: NoteView
    values: list[float]
    #: other memories with the same curve (the same history: made together, never recalled), drawn
    #: as this one line; `note` is the first of them by the chart's order
    shared: list[NoteView] = field(default_factory=list)


@dataclass
class Review:
    """What the memory is doing at `now`, as data (`to_dict`) and as the review note (`markdown`)."""

    now: dt.datetime
    window_days: float
    path: str  # the review note's vault path ("" when the setting is off)
    drafts: list[DraftView] = field(default_factory=list)
    fading: list[NoteView] = field(default_factory=list)  # dormant within the window
    dormant: list[NoteView] = field(default_factory=list)  # went dormant within the window
    reactivated: list[NoteView] = field(default_factory=list)
    superseded: list[SupersededView] = field(default_factory=list)  # all of them, newest first
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    #: notes prefetch left out of blocks in the window because they are dormant (keptout.py), and
    #: how many blocks went without at least one
    kept_out: list[KeptOutNote] = field(default_factory=list)
    kept_out_blocks: int = 0
    chart: list[ChartLine] = field(default_factory=list)
    chart_days: list[int] = field(default_factory=list)
    dormant_below: float = 0.1
    markdown: str = ""
    written: bool = False
    kept_edit: str | None = None  # where a person's edited review note was kept
    skipped: str | None = None  # why the note was not written (busy, read-only, not ours, ...)
    busy: bool = False  # skipped because someone is editing it: try again later

    def to_dict(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            if isinstance(value, dt.datetime):
                return iso(value)
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            return value

        out = clean(asdict(self))
        out["now"] = iso(self.now)
        out["unreadable"] = [{"path": p, "reason": why} for p, why in self.unreadable]
        out["drafts"] = [
            d | {"commands": [{"meaning": m, "command": c} for m, c in d["commands"]]} for d in out["drafts"]
        ]
        out["chart"] = {
            "days": self.chart_days,
            "dormant_below": self.dormant_below,
            "lines": [
                {
                    "path": c.note.path,
                    "title": c.note.title,
                    "values": c.values,
                    "shared_with": [n.path for n in c.shared],  # the other memories this line stands for
                }
                for c in self.chart
            ],
        }
        out.pop("chart_days")
        out["counts"] = {
            k: len(getattr(self, k))
            for k in ("drafts", "fading", "dormant", "reactivated", "superseded", "unreadable", "kept_out")
        }
        return dict(out)


# -- gathering ----------------------------------------------------------------------------


def dormant_on(model: Any, state: MemoryState) -> dt.datetime | None:
    """When the note's strength falls below `dormant_below` if nothing rehearses it (None: never)."""
    if state.pinned or state.anchor is None or model.dormant_below <= 0:
        return None
    days = model.half_life(state.tier) * math.log(1.0 / model.dormant_below) / LN_2
    return state.anchor + dt.timedelta(days=days)


_WORD = re.compile(r"[^\W\d_]{3,}")
_COMMON = frozenset(
    "the and for with that this from have has was were are not but you your our they them its "
    "now then than into over also just about after before when what which who".split()
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(unlink(text).casefold()) if w not in _COMMON}


def _excerpt(text: str, about: str = "", limit: int = CONFLICT_EXCERPT) -> str:
    """The note whole if it is short; else the lines around the one sharing most words with
    `about` (the draft), so the conflict is what sits beside the draft, not the note's first lines."""
    text = text.strip()
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    want = _words(about)
    best = max(range(len(lines)), key=lambda i: (len(_words(lines[i]) & want), -i)) if want else 0
    start = end = best
    size = len(lines[best])
    while size < limit and (start > 0 or end < len(lines) - 1):
        if end < len(lines) - 1 and (end - best <= best - start or start == 0):
            end += 1
            size += len(lines[end]) + 1
        else:
            start -= 1
            size += len(lines[start]) + 1
    piece = "\n".join(lines[start : end + 1]).strip()
    if len(piece) > limit + 200:  # one enormous line: cut it on a word
        piece = piece[:limit].rsplit(" ", 1)[0]
        end = len(lines)
    return ("… " if start > 0 else "") + piece + (" …" if end < len(lines) - 1 else "")


def _commands(sm: StagedMemory, conflicts: list[ConflictView], expired: bool) -> list[tuple[str, str]]:
    nid = sm.node_id or sm.path
    out: list[tuple[str, str]] = []
    for c in conflicts:
        out.append((f"it replaces {c.link}", f'vault-memory commit {nid} --supersedes "{c.path}"'))
    keep = "both are true" if conflicts else "keep it"
    out.append(
        (f"{keep} (it expired, but committing by id still works)" if expired else keep, f"vault-memory commit {nid}")
    )
    out.append(("it is wrong" if conflicts else "drop it", f"vault-memory discard {nid}"))
    return out


def _drafts(ws: Workspace, now: dt.datetime, stems: dict[str, list[str]]) -> list[DraftView]:
    out: list[DraftView] = []
    for sm in scan_staged(ws):
        conflicts: list[ConflictView] = []
        for c in sm.conflicts:
            text = ""
            if c.path:
                try:
                    # what recall hides the review note does not copy out: `%% comments %%`
                    body = read_note(ws.vault, c.path, lenient=True).body  # read-only, as the index reads it
                    text = _excerpt(split_title(strip_comments(body))[1], sm.text)
                except (NoteError, OSError):
                    text = ""
            link = link_text(c.path, stems, c.title) if c.path else (c.title or c.node_id)
            conflicts.append(ConflictView(c.node_id, c.path, c.title, link, text))
        expired = sm.expires is not None and sm.expires <= now
        out.append(
            DraftView(
                sm.node_id,
                sm.path,
                sm.title,
                link_text(sm.path, stems, sm.title),
                sm.text,
                sm.created,
                sm.expires,
                expired,
                sm.needs_review,
                conflicts,
                _commands(sm, conflicts, expired),
            )
        )
    return out


def why_fading(ws: Workspace, state: MemoryState) -> str:
    """Why a note fades, in words: since when nothing used it, and its tier's half-life."""
    when = state.anchor.date().isoformat() if state.anchor is not None else "?"
    since = f"unused since {when}" if state.anchor_source == "last_accessed" else f"stated {when}, never used"
    return f"{since}; {state.tier} memory, half-life {ws.decay.half_life(state.tier):g} days"


def _view(ws: Workspace, row: NoteRow, state: MemoryState, now: dt.datetime, stems: dict[str, list[str]]) -> NoteView:
    return NoteView(
        row.node_id,
        row.path,
        row.title,
        link_text(row.path, stems, row.title),
        state.tier,
        round(ws.decay.strength(state, now), 4),
        dormant_on(ws.decay, state),
        state.anchor,
        parse_time(row.meta.get("reactivated")),
        why_fading(ws, state),
    )


def _superseded(ws: Workspace, rows: list[NoteRow], stems: dict[str, list[str]]) -> list[SupersededView]:
    """Every supersession the notes record (either side may hold the link), newest successor first."""
    ids = Identities(ws)
    by_id = {r.node_id: r for r in rows}
    pairs: dict[tuple[str, str], SupersededView] = {}

    def add(old: NoteRow, new: NoteRow) -> None:
        when = parse_time(new.meta.get("created")) or parse_time(new.meta.get("last_accessed"))
        pairs.setdefault(
            (old.path, new.path),
            SupersededView(
                old.path,
                old.title,
                link_text(old.path, stems, old.title),
                new.path,
                new.title,
                link_text(new.path, stems, new.title),
                when,
            ),
        )

    for row in rows:
        for value in relation_values(row.meta.get("supersedes")):
            old = by_id.get(ids.of(value) or "")
            if old is not None:
                add(old, row)
        for value in relation_values(row.meta.get("superseded_by")):
            new = by_id.get(ids.of(value) or "")
            if new is not None:
                add(row, new)
    earliest = dt.datetime.min.replace(tzinfo=dt.UTC)
    return sorted(pairs.values(), key=lambda s: s.when or earliest, reverse=True)


def _chart(
    ws: Workspace, views: list[tuple[NoteView, MemoryState]], now: dt.datetime, memory_folder: str, limit: int
) -> tuple[list[ChartLine], list[int]]:
    """The memories that matter most, and their strength each week ahead if nothing recalls them:
    the most recently used first, then the agent's own memories, then the strongest; not yet dormant."""
    days = [7 * w for w in range(CHART_WEEKS + 1)]
    # The agent's memories and whatever recall has used: a person's untouched notes all decay alike
    # from their dates, and a chart of identical lines says nothing.
    alive = [
        (v, s)
        for v, s in views
        if not s.pinned
        and s.anchor is not None
        and v.strength >= ws.decay.dormant_below
        and (s.anchor_source == "last_accessed" or not memory_folder or in_folder(v.path, memory_folder))
    ]

    def rank(item: tuple[NoteView, MemoryState]) -> tuple[float, int, float, str]:
        v, s = item
        mine = not memory_folder or in_folder(v.path, memory_folder)
        used = s.anchor.timestamp() if s.anchor is not None and s.anchor_source == "last_accessed" else 0.0
        return (-used, 0 if mine else 1, -v.strength, v.path)

    # One line per curve a reader can tell apart: memories made in one session and never recalled
    # share one history (to the hour, not the second), and eleven memories drawn as three lines on
    # top of each other, with three legend rows, said less than one line that says how many share
    # it (issue 40). Lines closer than CHART_RESOLUTION at every point are one line.
    curves: list[ChartLine] = []
    for v, s in sorted(alive, key=rank):
        values = [round(ws.decay.strength(s, now + dt.timedelta(days=d)), 3) for d in days]
        line = next((c for c in curves if _indistinct(c.values, values)), None)
        if line is not None:
            line.shared.append(v)
        elif len(curves) < limit:
            curves.append(ChartLine(v, values))
    return curves, days


#: Two curves closer than this at every week are drawn as one line: a twentieth of the chart's
#: height (strength 0 to 1), about what a reader can tell apart on it.
CHART_RESOLUTION = 0.05


def _indistinct(a: Sequence[float], b: Sequence[float]) -> bool:
    return all(abs(x - y) < CHART_RESOLUTION for x, y in zip(a, b, strict=True))


def gather(ws: Workspace, now: dt.datetime | None = None, *, chart_lines: int = 6) -> Review:
    """Everything the review shows, at `now` (see the module docstring)."""
    now = now_utc(ws, now)
    window = dt.timedelta(days=ws.config.review_window_days)
    review = Review(
        now=now,
        window_days=ws.config.review_window_days,
        path=review_path(ws.config),
        dormant_below=ws.decay.dormant_below,
    )
    try:
        rows = ws.catalog.notes()
        failures = ws.catalog.failures()
    except VaultMemoryError:
        rows, failures = [], {}
    stems = note_stems(ws)
    staging = folder_setting(ws.config.staging_folder, "staging_folder")
    memory = folder_setting(ws.config.memory_folder, "memory_folder", allow_root=True)
    review.drafts = _drafts(ws, now, stems)
    views: list[tuple[NoteView, MemoryState]] = []
    for row in rows:
        if in_folder(row.path, staging):
            continue
        state = ws.decay.state(row.meta, row.path)
        view = _view(ws, row, state, now, stems)
        if view.reactivated is not None and now - window <= view.reactivated <= now:
            review.reactivated.append(view)
        if state.pinned or state.superseded_by or view.dormant_on is None:
            continue
        views.append((view, state))
        if now < view.dormant_on <= now + window:
            review.fading.append(view)
        elif now - window <= view.dormant_on <= now:
            review.dormant.append(view)
    review.fading.sort(key=lambda v: (v.dormant_on or now, v.path))
    review.dormant.sort(key=lambda v: (v.dormant_on or now, v.path), reverse=True)
    review.reactivated.sort(key=lambda v: (v.reactivated or now, v.path), reverse=True)
    review.superseded = _superseded(ws, [r for r in rows if not in_folder(r.path, staging)], stems)
    review.unreadable = sorted((p, why) for p, (_, why) in failures.items())
    log = ws.kept_out_log()
    review.kept_out = log.since(now - window, now)
    review.kept_out_blocks = log.blocks(now - window, now)
    review.chart, review.chart_days = _chart(ws, views, now, memory, chart_lines)
    return review


# -- writing the note ------------------------------------------------------------------------


def content_hash(meta: dict[str, Any], body: str) -> str:
    """What `review_hash` records: the frontmatter's values (but the hash) and the body, so an edit
    to either is seen, and a reformatting of the YAML that changes no value is not."""
    values = {k: v for k, v in meta.items() if k != "review_hash"}
    blob = json.dumps(values, sort_keys=True, default=lambda v: v.isoformat() if hasattr(v, "isoformat") else str(v))
    blob += "\n" + body
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def is_ours_unchanged(note: ParsedNote) -> bool:
    return str(note.meta.get("review_hash") or "") == content_hash(note.meta, note.body)


def _kept_name(rel: str, now: dt.datetime) -> str:
    pure = PurePosixPath(rel)
    day = now.astimezone(local_zone()).date().isoformat()
    return str(pure.with_name(f"{pure.stem} (edited {day}){pure.suffix}"))


def _free(ws: Workspace, rel: str) -> str:
    pure = PurePosixPath(rel)
    n = 1
    cand = rel
    while (ws.vault / cand).exists():
        n += 1
        cand = str(pure.with_name(f"{pure.stem} {n}{pure.suffix}"))
    return cand


def write_review(ws: Workspace, review: Review) -> Review:
    """Write `review.markdown` to the review note, keeping a person's edit (module docstring).

    When it cannot be written now (someone is editing it, or the path holds someone's own note)
    nothing is raised: `review.skipped` says why, and `review.busy` whether to try again later.
    """
    try:
        return _write(ws, review)
    except ConcurrentEditError as exc:
        review.skipped, review.busy = f"{exc}", True
    except (NoteError, ValueError, OSError) as exc:
        review.skipped = f"{exc}"
    return review


def _write(ws: Workspace, review: Review) -> Review:
    rel = review.path
    if not rel:
        review.skipped = "the review note is off (review_note is empty)"
        return review
    if ws.config.read_only:
        review.skipped = "read-only: the review note was not written"
        return review
    fields: dict[str, Any] = {"generated_by": GENERATED_BY, "generated_at": review.now}
    body = review.markdown
    for attempt in (1, 2):
        try:
            current: ParsedNote | None = read_note(ws.vault, rel)
        except NoteNotFoundError:
            current = None
        except NoteError:  # its YAML broke: someone edited it; keep their file below
            current = None
            if not (ws.vault / rel).exists():
                raise
            _keep(ws, review, rel, None)
        if current is not None:
            if str(current.meta.get("generated_by") or "").strip() != GENERATED_BY:
                raise NoteError(
                    rel,
                    "exists and is not the review note (no `generated_by: vault-memory`); "
                    "it was left alone; move it, or set review_note to another path",
                )
            if not is_ours_unchanged(current):
                _keep(ws, review, rel, current.file_hash)
                current = None
            elif current.body == body:
                review.written = False  # nothing to say that it does not say already
                return review
        meta = {**fields, "review_hash": content_hash(fields, body)}
        try:
            if current is None:
                write_note(ws.vault, rel, expected_hash=None, set_fields=meta, body=body)
            else:
                write_note(
                    ws.vault,
                    rel,
                    expected_hash=current.file_hash,
                    set_fields=meta,
                    body=body,
                    quiet=ws.config.quiet_seconds,
                )
        except ConcurrentEditError:
            if attempt == 2:
                raise
            continue
        except NoteError:
            if current is None and (ws.vault / rel).exists() and attempt == 1:
                continue  # created a moment ago by another writer: look at it again
            raise
        review.written = True
        return review
    raise AssertionError("unreachable")


def _keep(ws: Workspace, review: Review, rel: str, expected_hash: str | None) -> None:
    """Move the edited review note aside, as is; busy if it was saved in the last `quiet_seconds`."""
    try:
        st = os.stat(ws.vault / rel)
    except OSError:
        return
    wait = atomic.quiet_for(st, ws.config.quiet_seconds)
    if wait > 0:
        raise atomic.busy(
            rel,
            f"edited {ws.config.quiet_seconds - wait:.1f} s ago; the review is rewritten once it has been left alone",
        )
    review.kept_edit = move_note(ws.vault, rel, _free(ws, _kept_name(rel, review.now)), expected_hash=expected_hash)


__all__ = [
    "ChartLine",
    "ConflictView",
    "DraftView",
    "NoteView",
    "Review",
    "SupersededView",
    "content_hash",
    "gather",
    "ignore_pattern",
    "review_path",
    "write_review",
]
