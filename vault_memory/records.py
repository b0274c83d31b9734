"""What the agent's write path returns: plain records, each with `to_dict()` for JSON.

StagedMemory   one staged memory as it is on disk now
Conflict       a note a new memory is very similar to
Committed      a memory now in the memory folder
Left           a staged memory a commit did not commit, and why
CommitReport   exactly what a commit committed and left
PinResult      what `pin` / `unpin` did
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any


def iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass
class Conflict:
    """A note that a new memory contradicts or repeats (conflicts.py says which, and why)."""

    node_id: str
    title: str = ""
    path: str = ""
    similarity: float | None = None  # known when just computed; not stored in the note
    kind: str = "conflict"  # conflict: states the subject differently | duplicate: already states it
    statement: str = ""  # the note's statement that matched (when just computed)
    #: the note is an agent memory (one fact, in the memory folder): superseding it loses nothing.
    #: A person's note states more than the line that matched: never advise superseding it whole.
    replaceable: bool = False

    def describe(self) -> str:
        what = "already stated in" if self.kind == "duplicate" else "conflicts with"
        return f"{what} {self.node_id} ({self.title or 'not in the index'})"


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
            return "needs_review: " + ", ".join(c.describe() for c in self.conflicts)
        return "needs_review: flagged for review (commit it by id, or set needs_review: false)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "path": self.path, "title": self.title, "text": self.text,
            "tags": list(self.tags), "created": iso(self.created), "expires": iso(self.expires),
            "needs_review": self.needs_review, "conflicts_with": self.conflicts_with,
            "conflicts": [c.__dict__ for c in self.conflicts], "pinned": self.pinned, "existing": self.existing,
        }  # fmt: skip


@dataclass
class Committed:
    """A memory that is now in the memory folder."""

    node_id: str
    path: str
    title: str
    staged_path: str  # where it was staged ("" when remember wrote it into place or found it already committed)
    tier: str
    supersedes: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    existing: bool = False  # remember(): the same text was already committed; it was rehearsed instead
    #: the vault paths of the notes it supersedes (what a person reads; `supersedes` holds their ids)
    superseded_paths: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id, "path": self.path, "title": self.title, "staged_path": self.staged_path,
            "tier": self.tier, "supersedes": list(self.supersedes), "superseded_paths": list(self.superseded_paths),
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


__all__ = ["CommitReport", "Committed", "Conflict", "Left", "PinResult", "StagedMemory", "iso"]
