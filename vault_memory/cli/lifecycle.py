"""The agent's write path: stage, staged, commit, discard, remember, pin, unpin, log.

Each command parses, makes one `Memory` call, renders. Data goes to stdout; notes about
what happened go to stderr.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Annotated, Protocol

import typer

from vault_memory.errors import ConfigError

from .options import AsJson, Now, Tags, Target, Text, Title, parse_now, state
from .output import emit_json, ensure_current, note, say

if TYPE_CHECKING:
    from vault_memory import CommitReport


class _Conflict(Protocol):
    """What the CLI shows of a conflicting note (the library's record has more)."""

    @property
    def node_id(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def path(self) -> str | None: ...
    @property
    def similarity(self) -> float | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def statement(self) -> str: ...
    @property
    def replaceable(self) -> bool: ...


def _conflict_lines(node_id: str, conflicts: Sequence[_Conflict], *, committed: bool, path: str = "") -> None:
    for c in conflicts:
        sim = f", similarity {c.similarity:.2f}" if c.similarity is not None else ""
        what = "already stated in" if c.kind == "duplicate" else "conflicts with"
        note(f"  {what} {c.title or c.node_id or '?'} ({c.path or 'not in the index'}{sim})")
        if c.statement:
            note(f"    which says: {c.statement}")
    if not conflicts:
        return
    first = next((c for c in conflicts if c.kind == "conflict"), None)
    if first is None:
        if not committed:  # only notes that already state it
            note(
                f"  needs review: `vault-memory discard {node_id}` (already stated), or `vault-memory commit {node_id}`"
            )
        return
    old = first.path or first.node_id or first.title or "OLD"
    # Only an agent memory (one fact) is replaced whole; a person's note states more than the line
    # that matched, so what changed is edited there, never superseded (issue 40).
    edit = f"if it changes what {first.path} says, edit that line there" if first.path else ""
    if not committed:
        replace = (
            f'`vault-memory commit {node_id} --supersedes "{old}"` if it replaces that memory, '
            if first.replaceable
            else ""
        )
        note(
            f"  needs review: {replace}`vault-memory commit {node_id}` to keep it"
            + ("" if first.replaceable or not edit else f" ({edit})")
            + f", or `vault-memory discard {node_id}` (`vault-memory review --interactive` walks every draft)"
        )
    elif first.replaceable:
        old_name = PurePosixPath(first.path).stem if first.path else old
        new_name = PurePosixPath(path).stem if path else node_id
        note(
            f"  if it replaces that memory, link them: add `supersedes: ['[[{old_name}]]']` to {path or node_id} "
            f"and `superseded_by: ['[[{new_name}]]']` to {first.path or 'the old note'}"
        )
    elif edit:
        note(f"  {edit} (vault-memory never rewrites a person's note)")


def stage(
    ctx: typer.Context, text: Text, title: Title = None, tag: Tags = None, as_json: AsJson = False, now: Now = None
) -> None:
    """Stage a memory in the vault's staging folder; prints its node_id."""
    when = parse_now(now)
    with state(ctx).memory() as mem:
        ensure_current(mem)
        sm = mem.stage(text, title=title, tags=tag or [], now=when)
    if as_json:
        emit_json(sm.to_dict())
        return
    say(sm.node_id)
    what = "already staged (same text)" if sm.existing else "staged"
    expires = f", expires {sm.expires:%Y-%m-%d %H:%M %Z}" if sm.expires else ""
    note(f"{what}: {sm.title!r} in {sm.path}{expires}")
    _conflict_lines(sm.node_id, sm.conflicts, committed=False)


def staged(ctx: typer.Context, as_json: AsJson = False, now: Now = None) -> None:
    """List staged memories, oldest first (expired ones are moved to .trash/ first, and said so)."""
    from vault_memory.internals import internals
    from vault_memory.lifecycle.staging import expire_staged

    when = parse_now(now)
    with state(ctx).memory() as mem:
        expired = expire_staged(internals(mem), when)
        items = mem.staged(when)
    if as_json:
        emit_json(
            {"staged": [sm.to_dict() for sm in items], "count": len(items), "expired": [x.to_dict() for x in expired]}
        )
        return
    for x in expired:
        note(f"{x.node_id} ({x.title}) {x.reason}")
    if not items:
        say("nothing staged")
    for sm in items:
        flags = "".join([" [needs review]" if sm.needs_review else "", " [pinned]" if sm.pinned else ""])
        expires = f"expires {sm.expires:%Y-%m-%d}" if sm.expires else "does not expire"
        say(f"{sm.node_id}  {sm.title}  ({sm.path}, {expires}){flags}")
        if sm.needs_review:
            say(f"    {sm.review_reason()}")


def _render_commit(report: CommitReport) -> None:
    for c in report.committed:
        names = [PurePosixPath(p).stem for p in c.superseded_paths] or c.supersedes  # names, not node_ids
        extra = f" (supersedes {', '.join(names)})" if names else ""
        say(f"committed {c.node_id}  {c.title}  -> {c.path}{extra}")
    for x in report.left:
        say(f"left      {x.node_id or '-'}  {x.title}  ({x.path}): {x.reason}")
    if not report.committed and not report.left:
        say("nothing staged")


def commit(
    ctx: typer.Context,
    ids: Annotated[
        list[str] | None, typer.Argument(help="Staged memory ids (or staged paths)", show_default=False)
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Commit every staged memory not flagged needs_review")] = False,
    supersedes: Annotated[
        str | None,
        typer.Option(
            "--supersedes",
            metavar="OLD",
            show_default=False,
            help="The note the committed memory replaces: its title, [[link]], path or node_id",
        ),
    ] = None,
    as_json: AsJson = False,
    now: Now = None,
) -> None:
    """Commit staged memories to the memory folder (as tier: short); says what it left and why.

    Exits 1 when a memory named by id was left staged; `--all` exits 0 and reports.
    """
    ids = ids or []
    if all_ and ids:
        raise ConfigError("give either staged ids or --all, not both")
    if all_ and supersedes:
        raise ConfigError("--supersedes needs the id of the memory that replaces the old note, not --all")
    if not all_ and not ids:
        raise ConfigError("give the staged ids to commit (see `vault-memory staged`), or --all")
    when = parse_now(now)
    with state(ctx).memory() as mem:
        report = mem.commit_all(when) if all_ else mem.commit(ids, supersedes=supersedes, now=when)
    if as_json:
        emit_json(report.to_dict())
    else:
        _render_commit(report)
    if not all_ and report.left:
        raise typer.Exit(1)  # something asked for by name was not committed (run() passes the code on)


def discard(
    ctx: typer.Context,
    id: Annotated[str, typer.Argument(help="Staged memory id (or staged path)", show_default=False)],
    as_json: AsJson = False,
) -> None:
    """Move a staged memory to the vault's .trash/ (nothing is deleted); prints where it went."""
    with state(ctx).memory() as mem:
        where = mem.discard(id)
    if as_json:
        emit_json({"target": id, "path": where})
    else:
        say(where)


def remember(
    ctx: typer.Context,
    text: Text,
    title: Title = None,
    tag: Tags = None,
    supersedes: Annotated[
        str | None,
        typer.Option(
            "--supersedes",
            metavar="OLD",
            show_default=False,
            help="The note this memory replaces (node_id, path, title or [[link]]); both are linked",
        ),
    ] = None,
    as_json: AsJson = False,
    now: Now = None,
) -> None:
    """Stage and commit a memory in one step; prints its node_id. Conflicts are reported, not blocking.

    If a note already states it, nothing is written: prints that note's node_id and says where.
    """
    when = parse_now(now)
    with state(ctx).memory() as mem:
        ensure_current(mem)
        done = mem.remember(text, title=title, tags=tag or [], supersedes=supersedes, now=when)
    if as_json:
        emit_json(done.to_dict())
        return
    say(done.node_id)
    if done.existing:
        said = done.conflicts[0].statement if done.conflicts and done.conflicts[0].statement else ""
        note(f"already stated in {done.path}" + (f": {said!r}" if said else "") + "; nothing written")
        return
    note(f"remembered: {done.title!r} in {done.path}")
    _conflict_lines(done.node_id, done.conflicts, committed=True, path=done.path)


def _pin(ctx: typer.Context, target: str, pinned: bool, as_json: bool) -> None:
    with state(ctx).memory() as mem:
        result = mem.pin(target) if pinned else mem.unpin(target)
    if as_json:
        emit_json(result.to_dict())
        return
    verb = "pinned" if pinned else "unpinned"
    say(f"{verb} {result.path}" + ("" if result.changed else f" (it already was {verb})"))


def pin(ctx: typer.Context, target: Target, as_json: AsJson = False) -> None:
    """Pin a note: full strength, never dormant, never expires."""
    _pin(ctx, target, True, as_json)


def unpin(ctx: typer.Context, target: Target, as_json: AsJson = False) -> None:
    """Unpin a note: it decays like any other again (from its last use before the pin)."""
    _pin(ctx, target, False, as_json)


def log(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="What happened", show_default=False)],
    now: Annotated[
        str | None,
        typer.Option(
            "--now", metavar="ISO", show_default=False, help="Time of the entry, ISO 8601 (default: now, local)"
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Append `- HH:MM TEXT` to today's episodic note (Memory/Episodes/YYYY-MM-DD.md), or with
    log_to_daily_note under the log_heading of today's daily note; prints its path."""
    when = parse_now(now)
    with state(ctx).memory() as mem:
        rel = mem.log(text, now=when)
    if as_json:
        emit_json({"path": rel})
    else:
        say(rel)
