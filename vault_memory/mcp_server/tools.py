"""The MCP tools: one method of `Tools` each, marked with `@tool(hints, description)`.

Adding a tool is one method: typed, described arguments (`Annotated[..., Field(description=...)]`),
a typed result (schemas.py), the input bounds checked with the helpers below, one `Memory`
call through `self.service.call`. The decorator turns every failure into a tool error that
says what to do; server.py registers every marked method and refuses unknown arguments.

Hints (MCP tool annotations): `read`, `related`, `recent` and `status` only read. `recall`
is *not* read-only: recalling counts as using what it returns (the notes that clearly answered
get `last_accessed`, which keeps them from fading: docs/memory-model.md, "Rehearsal"); repeating
it changes nothing more (rehearsals within a short window coalesce), so it is idempotent, as is
`prefetch` (it may extend a staged memory's expiry). `discard` is the one destructive tool: it
moves a staged memory to the vault's `.trash/` (recoverable, never deleted).

Longer than 500 lines because every tool's arguments, limits and description sit beside its body,
so the toolset reads as one table; the output shapes are in schemas.py.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, cast

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from ..errors import LockHeldError, NoteNotFoundError, UnsafePathError, VaultMemoryError
from ..lifecycle.recall import Hit
from ..review.review import review_path
from ..search.filters import WHEN_HELP, make_filter
from .schemas import (
    CommitOut,
    DiscardOut,
    HitOut,
    LogOut,
    PinOut,
    PrefetchOut,
    ReadOut,
    RecallOut,
    RecentOut,
    RelatedOut,
    RememberOut,
    ReviewOut,
    StagedListOut,
    StageOut,
    StatusOut,
)
from .service import Service

log = logging.getLogger(__name__)

K_MAX = 50
BUDGET_MIN, BUDGET_MAX = 100, 20_000
QUERY_MAX = 2_000  # characters of a recall query
TURN_MAX = 100_000  # characters of a turn handed to prefetch (it is cut to what the embedder takes)
TEXT_MAX = 20_000  # characters of a memory or a log line
IDS_MAX = 100
ID_MAX = 500  # characters of a node_id, path, title or link
SHORT_MAX = 200  # characters of a tag, folder, type, date, heading, line range or title
TAGS_MAX = 20
READ_MAX_CHARS = 40_000  # a longer read stops at a line boundary and says where to go on (next_line)

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
USES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DISCARDS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class ToolInputError(ValueError):
    """A bad argument from the model; the message says how to call the tool instead."""


@dataclass(frozen=True)
class ToolSpec:
    annotations: ToolAnnotations
    description: str


def _guard(name: str, fn: Callable[[], T]) -> T:
    """Run a tool body; every failure becomes a ToolError the model can act on."""
    try:
        return fn()
    except ToolInputError as exc:
        raise ToolError(str(exc)) from None
    except UnsafePathError as exc:
        raise ToolError(
            f"refused: {exc}. Only notes inside the vault can be used; give a title, a vault-relative "
            "path like 'Memory/coffee.md' or a node_id"
        ) from None
    except NoteNotFoundError as exc:
        raise ToolError(f"{exc}. Find notes with recall (staged ids with staged_list)") from None
    except LockHeldError as exc:
        raise ToolError(f"{exc}. Try again in a few seconds") from None
    except VaultMemoryError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
        log.exception("tool %s failed", name)
        raise ToolError(
            f"internal error in {name} ({type(exc).__name__}: {exc}); the server is still "
            "running: try again, and report it if it repeats"
        ) from None


def tool(annotations: ToolAnnotations, description: str) -> Callable[[F], F]:
    """Mark a `Tools` method as an MCP tool (server.py registers it), its failures turned into tool errors."""

    def mark(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            return _guard(fn.__name__, lambda: fn(*args, **kwargs))

        guarded.__dict__["mcp_tool"] = ToolSpec(annotations, description)
        return cast(F, guarded)

    return mark


# -- input checks ------------------------------------------------------------------------


def _text(value: str, name: str, limit: int, example: str = "The user prefers tea.") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"`{name}` is empty; pass it as a string, e.g. {name}={example!r}")
    if len(value) > limit:
        raise ToolInputError(
            f"`{name}` is {len(value)} characters; the limit is {limit}. Shorten it "
            "(one fact per memory) and call again"
        )
    return value


def _opt(value: str | None, name: str, limit: int = SHORT_MAX) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise ToolInputError(f"`{name}` must be a string of at most {limit} characters (got {value!r:.80})")
    return value.strip()


def _int(value: int, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ToolInputError(f"`{name}` must be a whole number from {lo} to {hi} (got {value!r})")
    return value


def _ids(value: list[str] | str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ToolInputError(
            "`ids` is empty; pass a list of node_ids from stage or staged_list, "
            'e.g. ids=["3f2a9c1b7d4e5f60"], or call commit_all'
        )
    if len(items) > IDS_MAX:
        raise ToolInputError(f"`ids` has {len(items)} entries; at most {IDS_MAX} per call")
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip() or len(item) > ID_MAX or "\x00" in item:
            raise ToolInputError(f"`ids` must be non-empty node_id strings (got {item!r:.80})")
        out.append(item.strip())
    return out


def _tags(value: list[str] | str | None, *, one: bool = True) -> list[str]:
    """Checked tags. `one`: a single string is one tag (a filter's `tags="travel"`); a memory's
    tags must be a list (`stage(tags="notalist")` was taken, issue 40)."""
    if isinstance(value, str) and not one:
        raise ToolInputError(f'`tags` must be a list of tags, not a string (got {value!r:.40}), e.g. tags=["travel"]')
    items = [] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) > TAGS_MAX:
        raise ToolInputError(f'`tags` must be a list of at most {TAGS_MAX} tags, e.g. tags=["travel"]')
    return [t for t in (_opt(x, "tags") for x in items) if t]


@dataclass(frozen=True)
class _Filters:
    tags: list[str]
    folder: str | None
    type: str | None
    after: str | None
    before: str | None

    def kwargs(self) -> dict[str, Any]:
        return {"tags": self.tags, "folder": self.folder, "type": self.type, "after": self.after, "before": self.before}


def _filters(
    tags: list[str] | str | None, folder: str | None, type: str | None, after: str | None, before: str | None
) -> tuple[_Filters, str]:
    """The checked filter arguments and their one-line description (a bad one raises, saying why)."""
    got = _Filters(
        _tags(tags), _opt(folder, "folder"), _opt(type, "type"), _opt(after, "after"), _opt(before, "before")
    )
    flt = make_filter(now=dt.datetime.now(dt.UTC), **got.kwargs())
    return got, flt.describe() if flt else "no filter"


def _hit(h: Hit) -> HitOut:
    out: HitOut = {
        "path": h.path,
        "node_id": h.node_id,
        "title": h.title,
        "heading": h.heading,
        "snippet": h.snippet,
        "date": h.date[:10] if h.date else None,
        "score": h.score,
        "similarity": h.similarity,
        "weak": h.weak,
        "pinned": h.pinned,
        "reactivated": h.reactivated,
        "superseded_by": h.superseded_by,
        "lexical_only": h.lexical_only,
        "change": h.change,
        "also_in": h.also_in,
    }
    if h.explain is not None:
        out["explain"] = h.explain
    return out


def _progress_note(lexical: bool, vectors: dict[str, Any]) -> str:
    if not lexical:
        return ""
    if vectors["complete"]:
        return "results are keyword-only (BM25): the vector store is unreachable"
    return (
        f"results are keyword-only (BM25) while {vectors['embedded']:,} of {vectors['chunks']:,} chunks are "
        "embedded; ask again in a while for ranking by meaning too"
    )


# -- argument types, described once ------------------------------------------------------
TagsArg = Annotated[
    list[str] | str | None,
    Field(description="Only notes with every one of these tags (nested tags count: travel matches travel/japan)"),
]
FolderArg = Annotated[str | None, Field(description="Only notes in this vault folder, at any depth, e.g. 'Projects'")]
TypeArg = Annotated[str | None, Field(description="Only notes whose frontmatter `type` is this, e.g. 'decision'")]
AfterArg = Annotated[str | None, Field(description=f"Only notes stated on or after this: {WHEN_HELP}")]
BeforeArg = Annotated[str | None, Field(description="Only notes stated before this (same forms as `after`)")]
TargetArg = Annotated[
    str, Field(description="The note: its title, alias, file name, vault path, [[wikilink]] (with #Heading) or node_id")
]
TitleArg = Annotated[str | None, Field(description="A title (default: the first words of the text)")]
MemTagsArg = Annotated[list[str] | None, Field(description="Tags to give the memory, a list, e.g. ['family']")]


class Tools:
    """Every tool the server offers, bound to one Service."""

    def __init__(self, service: Service) -> None:
        self.service = service

    # -- finding and reading ---------------------------------------------------------------
    @tool(
        USES,
        "Search long-term memory (plain words: meaning and keywords count; a day named, October 17, puts "
        "its notes first). Up to k notes, best first: path, title, snippet, date, `similarity` (cosine to "
        "the answer), `weak` (too far to answer), `also_in` (copies of its line). Filters: tags, folder, "
        "type, after, before. `note` says when nothing is relevant or results are keywords only. Use read.",
    )
    def recall(
        self,
        query: Annotated[str, Field(description="What to look up, in plain words")],
        k: Annotated[
            int, Field(description=f"How many notes (1-{K_MAX})", json_schema_extra={"minimum": 1, "maximum": K_MAX})
        ] = 5,
        tags: TagsArg = None,
        folder: FolderArg = None,
        type: TypeArg = None,
        after: AfterArg = None,
        before: BeforeArg = None,
        explain: Annotated[
            bool, Field(description="Also say how each hit was ranked (BM25, meaning, strength, why it moved)")
        ] = False,
    ) -> RecallOut:
        q, n = _text(query, "query", QUERY_MAX, "what editor does the user use"), _int(k, "k", 1, K_MAX)
        got, described = _filters(tags, folder, type, after, before)
        why = bool(explain)
        hits, vectors = self.service.call(
            lambda m: (m.recall(q, k=n, explain=why, **got.kwargs()), m.vectors().to_dict())
        )
        lexical = any(h.lexical_only for h in hits) or not vectors["complete"]
        note = _progress_note(lexical, vectors)
        if hits and all(h.weak for h in hits):
            note = (note + "; " if note else "") + (
                "nothing relevant: every hit is weak (its similarity to the query is below the bar for an "
                "answer); say you found nothing rather than use them"
            )
        return {
            "hits": [_hit(h) for h in hits],
            "count": len(hits),
            "filter": described,
            "lexical_only": lexical,
            "vectors": cast(Any, vectors),
            "note": note,
        }

    @tool(
        READ,
        "Read a note: the whole of it, one section (`heading`, or target '[[Note#Heading]]') or some lines "
        "(`lines` '40:80'). Find it by title, alias, path, [[link]] or node_id. Returns the text with "
        "its path, title, dates and outline; a long note stops at `next_line` (ask again from there).",
    )
    def read(
        self,
        target: TargetArg,
        heading: Annotated[str | None, Field(description="Only this heading's section")] = None,
        lines: Annotated[str | None, Field(description="Only these body lines: '40:80', '40:' or ':20'")] = None,
    ) -> ReadOut:
        t = _text(target, "target", ID_MAX, "Danube Bike Trip")
        h, span = _opt(heading, "heading", ID_MAX), _opt(lines, "lines")
        got = self.service.call(lambda m: m.read(t, heading=h, lines=span, max_chars=READ_MAX_CHARS))
        return cast(ReadOut, got.to_dict())

    @tool(
        READ,
        "Notes related to a note: the notes it links to, the notes linking to it, and notes close in "
        "meaning that are not linked yet, each with its reasons ('links to this note', 'linked from this "
        "note', 'similar: <passage>') and `linked` true/false.",
    )
    def related(
        self,
        target: TargetArg,
        k: Annotated[
            int,
            Field(
                description="How many unlinked similar notes (1-50)", json_schema_extra={"minimum": 1, "maximum": 50}
            ),
        ] = 10,
    ) -> RelatedOut:
        t, n = _text(target, "target", ID_MAX, "Danube Bike Trip"), _int(k, "k", 1, 50)
        got = self.service.call(lambda m: m.related(t, k=n))
        return cast(RelatedOut, got.to_dict())

    @tool(
        READ,
        "What was written, committed, recalled or logged lately, newest first: path, title, event "
        "(staged, created, used: committed or recalled, logged) and when. Read from the notes' frontmatter, "
        "not file times.",
    )
    def recent(
        self,
        days: Annotated[
            int, Field(description="How far back, in days (1-3650)", json_schema_extra={"minimum": 1, "maximum": 3650})
        ] = 7,
        k: Annotated[
            int, Field(description="How many notes (1-100)", json_schema_extra={"minimum": 1, "maximum": 100})
        ] = 20,
    ) -> RecentOut:
        d, n = _int(days, "days", 1, 3650), _int(k, "k", 1, 100)
        items = self.service.call(lambda m: m.recent(days=d, k=n))
        return {"notes": [cast(Any, r.to_dict()) for r in items], "count": len(items)}

    @tool(
        USES,
        "Get what memory holds about the user's message, to read before you answer. Pass the message as "
        "`text`. Returns `block` (at most `budget` characters; empty when nothing is relevant) and its "
        "entries. Also keeps staged memories the message is about from expiring.",
    )
    def prefetch(
        self,
        text: Annotated[str, Field(description="The user's message")],
        budget: Annotated[
            int,
            Field(
                description=f"Max characters of the block ({BUDGET_MIN}-{BUDGET_MAX})",
                json_schema_extra={"minimum": BUDGET_MIN, "maximum": BUDGET_MAX},
            ),
        ] = 1200,
        tags: TagsArg = None,
        folder: FolderArg = None,
        type: TypeArg = None,
        after: AfterArg = None,
        before: BeforeArg = None,
    ) -> PrefetchOut:
        t, b = _text(text, "text", TURN_MAX), _int(budget, "budget", BUDGET_MIN, BUDGET_MAX)
        got, _ = _filters(tags, folder, type, after, before)
        result, vectors = self.service.call(lambda m: (m.prefetch(t, budget=b, **got.kwargs()), m.vectors().to_dict()))
        lexical = not vectors["complete"]
        return {
            "lexical_only": lexical,
            "vectors": cast(Any, vectors),
            "note": _progress_note(lexical, vectors),
            "block": result.block,
            "entries": [
                {
                    "path": e.path,
                    "node_id": e.node_id,
                    "date": e.date,
                    "text": e.text,
                    "score": e.score,
                    "change": e.change,
                }
                for e in result.entries
            ],
            "refreshed_staged": result.refreshed,
        }

    @tool(
        READ,
        "What the memory is doing: drafts awaiting commit (with their full text) and the notes they "
        "conflict with, what faded or went dormant lately, what came back or was superseded, notes that "
        "could not be read, and the command that resolves each. `markdown` is the review note the person "
        "sees in Obsidian; `review` the same as data. Writes nothing.",
    )
    def review(self) -> ReviewOut:
        got = self.service.call(lambda m: m.review(write=False))
        return {"markdown": got.markdown, "review": got.to_dict(), "path": review_path(self.service.config) or None}

    @tool(
        READ,
        "Show the vault, how many notes and chunks are indexed, what is waiting to be indexed, and whether "
        "this server is keeping the index current (right after start it may still be indexing).",
    )
    def status(self) -> StatusOut:
        info = self.service.call(lambda m: m.status(), wait_ready=False)
        info["server"] = {
            "keeps_index_current": self.service.writer,
            "startup_indexed": self.service.indexed_once.is_set(),
            "read_only": self.service.config.read_only,
            "error": self.service.last_error,
        }
        return cast(StatusOut, info)

    # -- writing -------------------------------------------------------------------------------
    @tool(
        WRITES,
        "Save one fact to long-term memory in one step. `text`: a short self-contained statement, e.g. "
        "'The user's dog is called Biscuit.' If a note already states it, nothing is written and that "
        "note is returned (existing: true). A conflicting note is listed in `conflicts`; pass "
        "`supersedes` to replace it.",
    )
    def remember(
        self,
        text: Annotated[str, Field(description="The fact to keep")],
        supersedes: Annotated[
            str | None,
            Field(description="The note this fact replaces (node_id, title, path or [[link]]); both get linked"),
        ] = None,
        title: TitleArg = None,
        tags: MemTagsArg = None,
    ) -> RememberOut:
        t, old = _text(text, "text", TEXT_MAX), _opt(supersedes, "supersedes", ID_MAX)
        ttl, tg = _opt(title, "title"), _tags(tags, one=False)
        done = self.service.call(lambda m: m.remember(t, title=ttl, tags=tg, supersedes=old))
        indexed = self.service.await_indexed([done.path] if not done.existing else [])
        return cast(RememberOut, done.to_dict() | {"indexed": indexed})

    @tool(
        WRITES,
        "Save a fact as a draft (staged) memory that expires after a week unless committed. Prefer "
        "remember; use stage when the user should confirm first. Returns its node_id (use it with commit "
        "or discard); needs_review when a note states the subject differently or already.",
    )
    def stage(
        self,
        text: Annotated[str, Field(description="The fact to keep as a draft")],
        title: TitleArg = None,
        tags: MemTagsArg = None,
    ) -> StageOut:
        t, ttl, tg = _text(text, "text", TEXT_MAX), _opt(title, "title"), _tags(tags, one=False)
        sm = self.service.call(lambda m: m.stage(t, title=ttl, tags=tg))
        return cast(StageOut, sm.to_dict() | {"indexed": self.service.await_indexed([sm.path])})

    @tool(
        USES,
        "List the staged (draft) memories: node_id, title, text, expires, needs_review. Expired ones are "
        "moved to the vault's .trash folder first (never deleted).",
    )
    def staged_list(self) -> StagedListOut:
        items = self.service.call(lambda m: m.staged())
        return {"staged": [cast(Any, sm.to_dict()) for sm in items], "count": len(items)}

    @tool(
        WRITES,
        "Commit staged memories so they are kept for good. `ids`: node_ids from stage or staged_list. "
        "`supersedes`: a note they replace (linked both ways). Returns `committed` and `left` (with the "
        "reason for each).",
    )
    def commit(
        self,
        ids: Annotated[list[str] | str, Field(description="node_ids of staged memories")],
        supersedes: Annotated[
            str | None, Field(description="The note the committed memory replaces (node_id, title, path or [[link]])")
        ] = None,
    ) -> CommitOut:
        chosen, old = _ids(ids), _opt(supersedes, "supersedes", ID_MAX)
        report = self.service.call(lambda m: m.commit(chosen, supersedes=old))
        return cast(
            CommitOut, report.to_dict() | {"indexed": self.service.await_indexed(c.path for c in report.committed)}
        )

    @tool(
        WRITES,
        "Commit every staged memory except those flagged needs_review. Returns exactly what was committed "
        "and what was left, with reasons; nothing is skipped silently.",
    )
    def commit_all(self) -> CommitOut:
        report = self.service.call(lambda m: m.commit_all())
        return cast(
            CommitOut, report.to_dict() | {"indexed": self.service.await_indexed(c.path for c in report.committed)}
        )

    @tool(
        DISCARDS,
        "Throw away a staged (draft) memory: it moves to the vault's .trash folder (recoverable by "
        "hand, never deleted). `id`: its node_id from stage or staged_list. Committed notes cannot be "
        "discarded.",
    )
    def discard(self, id: Annotated[str, Field(description="node_id of a staged memory")]) -> DiscardOut:
        ident = _ids(id)[0]
        where = self.service.call(lambda m: m.discard(ident))
        return {"target": ident, "path": where}  # staged memories are never recalled: no index to wait for

    @tool(USES, "Pin a note so it never fades from memory. `target`: its title, alias, path, [[link]] or node_id.")
    def pin(self, target: TargetArg) -> PinOut:
        t = _text(target, "target", ID_MAX, "Memory/coffee.md").strip()
        result = self.service.call(lambda m: m.pin(t))
        return cast(PinOut, result.to_dict() | {"indexed": self.service.await_indexed([result.path])})

    @tool(
        USES,
        "Unpin a note: it fades like any other again when not used. `target`: its title, alias, path, "
        "[[link]] or node_id.",
    )
    def unpin(self, target: TargetArg) -> PinOut:
        t = _text(target, "target", ID_MAX, "Memory/coffee.md").strip()
        result = self.service.call(lambda m: m.unpin(t))
        return cast(PinOut, result.to_dict() | {"indexed": self.service.await_indexed([result.path])})

    @tool(
        WRITES,
        "Append one timestamped line to today's episode log (a cheap record of what happened; no need to "
        "decide whether it matters). Returns the log note's path.",
    )
    def log(self, text: Annotated[str, Field(description="What happened, in a sentence")]) -> LogOut:
        t = _text(text, "text", TEXT_MAX)
        path = self.service.call(lambda m: m.log(t))
        return {"path": path, "indexed": self.service.await_indexed([path])}


def specs() -> dict[str, ToolSpec]:
    """Every tool's name and spec, in the order they are listed."""
    return {
        name: fn.__dict__["mcp_tool"]
        for name, fn in vars(Tools).items()
        if callable(fn) and "mcp_tool" in getattr(fn, "__dict__", {})
    }


__all__ = ["K_MAX", "READ_MAX_CHARS", "ToolInputError", "ToolSpec", "Tools", "specs", "tool"]
