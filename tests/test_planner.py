"""The pure reconcile planner."""

from __future__ import annotations

from vault_memory.index.planner import Entry, Kind, plan_changes


def e(nid: str, path: str, fh: str = "f", bh: str = "b") -> Entry:
    return Entry(nid, path, fh, bh)


def kinds(plan: object) -> dict[str, str]:
    return {c.entry.node_id: c.kind.value for c in plan.changes}  # type: ignore[attr-defined]


def test_classifies_every_kind() -> None:
    index = [e("a", "a.md"), e("b", "b.md"), e("c", "c.md"), e("d", "d.md"), e("x", "x.md"), e("m", "m.md")]
    vault = [
        e("a", "a.md"),  # unchanged
        e("b", "b.md", fh="f2"),  # frontmatter only
        e("c", "c.md", fh="f2", bh="b2"),  # body edit
        e("d", "sub/d.md"),  # moved
        e("m", "m2.md", fh="f3", bh="b3"),  # moved and edited
        e("n", "n.md"),  # new
    ]
    plan = plan_changes(vault, index)
    assert kinds(plan) == {
        "a": "unchanged",
        "b": "meta",
        "c": "modified",
        "d": "moved",
        "m": "modified",
        "n": "new",
        "x": "deleted",
    }
    assert plan.counts()["deleted"] == 1
    assert not plan.is_noop


def test_unreadable_note_is_kept_not_deleted() -> None:
    plan = plan_changes([], [e("a", "a.md")], keep=["a.md"])
    assert plan.changes == ()
    assert plan.is_noop


def test_noop() -> None:
    entries = [e("a", "a.md"), e("b", "b.md")]
    plan = plan_changes(entries, entries)
    assert plan.is_noop
    assert [c.kind for c in plan.changes] == [Kind.UNCHANGED, Kind.UNCHANGED]
