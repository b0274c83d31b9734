"""Notes on disk: the one place notes are parsed and the one function that writes a note.

Humans own their notes; the system owns only the frontmatter keys in OWNED_KEYS. Edits
rewrite just those keys' lines, so every other byte the human wrote (key order, quoting,
comments, BOM, CRLF, the body) survives. Every write is an atomic compare-and-swap.

Longer than 500 lines because it is the one write path for notes: parsing with limits, rendering
that keeps every byte we do not own, and the write itself must be read together.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, BinaryIO

import yaml

from ..config import DEFAULT_MAX_NOTE_BYTES
from ..errors import ConcurrentEditError, NoteBusyError, NoteError, NoteNotFoundError, NoteParseError, UnsafePathError
from ..hashing import sha256_hex
from . import atomic
from .fields import CREATED_KEYS, UPDATED_KEYS, property_key, property_line

GENERATED_BY = "vault-memory"  # `generated_by:` of notes the system generates (the review note): never indexed

OWNED_KEYS: frozenset[str] = frozenset(
    {
        "node_id",
        "revision",
        "last_accessed",
        "access_count",
        "pinned",
        "tier",
        "created",
        "status",
        "expires",
        "needs_review",
        "conflicts_with",
        "supersedes",
        "superseded_by",
        "rehearsal_days",
        "stated",
        "reactivated",
        "generated_by",
        "generated_at",
        "review_hash",  # the review note's (review.py), never a person's note
        "staged_by",  # a draft's maker (staging.py): commit_all leaves a failed `remember`'s draft
    }
)


#: Properties that state nothing about the note's subject: its names and tags (the lexical
#: index's title field), its type, and how Obsidian or a plugin shows or publishes it.
_NOT_STATEMENTS = frozenset(
    property_key(k) for k in ("title", "aliases", "alias", "tags", "tag", "type", "cssclasses", "cssclass", "publish")
)
#: ... and ours (OWNED_KEYS, `status` among them, so a person's `status: done` too), and the
#: note's own dates, which date it (fields.stated_time) rather than state a fact.
_NOT_STATED = _NOT_STATEMENTS | {property_key(k) for k in OWNED_KEYS} | set(CREATED_KEYS) | set(UPDATED_KEYS)


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):  # `[[Maya Chen]]` unquoted is a list in a list: Maya Chen
        return ", ".join(t for t in (_value_text(v) for v in value) if t)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {t}" for k, t in ((k, _value_text(v)) for k, v in value.items()) if t)
    return " ".join(str(value).split())


def stated_properties(meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(name, value as text) of the properties that state something: `model: Vaillant ecoTEC plus
    832`, `company: Northwind`, `due: 2026-12-15`, `context window: 8192` (a name is read as words,
    so "what context window does the agent use" meets `context_window`). They are indexed with the
    note's first chunk (markdown.chunk_note): a person writes facts there, and recall did not
    see them (9 held-out questions on ../shared/obsidian-vault and sample_vault/ asked for one).
    Empty values, ours, the note's own dates, names, tags, type and display settings
    (`_NOT_STATED`) are left out, so a rehearsal or a commit never changes them."""
    out: list[tuple[str, str]] = []
    for key, value in meta.items():
        name = property_key(str(key))
        if name in _NOT_STATED or name.endswith("plugin") or not name:  # `kanban-plugin: basic`
            continue
        text = _value_text(value)
        if text:
            out.append((" ".join(re.split(r"[_\s]+", str(key))).strip(), text))
    return tuple(out)


def content_hash(body: str, meta: Mapping[str, Any]) -> str:
    """What the index embeds of a note, as one hash: its body and its stated properties. A change
    of our own keys (a rehearsal) leaves it as it is; a person's edit of a property does not."""
    props = stated_properties(meta)
    if not props:
        return sha256_hex(body.encode("utf-8"))
    lines = "\n".join(property_line(k, v) for k, v in props)
    return sha256_hex(f"{body}\0properties\0{lines}".encode())


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~10x faster
#: What loading YAML raises for text that is not valid YAML: PyYAML raises ValueError and the like
#: too, for e.g. `date: 2025-02-30`.
_YAML_FAILS = (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError)
_WIDE = 2**30  # emitter width: never fold a value onto a second line
_BREAKS = "\n\r\x85\u2028\u2029"  # what YAML counts as line breaks
_FENCE_OPEN = ("---",)
_FENCE_CLOSE = ("---", "...")
# A top-level `key:` at column 0, optionally quoted; only used to find owned keys.
_TOP_KEY = re.compile(r"""^(["']?)([A-Za-z_][A-Za-z0-9_]*)\1[ \t]*:(?:[ \t]|$)""")
# "Looks like a YAML key line" for telling broken frontmatter from a thematic break.
_KEYISH = re.compile(r"""^(?:"[^"]*"|'[^']*'|[^\s#:\-?!&*{}\[\]|>%@`"'][^:]{0,60}?)[ \t]*:(?:\s|$)""")


@dataclass(frozen=True)
class ParsedNote:
    """One note as read from disk (or as just written)."""

    path: str  # vault-relative, forward slashes
    file_hash: str  # sha256 hex of the raw bytes on disk
    meta: dict[str, Any]  # frontmatter mapping, {} if none, values as yaml.safe_load gives them
    body: str  # everything after the frontmatter, BOM removed, newlines "\n"
    body_hash: str  # the content identity used for embedding: body and stated properties (content_hash)
    has_frontmatter: bool
    newline: str  # "\r\n" if the file uses CRLF else "\n"
    size: int
    mtime: float  # st_mtime when read, 0.0 if parsed from bytes only
    #: why the frontmatter could not be read as YAML, when it was read line by line instead
    #: (`parse_note(lenient=True)`: the index reads such a note; nothing ever writes into it)
    properties_error: str = ""


@dataclass
class _Layout:
    """The decoded file split into lines (line ends kept) and where the frontmatter is."""

    bom: bool
    lines: list[str]
    close: int | None  # index of the closing fence line; None = no frontmatter
    meta: dict[str, Any]
    newline: str
    problem: str = ""  # the YAML error, when `lenient` read the properties line by line


def _split_lines(text: str) -> list[str]:
    # Split on "\n" only: str.splitlines() also splits on \x0c, \u2028 etc. and would move bytes.
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _bare(line: str) -> str:
    """The line without its "\n" or "\r\n"."""
    return line.removesuffix("\n").removesuffix("\r")


def _ending(line: str) -> str:
    return line[len(_bare(line)) :]


def _looks_like_yaml(block: str) -> bool:
    """Whether a fenced block that failed to parse was meant as YAML (vs. prose between rules)."""
    lines = [ln for ln in block.split("\n") if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines or not _KEYISH.match(lines[0]):
        return False
    yamlish = sum(1 for ln in lines if _KEYISH.match(ln) or ln[0] in " \t-")
    return yamlish * 2 > len(lines)


def _key_str(key: Any) -> str:
    # YAML turns keys like `yes:` or `2025-01-01:` into non-strings; meta keys must be str.
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, date):
        return key.isoformat()
    return str(key)


def lenient_properties(block: str) -> dict[str, Any]:
    """The properties of a frontmatter block that is not valid YAML, read one at a time: each line
    that starts a property at column 0 (`How We Met: [[Taylor]]'s cousin`), with the indented or
    `- ` lines under it, is read as YAML on its own, and when that fails too, as its text after
    the first colon. Obsidian shows such a note and searches its text; so does the index. A
    `private` property that cannot be read counts as true: a note is never shown by mistake."""
    entries: list[list[str]] = []
    for line in block.split("\n"):
        if line and line[0] not in " \t-#" and _KEYISH.match(line):
            entries.append([line])
        elif entries and (not line.strip() or line[0] in " \t-"):
            entries[-1].append(line)
    out: dict[str, Any] = {}
    for entry in entries:
        text = "\n".join(entry).rstrip()
        try:
            data = yaml.load(text, Loader=_LOADER)
        except _YAML_FAILS:
            data = None
        if isinstance(data, dict) and len(data) == 1:
            ((key, value),) = data.items()
            out[key if isinstance(key, str) else _key_str(key)] = value
            continue
        key = entry[0].partition(":")[0].strip().strip("\"'")
        if key:
            out[key] = True if property_key(key) == "private" else " ".join(text.partition(":")[2].split())
    return out


def _yaml_error(rel_path: str, exc: Exception, *, lenient: bool = False) -> NoteParseError:
    where = ""
    problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:  # +2: mark lines are 0-based and the block starts after the fence
        where = f" at line {mark.line + 2}"
    ctx, ctx_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if ctx and ctx_mark is not None:
        where += f" ({ctx} started at line {ctx_mark.line + 2})"
    until = (
        "until then its text is indexed, its properties are read one line at a time, and nothing is written into it"
        if lenient
        else "nothing is written into it until then"
    )
    return NoteParseError(
        rel_path, f"invalid YAML in frontmatter{where}: {problem}; fix the YAML between the --- lines; {until}"
    )


# Limits on frontmatter: a 1 KB "billion laughs" block of YAML aliases expands to gigabytes in
# whatever walks the loaded value (PyYAML's loader has no limit), so a note over a limit is
# refused before it is loaded, in milliseconds, naming the limit.
MAX_FRONTMATTER_BYTES = 256 * 1024
MAX_FRONTMATTER_NODES = 20_000  # values after expanding aliases (a large real frontmatter has hundreds)
MAX_FRONTMATTER_DEPTH = 64


def _check_limits(rel: str, block: str) -> None:
    if len(block) > MAX_FRONTMATTER_BYTES:
        raise NoteParseError(
            rel,
            f"frontmatter is {len(block) // 1024} KB, over the {MAX_FRONTMATTER_BYTES // 1024}"
            " KB limit; move the bulk into the body; the note is skipped until then",
        )
    if "*" not in block and block.count("[") + block.count("{") < 2 * MAX_FRONTMATTER_DEPTH:
        return  # no aliases and no deep flow nesting: nothing can blow up
    sizes: dict[str, int] = {}
    stack: list[list[Any]] = [[None, 0]]
    try:
        for ev in yaml.parse(block, Loader=_LOADER):
            if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                stack.append([ev.anchor, 1])
                if len(stack) > MAX_FRONTMATTER_DEPTH:
                    raise NoteParseError(
                        rel,
                        f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels; "
                        "flatten it; the note is skipped until then",
                    )
                continue
            if isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                anchor, n = stack.pop()
            elif isinstance(ev, yaml.ScalarEvent):
                anchor, n = ev.anchor, 1
            elif isinstance(ev, yaml.AliasEvent):
                anchor, n = None, sizes.get(ev.anchor or "", 1)
            else:
                continue
            if anchor:
                sizes[anchor] = n
            stack[-1][1] += n
            if stack[-1][1] > MAX_FRONTMATTER_NODES:
                raise NoteParseError(
                    rel,
                    f"frontmatter expands to over {MAX_FRONTMATTER_NODES:,} values through "
                    "YAML aliases (*name); remove the aliases; the note is skipped until then",
                )
    except yaml.YAMLError:
        return  # not valid YAML: the loader says so, with the line


def _layout(rel_path: str, raw: bytes, lenient: bool = False) -> _Layout:
    """Decode and locate the frontmatter; shared by reading and editing so both agree. `lenient`:
    frontmatter that is not valid YAML is read one property at a time (`lenient_properties`) and
    the error kept in `_Layout.problem`, instead of raised."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise NoteParseError(rel_path, "file is UTF-16 encoded; re-save the file as UTF-8")
    nul = raw.find(b"\x00")
    if nul >= 0:
        msg = f"binary file (NUL byte at byte {nul}), not a Markdown note; move it out of the vault or rename it"
        raise NoteParseError(rel_path, msg)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteParseError(rel_path, f"not valid UTF-8 at byte {exc.start}; re-save the file as UTF-8") from None
    bom = text.startswith("\ufeff")
    lines = _split_lines(text[1:] if bom else text)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    close = None
    if lines and _bare(lines[0]).rstrip(" \t") in _FENCE_OPEN:
        close = next((i for i in range(1, len(lines)) if _bare(lines[i]).rstrip(" \t") in _FENCE_CLOSE), None)
        first = next((_bare(ln) for ln in lines[1:] if _bare(ln).strip()), "")
        if close is None and _KEYISH.match(first):
            # Writing would put a second frontmatter above it; a half-saved note looks like this too.
            raise NoteParseError(
                rel_path,
                "frontmatter opened with '---' is never closed; add a '---' line "
                "after the properties; the note is skipped until then",
            )
    meta: dict[str, Any] = {}
    problem = ""
    if close is not None:
        block = "".join(lines[1:close]).replace("\r\n", "\n")
        _check_limits(rel_path, block)
        try:
            data = yaml.load(block, Loader=_LOADER)
        except _YAML_FAILS as exc:
            if not _looks_like_yaml(block):
                data = "not frontmatter"
            elif not lenient:
                raise _yaml_error(rel_path, exc) from None
            else:
                data, problem = lenient_properties(block), str(_yaml_error(rel_path, exc, lenient=True))
        if isinstance(data, dict):
            meta = {k if isinstance(k, str) else _key_str(k): v for k, v in data.items()}
        elif data is not None:  # a thematic break followed by prose: it is all body
            close = None
    return _Layout(bom, lines, close, meta, newline, problem)


def _parsed(rel_path: str, raw: bytes, lay: _Layout, mtime: float) -> ParsedNote:
    start = 0 if lay.close is None else lay.close + 1
    body = "".join(lay.lines[start:]).replace("\r\n", "\n")
    return ParsedNote(
        path=rel_path.replace("\\", "/"),
        file_hash=sha256_hex(raw),
        meta=lay.meta,
        body=body,
        body_hash=content_hash(body, lay.meta),
        has_frontmatter=lay.close is not None,
        newline=lay.newline,
        size=len(raw),
        mtime=mtime,
        properties_error=lay.problem,
    )


def parse_note(rel_path: str, raw: bytes, mtime: float = 0.0, *, lenient: bool = False) -> ParsedNote:
    """Parse a note's raw bytes; raise NoteParseError if it cannot be read as a note. `lenient`:
    frontmatter that is not valid YAML is read one property at a time (`lenient_properties`), the
    error in `ParsedNote.properties_error`; what the index reads. Everything that writes reads
    strictly, so a note whose YAML is broken is never edited."""
    return _parsed(rel_path, raw, _layout(rel_path, raw, lenient), mtime)


def _clean_rel(rel_path: str) -> str:
    return "/".join(p for p in rel_path.replace("\\", "/").split("/") if p not in ("", "."))


def safe_path(vault_root: Path, rel_path: str) -> Path:
    """Resolve an untrusted vault-relative path; raise UnsafePathError if it could leave the vault."""
    win = PureWindowsPath(rel_path)
    if not rel_path or "\x00" in rel_path:
        raise UnsafePathError(rel_path, "empty path or NUL byte; give a path relative to the vault")
    if rel_path.replace("\\", "/").startswith("/") or win.drive or win.root:
        raise UnsafePathError(rel_path, "absolute path; give a path relative to the vault")
    parts = _clean_rel(rel_path).split("/")
    if ".." in parts:  # refused outright: lexical '..' and symlinks disagree about where it goes
        raise UnsafePathError(rel_path, "path contains '..'; give a path inside the vault")
    if parts == [""]:
        raise UnsafePathError(rel_path, "path names the vault folder itself, not a note")
    root = vault_root.resolve()
    try:
        target = root.joinpath(*parts).resolve()
    except (OSError, RuntimeError) as exc:  # symlink loop
        raise UnsafePathError(rel_path, f"cannot resolve path ({exc})") from None
    if target == root or not target.is_relative_to(root):
        raise UnsafePathError(rel_path, f"a symlink leads outside the vault (to {target}); refusing to touch it")
    return target


# Notes bigger than this are never read (the `max_note_bytes` setting; its default): a size checked by
# stat before the file is opened, so an 8 GB sparse export costs a stat, not 8 GB of memory.
MAX_NOTE_BYTES = DEFAULT_MAX_NOTE_BYTES


def too_large(rel: str, size: int, limit: int) -> NoteParseError:
    return NoteParseError(
        rel,
        f"{size:,} bytes, over the {limit:,}-byte limit for a note (max_note_bytes); never read. "
        "Move it out of the vault, or raise max_note_bytes",
    )


READ_STEP = 1 << 20


def read_bounded(f: BinaryIO, size: int, limit: int) -> bytes:
    """The file's bytes, `limit` + 1 at most (more than `limit`: too large). `size` is what its stat
    said: asking `read` for `limit` + 1 bytes at once reserves that much memory whatever the file
    holds (a 15-byte note under a 1 GB `max_note_bytes` failed `ulimit -v` that way), so the stat's
    size is read, and a file that grew since is read on in steps, never past the limit."""
    raw = f.read(min(size, limit) + 1)
    if len(raw) <= min(size, limit):
        return raw
    parts = [raw]
    got = len(raw)
    while got <= limit:
        part = f.read(min(READ_STEP, limit + 1 - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _read_bytes(path: Path, rel: str, limit: int = MAX_NOTE_BYTES) -> tuple[bytes, float]:
    try:
        st = os.stat(path)
        if st.st_size > limit:
            raise too_large(rel, st.st_size, limit)
        if not stat.S_ISREG(st.st_mode):
            raise NoteParseError(rel, "not a regular file (a FIFO, socket or device); move it out of the vault")
        with open(path, "rb") as f:
            raw = read_bounded(f, st.st_size, limit)
            if len(raw) > limit:
                raise too_large(rel, os.fstat(f.fileno()).st_size, limit)
            return raw, os.fstat(f.fileno()).st_mtime
    except FileNotFoundError:
        raise NoteNotFoundError(rel, "no such note file") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # no file can have this name: not found, not an I/O error
            raise NoteNotFoundError(rel, "no such note file (the name is longer than the file system allows)") from None
        raise atomic.unreadable(rel, exc) from None
    except MemoryError:
        raise out_of_memory(rel) from None


def out_of_memory(rel: str) -> NoteParseError:
    """A note that could not be read or parsed in the memory there is (a raised max_note_bytes)."""
    return NoteParseError(
        rel, "not enough memory to read it; lower max_note_bytes, split the note, or move it out of the vault"
    )


def read_note(vault_root: Path, rel_path: str, *, max_bytes: int = MAX_NOTE_BYTES, lenient: bool = False) -> ParsedNote:
    """Read and parse one note by vault-relative path (NoteParseError over `max_bytes`, never read;
    `lenient`: as `parse_note`)."""
    rel = _clean_rel(rel_path)
    raw, mtime = _read_bytes(safe_path(vault_root, rel_path), rel, max_bytes)
    try:
        return parse_note(rel, raw, mtime, lenient=lenient)
    except MemoryError:
        del raw
        raise out_of_memory(rel) from None


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type (True != 1 and date != datetime here; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _scalar(key: str, value: Any, in_flow: bool) -> tuple[str, Any]:
    """One-line YAML for a scalar, and the value safe_load will give back."""
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ValueError(f"{key}: naive datetime {value!r}; pass a timezone-aware datetime")
        return value.isoformat(timespec="seconds"), value.replace(microsecond=0)
    if isinstance(value, bool):
        return ("true" if value else "false"), value
    if value is None:
        return "null", None
    if not isinstance(value, (str, int, float, date)):
        raise TypeError(f"{key}: cannot write a {type(value).__name__} to frontmatter")
    # PyYAML's emitter already quotes strings that would resolve to another type ('yes', '1.10').
    data = [value] if in_flow else value
    out = yaml.safe_dump(data, default_flow_style=True, allow_unicode=True, width=_WIDE)
    if any(c in _BREAKS for c in out.removesuffix("\n...\n").rstrip("\n")):  # escape onto one line
        out = yaml.safe_dump(data, default_flow_style=True, allow_unicode=True, width=_WIDE, default_style='"')
    out = out.removesuffix("\n...\n").rstrip("\n")
    return (out[1:-1] if in_flow else out), value


def _render(key: str, value: Any) -> tuple[str, Any]:
    """`value` as one line of YAML plus the value it loads back as; ValueError if it would not round-trip."""
    if isinstance(value, (list, tuple)):
        items = [_scalar(key, v, True) for v in value]
        text, expected = "[" + ", ".join(t for t, _ in items) + "]", [e for _, e in items]
    else:
        text, expected = _scalar(key, value, False)
    loaded = yaml.load(f"k: {text}", Loader=_LOADER)
    if any(c in _BREAKS for c in text) or not _same(loaded.get("k"), expected):
        raise ValueError(f"{key}: value {value!r} does not round-trip through YAML as {text!r}")
    return text, expected


def _comment_at(line: str, start: int) -> int | None:
    """Where a YAML comment begins in `line` (a `#` after a space or tab, outside quotes) at or after
    `start`, or None. `pinned: false  # unpinned on purpose` is a person's sentence, not our value."""
    quote = ""
    i = start
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                if quote == "'" and line[i + 1 : i + 2] == "'":
                    i += 1  # '' inside single quotes
                else:
                    quote = ""
        elif c in "\"'" and (i == start or line[i - 1] in " \t[{,:"):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return i
        i += 1
    return None


def _is_comment(line: str) -> bool:
    return _bare(line).lstrip(" \t").startswith("#")


def _key_comment(line: str) -> str:
    """The trailing comment of a top-level key's line, with the blanks before it ("" if none)."""
    bare = _bare(line)
    colon = bare.find(":")  # the key never holds one (_TOP_KEY)
    at = _comment_at(bare, colon + 1)
    if at is None:
        return ""
    gap = len(bare[:at]) - len(bare[:at].rstrip(" \t"))
    return bare[at - gap :]


def _comment_text(line: str) -> str:
    """A comment line's comment, from its `#` (indentation and line end aside)."""
    return _bare(line).lstrip(" \t")


def human_bytes(raw: bytes, *, body: bool = True) -> list[str]:
    """What of a note a person owns, in order: every line outside the values of our keys (OWNED_KEYS)
    as it is, and every comment, on a line of its own or after a key, as its text from `#` (where a
    comment stands is a blank or two: a removed key's comment stays as a line of its own); the body
    too unless `body=False`. Fences holding nothing of a person's are ours (our first write into a
    note without frontmatter). The write path proves a rewrite leaves this unchanged (`_verify`):
    bytes, not parsed values."""
    return _human(_layout("", raw), body=body)


def _human(lay: _Layout, *, body: bool = True) -> list[str]:
    """`human_bytes` of a note already laid out (where the parser sees frontmatter: a rule above prose
    is body)."""
    bom, lines, close = ["\ufeff"] if lay.bom else [], lay.lines, lay.close
    if close is None:
        return bom + (lines if body else [])
    out: list[str] = []
    block = lines[1:close]
    i = 0
    while i < len(block):
        m = _TOP_KEY.match(_bare(block[i]))
        if m is None or m.group(2) not in OWNED_KEYS:
            out.append(_comment_text(block[i]) if _is_comment(block[i]) else block[i])
            i += 1
            continue
        end = _value_end(block, i)
        comment = _key_comment(block[i]).lstrip(" \t")
        out += [comment] if comment else []
        out += [_comment_text(ln) for ln in block[i + 1 : end] if _is_comment(ln)]
        i = end
    fences = [_bare(lines[0]), _bare(lines[close])] if out else []  # a new body may end the last one
    return bom + fences[:1] + out + fences[1:] + (lines[close + 1 :] if body else [])


def _value_end(block: list[str], i: int) -> int:
    """Index just past key line i and its continuation lines (indented, `- ` items, inner blanks and
    comments). Blank and comment lines after its last line are not the value's: they separate keys,
    or say something of the person's (an indented `# ...` under `last_accessed:` is not its value)."""
    end = j = i + 1
    while j < len(block):
        b = _bare(block[j])
        if b.strip() and not (b[0] in " \t" or b == "-" or b.startswith(("- ", "-\t"))):
            break  # a column-0 key or comment: the old value is over
        j += 1
        if b.strip() and not _is_comment(b):
            end = j
    return end


def _edit_text(lay: _Layout, rendered: dict[str, tuple[str, Any]], removed: set[str], body: str | None) -> str:
    """The new file text (without BOM): owned lines swapped in place, everything else kept."""
    nl = lay.newline
    new_body = None if body is None else _split_lines(body.replace("\r\n", "\n").replace("\n", nl))
    added = [f"{k}: {text}{nl}" for k, (text, _) in rendered.items()]
    if lay.close is None:
        head = [f"---{nl}", *added, f"---{nl}"] if added else []
        return "".join(head + (lay.lines if new_body is None else new_body))
    block, kept, done = lay.lines[1 : lay.close], [], set()
    i = 0
    while i < len(block):
        m = _TOP_KEY.match(_bare(block[i]))
        key = m.group(2) if m else None
        if key is None or (key not in rendered and key not in removed):
            kept.append(block[i])
            i += 1
            continue
        end = _value_end(block, i)
        comment = _key_comment(block[i])
        if key in rendered and key not in done:
            kept.append(f"{key}: {rendered[key][0]}{comment}{_ending(block[i])}")
            done.add(key)
        elif comment:  # a removed key (or a later duplicate): its comment stays where it was
            kept.append(comment.lstrip(" \t") + _ending(block[i]))
        # the value goes (removed keys and later duplicates are dropped), comments on lines of their own stay
        kept += [ln for ln in block[i + 1 : end] if _is_comment(ln)]
        i = end
    kept += [f"{k}: {t}{nl}" for k, (t, _) in rendered.items() if k not in done]
    fence, tail = lay.lines[lay.close], lay.lines[lay.close + 1 :]
    if new_body is not None:
        tail = new_body
        if new_body and not _ending(fence):
            fence += nl
    return "".join([lay.lines[0], *kept, fence, *tail])


def _verify(
    rel: str,
    new_raw: bytes,
    old_meta: dict[str, Any],
    rendered: dict[str, tuple[str, Any]],
    removed: set[str],
    body: str,
    old: _Layout | None = None,
) -> ParsedNote:
    """Re-parse what we are about to write and prove only the intended keys changed: every value as
    meant, and, when it rewrites a note (`old`, laid out), every byte outside the values of our keys
    (`human_bytes`: a comment is a person's bytes, which no parsed value shows)."""
    why = "the edit would break its YAML"
    new_lay: _Layout | None = None
    try:
        new_lay = _layout(rel, new_raw)
        new = _parsed(rel, new_raw, new_lay, 0.0)
    except NoteParseError:
        new = None
    if new is not None:
        want = {k: v for k, v in old_meta.items() if k not in removed and k not in rendered}
        want.update({k: e for k, (_, e) in rendered.items()})
        keys = want.keys() | new.meta.keys()
        bad = sorted(k for k in keys if k not in new.meta or not _same(new.meta[k], want.get(k)))
        if new.body != body:
            bad.append("(body)")
        if (
            old is not None
            and new_lay is not None
            and not bad
            and _human(old, body=False) != _human(new_lay, body=False)
        ):
            bad.append("(bytes outside our keys: a comment or a line of yours)")
        if not bad:
            return new
        why = f"the edit would also change {', '.join(bad)}"
    raise NoteError(
        rel,
        f"cannot edit the frontmatter in place: {why} (unusual layout such as flow style, "
        "anchors or multi-line quoted values); the note was not changed, edit it by hand",
    )


@atomic.refused_by_storage("write")
def write_note(
    vault_root: Path,
    rel_path: str,
    *,
    expected_hash: str | None,
    set_fields: Mapping[str, Any] | None = None,
    remove_fields: Iterable[str] = (),
    body: str | None = None,
    quiet: float | None = None,
    wait: float = 0.0,
    whole: str | None = None,
) -> ParsedNote:
    """The single write path. expected_hash=None creates a new note (from `set_fields` and `body`, or
    from `whole`, the full text, frontmatter included, written as is); otherwise edits in place.

    An edit may only touch OWNED_KEYS (and the body if `body` is given); it is refused with
    ConcurrentEditError if the file's sha256 is no longer `expected_hash`, or if the file was
    written to in the last `quiet` seconds and is still not quiet after `wait` seconds (an
    editor may be saving it: see "the in-place-save guard" in atomic.py). Bookkeeping passes
    wait=0 and is simply skipped; a write a person asked for waits a little.
    """
    fields, removed = dict(set_fields or {}), set(remove_fields)
    if any(not isinstance(k, str) for k in [*fields, *removed]):
        raise TypeError("frontmatter keys must be str")
    if fields.keys() & removed:
        raise ValueError(f"keys both set and removed: {sorted(fields.keys() & removed)}")
    rel, path = _clean_rel(rel_path), safe_path(vault_root, rel_path)
    if whole is not None:
        if expected_hash is not None or fields or removed or body is not None:
            raise ValueError("`whole` creates a new note from its full text; it takes no other change")
    if expected_hash is None:
        new_body = (body or "").replace("\r\n", "\n")
        if whole is not None:
            # The whole file as given (a rendered template, its own frontmatter included), as is;
            # parsed first, so we never create a note that cannot be read back (NoteParseError).
            raw = whole.replace("\r\n", "\n").encode("utf-8")
            new = parse_note(rel, raw)
        else:
            # New note: any keys, written through the emitter so odd keys are quoted too.
            rendered = {k: _render(k, v) for k, v in fields.items()}
            lines = [f"{_scalar('key', k, False)[0]}: {t}\n" for k, (t, _) in rendered.items()]
            raw = ("---\n" + "".join(lines) + "---\n" + new_body).encode("utf-8")
            new = _verify(rel, raw, {}, rendered, set(), new_body)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.create(path, rel, raw)
        return replace(new, mtime=os.stat(path).st_mtime)
    alien = sorted((fields.keys() | removed) - OWNED_KEYS)
    if alien:
        raise ValueError(f"{rel}: refusing to edit keys the system does not own: {alien}")
    rendered = {k: _render(k, v) for k, v in fields.items()}
    quiet = atomic.QUIET_SECONDS if quiet is None else quiet
    if wait <= 0:
        quiet = atomic.bookkeeping_quiet(quiet)  # [portable] longer: see atomic.PORTABLE_QUIET_FACTOR
    deadline = time.monotonic() + wait
    while True:
        fd, raw, seen = atomic.steady_read(path, rel)
        try:
            pause = 0.0 if atomic.is_ours(path, raw) else atomic.quiet_for(seen, quiet)
            if pause == 0.0:
                if sha256_hex(raw) != expected_hash:
                    raise ConcurrentEditError(rel, atomic.CHANGED + "your edit was not written")
                lay = _layout(rel, raw)  # NoteParseError: a broken note is never edited
                old = _parsed(rel, raw, lay, seen.st_mtime)
                # Keys already holding the value are left alone: keeps the human's spelling (`pinned: yes`).
                changed = {k: r for k, r in rendered.items() if k not in old.meta or not _same(old.meta[k], r[1])}
                text = _edit_text(lay, changed, removed & old.meta.keys(), body)
                new_raw = (("\ufeff" if lay.bom else "") + text).encode("utf-8")
                want_body = old.body if body is None else body.replace("\r\n", "\n")
                new = _verify(rel, new_raw, old.meta, rendered, removed, want_body, lay)
                if new_raw == raw:
                    return old  # nothing to change: do not touch the file (no mtime churn for watchers)
                if os.name == "nt":  # Windows cannot replace a file that is open
                    os.close(fd)
                    fd = -1
                try:
                    atomic.guarded_replace(path, rel, fd, raw, seen, new_raw, stat.S_IMODE(seen.st_mode))
                except NoteBusyError:
                    # A program holds it open for writing (a save paused halfway): wait like for a fresh mtime.
                    if time.monotonic() + 0.25 > deadline:
                        raise
                    pause = 0.25
                else:
                    return replace(new, mtime=os.stat(path).st_mtime)
            elif time.monotonic() + pause > deadline:
                raise atomic.busy(rel, f"saved {quiet - pause:.1f} s ago; it must be quiet for {quiet:g} s first")
        finally:
            if fd >= 0:
                os.close(fd)
        time.sleep(min(pause, 0.25))


@atomic.refused_by_storage("move")
def move_note(vault_root: Path, src_rel: str, dst_rel: str, *, expected_hash: str | None) -> str:
    """Atomically move a note within the vault, never overwriting: `x.md` taken → `x (2).md` …

    Returns the vault-relative path it ended up at.
    """
    src_clean, dst_clean = _clean_rel(src_rel), _clean_rel(dst_rel)
    src, dst = safe_path(vault_root, src_rel), safe_path(vault_root, dst_rel)
    if (vault_root / src_clean).is_symlink():  # safe_path resolved it: we would move the target instead
        raise NoteError(src_clean, "is a symlink; move it by hand")
    raw, _ = _read_bytes(src, src_clean)
    if expected_hash is not None and sha256_hex(raw) != expected_hash:
        raise ConcurrentEditError(src_clean, atomic.CHANGED + "it was not moved")
    if src == dst:
        return dst_clean
    dst.parent.mkdir(parents=True, exist_ok=True)
    pure = PurePosixPath(dst_clean)
    for n in range(1, 1000):
        cand_rel = dst_clean if n == 1 else str(pure.with_name(f"{pure.stem} ({n}){pure.suffix}"))
        try:
            atomic.rename_no_overwrite(src, safe_path(vault_root, cand_rel))
        except FileExistsError:
            continue
        atomic.fsync_dir(dst.parent)
        return cand_rel
    raise NoteError(dst_clean, "too many files with this name; the note was not moved")


# -- identity -------------------------------------------------------------------------------


def new_node_id() -> str:
    """A fresh node_id: 16 hex characters of a random UUID."""
    return uuid.uuid4().hex[:16]


def file_node_id(note: ParsedNote) -> str | None:
    """The note's own `node_id` from its frontmatter, or None (absent, empty, not a scalar)."""
    value = note.meta.get("node_id")
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None
