"""Reconcile planning: a pure function from (vault state, index state) to a plan.

Identity is the note's `node_id` (or `path:<path>` when ids are off), so a moved note
is recognised as the same note and keeps its vectors. The content that is embedded
is the body, so a change that touches only frontmatter is `META` and embeds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class Kind(StrEnum):
    NEW = "new"
    MODIFIED = "modified"  # body changed (maybe moved too)
    MOVED = "moved"  # path changed, body unchanged
    META = "meta"  # only frontmatter changed
    UNCHANGED = "unchanged"
    DELETED = "deleted"


@dataclass(frozen=True)
class Entry:
    """What planning needs to know of one note, on either side."""

    node_id: str
    path: str
    file_hash: str
    body_hash: str


@dataclass(frozen=True)
class Change:
    kind: Kind
    entry: Entry  # the vault side (or the index side for DELETED)
    previous: Entry | None = None  # the index side, when there is one


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...] = field(default_factory=tuple)

    def of(self, *kinds: Kind) -> list[Change]:
        return [c for c in self.changes if c.kind in kinds]

    def counts(self) -> dict[str, int]:
        out = {k.value: 0 for k in Kind}
        for c in self.changes:
            out[c.kind.value] += 1
        return out

    @property
    def is_noop(self) -> bool:
        return all(c.kind is Kind.UNCHANGED for c in self.changes)


def plan_changes(vault: Iterable[Entry], index: Iterable[Entry], keep: Iterable[str] = ()) -> Plan:
    """Classify every note. `keep` lists paths that exist but could not be read this time:
    their index rows are kept (a half-typed YAML edit must not drop a note from recall)."""
    indexed = {e.node_id: e for e in index}
    kept_paths = set(keep)
    changes: list[Change] = []
    seen: set[str] = set()
    for entry in sorted(vault, key=lambda e: e.path):
        seen.add(entry.node_id)
        old = indexed.get(entry.node_id)
        if old is None:
            kind = Kind.NEW
        elif old.body_hash != entry.body_hash:
            kind = Kind.MODIFIED
        elif old.path != entry.path:
            kind = Kind.MOVED
        elif old.file_hash != entry.file_hash:
            kind = Kind.META
        else:
            kind = Kind.UNCHANGED
        changes.append(Change(kind, entry, old))
    for node_id, old in sorted(indexed.items()):
        if node_id not in seen and old.path not in kept_paths:
            changes.append(Change(Kind.DELETED, old, old))
    return Plan(tuple(changes))
