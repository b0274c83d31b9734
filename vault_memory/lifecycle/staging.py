"""The agent's staging area: stage, staged, commit, commit_all, discard, remember.

A staged memory is an ordinary Markdown note in the staging folder (default
`Memory/Staged/`), so nothing staged is lost when the index goes and a human can read
or edit it before it is committed. The folder is the truth: every note in it is a
staged memory, whatever its frontmatter says.

    stage       write a staged note (node_id, status: staged, created, expires, tags), named by
                its title, unique in the vault (memory_name); flag it needs_review +
                conflicts_with ([[links]]) when a committed note is very similar
    commit      move staged notes to the memory folder as `tier: short` (keeping node_id and
                name); optionally link `supersedes` / `superseded_by` as [[links]] both ways
    commit_all  commit every staged memory not flagged needs_review; report the rest and why
    discard     move a staged memory to `.trash/` (Obsidian's convention); never delete
    remember    stage + commit in one step (the simple path for small models), written once:
                straight into the memory folder with what a commit leaves (a text already
                staged is committed from there)
    refresh_staged_memories  extend the expiry of staged memories a turn is about (prefetch)

Every write goes through notefile.write_note / move_note (atomic, compare-and-swap); after
writing, the touched paths are re-indexed when the writer lock is free (otherwise the
process holding it, a watcher, picks the change up). Expiry runs when staged memories are
listed or committed, so nothing waits on a daemon.

Longer than most modules: it is one lifecycle over one folder (staged -> committed,
expired or discarded, or kept alive by a turn about it), and its steps share the scan.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from ..errors import ConcurrentEditError, ConfigError, NoteError, NoteNotFoundError, VaultMemoryError
from ..hashing import sha256_hex
from ..index.catalog import STOPWORDS
from ..index.indexer import note_chunks
from ..records import CommitReport, Committed, Conflict, Left, StagedMemory, iso
from ..search.workspace import Workspace, now_utc
from ..text import (
    clean_input,
    clean_tags,
    in_folder,
    join,
    memory_body,
    norm,
    note_name,
    safe_file_name,
    split_title,
    unique_name,
    unlink,
)
from ..vault.fields import parse_bool, parse_list, parse_time
from ..vault.notefile import ParsedNote, file_node_id, move_note, new_node_id, read_note, safe_path, write_note
from ..vault.obsidian import date_from_name
from ..vault.walk import walk_notes
from .conflicts import check as check_conflicts
from .conflicts import replaceable
from .edits import (
    PATIENCE,
    link_superseded,
    memory_folder,
    rehearse,
    staging_folder,
    trash,
    trashed_with_id,
    unlink_superseded,
    writable,
)
from .linking import link_for, link_names, link_text, note_stems
from .relations import Identities, relation_values
from .resolve import resolve_note

log = logging.getLogger(__name__)
STAGED_BY = "staged_by"  # which call made a draft; `remember`'s are committed by that call, or by name

# A turn that points at what was just said instead of naming it ("keep that", "save it",
# "don't forget this"): it refreshes the newest staged memory. A false positive only
# extends one expiry, so a small closed list of verbs is enough.
_WORDS = re.compile(r"\w+")
_POINTER = re.compile(
    r"\b(?:keep|save|store|remember|commit|record|write|note|stage|don'?t\s+forget|do\s+not\s+forget)"
    r"\b[^.?!\n]{0,24}?\b(?:that|this|it|these|those|them)\b",
    re.IGNORECASE,
)


# -- reading staged memories --------------------------------------------------------------


def _conflicts_from_meta(ws: Workspace, meta: dict[str, Any]) -> list[Conflict]:
    """The notes `conflicts_with` names: `[[links]]` (written now) or node_ids (written before)."""
    values = relation_values(meta.get("conflicts_with"))
    if not values:
        return []
    ids = Identities(ws)
    out: list[Conflict] = []
    for value in values:
        row = ids.row(value)
        if row is not None:
            out.append(Conflict(row.node_id, row.title, row.path, replaceable=replaceable(ws, row.path)))
        elif value.startswith("[["):  # a link to a note not indexed (yet), or gone: keep its name
            out.append(Conflict("", value.strip("[]").split("|")[0]))
        else:
            out.append(Conflict(value))
    return out


def _as_staged(ws: Workspace, note: ParsedNote) -> StagedMemory:
    meta = note.meta
    heading, text = split_title(note.body)
    title = str(meta.get("title") or "").strip() or heading or PurePosixPath(note.path).stem
    pinned = parse_bool(meta.get("pinned"))
    return StagedMemory(
        node_id=file_node_id(note) or "", path=note.path, title=title, text=text,
        tags=list(parse_list(meta.get("tags"))), created=parse_time(meta.get("created")),
        expires=None if pinned else parse_time(meta.get("expires")),
        needs_review=parse_bool(meta.get("needs_review")), conflicts=_conflicts_from_meta(ws, meta),
        pinned=pinned,
    )  # fmt: skip


def _scan(ws: Workspace) -> tuple[list[tuple[StagedMemory, ParsedNote]], list[Left]]:
    """Every staged memory on disk, plus the files that could not be read (as Left)."""
    items: list[tuple[StagedMemory, ParsedNote]] = []
    bad: list[Left] = []
    for rel in walk_notes(ws.vault, ws.rules, staging_folder(ws)).notes:
        try:
            note = read_note(ws.vault, rel)
        except NoteNotFoundError:
            continue  # moved away meanwhile
        except (NoteError, OSError) as exc:
            bad.append(Left("", rel, PurePosixPath(rel).stem, "unreadable", f"unreadable: {exc}"))
            continue
        if not file_node_id(note) and not ws.config.read_only:
            # A note a human put into the staging folder: give it an identity like the indexer would.
            try:
                note = write_note(
                    ws.vault, rel, expected_hash=note.file_hash, set_fields={"node_id": new_node_id()}, wait=PATIENCE
                )
            except ConcurrentEditError:
                bad.append(
                    Left(
                        "",
                        rel,
                        PurePosixPath(rel).stem,
                        "busy",
                        "busy: being edited right now (no node_id yet); try again",
                    )
                )
                continue
            except (NoteError, ValueError) as exc:
                bad.append(Left("", rel, PurePosixPath(rel).stem, "unreadable", f"cannot give it a node_id: {exc}"))
                continue
        items.append((_as_staged(ws, note), note))
    items.sort(key=lambda t: (t[0].created or dt.datetime.min.replace(tzinfo=dt.UTC), t[0].path))
    return items, bad


def expire_staged(ws: Workspace, now: dt.datetime | None = None) -> list[Left]:
    """Move staged memories whose `expires` has passed to `.trash/` (never deleted); report them."""
    if ws.config.read_only:
        return []
    now = now_utc(ws, now)
    out: list[Left] = []
    touched: list[str] = []
    items, _ = _scan(ws)
    for sm, note in items:
        if sm.expires is None or sm.expires > now:
            continue
        try:
            where = trash(ws, note, "expired")
        except ConcurrentEditError:
            continue  # being edited right now: it expires on the next look, after the edit
        touched.append(note.path)
        out.append(
            Left(
                sm.node_id,
                where,
                sm.title,
                "expired",
                f"expired: staged {iso(sm.created) or '?'}, expired {sm.expires.isoformat()} "
                f"(staged_ttl_days={ws.config.staged_ttl_days:g}); moved to {where}",
            )
        )
        log.info("staged memory %s (%s) expired; moved to %s", sm.node_id, sm.title, where)
    ws.index_paths(touched)
    return out


def scan_staged(ws: Workspace) -> list[StagedMemory]:
    """The staged memories as they are on disk, oldest first, expired ones included (nothing is moved)."""
    return [sm for sm, _ in _scan(ws)[0]]


def staged(ws: Workspace, now: dt.datetime | None = None) -> list[StagedMemory]:
    """The staged memories, oldest first (expired ones are moved to .trash first)."""
    expire_staged(ws, now)
    items, bad = _scan(ws)
    for b in bad:
        log.warning("%s: %s", b.path, b.reason)
    return [sm for sm, _ in items]


def says_a_fact(text: str) -> None:
    """ConfigError unless the memory has a content word (two letters or more, not a stop word): "x"
    or "ok" says nothing, and once committed it came first for short queries (issue 40: `recall "JW"`)."""
    if not any(len(w) > 1 and w.lower() not in STOPWORDS and not w.isdigit() for w in _WORDS.findall(text)):
        raise ConfigError(
            f"the memory {text[:40]!r} says nothing to remember it by; write the fact in words, "
            "e.g. 'Jonas prefers tea in the afternoon.'"
        )


def find_conflicts(ws: Workspace, title: str, text: str) -> list[Conflict]:
    """Notes that state what this memory says, differently or already (conflicts.check)."""
    return check_conflicts(ws, title, text)


def taken_names(ws: Workspace, *, exclude: Sequence[str] = ()) -> dict[str, list[str]]:
    """File names in use (casefolded stem -> paths): every indexed note, and whatever is on disk in
    the staging and memory folders (the index may not have it yet), minus `exclude`."""
    on_disk = [
        join(folder, name) for folder in (staging_folder(ws), memory_folder(ws)) for name in _md_names(ws, folder)
    ]
    taken = note_stems(ws, extra=on_disk)
    gone = set(exclude)
    return {k: [p for p in v if p not in gone] for k, v in taken.items() if any(p not in gone for p in v)}


def _md_names(ws: Workspace, folder: str) -> list[str]:
    try:
        return [n for n in os.listdir(ws.vault / folder) if n.lower().endswith(".md")]
    except OSError:
        return []


def memory_name(ws: Workspace, title: str, taken: dict[str, list[str]]) -> str:
    """The file name (no `.md`) of a new memory: its title, readable, unique in the vault (` 2` on a clash).

    Unique across the vault, not just its folder: Obsidian links by file name, so a relation
    `[[Name]]` must name one note. A name that reads as a date gets " (memory)": a date-named
    file would be taken for a daily note, and dated by its name.
    """
    name = note_name(title)
    if date_from_name(name, ws.decay.daily_format) is not None:
        name += " (memory)"
    if not safe_file_name(name):  # note_name never makes one; a name we cannot see must never be written
        name = "Memory"
    return unique_name(name, taken)


def _stage(
    ws: Workspace,
    text: str,
    title: str,
    given: bool,
    tags: list[str],
    now: dt.datetime,
    conflicts: list[Conflict],
    made_by: str = "stage",
) -> StagedMemory:
    same = _staged_copy(ws, text, now, made_by)
    if same is not None:
        return same
    nid = new_node_id()
    expires = now + dt.timedelta(days=ws.config.staged_ttl_days)
    folder = staging_folder(ws)
    taken = taken_names(ws)
    fields: dict[str, Any] = {"node_id": nid, "status": "staged", "created": now, "expires": expires}
    if made_by != "stage":
        fields[STAGED_BY] = made_by  # commit_all leaves a draft that only its own call may commit
    if tags:
        fields["tags"] = tags
    if conflicts:
        fields["needs_review"] = True
        fields["conflicts_with"] = [link_text(c.path, taken) if c.path else c.node_id for c in conflicts]
    body = memory_body(link_for(ws, text))
    for attempt in (1, 2):
        stem = memory_name(ws, title, taken)
        rel = join(folder, f"{stem}.md")
        head = {k: fields[k] for k in ("node_id", "status", "created", "expires")}
        here = {**head, **({"title": title} if title != stem else {}), **fields}  # title where it always was
        try:
            note = write_note(ws.vault, rel, expected_hash=None, set_fields=here, body=body)
            break
        except NoteError:
            if not (ws.vault / rel).exists() or attempt == 2:
                raise
            taken.setdefault(stem.casefold(), []).append(rel)  # created a moment ago by someone else
    ws.index_paths([rel])
    return StagedMemory(
        node_id=nid,
        path=note.path,
        title=title,
        text=note.body.strip(),
        tags=tags,
        created=now,
        expires=expires,
        needs_review=bool(conflicts),
        conflicts=conflicts,
    )


def _staged_copy(ws: Workspace, text: str, now: dt.datetime, made_by: str) -> StagedMemory | None:
    """A live staged memory with this text (an agent retrying: no second copy), or None."""
    for sm, n in _scan(ws)[0]:
        if norm(unlink(sm.text)) == norm(text) and (sm.expires is None or sm.expires > now):
            if made_by == "remember" and str(n.meta.get(STAGED_BY) or "") == "remember":
                continue  # a failed remember's leftover is never taken as this call's draft
            sm.existing = True
            return sm
    return None


def stage(
    ws: Workspace, text: str, *, title: str | None = None, tags: Iterable[str] = (), now: dt.datetime | None = None
) -> StagedMemory:
    """Write a staged memory; flag it needs_review when a committed note is very similar."""
    writable(ws)
    now = now_utc(ws, now)
    clean_title, clean_text, given = clean_input(text, title)
    says_a_fact(clean_text)
    tag_list = clean_tags(tags)
    conflicts = find_conflicts(ws, clean_title, clean_text)
    return _stage(ws, clean_text, clean_title, given, tag_list, now, conflicts)


def _unknown(ws: Workspace, ident: str, items: Sequence[tuple[StagedMemory, ParsedNote]]) -> NoteNotFoundError:
    row = None
    try:
        row = ws.catalog.note_by_id(ident)
    except VaultMemoryError:
        pass
    if row is not None and not in_folder(row.path, staging_folder(ws)):
        return NoteNotFoundError(ident, f"is not staged: it is already committed as {row.path}")
    trashed = trashed_with_id(ws, ident)
    if trashed:
        return NoteNotFoundError(
            ident,
            f"is not staged any more: it expired or was discarded and is in {trashed}; "
            f"move it back to {staging_folder(ws)}/ to stage it again",
        )
    listing = "; ".join(f"{sm.node_id} ({sm.title})" for sm, _ in items)
    return NoteNotFoundError(
        ident,
        f"no staged memory with this id; staged now: {listing}"
        if listing
        else "no staged memory with this id; nothing is staged",
    )


def _pick_staged(
    ws: Workspace, idents: Sequence[str], items: Sequence[tuple[StagedMemory, ParsedNote]]
) -> list[tuple[StagedMemory, ParsedNote]]:
    by_id = {sm.node_id: (sm, n) for sm, n in items if sm.node_id}
    by_path = {n.path: (sm, n) for sm, n in items}
    chosen: list[tuple[StagedMemory, ParsedNote]] = []
    for ident in idents:
        key = ident.strip()
        hit = by_id.get(key)
        if hit is None and ("/" in key or "\\" in key or key.endswith(".md")):
            safe_path(ws.vault, key)  # refuses '..', absolute paths, symlinks out
            clean = "/".join(p for p in key.replace("\\", "/").split("/") if p not in ("", "."))
            hit = by_path.get(clean) or by_path.get(clean + ".md")
        if hit is None:
            raise _unknown(ws, key, items)
        if all(hit[1].path != c[1].path for c in chosen):
            chosen.append(hit)
    return chosen


@dataclass(frozen=True)
class _Old:
    """A note a commit supersedes: where it is, its identity, and how the new memory links it."""

    path: str
    node_id: str
    link: str


def _commit_one(
    ws: Workspace,
    sm: StagedMemory,
    note: ParsedNote,
    now: dt.datetime,
    olds: Sequence[_Old],
    dst: str,
    report: CommitReport,
) -> str | None:
    """Commit one staged note to `dst`; returns where it ended up, or None (and a Left entry) if it could not be."""
    meta = note.meta
    tier = str(meta.get("tier") or "").strip().lower()
    last = parse_time(meta.get("last_accessed"))
    # the commit is a use; owned times never move backwards (a draft someone dated ahead keeps its time)
    fields: dict[str, Any] = {} if last is not None and last > now else {"last_accessed": now}
    if tier not in ("short", "long"):
        tier = "short"
        fields["tier"] = "short"
    nid = sm.node_id or new_node_id()
    if not sm.node_id:
        fields["node_id"] = nid
    current = relation_values(meta.get("supersedes"))
    if olds:
        add = [
            o.link
            for o in olds
            if not any(v == o.node_id or link_names(v, PurePosixPath(o.path).stem) for v in current)
        ]
        if add:
            fields["supersedes"] = current + add
    remove = [k for k in ("status", "expires", "needs_review", STAGED_BY) if k in meta]
    try:
        written = write_note(
            ws.vault, note.path, expected_hash=note.file_hash, set_fields=fields, wait=PATIENCE, remove_fields=remove
        )
        final = move_note(ws.vault, written.path, dst, expected_hash=written.file_hash)
    except ConcurrentEditError:
        report.left.append(
            Left(
                nid,
                note.path,
                sm.title,
                "busy",
                "busy: the file changed while committing (a human editing it?); it stays staged, commit it again",
            )
        )
        return None
    except (NoteError, ValueError, OSError) as exc:
        report.left.append(Left(nid, note.path, sm.title, "error", f"error: {exc}; it stays staged"))
        return None
    ids = Identities(ws)
    superseded = ids.all(current) if current else []
    superseded += [o.node_id for o in olds if o.node_id and o.node_id not in superseded]
    paths = list(dict.fromkeys([o.path for o in olds] + [row.path for v in current if (row := ids.row(v)) is not None]))
    report.committed.append(
        Committed(nid, final, sm.title, note.path, tier, superseded, list(sm.conflicts), superseded_paths=paths)
    )
    return final


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [v for v in value if v.strip()]


def _destination(ws: Workspace, staged_path: str, taken: dict[str, list[str]]) -> str:
    """Where a staged memory goes in the memory folder: the same file name, unless another note
    took it meanwhile (then ` 2`, ...)."""
    stem = PurePosixPath(staged_path).stem
    if taken.get(stem.casefold()):
        stem = unique_name(stem, taken)
    return join(memory_folder(ws), f"{stem}.md")


def _commit(
    ws: Workspace,
    chosen: list[tuple[StagedMemory, ParsedNote]],
    supersedes: list[str],
    now: dt.datetime,
    report: CommitReport,
) -> None:
    touched: list[str] = []
    old_paths = supersede_targets(ws, supersedes, [n.path for _, n in chosen])
    # Decide every destination first: the old notes link to the new ones where they will be.
    taken = taken_names(ws, exclude=[n.path for _, n in chosen])
    dests: dict[str, str] = {}
    for _, note in chosen:
        dests[note.path] = _destination(ws, note.path, taken)
        taken.setdefault(PurePosixPath(dests[note.path]).stem.casefold(), []).append(dests[note.path])
    new_links = {n.path: link_text(dests[n.path], taken) for _, n in chosen}
    new_ids = [sm.node_id for sm, _ in chosen]
    # Link the old notes first: if one is being edited we stop before committing anything.
    olds: list[_Old] = []
    try:
        for rel in old_paths:
            old_id, _note = link_superseded(ws, rel, list(new_links.values()), ids=new_ids)
            olds.append(_Old(rel, old_id, link_text(rel, taken)))
    except BaseException:
        for old in olds:
            unlink_superseded(ws, old.path, list(new_links.values()))
        ws.index_paths([o.path for o in olds])
        raise
    for sm, note in chosen:
        final = _commit_one(ws, sm, note, now, olds, dests[note.path], report)
        touched += [note.path] + ([final] if final else [])
        if final and final != dests[note.path] and olds:  # a name taken in the last instant: relink
            moved = link_text(final, taken)
            for old in olds:
                unlink_superseded(ws, old.path, [new_links[note.path]])
                link_superseded(ws, old.path, [moved])
    failed = {x.path for x in report.left}
    stale = [new_links[n.path] for _, n in chosen if n.path in failed]
    if stale:  # do not leave an old note pointing at a successor that is still staged
        for old in olds:
            unlink_superseded(ws, old.path, stale)
    ws.index_paths(touched + [o.path for o in olds])


def supersede_targets(ws: Workspace, supersedes: Sequence[str], chosen: Sequence[str] = ()) -> list[str]:
    """The vault paths of the notes `supersedes` names; raises (nothing written) for any that is not a
    committed note other than those `chosen`: checked before a call writes its first byte."""
    staging = staging_folder(ws)
    old_paths: list[str] = []
    for target in supersedes:
        rel = resolve_note(ws, target)
        if in_folder(rel, staging):
            raise ConfigError(f"--supersedes {target}: {rel} is staged, not committed; commit or discard it first")
        if rel in chosen:
            raise ConfigError(f"--supersedes {target}: a memory cannot supersede itself")
        if rel not in old_paths:
            old_paths.append(rel)
    return old_paths


def commit(
    ws: Workspace, ids: Sequence[str], *, supersedes: str | Sequence[str] | None = None, now: dt.datetime | None = None
) -> CommitReport:
    """Commit these staged memories (node_id or staged path), needs_review or not: naming
    one is the decision. Unknown ids raise before anything is written."""
    writable(ws)
    now = now_utc(ws, now)
    idents = [i for i in dict.fromkeys(x.strip() for x in ids) if i]
    if not idents:
        raise ConfigError("name at least one staged memory to commit (see `vault-memory staged`), or use --all")
    items, bad = _scan(ws)
    for b in bad:
        if b.path in idents:
            raise NoteError(b.path, b.reason)
    chosen = _pick_staged(ws, idents, items)
    report = CommitReport()
    _commit(ws, chosen, _as_list(supersedes), now, report)
    return report


def commit_all(ws: Workspace, now: dt.datetime | None = None) -> CommitReport:
    """Commit every staged memory except those flagged needs_review; every other one is
    listed in `left` with its reason (expired ones were moved to .trash)."""
    writable(ws)
    now = now_utc(ws, now)
    report = CommitReport(left=expire_staged(ws, now))
    items, bad = _scan(ws)
    report.left += bad
    chosen: list[tuple[StagedMemory, ParsedNote]] = []
    for sm, note in items:
        if sm.needs_review:
            report.left.append(Left(sm.node_id, sm.path, sm.title, "needs_review", sm.review_reason()))
        elif str(note.meta.get(STAGED_BY) or "") == "remember":
            why = (
                f"left: staged by a `remember` call that did not finish; commit it by name if you want it "
                f"(vault-memory commit {sm.node_id}) or discard it"
            )
            report.left.append(Left(sm.node_id, sm.path, sm.title, "left_by_failed_call", why))
        else:
            chosen.append((sm, note))
    _commit(ws, chosen, [], now, report)
    return report


def discard(ws: Workspace, ident: str) -> str:
    """Move a staged memory to `.trash/` (never deleted); returns where it went."""
    writable(ws)
    items, _ = _scan(ws)
    [(_sm, note)] = _pick_staged(ws, [ident], items)
    where = trash(ws, note, "discarded")
    ws.index_paths([note.path])
    return where


def remember(
    ws: Workspace,
    text: str,
    *,
    title: str | None = None,
    tags: Iterable[str] = (),
    supersedes: str | Sequence[str] | None = None,
    now: dt.datetime | None = None,
) -> Committed:
    """Stage and commit in one step, in one write of the note (`_remember_in_place`).

    A conflict does not stop it (small models must not be left with bookkeeping): the
    memory is committed, keeps `conflicts_with`, and the result lists the conflicts. If a
    note already states it (a duplicate, conflicts.py: the same words, the same polarity),
    nothing is written: the result is that note (`existing`), rehearsed when the `rehearse`
    policy lets recall write to it. `supersedes` (node_id, path, title or [[link]]) commits
    it as the successor of that note, duplicate or not.
    """
    writable(ws)
    now = now_utc(ws, now)
    clean_title, clean_text, given = clean_input(text, title)
    says_a_fact(clean_text)
    tag_list = clean_tags(tags)
    olds = _as_list(supersedes)
    old_paths = supersede_targets(ws, olds)  # every target resolves before the first byte is written (or nothing is)
    # a note this memory supersedes is resolved, not a conflict to look at (nor to advise superseding)
    conflicts = [c for c in find_conflicts(ws, clean_title, clean_text) if not c.path or c.path not in old_paths]
    same = next((c for c in conflicts if c.kind == "duplicate"), None)
    if same is not None and not olds:
        if _may_rehearse(ws, same.path):
            rehearse(ws, [same.node_id], now=now)
        row = ws.catalog.note_by_id(same.node_id)
        tier = str((row.meta if row else {}).get("tier") or "long")
        return Committed(same.node_id, same.path, same.title, "", tier, [], [same], existing=True)
    if _staged_copy(ws, clean_text, now, "remember") is None:
        return _remember_in_place(ws, clean_text, clean_title, tag_list, now, conflicts, olds)
    # The same text is staged already (by `stage`): that draft is the one committed.
    sm = _stage(ws, clean_text, clean_title, given, tag_list, now, conflicts, made_by="remember")
    report = CommitReport()
    items, _ = _scan(ws)
    chosen = [(s, n) for s, n in items if s.node_id == sm.node_id]
    if not chosen:
        raise NoteNotFoundError(sm.path, "staged a moment ago but gone now (moved or deleted by someone else)")
    draft = chosen[0][1]
    try:
        _commit(ws, chosen, olds, now, report)
    except BaseException:
        _withdraw(ws, draft)
        raise
    if not report.committed:
        why = report.left[0].reason if report.left else "unknown reason"
        kept = not _withdraw(ws, draft)
        raise ConcurrentEditError(
            sm.path,
            f"not remembered ({why}); nothing was written, try again"
            if not kept
            else f"staged as {sm.node_id} but not committed ({why}); run `vault-memory commit {sm.node_id}`",
        )
    done = report.committed[0]
    done.conflicts = list(sm.conflicts)
    return done


def _remember_in_place(
    ws: Workspace,
    text: str,
    title: str,
    tags: list[str],
    now: dt.datetime,
    conflicts: list[Conflict],
    supersedes: list[str],
) -> Committed:
    """Write a remembered memory straight into the memory folder: one write of the note, with the
    frontmatter a stage then commit leaves (same keys, same order), and no draft to take back.

    As in `_commit`, the notes it supersedes are linked first, to where it will be, so a note being
    edited stops the call before anything is written; a write that fails unlinks them again."""
    old_paths = supersede_targets(ws, supersedes)
    taken = taken_names(ws)
    nid = new_node_id()
    fields: dict[str, Any] = {"node_id": nid, "created": now}
    if tags:
        fields["tags"] = tags
    if conflicts:
        fields["conflicts_with"] = [link_text(c.path, taken) if c.path else c.node_id for c in conflicts]
    body = memory_body(link_for(ws, text))
    stem = memory_name(ws, title, taken)
    rel = join(memory_folder(ws), f"{stem}.md")
    taken.setdefault(stem.casefold(), []).append(rel)
    link = link_text(rel, taken)
    olds: list[_Old] = []
    try:
        for old in old_paths:
            old_id, _note = link_superseded(ws, old, [link], ids=[nid])
            olds.append(_Old(old, old_id, link_text(old, taken)))
    except BaseException:
        for o in olds:
            unlink_superseded(ws, o.path, [link])
        ws.index_paths([o.path for o in olds])
        raise
    tail: dict[str, Any] = {"last_accessed": now, "tier": "short"}
    if olds:
        tail["supersedes"] = [o.link for o in olds]
    try:
        for attempt in (1, 2):
            here = {"node_id": nid, "created": now, **({"title": title} if title != stem else {}), **fields, **tail}
            try:
                write_note(ws.vault, rel, expected_hash=None, set_fields=here, body=body)
                break
            except NoteError:
                if not (ws.vault / rel).exists() or attempt == 2:
                    raise
                stem = memory_name(ws, title, taken)  # created a moment ago by someone else: the next name
                rel = join(memory_folder(ws), f"{stem}.md")
                taken.setdefault(stem.casefold(), []).append(rel)
                moved = link_text(rel, taken)
                for o in olds:
                    unlink_superseded(ws, o.path, [link])
                    link_superseded(ws, o.path, [moved])
                link = moved
    except BaseException:  # raised as stage raises it (a full disk is a NoteWriteError): nothing was written
        for o in olds:
            unlink_superseded(ws, o.path, [link])
        ws.index_paths([o.path for o in olds])
        raise
    ws.index_paths([rel] + [o.path for o in olds])
    superseded = [o.node_id for o in olds if o.node_id]
    return Committed(nid, rel, title, "", "short", superseded, list(conflicts), superseded_paths=[o.path for o in olds])


def _withdraw(ws: Workspace, draft: ParsedNote) -> bool:
    """Remove the draft a failed call staged, if it is still exactly what that call wrote (a person who
    edited it meanwhile keeps it); True when the vault is as it was before the call."""
    path = ws.vault / draft.path
    try:
        if sha256_hex(path.read_bytes()) != draft.file_hash:
            return not path.exists()
        path.unlink()
    except FileNotFoundError:
        return True
    except OSError as exc:
        log.warning("%s: could not remove the draft of a failed call (%s); discard it by hand", draft.path, exc)
        return False
    ws.index_paths([draft.path])
    return True


def _may_rehearse(ws: Workspace, rel: str) -> bool:
    """Whether the `rehearse` policy lets a use of this note be written into it (as recall would)."""
    policy = ws.config.rehearse
    return policy == "all" or (policy == "memories" and (not memory_folder(ws) or in_folder(rel, memory_folder(ws))))


# -- keeping what a turn is about --------------------------------------------------------


@dataclass(frozen=True)
class _Staged:
    path: str
    meta: dict[str, Any]
    mtime: float
    similarity: float


def _staged_files(ws: Workspace) -> list[tuple[str, float]]:
    """(path, mtime) of the notes in the staging folder, from disk: the folder is the truth."""
    out: list[tuple[str, float]] = []
    for rel in walk_notes(ws.vault, ws.rules, staging_folder(ws)).notes:
        try:
            out.append((rel, os.stat(ws.vault / rel).st_mtime))
        except OSError:
            continue
    return out


def is_pointer(text: str) -> bool:
    """Whether the turn points at something just said ("keep that", "save it")."""
    return _POINTER.search(text) is not None


def _max_similarity(vectors: Sequence[np.ndarray], qvec: np.ndarray) -> float:
    return max((float(v @ qvec) for v in vectors), default=0.0)


def _staged_memories(ws: Workspace, qvec: np.ndarray) -> list[_Staged]:
    """Every staged memory with its similarity to the turn.

    Fast path: the index already has the note as it is on disk (same mtime), so its meta and
    chunk vectors come from the catalog. Otherwise (staged a moment ago, index written by
    another process) the file is read, chunked like the indexer does, and embedded.
    """
    out: list[_Staged] = []
    emb = ws.embedder
    for rel, mtime in _staged_files(ws):
        row = ws.catalog.note_by_path(rel)
        if row is not None and row.mtime == mtime:
            chunks = ws.catalog.chunks_of(row.node_id)
            vecs = ws.catalog.get_vectors([c.text_hash for c in chunks])
            if len(vecs) == len({c.text_hash for c in chunks}):
                out.append(_Staged(rel, row.meta, mtime, _max_similarity(list(vecs.values()), qvec)))
                continue
        try:
            note = read_note(ws.vault, rel)
        except (NoteError, OSError):
            continue
        texts = [
            c.text
            for c in note_chunks(
                note, max_tokens=emb.max_tokens, count_tokens=emb.count_tokens, scaffolding=ws.rules.scaffolding
            )
            if c.text.strip()
        ]
        cached = ws.catalog.get_vectors([sha256_hex(t) for t in texts])
        missing = [t for t in texts if sha256_hex(t) not in cached]
        fresh = list(emb.embed(missing)) if missing else []
        out.append(_Staged(rel, note.meta, note.mtime, _max_similarity([*cached.values(), *fresh], qvec)))
    return out


def refresh_staged_memories(
    ws: Workspace, text: str, qvec: np.ndarray, *, now: dt.datetime, threshold: float | None = None
) -> list[str]:
    """Extend `expires` of the staged memories this turn is about; returns their paths."""
    cfg = ws.config
    threshold = ws.calibration.weak if threshold is None else threshold
    new_expiry = (now + dt.timedelta(days=cfg.staged_ttl_days)).replace(microsecond=0)
    staged = []
    for sm in _staged_memories(ws, qvec):
        state = ws.decay.state(sm.meta, sm.path)
        if not state.pinned and state.expires is not None:  # pinned or no `expires`: it does not expire
            staged.append(sm)
    chosen = {sm.path for sm in staged if sm.similarity >= threshold}
    if staged and is_pointer(text):

        def created(sm: _Staged) -> tuple[dt.datetime, str]:
            when = parse_time(sm.meta.get("created")) or dt.datetime.fromtimestamp(sm.mtime, tz=dt.UTC)
            return when, sm.path

        chosen.add(max(staged, key=created).path)
    refreshed: list[str] = []
    for rel in sorted(chosen):
        try:
            note = read_note(ws.vault, rel)  # the bytes the compare-and-swap is against
        except (NoteError, OSError):
            continue
        current = parse_time(note.meta.get("expires"))
        if current is None or current >= new_expiry or parse_bool(note.meta.get("pinned")):
            continue  # only ever extend, and never give a non-expiring note an expiry
        try:
            new = write_note(ws.vault, rel, expected_hash=note.file_hash, set_fields={"expires": new_expiry})
        except ConcurrentEditError:
            continue  # edited meanwhile: the human's edit wins; the next turn can refresh it
        except (NoteError, ValueError, OSError) as exc:
            log.warning("could not refresh the expiry of staged memory %s: %s", rel, exc)
            continue
        refreshed.append(rel)
        ws.note_written(new)
    return refreshed


__all__ = [
    "commit",
    "commit_all",
    "discard",
    "expire_staged",
    "find_conflicts",
    "is_pointer",
    "memory_name",
    "refresh_staged_memories",
    "remember",
    "scan_staged",
    "stage",
    "staged",
    "taken_names",
]
