"""Edits of any note the system may make: pin, log, rehearse, link supersession, trash.

Every edit goes through notefile.write_note / move_note (atomic, compare-and-swap on the
hash that was read, owned keys only) and then asks the workspace to re-index what it
touched. Targets given by a person or a model are resolved by resolve.py, and paths
are untrusted: `..`, absolute paths and symlinks out of the vault are refused.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Any

from ..errors import (
    ConcurrentEditError,
    ConfigError,
    NoteError,
    NoteNotFoundError,
    VaultMemoryError,
    VaultNotWritableError,
)
from ..records import PinResult
from ..search.ranking import Ranked, coverage
from ..search.workspace import Workspace, zoned
from ..text import folder_setting, join, plain_text
from ..vault.daily import entry_lines, log_to_daily_note
from ..vault.fields import STATED_KEY, parse_bool
from ..vault.notefile import ParsedNote, file_node_id, move_note, new_node_id, read_note, write_note
from .linking import link_for
from .relations import relation_values
from .resolve import resolve_note

log = logging.getLogger(__name__)

TRASH_FOLDER = ".trash"
PATIENCE = 3.0  # seconds a write someone asked for waits for a note being saved to go quiet (bookkeeping: 0)
#: Recalls within this many seconds of a note's last rehearsal write nothing more: an agent asking
#: around one subject for a few minutes is one use, and one diff in a person's git, not ten.
REHEARSAL_COALESCE_SECONDS = 600.0
FieldsFor = Callable[[ParsedNote], tuple[dict[str, Any], list[str]]]


def writable(ws: Workspace) -> None:
    """The commands that exist to write refuse at once in read-only mode: ConfigError for --read-only,
    VaultNotWritableError when the vault itself cannot be written (Memory found it so)."""
    problem = getattr(ws, "vault_problem", None)
    if problem:
        fix = {"read-only file system": "remount it writable", "the disk is full": "free some space"}.get(
            problem, "fix its permissions"
        )
        raise VaultNotWritableError(
            f"the vault {ws.vault} cannot be written ({problem}); nothing was written: {fix}, then try again"
        )
    if ws.config.read_only:
        raise ConfigError("read-only mode: vault-memory may not write to the vault; drop --read-only")


def staging_folder(ws: Workspace) -> str:
    return folder_setting(ws.config.staging_folder, "staging_folder")


def memory_folder(ws: Workspace) -> str:
    return folder_setting(ws.config.memory_folder, "memory_folder", allow_root=True)


def first_write_fields(ws: Workspace, note: ParsedNote) -> dict[str, Any]:
    """What we add the first time we write into a note, whatever else we write: `node_id`, when
    the note has none, or carries one that another note carries too (a copy: the index
    identifies both by path until one of them gets its own). Never a time: our write is not
    evidence of when the note was stated (fields.py)."""
    nid = file_node_id(note)
    return {"node_id": new_node_id()} if nid is None or _duplicate(ws, note.path, nid) else {}


#: Owned keys no version reads any more, removed when we write into the note anyway: `stated`
#: (the day an mtime carried, written by earlier versions; a clone's mtime is the clone's day) and
#: `rehearsal_days` (days of use counted for a promotion to `long` that no longer happens).
RETIRED_KEYS = (STATED_KEY, "rehearsal_days", "access_count")


def retired_fields(note: ParsedNote) -> list[str]:
    """The retired owned keys (RETIRED_KEYS) this note still carries."""
    return [k for k in RETIRED_KEYS if k in note.meta]


def _duplicate(ws: Workspace, rel: str, node_id: str) -> bool:
    """The index saw this note carry `node_id` and identified it by path: another note carries it too."""
    try:
        row = ws.catalog.note_by_path(rel)
        return row is not None and row.node_id == f"path:{rel}" and ws.catalog.file_id_of(rel) == node_id
    except VaultMemoryError:
        return False


def edit_note(ws: Workspace, rel: str, fields_for: FieldsFor, *, identity: bool = True) -> ParsedNote:
    """Read, compute (set, remove) from the note, write with compare-and-swap; one retry if
    the file changed meanwhile (a second loss raises ConcurrentEditError). The first write
    into a note also records its identity (`first_write_fields`) and drops retired keys.
    `identity=False`: a note without a node_id gets none (its state needs no identity beyond
    the file); one carrying a copy's id still gets its own."""
    for attempt in (1, 2):
        note = read_note(ws.vault, rel)
        set_fields, remove = fields_for(note)
        first = first_write_fields(ws, note) if identity or file_node_id(note) is not None else {}
        set_fields = {**set_fields, **{k: v for k, v in first.items() if k not in set_fields}}
        remove = [*remove, *(k for k in retired_fields(note) if k not in set_fields)]
        try:
            return write_note(
                ws.vault,
                rel,
                expected_hash=note.file_hash,
                set_fields=set_fields,
                wait=PATIENCE,
                remove_fields=[k for k in dict.fromkeys(remove) if k in note.meta],
            )
        except ConcurrentEditError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def has_id(ws: Workspace, rel: str, node_id: str) -> bool:
    """Whether the file at `rel` carries this node_id now."""
    try:
        return file_node_id(read_note(ws.vault, rel)) == node_id
    except (NoteError, OSError):
        return False


# -- pin ----------------------------------------------------------------------------------


def set_pinned(ws: Workspace, target: str, pinned: bool) -> PinResult:
    """Pin (strength 1, never dormant, never expires) or unpin a note by node_id or vault path.

    Pin then unpin gives the note back its bytes when the pin was our only write: the pin writes
    `pinned: true` and nothing else, not even a `node_id`. The pin is state that lives in the
    note itself and follows the file through any rename, so it needs no identity beyond the file;
    the note stays known as it was (`path:<rel>` when it has no node_id, which every command
    accepts), and an unpin leaves no trace. State kept *about* a note (rehearsal, supersession,
    drafts) still records a node_id. A note carrying a copy's node_id gets its own, as on any
    write of ours. A pinned note is not rehearsed (strength 1 whatever happens), so once
    unpinned it fades from its last use before the pin.
    """
    writable(ws)
    rel = resolve_note(ws, target)
    before = read_note(ws.vault, rel)

    def fields(note: ParsedNote) -> tuple[dict[str, Any], list[str]]:
        if pinned:
            return ({} if parse_bool(note.meta.get("pinned")) else {"pinned": True}), []
        return {}, ["pinned"]

    note = edit_note(ws, rel, fields, identity=False)
    ws.index_paths([rel])
    nid = file_node_id(note) or f"path:{rel}"  # the index's identity of a note without its own id
    return PinResult(nid, rel, pinned, note.file_hash != before.file_hash)


# -- episodic log -------------------------------------------------------------------------


def log_entry(ws: Workspace, text: str, now: dt.datetime | None = None) -> str:
    """Append `- HH:MM text` to today's log; returns the note's path.

    The log is `<episodes_folder>/YYYY-MM-DD.md` (created with `date:`), or, with
    `log_to_daily_note`, the person's daily note under `log_heading` (daily.py). Date and time are
    those of `now` in its own offset (the local time when not given). Notes the entry names are linked.
    """
    writable(ws)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("the log entry is empty")
    when = zoned(now) if now is not None else ws.clock().astimezone()
    lines = entry_lines(link_for(ws, plain_text(text, "log entry")), when)
    if ws.config.log_to_daily_note:
        if not ws.config.log_heading.strip():
            raise ConfigError("log_heading is empty; set it to the heading log entries go under (e.g. Log)")
        rel = log_to_daily_note(
            ws.vault,
            ws.rules.obsidian,
            heading=ws.config.log_heading,
            entry=lines,
            when=when,
            quiet=ws.config.quiet_seconds,
        )
        ws.index_paths([rel])
        return rel
    entry = "\n".join(lines) + "\n"
    folder = folder_setting(ws.config.episodes_folder, "episodes_folder")
    rel = join(folder, f"{when.date().isoformat()}.md")
    for attempt in (1, 2):
        try:
            note = read_note(ws.vault, rel)
        except NoteNotFoundError:
            try:
                write_note(ws.vault, rel, expected_hash=None, set_fields={"date": when.date()}, body=entry)
                break
            except NoteError:
                if not (ws.vault / rel).exists() or attempt == 2:
                    raise
                continue  # created by someone else a moment ago: append to theirs
        body = note.body
        if body and not body.endswith("\n"):
            body += "\n"
        try:
            write_note(ws.vault, rel, expected_hash=note.file_hash, body=body + entry, wait=PATIENCE)
            break
        except ConcurrentEditError:
            if attempt == 2:
                raise
    ws.index_paths([rel])
    return rel


# -- rehearsal ----------------------------------------------------------------------------


def rehearse(ws: Workspace, node_ids: Sequence[str], *, now: dt.datetime | None = None) -> list[str]:
    """Write `last_accessed` for these notes; returns the paths written.

    Recalls within REHEARSAL_COALESCE_SECONDS of the last one coalesce into one write.
    Rehearsal never re-embeds and never bumps `revision`; a note being edited is skipped
    (the human's edit wins: rehearsal is bookkeeping, never bought with their bytes). A note
    whose strength a rehearsal would not change is not written: a pinned note (strength 1) and a
    note with no age (undated and never used: strength 1).
    """
    if ws.config.read_only:
        return []
    now = now or ws.clock()
    written: list[str] = []
    pending = ws.bookkeeping.pending
    # Rehearsals skipped earlier because their note was being edited are retried now (the next quiet
    # moment this process has), each with the time of the recall that wanted it.
    retry = {nid: when for nid, when in pending.items() if nid not in node_ids}
    pending.clear()
    if len(retry) > PENDING_MAX:
        retry = {}  # this many busy notes is not a person editing: a sync or a script; let them go
    wanted = {**retry, **dict.fromkeys(node_ids, now)}
    rows = ws.catalog.notes_by_ids(list(wanted))
    for nid, when in wanted.items():
        row = rows.get(nid)
        if row is None:
            continue
        path = _rehearse_one(ws, nid, row.path, when)
        if path:
            written.append(path)
    return written


def comes_back_on_its_title_only(r: Ranked, title: str, strong: float) -> bool:
    """Whether a dormant hit was matched only on words of its title: every content word of the query
    is a word of the note's title, and no sentence of its body answers clearly on its own (its best
    window under the clear-match bar `strong`, and more than one sentence). Recall does not count
    that as a use: the note is not rehearsed, so not written back as `reactivated` nor listed in the
    review note as come back (issue 40: "Lisbon trip" brought back a faded conference note whose
    title is "Lisbon conference trip" and whose text is about flights and a talk). A one-sentence
    memory, whose title is its sentence, is answered by its body."""
    c = r.cand
    if not r.dormant or not c.terms or coverage(c.terms, title) < 1.0:
        return False
    if c.window is not None and c.window.similarity >= strong:
        return False
    return c.answer_text is None


PENDING_MAX = 1000  # rehearsals kept for a retry; more means nothing is ever quiet: drop them


def use_fields(ws: Workspace, note: ParsedNote, now: dt.datetime) -> dict[str, Any]:
    """The owned fields a use of `note` at `now` writes (`last_accessed`, and `reactivated` when it
    was dormant), or {} when a use changes nothing worth a write. Recall's rehearsal and the watcher's
    record of a person's edit share it, so a use is one thing whoever saw it."""
    state = ws.decay.state(note.meta, note.path)
    if state.pinned or state.anchor is None:
        return {}  # strength 1 either way: pinned, or no date and never used (a use would start it fading)
    if (
        state.anchor_source == "last_accessed"
        and state.anchor is not None
        and -REHEARSAL_COALESCE_SECONDS < (now - state.anchor).total_seconds() < REHEARSAL_COALESCE_SECONDS
    ):
        return {}  # used a moment ago (or replayed from just before): one write covers both
    if ws.decay.strength(state, now) >= ws.read_rules.rehearse_below:
        return {}  # still strong: a write would move its curve by little (ReadRules.rehearse_below)
    fields = ws.decay.rehearse(state, now)
    if not fields:
        return {}  # before its last use (a replay, a clock set back, a future time pulled in): never backwards
    if ws.decay.dormant(state, now):
        fields["reactivated"] = fields["last_accessed"]  # it came back: the review note lists it
    return fields


def _rehearse_one(ws: Workspace, nid: str, rel: str, now: dt.datetime) -> str | None:
    """Rehearse one note at `now`; its path if written. A busy note is queued for the next recall."""
    try:
        note = read_note(ws.vault, rel)
    except (NoteError, OSError):
        return None
    fields = use_fields(ws, note, now)
    if not fields:
        return None
    try:
        new = write_note(
            ws.vault,
            rel,
            expected_hash=note.file_hash,
            set_fields={**fields, **first_write_fields(ws, note)},
            remove_fields=retired_fields(note),
        )
    except ConcurrentEditError:
        # A person is editing it: their edit wins, and the rehearsal waits for the next recall.
        ws.bookkeeping.pending[nid] = now
        return None
    except (NoteError, ValueError, OSError) as exc:
        # Bookkeeping never costs the caller its results (a full disk, a read-only or hard-linked
        # note); each note's reason is said once per process, not at every recall.
        said = f"rehearse:{rel}:{type(exc).__name__}"
        if said not in ws.bookkeeping.said:
            ws.bookkeeping.said.add(said)
            log.warning("could not record the rehearsal of %s: %s", rel, exc)
        return None
    ws.note_written(new)
    return rel


# -- supersession -------------------------------------------------------------------------


def link_superseded(
    ws: Workspace, rel: str, values: Sequence[str], *, ids: Sequence[str] = (), unlink: bool = False
) -> tuple[str, ParsedNote]:
    """Add (or remove) `values` (links to the new notes) to the old note's `superseded_by`; returns
    (old node_id, note). Existing entries (node_ids written before links) are kept; removing drops
    the values and, for notes linked by id, those `ids`."""

    def fields(note: ParsedNote) -> tuple[dict[str, Any], list[str]]:
        current = relation_values(note.meta.get("superseded_by"))
        if unlink:
            merged = [x for x in current if x not in values and x not in ids]
        else:
            merged = current + [v for v in values if v not in current]
        out: dict[str, Any] = {}
        remove: list[str] = []
        if merged == current:
            return out, remove
        if merged:
            out["superseded_by"] = merged
        else:
            remove.append("superseded_by")
        return out, remove

    note = edit_note(ws, rel, fields)
    return file_node_id(note) or "", note


def unlink_superseded(ws: Workspace, rel: str, values: Sequence[str]) -> None:
    """Undo `link_superseded`, best effort (a failure is logged: the human can fix it by hand)."""
    try:
        link_superseded(ws, rel, values, unlink=True)
    except (NoteError, ValueError, OSError) as exc:
        log.warning("%s: could not remove %s from superseded_by (%s); edit it by hand", rel, ", ".join(values), exc)


# -- trash --------------------------------------------------------------------------------


def trash(ws: Workspace, note: ParsedNote, status: str) -> str:
    """Move a note to the vault's .trash/ (never overwriting) and mark why; returns its new path."""
    dst = join(TRASH_FOLDER, PurePosixPath(note.path).name)
    new_rel = move_note(ws.vault, note.path, dst, expected_hash=note.file_hash)
    try:
        moved = read_note(ws.vault, new_rel)
        write_note(ws.vault, new_rel, expected_hash=moved.file_hash, set_fields={"status": status}, wait=PATIENCE)
    except (NoteError, ValueError, OSError) as exc:  # it is in the trash either way
        log.info("%s: moved to the trash but could not mark it %s: %s", new_rel, status, exc)
    return new_rel


def trashed_with_id(ws: Workspace, node_id: str) -> str | None:
    """The path in .trash/ of the note with this node_id, if one is there."""
    root = ws.vault / TRASH_FOLDER
    if not root.is_dir() or not node_id:
        return None
    for path in sorted(root.glob("*.md")):
        rel = f"{TRASH_FOLDER}/{path.name}"
        if has_id(ws, rel, node_id):
            return rel
    return None


__all__ = [
    "TRASH_FOLDER",
    "edit_note",
    "link_superseded",
    "log_entry",
    "memory_folder",
    "rehearse",
    "resolve_note",
    "set_pinned",
    "staging_folder",
    "trash",
    "trashed_with_id",
    "unlink_superseded",
    "use_fields",
    "writable",
]
