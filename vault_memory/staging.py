"""The agent's write path: stage, commit, discard, remember, pin, log.

A staged memory is an ordinary Markdown note in the staging folder (default
`Memory/Staged/`), so nothing staged is lost when the index goes and a human can read
or edit it before it is committed. The folder is the truth: every note in it is a
staged memory, whatever its frontmatter says.

    stage     write a staged note (node_id, status: staged, created, expires, tags);
              flag it needs_review + conflicts_with when a committed note is very similar
    commit    move staged notes to the memory folder as `tier: short` (keeping node_id);
              optionally link `supersedes` / `superseded_by`
    commit_all  commit every staged memory not flagged needs_review; report the rest and why
    discard   move a staged memory to `.trash/` (Obsidian's convention); never delete
    remember  stage + commit in one step (the simple path for small models)
    pin/unpin set or remove `pinned: true` on any note (node_id or vault path)
    log       append `- HH:MM text` to today's episodic note

Every write goes through notefile.write_note / move_note (atomic, compare-and-swap);
after writing, the touched paths are re-indexed when the writer lock is free (otherwise
the process holding it, a watcher, picks the change up). Expiry runs when staged
memories are listed or committed, so nothing waits on a daemon.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from .decay import parse_bool, parse_list, parse_time
from .errors import (
    ConcurrentEditError,
    ConfigError,
    NoteError,
    NoteNotFoundError,
    UnsafePathError,
    VaultMemoryError,
)
from .indexer import file_node_id, new_node_id
from .notefile import ParsedNote, move_note, read_note, safe_path, write_note

if TYPE_CHECKING:
    from .memory import Memory

log = logging.getLogger(__name__)

TRASH_FOLDER = ".trash"
TITLE_WORDS = 8  # a default title is the first words of the text
TITLE_CHARS = 80
SLUG_CHARS = 60
MAX_CONFLICTS = 5
_WS = re.compile(r"\s+")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$")
_SLUG_DROP = re.compile(r"[^\w]+", re.UNICODE)
_TAG_BAD = re.compile(r"[\s,#\[\]{}]+")


# -- records ------------------------------------------------------------------------------

def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass
class Conflict:
    """A committed note that a staged memory is very similar to."""

    node_id: str
    title: str = ""
    path: str = ""
    similarity: float | None = None  # known when just computed; not stored in the note

    def describe(self) -> str:
        return f"{self.node_id} ({self.title or 'not in the index'})"


@dataclass
class StagedMemory:
    """One staged memory as it is on disk now."""

    node_id: str
    path: str
    title: str
    text: str
    tags: list[str]
    created: dt.datetime | None
    expires: dt.datetime | None  # None: does not expire (pinned, or no `expires`)
    needs_review: bool
    conflicts: list[Conflict] = field(default_factory=list)
    pinned: bool = False
    existing: bool = False  # stage() found the same text already staged and returned that one

    @property
    def conflicts_with(self) -> list[str]:
        return [c.node_id for c in self.conflicts]

    def review_reason(self) -> str:
        if self.conflicts:
            return "needs_review: conflicts with " + ", ".join(c.describe() for c in self.conflicts)
        return "needs_review: flagged for review (commit it by id, or set needs_review: false)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "path": self.path, "title": self.title, "text": self.text,
            "tags": list(self.tags), "created": _iso(self.created), "expires": _iso(self.expires),
            "needs_review": self.needs_review, "conflicts_with": self.conflicts_with,
            "conflicts": [c.__dict__ for c in self.conflicts], "pinned": self.pinned, "existing": self.existing,
        }  # fmt: skip


@dataclass
class Committed:
    """A memory that is now in the memory folder."""

    node_id: str
    path: str
    title: str
    staged_path: str  # where it was staged ("" when remember found it already committed)
    tier: str
    supersedes: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    existing: bool = False  # remember(): the same text was already committed; it was rehearsed instead

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "path": self.path, "title": self.title, "staged_path": self.staged_path,
            "tier": self.tier, "supersedes": list(self.supersedes),
            "conflicts_with": [c.node_id for c in self.conflicts], "conflicts": [c.__dict__ for c in self.conflicts],
            "existing": self.existing,
        }  # fmt: skip


@dataclass
class Left:
    """A staged memory a commit did not commit, and why.

    code: needs_review | expired (moved to .trash) | unreadable | busy (being edited) | error
    """

    node_id: str
    path: str
    title: str
    code: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CommitReport:
    """Exactly what a commit committed and what it left, with a reason for each."""

    committed: list[Committed] = field(default_factory=list)
    left: list[Left] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"committed": [c.to_dict() for c in self.committed], "left": [x.to_dict() for x in self.left]}


@dataclass
class PinResult:
    node_id: str
    path: str
    pinned: bool
    changed: bool  # False when the note already was (un)pinned

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# -- small helpers ------------------------------------------------------------------------

def _now(mem: Memory, now: dt.datetime | None) -> dt.datetime:
    value = now or mem.clock()
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.replace(microsecond=0)


def _writable(mem: Memory) -> None:
    if mem.config.read_only:
        raise ConfigError("read-only mode: vault-memory may not write to the vault; drop --read-only")


def _folder(name: str, setting: str, *, allow_root: bool = False) -> str:
    clean = "/".join(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))
    if not clean and not allow_root:
        raise ConfigError(f"{setting} is empty; set it to a folder inside the vault")
    if ".." in clean.split("/") or clean.startswith("."):
        raise ConfigError(f"{setting} {name!r} must be a plain folder inside the vault (no '..', no dot-folder)")
    return clean


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _staging(mem: Memory) -> str:
    return _folder(mem.config.staging_folder, "staging_folder")


def _in_folder(rel: str, folder: str) -> bool:
    return rel.startswith(folder + "/")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def _split_title(body: str) -> tuple[str, str]:
    """(first H1 text or "", the body without that heading line)."""
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        m = _H1.match(line.strip())
        if m:
            return m.group(1).strip(), "\n".join(lines[i + 1:]).strip()
        break
    return "", body.strip()


def default_title(text: str) -> str:
    """The first ~8 words of the text, on one line, without Markdown decoration."""
    words = [w.strip("*_`>#[]") for w in text.split()]
    title = " ".join(w for w in words if w)
    words = title.split()
    short = " ".join(words[:TITLE_WORDS])
    if len(short) > TITLE_CHARS:
        short = short[:TITLE_CHARS].rsplit(" ", 1)[0] or short[:TITLE_CHARS]
    if len(words) > TITLE_WORDS or len(short) < len(title):
        short = short.rstrip(".,;:!?-") + "…"
    return short or "memory"


def _clean_input(text: str, title: str | None) -> tuple[str, str, bool]:
    """(title, text, title_given). A leading `# Heading` in the text serves as the title."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("the memory text is empty; give the fact to remember")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    given = title is not None and bool(title.strip())
    if not given:
        heading, rest = _split_title(text)
        if heading and rest:
            return heading, rest, False
        return default_title(text), text, False
    assert title is not None
    clean = _WS.sub(" ", title).strip()
    return clean, text, True


def _clean_tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        clean = _TAG_BAD.sub("-", str(tag).strip().lstrip("#")).strip("-/")
        if not clean:
            raise ConfigError(f"tag {tag!r} is empty after removing '#' and spaces")
        if clean not in out:
            out.append(clean)
    return out


def _slug(title: str) -> str:
    slug = _SLUG_DROP.sub("-", title.casefold()).strip("-_")
    return slug[:SLUG_CHARS].rstrip("-_") or "memory"


def _body(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n"


def _sync(mem: Memory, paths: Iterable[str]) -> bool:
    """Re-index these paths if the writer lock can be had now; True if it was done.

    The write itself already succeeded, so an indexing problem is logged, not raised: the
    note is safe in the vault and the next `index` (or the watcher) picks it up. Raising
    here would make an agent retry a write that already happened.
    """
    todo = sorted({p for p in paths if p})
    if not todo:
        return True
    held = mem.lock.held
    if not held and not mem.lock.try_acquire():
        log.info("index is being written by process %s; it will pick up %s", mem.lock.holder_pid(), ", ".join(todo))
        return False
    try:
        mem.sync_paths(todo)
        return True
    except VaultMemoryError as exc:
        log.warning("wrote %s but could not update the index (%s); run `vault-memory index`", ", ".join(todo), exc)
        return False
    finally:
        if not held:
            mem.lock.release()


# -- reading staged memories --------------------------------------------------------------

def _staged_paths(mem: Memory) -> list[str]:
    folder = _staging(mem)
    try:
        root = safe_path(mem.vault, folder)
    except UnsafePathError:
        return []
    if not root.is_dir():
        return []
    out: list[str] = []
    base = mem.vault
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, base).replace(os.sep, "/")
        dirnames[:] = sorted(d for d in dirnames if not mem.rules.ignored(f"{rel_dir}/{d}", is_dir=True))
        for name in filenames:
            rel = f"{rel_dir}/{name}"
            full = os.path.join(dirpath, name)
            if mem.rules.is_note(rel) and os.path.isfile(full) and not os.path.islink(full):
                out.append(rel)
    return sorted(out)


def _conflicts_from_meta(mem: Memory, meta: dict[str, Any]) -> list[Conflict]:
    ids = list(parse_list(meta.get("conflicts_with")))
    if not ids:
        return []
    try:
        rows = mem.catalog.notes_by_ids(ids)
    except VaultMemoryError:
        rows = {}
    return [Conflict(i, rows[i].title, rows[i].path) if i in rows else Conflict(i) for i in ids]


def _as_staged(mem: Memory, note: ParsedNote) -> StagedMemory:
    meta = note.meta
    heading, text = _split_title(note.body)
    title = str(meta.get("title") or "").strip() or heading or PurePosixPath(note.path).stem
    pinned = parse_bool(meta.get("pinned"))
    return StagedMemory(
        node_id=file_node_id(note) or "", path=note.path, title=title, text=text,
        tags=list(parse_list(meta.get("tags"))), created=parse_time(meta.get("created")),
        expires=None if pinned else parse_time(meta.get("expires")),
        needs_review=parse_bool(meta.get("needs_review")), conflicts=_conflicts_from_meta(mem, meta),
        pinned=pinned,
    )  # fmt: skip


def _scan(mem: Memory) -> tuple[list[tuple[StagedMemory, ParsedNote]], list[Left]]:
    """Every staged memory on disk, plus the files that could not be read (as Left)."""
    items: list[tuple[StagedMemory, ParsedNote]] = []
    bad: list[Left] = []
    for rel in _staged_paths(mem):
        try:
            note = read_note(mem.vault, rel)
        except NoteNotFoundError:
            continue  # moved away meanwhile
        except (NoteError, OSError) as exc:
            bad.append(Left("", rel, PurePosixPath(rel).stem, "unreadable", f"unreadable: {exc}"))
            continue
        if not file_node_id(note) and not mem.config.read_only:
            # A note a human put into the staging folder: give it an identity like the indexer would.
            try:
                note = write_note(mem.vault, rel, expected_hash=note.file_hash, set_fields={"node_id": new_node_id()})
            except ConcurrentEditError:
                bad.append(Left("", rel, PurePosixPath(rel).stem, "busy",
                                "busy: being edited right now (no node_id yet); try again"))
                continue
            except (NoteError, ValueError) as exc:
                bad.append(Left("", rel, PurePosixPath(rel).stem, "unreadable", f"cannot give it a node_id: {exc}"))
                continue
        items.append((_as_staged(mem, note), note))
    items.sort(key=lambda t: (t[0].created or dt.datetime.min.replace(tzinfo=dt.UTC), t[0].path))
    return items, bad


def _trash(mem: Memory, note: ParsedNote, status: str) -> str:
    """Move a note to the vault's .trash/ (never overwriting) and mark why; returns its new path."""
    dst = _join(TRASH_FOLDER, PurePosixPath(note.path).name)
    new_rel = move_note(mem.vault, note.path, dst, expected_hash=note.file_hash)
    try:
        moved = read_note(mem.vault, new_rel)
        write_note(mem.vault, new_rel, expected_hash=moved.file_hash, set_fields={"status": status})
    except (NoteError, ValueError, OSError) as exc:  # it is in the trash either way
        log.info("%s: moved to the trash but could not mark it %s: %s", new_rel, status, exc)
    return new_rel


def _trashed_with_id(mem: Memory, node_id: str) -> str | None:
    root = mem.vault / TRASH_FOLDER
    if not root.is_dir() or not node_id:
        return None
    for path in sorted(root.glob("*.md")):
        rel = f"{TRASH_FOLDER}/{path.name}"
        try:
            if file_node_id(read_note(mem.vault, rel)) == node_id:
                return rel
        except (NoteError, OSError):
            continue
    return None


def expire_staged(mem: Memory, now: dt.datetime | None = None) -> list[Left]:
    """Move staged memories whose `expires` has passed to `.trash/` (never deleted); report them."""
    if mem.config.read_only:
        return []
    now = _now(mem, now)
    out: list[Left] = []
    touched: list[str] = []
    items, _ = _scan(mem)
    for sm, note in items:
        if sm.expires is None or sm.expires > now:
            continue
        try:
            where = _trash(mem, note, "expired")
        except ConcurrentEditError:
            continue  # being edited right now: it expires on the next look, after the edit
        touched.append(note.path)
        out.append(Left(sm.node_id, where, sm.title, "expired",
                        f"expired: staged {_iso(sm.created) or '?'}, expired {sm.expires.isoformat()} "
                        f"(staged_ttl_days={mem.config.staged_ttl_days:g}); moved to {where}"))
        log.info("staged memory %s (%s) expired; moved to %s", sm.node_id, sm.title, where)
    _sync(mem, touched)
    return out


def staged(mem: Memory, now: dt.datetime | None = None) -> list[StagedMemory]:
    """The staged memories, oldest first (expired ones are moved to .trash first)."""
    expire_staged(mem, now)
    items, bad = _scan(mem)
    for b in bad:
        log.warning("%s: %s", b.path, b.reason)
    return [sm for sm, _ in items]


# -- conflicts ----------------------------------------------------------------------------

def _fit(mem: Memory, text: str) -> str:
    """Shorten text to what the embedder accepts (conflicts are judged on the beginning)."""
    emb = mem.embedder
    words = text.split(" ")
    while len(words) > 1 and emb.count_tokens(" ".join(words)) > emb.max_tokens:
        words = words[: max(1, int(len(words) * 0.8))]
    return " ".join(words)


def find_conflicts(mem: Memory, title: str, text: str) -> list[Conflict]:
    """Indexed notes (outside the staging and episodes folders) whose best chunk has cosine
    ≥ config.conflict_similarity to this memory, most similar first."""
    cat = mem.catalog
    if not cat.chunk_count():
        return []
    folders = (mem.config.staging_folder, mem.config.episodes_folder)
    exclude = tuple(f.strip("/") + "/" for f in folders if f.strip("/"))
    searcher = mem.searcher()
    cands = searcher.search(_fit(mem, f"{title}\n{text}"), mode="dense", candidates=20, exclude_prefixes=exclude)
    close = sorted((c for c in cands if c.similarity >= mem.config.conflict_similarity),
                   key=lambda c: (-c.similarity, c.node_id))[:MAX_CONFLICTS]
    rows = cat.notes_by_ids([c.node_id for c in close])
    return [Conflict(c.node_id, rows[c.node_id].title if c.node_id in rows else "",
                     rows[c.node_id].path if c.node_id in rows else "", round(c.similarity, 4)) for c in close]


def _identical(mem: Memory, conflicts: Sequence[Conflict], text: str) -> Conflict | None:
    """The conflicting committed note whose text is this text (whitespace and case aside)."""
    want = _norm(text)
    for c in conflicts:
        if not c.path:
            continue
        try:
            note = read_note(mem.vault, c.path)
        except (NoteError, OSError):
            continue
        if _norm(_split_title(note.body)[1]) == want and file_node_id(note) == c.node_id:
            return c
    return None


# -- stage --------------------------------------------------------------------------------

def _stage(mem: Memory, text: str, title: str, given: bool, tags: list[str], now: dt.datetime,
           conflicts: list[Conflict]) -> StagedMemory:
    for sm, _ in _scan(mem)[0]:
        if _norm(sm.text) == _norm(text) and (sm.expires is None or sm.expires > now):
            sm.existing = True  # the same text is already staged (an agent retrying): no second copy
            return sm
    nid = new_node_id()
    expires = now + dt.timedelta(days=mem.config.staged_ttl_days)
    fields: dict[str, Any] = {"node_id": nid, "status": "staged", "created": now, "expires": expires}
    if given:
        fields["title"] = title
    if tags:
        fields["tags"] = tags
    if conflicts:
        fields["needs_review"] = True
        fields["conflicts_with"] = [c.node_id for c in conflicts]
    folder = _staging(mem)
    rel = _join(folder, f"{_slug(title)}-{nid[:6]}.md")
    body = _body(title, text)
    try:
        note = write_note(mem.vault, rel, expected_hash=None, set_fields=fields, body=body)
    except NoteError:
        if not (mem.vault / rel).exists():
            raise
        nid = new_node_id()  # a name clash (astronomically unlikely): take another id and name
        fields["node_id"] = nid
        rel = _join(folder, f"{_slug(title)}-{nid[:8]}.md")
        note = write_note(mem.vault, rel, expected_hash=None, set_fields=fields, body=body)
    _sync(mem, [rel])
    return StagedMemory(node_id=nid, path=note.path, title=title, text=text, tags=tags, created=now,
                        expires=expires, needs_review=bool(conflicts), conflicts=conflicts)


def stage(mem: Memory, text: str, *, title: str | None = None, tags: Iterable[str] = (),
          now: dt.datetime | None = None) -> StagedMemory:
    """Write a staged memory; flag it needs_review when a committed note is very similar."""
    _writable(mem)
    now = _now(mem, now)
    clean_title, clean_text, given = _clean_input(text, title)
    clean_tags = _clean_tags(tags)
    conflicts = find_conflicts(mem, clean_title, clean_text)
    return _stage(mem, clean_text, clean_title, given, clean_tags, now, conflicts)


# -- resolving targets --------------------------------------------------------------------

def _unknown(mem: Memory, ident: str, items: Sequence[tuple[StagedMemory, ParsedNote]]) -> NoteNotFoundError:
    row = None
    try:
        row = mem.catalog.note_by_id(ident)
    except VaultMemoryError:
        pass
    if row is not None and not _in_folder(row.path, _staging(mem)):
        return NoteNotFoundError(ident, f"is not staged: it is already committed as {row.path}")
    trashed = _trashed_with_id(mem, ident)
    if trashed:
        return NoteNotFoundError(ident, f"is not staged any more: it expired or was discarded and is in {trashed}; "
                                        f"move it back to {_staging(mem)}/ to stage it again")
    listing = "; ".join(f"{sm.node_id} ({sm.title})" for sm, _ in items)
    return NoteNotFoundError(ident, f"no staged memory with this id; staged now: {listing}" if listing
                             else "no staged memory with this id; nothing is staged")


def _pick_staged(mem: Memory, idents: Sequence[str],
                 items: Sequence[tuple[StagedMemory, ParsedNote]]) -> list[tuple[StagedMemory, ParsedNote]]:
    by_id = {sm.node_id: (sm, n) for sm, n in items if sm.node_id}
    by_path = {n.path: (sm, n) for sm, n in items}
    chosen: list[tuple[StagedMemory, ParsedNote]] = []
    for ident in idents:
        key = ident.strip()
        hit = by_id.get(key)
        if hit is None and ("/" in key or "\\" in key or key.endswith(".md")):
            safe_path(mem.vault, key)  # refuses '..', absolute paths, symlinks out
            clean = "/".join(p for p in key.replace("\\", "/").split("/") if p not in ("", "."))
            hit = by_path.get(clean) or by_path.get(clean + ".md")
        if hit is None:
            raise _unknown(mem, key, items)
        if all(hit[1].path != c[1].path for c in chosen):
            chosen.append(hit)
    return chosen


def _looks_like_path(target: str) -> bool:
    return "/" in target or "\\" in target or target.lower().endswith(".md") or target.startswith(".")


def _note_with_id(mem: Memory, rel: str, node_id: str) -> bool:
    try:
        return file_node_id(read_note(mem.vault, rel)) == node_id
    except (NoteError, OSError):
        return False


def resolve_note(mem: Memory, target: str) -> str:
    """The vault path of a note given by node_id or by (untrusted) vault-relative path."""
    target = target.strip()
    if not target:
        raise ConfigError("no note given; pass a node_id or a vault path")
    if not _looks_like_path(target):
        row = None
        try:
            row = mem.catalog.note_by_id(target)
        except VaultMemoryError:
            pass
        if row is not None and (_note_with_id(mem, row.path, target) or not row.id_in_file):
            return row.path
        # Not indexed yet (the index is written by another process, or stale): look where
        # the agent's memories live before giving up.
        folders = [_staging(mem), _folder(mem.config.memory_folder, "memory_folder", allow_root=True)]
        for rel in _staged_paths(mem) + _top_notes(mem, folders[1]):
            if _note_with_id(mem, rel, target):
                return rel
    candidates = [target] if target.lower().endswith(".md") else [target, target + ".md"]
    for cand in candidates:
        full = safe_path(mem.vault, cand)  # raises UnsafePathError for '..', absolute, symlink out
        clean = full.relative_to(mem.vault).as_posix()
        if full.is_file():
            if not mem.rules.is_note(clean):
                raise NoteError(clean, "not a note vault-memory manages (not .md, or in an ignored/dot folder)")
            return clean
    raise NoteNotFoundError(target, "no note with this node_id or path (if it is new, run `vault-memory index`)")


def _top_notes(mem: Memory, folder: str) -> list[str]:
    try:
        root = safe_path(mem.vault, folder) if folder else mem.vault
    except UnsafePathError:
        return []
    if not root.is_dir():
        return []
    out = []
    for p in sorted(root.glob("*.md")):
        rel = p.relative_to(mem.vault).as_posix()
        if p.is_file() and not p.is_symlink() and mem.rules.is_note(rel):
            out.append(rel)
    return out


def _edit(mem: Memory, rel: str, fields_for: Any) -> ParsedNote:
    """Read, compute fields from the note, write with CAS; one retry if the file changed meanwhile."""
    for attempt in (1, 2):
        note = read_note(mem.vault, rel)
        set_fields, remove = fields_for(note)
        try:
            return write_note(mem.vault, rel, expected_hash=note.file_hash, set_fields=set_fields,
                              remove_fields=[k for k in remove if k in note.meta])
        except ConcurrentEditError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


# -- commit -------------------------------------------------------------------------------

def _link_old(mem: Memory, rel: str, new_ids: Sequence[str], *, unlink: bool = False) -> tuple[str, ParsedNote]:
    """Add (or remove) new_ids to the old note's `superseded_by`; returns (old node_id, note)."""
    assigned: dict[str, str] = {}

    def fields(note: ParsedNote) -> tuple[dict[str, Any], list[str]]:
        current = list(parse_list(note.meta.get("superseded_by")))
        if unlink:
            merged = [x for x in current if x not in new_ids]
        else:
            merged = current + [x for x in new_ids if x not in current]
        out: dict[str, Any] = {}
        remove: list[str] = []
        if merged:
            out["superseded_by"] = merged
        else:
            remove.append("superseded_by")
        if not file_node_id(note):
            out["node_id"] = assigned.setdefault("id", new_node_id())
        return out, remove

    note = _edit(mem, rel, fields)
    return file_node_id(note) or assigned.get("id", ""), note


def _commit_one(mem: Memory, sm: StagedMemory, note: ParsedNote, now: dt.datetime, supersedes: Sequence[str],
                report: CommitReport) -> str | None:
    """Commit one staged note; returns its new path, or None (and a Left entry) if it could not be."""
    meta = note.meta
    tier = str(meta.get("tier") or "").strip().lower()
    fields: dict[str, Any] = {"last_accessed": now}
    if tier not in ("short", "long"):
        tier = "short"
        fields["tier"] = "short"
    if tier == "short":
        fields["rehearsal_days"] = 1  # committing counts as the first day (last_accessed is today)
    nid = sm.node_id or new_node_id()
    if not sm.node_id:
        fields["node_id"] = nid
    if supersedes:
        current = list(parse_list(meta.get("supersedes")))
        fields["supersedes"] = current + [s for s in supersedes if s not in current]
    remove = [k for k in ("status", "expires", "needs_review") if k in meta]
    try:
        written = write_note(mem.vault, note.path, expected_hash=note.file_hash, set_fields=fields,
                             remove_fields=remove)
        dst = _join(_folder(mem.config.memory_folder, "memory_folder", allow_root=True),
                    PurePosixPath(note.path).name)
        final = move_note(mem.vault, written.path, dst, expected_hash=written.file_hash)
    except ConcurrentEditError:
        report.left.append(Left(nid, note.path, sm.title, "busy",
                                "busy: the file changed while committing (a human editing it?); it stays staged, "
                                "commit it again"))
        return None
    except (NoteError, ValueError, OSError) as exc:
        report.left.append(Left(nid, note.path, sm.title, "error", f"error: {exc}; it stays staged"))
        return None
    report.committed.append(Committed(nid, final, sm.title, note.path, tier, list(fields.get("supersedes", [])),
                                      list(sm.conflicts)))
    return final


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    return [v for v in value if v.strip()]


def _commit(mem: Memory, chosen: list[tuple[StagedMemory, ParsedNote]], supersedes: list[str],
            now: dt.datetime, report: CommitReport) -> None:
    staging = _staging(mem)
    touched: list[str] = []
    olds: list[tuple[str, str]] = []  # (path, node_id) of superseded notes
    new_ids = [sm.node_id for sm, _ in chosen]
    for target in supersedes:
        rel = resolve_note(mem, target)
        if _in_folder(rel, staging):
            raise ConfigError(f"--supersedes {target}: {rel} is staged, not committed; commit or discard it first")
        if any(n.path == rel for _, n in chosen):
            raise ConfigError(f"--supersedes {target}: a memory cannot supersede itself")
        olds.append((rel, ""))
    # Link the old notes first: if one is being edited we stop before committing anything.
    linked: list[tuple[str, str]] = []
    try:
        for rel, _ in olds:
            old_id, _note = _link_old(mem, rel, new_ids)
            linked.append((rel, old_id))
    except BaseException:
        for rel, _ in linked:
            _safe_unlink(mem, rel, new_ids)
        _sync(mem, [r for r, _ in linked])
        raise
    old_ids = [oid for _, oid in linked]
    for sm, note in chosen:
        final = _commit_one(mem, sm, note, now, old_ids, report)
        touched += [note.path] + ([final] if final else [])
    failed = [x.node_id for x in report.left if x.node_id in new_ids]
    if failed:  # do not leave an old note pointing at a successor that is still staged
        for rel, _ in linked:
            _safe_unlink(mem, rel, failed)
    _sync(mem, touched + [r for r, _ in linked])


def _safe_unlink(mem: Memory, rel: str, ids: Sequence[str]) -> None:
    try:
        _link_old(mem, rel, ids, unlink=True)
    except (NoteError, ValueError, OSError) as exc:
        log.warning("%s: could not remove %s from superseded_by (%s); edit it by hand", rel, ", ".join(ids), exc)


def commit(mem: Memory, ids: Sequence[str], *, supersedes: str | Sequence[str] | None = None,
           now: dt.datetime | None = None) -> CommitReport:
    """Commit these staged memories (node_id or staged path), needs_review or not: naming
    one is the decision. Unknown ids raise before anything is written."""
    _writable(mem)
    now = _now(mem, now)
    idents = [i for i in dict.fromkeys(x.strip() for x in ids) if i]
    if not idents:
        raise ConfigError("name at least one staged memory to commit (see `vault-memory staged`), or use --all")
    items, bad = _scan(mem)
    for b in bad:
        if b.path in idents:
            raise NoteError(b.path, b.reason)
    chosen = _pick_staged(mem, idents, items)
    report = CommitReport()
    _commit(mem, chosen, _as_list(supersedes), now, report)
    return report


def commit_all(mem: Memory, now: dt.datetime | None = None) -> CommitReport:
    """Commit every staged memory except those flagged needs_review; every other one is
    listed in `left` with its reason (expired ones were moved to .trash)."""
    _writable(mem)
    now = _now(mem, now)
    report = CommitReport(left=expire_staged(mem, now))
    items, bad = _scan(mem)
    report.left += bad
    chosen: list[tuple[StagedMemory, ParsedNote]] = []
    for sm, note in items:
        if sm.needs_review:
            report.left.append(Left(sm.node_id, sm.path, sm.title, "needs_review", sm.review_reason()))
        else:
            chosen.append((sm, note))
    _commit(mem, chosen, [], now, report)
    return report


def discard(mem: Memory, ident: str) -> str:
    """Move a staged memory to `.trash/` (never deleted); returns where it went."""
    _writable(mem)
    items, _ = _scan(mem)
    [(_sm, note)] = _pick_staged(mem, [ident], items)
    where = _trash(mem, note, "discarded")
    _sync(mem, [note.path])
    return where


def remember(mem: Memory, text: str, *, title: str | None = None, tags: Iterable[str] = (),
             now: dt.datetime | None = None) -> Committed:
    """Stage and commit in one step.

    A conflict does not stop it (small models must not be left with bookkeeping): the
    memory is committed, keeps `conflicts_with`, and the result lists the conflicts. If the
    very same text is already committed, that note is rehearsed instead of duplicated.
    """
    _writable(mem)
    now = _now(mem, now)
    clean_title, clean_text, given = _clean_input(text, title)
    clean_tags = _clean_tags(tags)
    conflicts = find_conflicts(mem, clean_title, clean_text)
    same = _identical(mem, conflicts, clean_text)
    if same is not None:
        mem.rehearse([same.node_id], now=now)
        row = mem.catalog.note_by_id(same.node_id)
        tier = str((row.meta if row else {}).get("tier") or "long")
        return Committed(same.node_id, same.path, same.title, "", tier, [], [same], existing=True)
    sm = _stage(mem, clean_text, clean_title, given, clean_tags, now, conflicts)
    report = CommitReport()
    items, _ = _scan(mem)
    chosen = [(s, n) for s, n in items if s.node_id == sm.node_id]
    if not chosen:
        raise NoteNotFoundError(sm.path, "staged a moment ago but gone now (moved or deleted by someone else)")
    _commit(mem, chosen, [], now, report)
    if not report.committed:
        why = report.left[0].reason if report.left else "unknown reason"
        raise ConcurrentEditError(sm.path, f"staged as {sm.node_id} but not committed ({why}); "
                                           f"run `vault-memory commit {sm.node_id}`")
    done = report.committed[0]
    done.conflicts = list(sm.conflicts)
    return done


# -- pin ----------------------------------------------------------------------------------

def set_pinned(mem: Memory, target: str, pinned: bool) -> PinResult:
    """Pin (strength 1, never dormant, never expires) or unpin a note by node_id or vault path."""
    _writable(mem)
    rel = resolve_note(mem, target)
    before = read_note(mem.vault, rel)

    def fields(note: ParsedNote) -> tuple[dict[str, Any], list[str]]:
        if pinned:
            return ({} if parse_bool(note.meta.get("pinned")) else {"pinned": True}), []
        return {}, ["pinned"]

    note = _edit(mem, rel, fields)
    _sync(mem, [rel])
    nid = file_node_id(note)
    if not nid:  # a note never indexed before: indexing it just now gave it an id
        try:
            nid = file_node_id(read_note(mem.vault, rel))
        except (NoteError, OSError):
            nid = None
    return PinResult(nid or "", rel, pinned, note.file_hash != before.file_hash)


# -- episodic log -------------------------------------------------------------------------

def log_entry(mem: Memory, text: str, now: dt.datetime | None = None) -> str:
    """Append `- HH:MM text` to `<episodes_folder>/YYYY-MM-DD.md` (created with `date:`); returns its path.

    Date and time are those of `now` in its own offset (the local time when not given).
    """
    _writable(mem)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("the log entry is empty")
    when = (now if now is not None else mem.clock().astimezone())
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").strip().split("\n")]
    entry = f"- {when:%H:%M} " + "\n  ".join(lines) + "\n"
    folder = _folder(mem.config.episodes_folder, "episodes_folder")
    rel = _join(folder, f"{when.date().isoformat()}.md")
    for attempt in (1, 2):
        try:
            note = read_note(mem.vault, rel)
        except NoteNotFoundError:
            try:
                write_note(mem.vault, rel, expected_hash=None, set_fields={"date": when.date()}, body=entry)
                break
            except NoteError:
                if not (mem.vault / rel).exists() or attempt == 2:
                    raise
                continue  # created by someone else a moment ago: append to theirs
        body = note.body
        if body and not body.endswith("\n"):
            body += "\n"
        try:
            write_note(mem.vault, rel, expected_hash=note.file_hash, body=body + entry)
            break
        except ConcurrentEditError:
            if attempt == 2:
                raise
    _sync(mem, [rel])
    return rel


__all__ = [
    "CommitReport", "Committed", "Conflict", "Left", "PinResult", "StagedMemory", "commit", "commit_all",
    "default_title", "discard", "expire_staged", "find_conflicts", "log_entry", "remember", "resolve_note",
    "set_pinned", "stage", "staged",
]
