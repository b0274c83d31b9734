"""What each MCP tool returns, as typed dictionaries: the SDK publishes them as the tools'
`outputSchema` and validates every result against them (fields not declared here are dropped).

The records are the library's own (`to_dict()` of Hit, StagedMemory, Committed, NoteText, ...),
trimmed where a model needs less (a recall hit carries no ranking internals). typing_extensions'
TypedDict, because pydantic needs it on Python 3.11.
"""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict


class HitOut(TypedDict):
    path: str
    node_id: str
    title: str
    heading: str
    snippet: str
    date: str | None
    score: float  # relevance among these candidates (the best is always about 1): an order, not a measure
    similarity: float  # cosine of the query to the hit's answer: an absolute scale, what `weak` is judged on
    weak: bool  # similarity below the embedder's weak bar: the hit says little about the query
    pinned: bool
    reactivated: bool
    superseded_by: list[str]
    lexical_only: bool  # ranked by keywords (BM25) alone: vectors still being filled in, or the store unreachable
    change: str  # what the vault records between two hits: "superseded by #1", "supersedes #3" ("" otherwise)
    also_in: list[str]  # other notes that state this in the same words (a line copied from day to day), newest first
    explain: NotRequired[dict[str, Any]]  # how it was ranked, when asked for (explain=true)


class VectorsOut(TypedDict):
    chunks: int
    embedded: int
    pending: int
    complete: bool  # every chunk has its vector: recall ranks by meaning and keywords both


class RecallOut(TypedDict):
    hits: list[HitOut]
    count: int
    filter: str  # what the filters let through ("no filter" when none was given)
    lexical_only: bool
    vectors: VectorsOut
    note: str  # what to tell the user about these results ("" when nothing)


class PrefetchEntryOut(TypedDict):
    path: str
    node_id: str
    date: str | None
    text: str
    score: float
    change: str  # "superseded by #1" ... when the vault records a supersession between entries ("" otherwise)


class PrefetchOut(TypedDict):
    lexical_only: bool  # the block is empty or thin because vectors are still being filled in
    vectors: VectorsOut
    note: str
    block: str
    entries: list[PrefetchEntryOut]
    refreshed_staged: list[str]


class OutlineOut(TypedDict):
    heading: str
    level: int
    line: int


class ReadOut(TypedDict):
    path: str
    node_id: str
    title: str
    heading: str
    text: str
    start_line: int
    end_line: int
    line_count: int
    truncated: bool
    next_line: int | None
    tags: list[str]
    aliases: list[str]
    links: list[str]
    outline: list[OutlineOut]
    created: str | None
    stated: str | None
    last_accessed: str | None
    modified: str | None
    pinned: bool
    superseded_by: list[str]


class RelatedNoteOut(TypedDict):
    path: str
    node_id: str
    title: str
    linked: bool
    links_here: bool
    linked_from_here: bool
    similarity: float | None
    snippet: str
    reasons: list[str]
    also_in: list[str]  # unlinked notes matching through a copy of the same line, folded into this one


class RelatedOut(TypedDict):
    path: str
    node_id: str
    title: str
    related: list[RelatedNoteOut]
    count: int
    links_out: int
    backlinks: int
    unresolved: list[str]


class RecentNoteOut(TypedDict):
    path: str
    node_id: str
    title: str
    event: str
    when: str


class RecentOut(TypedDict):
    notes: list[RecentNoteOut]
    count: int


class ConflictOut(TypedDict):
    node_id: str
    title: str
    path: str
    similarity: float | None
    kind: str  # conflict | duplicate
    statement: str
    replaceable: bool  # an agent memory: `supersedes` may replace it; a person's note is edited instead


class StagedOut(TypedDict):
    node_id: str
    path: str
    title: str
    text: str
    tags: list[str]
    created: str | None
    expires: str | None
    needs_review: bool
    conflicts_with: list[str]
    conflicts: list[ConflictOut]
    pinned: bool
    existing: bool


class StageOut(StagedOut):
    indexed: bool


class StagedListOut(TypedDict):
    staged: list[StagedOut]
    count: int


class CommittedOut(TypedDict):
    node_id: str
    path: str
    title: str
    staged_path: str
    tier: str
    supersedes: list[str]
    superseded_paths: list[str]
    conflicts_with: list[str]
    conflicts: list[ConflictOut]
    existing: bool


class RememberOut(CommittedOut):
    indexed: bool


class LeftOut(TypedDict):
    node_id: str
    path: str
    title: str
    code: str
    reason: str


class CommitOut(TypedDict):
    committed: list[CommittedOut]
    left: list[LeftOut]
    indexed: bool


class DiscardOut(TypedDict):
    target: str
    path: str  # where it went: .trash/...


class PinOut(TypedDict):
    node_id: str
    path: str
    pinned: bool
    changed: bool
    indexed: bool


class LogOut(TypedDict):
    path: str
    indexed: bool


class ReviewOut(TypedDict):
    markdown: str  # the review note as it reads in Obsidian
    review: dict[str, Any]  # the same content as data (Review.to_dict)
    path: str | None  # where the review note lives in the vault ("" turns it off)


class ServerOut(TypedDict):
    keeps_index_current: bool
    startup_indexed: bool
    read_only: bool
    error: str | None


class StatusOut(TypedDict):
    vault: str
    index_dir: str
    notes: int
    chunks: int
    embedder: str
    vector_store: dict[str, Any]
    vectors: VectorsOut
    recall: str  # "hybrid", or "lexical-only" while vectors are being filled in
    pending: dict[str, int]
    failures: dict[str, str]
    passed_over: dict[str, str]
    writer_pid: int | None
    index_state: str  # missing | building | embedding | stale | current
    next_step: str  # what to run about it ("" when current)
    server: ServerOut
