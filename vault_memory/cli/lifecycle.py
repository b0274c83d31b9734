"""CLI for the agent's write path: stage, staged, commit, discard, remember, pin, unpin, log.

Thin: each command parses, makes one library call (vault_memory.staging via Memory),
renders. Data goes to stdout; notes about what happened go to stderr.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from vault_memory_cli.main import Progress, app, emit_json, parse_now, state

from vault_memory.errors import ConfigError

Text = Annotated[str, typer.Argument(help="The memory, in plain words")]
Title = Annotated[str | None, typer.Option("--title", help="Title (default: the first words of the text)")]
Tags = Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable)")]
AsJson = Annotated[bool, typer.Option("--json", help="Print as JSON")]
Now = Annotated[str | None, typer.Option("--now", help="Act as if it were this ISO 8601 instant")]
Target = Annotated[str, typer.Argument(help="node_id or vault-relative path")]


def _note(message: str) -> None:
    typer.echo(message, err=True)


def _conflict_lines(node_id: str, conflicts: list[Any], *, committed: bool) -> None:
    for c in conflicts:
        sim = f", similarity {c.similarity:.2f}" if c.similarity is not None else ""
        _note(f"  conflicts with {c.node_id} ({c.title or '?'}{', ' + c.path if c.path else ''}{sim})")
    if conflicts and not committed:
        _note(f"  needs review: `vault-memory commit {node_id} --supersedes OLD_ID` if it replaces that note, "
              f"`vault-memory commit {node_id}` to keep both, or `vault-memory discard {node_id}`")
    elif conflicts:
        _note(f"  if it replaces that note, link them: set `supersedes: [OLD_ID]` on {node_id} "
              "and `superseded_by` on the old note")


def _index_first(mem: Any) -> None:
    progress = Progress("indexing")
    try:
        mem.ensure_current(progress)
    finally:
        progress.close()


@app.command()
def stage(ctx: typer.Context, text: Text, title: Title = None, tag: Tags = None, as_json: AsJson = False,
          now: Now = None) -> None:
    """Stage a memory in the vault's staging folder; prints its node_id."""
    with state(ctx).memory() as mem:
        _index_first(mem)
        sm = mem.stage(text, title=title, tags=tag or [], now=parse_now(now))
    if as_json:
        emit_json(sm.to_dict())
        return
    typer.echo(sm.node_id)
    what = "already staged (same text)" if sm.existing else "staged"
    expires = f", expires {sm.expires:%Y-%m-%d %H:%M %Z}" if sm.expires else ""
    _note(f"{what}: {sm.title!r} in {sm.path}{expires}")
    _conflict_lines(sm.node_id, sm.conflicts, committed=False)


@app.command()
def staged(ctx: typer.Context, as_json: AsJson = False, now: Now = None) -> None:
    """List staged memories (expired ones are moved to .trash/ first, and said so)."""
    when = parse_now(now)
    with state(ctx).memory() as mem:
        expired = mem.expire_staged(when)
        items = mem.staged(when)
    for x in expired:
        _note(f"{x.node_id} ({x.title}) {x.reason}")
    if as_json:
        emit_json([sm.to_dict() for sm in items])
        return
    if not items:
        typer.echo("nothing staged")
    for sm in items:
        flags = "".join([" [needs review]" if sm.needs_review else "", " [pinned]" if sm.pinned else ""])
        expires = f"expires {sm.expires:%Y-%m-%d}" if sm.expires else "does not expire"
        typer.echo(f"{sm.node_id}  {sm.title}  ({sm.path}, {expires}){flags}")
        if sm.needs_review:
            typer.echo(f"    {sm.review_reason()}")


def _render_report(report: Any) -> None:
    for c in report.committed:
        extra = f" (supersedes {', '.join(c.supersedes)})" if c.supersedes else ""
        typer.echo(f"committed {c.node_id}  {c.title}  -> {c.path}{extra}")
    for x in report.left:
        typer.echo(f"left      {x.node_id or '-'}  {x.title}  ({x.path}): {x.reason}")
    if not report.committed and not report.left:
        typer.echo("nothing staged")


@app.command()
def commit(ctx: typer.Context,
           ids: Annotated[list[str] | None, typer.Argument(help="Staged memory ids (or staged paths)")] = None,
           all_: Annotated[bool, typer.Option("--all", help="Commit every staged memory not flagged needs_review")]
           = False,
           supersedes: Annotated[str | None, typer.Option(
               "--supersedes", help="node_id or path of the note the committed memory replaces")] = None,
           as_json: AsJson = False, now: Now = None) -> None:
    """Commit staged memories to the memory folder (as tier: short); says what it left and why."""
    ids = ids or []
    if all_ and ids:
        raise ConfigError("give either staged ids or --all, not both")
    if all_ and supersedes:
        raise ConfigError("--supersedes needs the id of the memory that replaces the old note, not --all")
    if not all_ and not ids:
        raise ConfigError("give the staged ids to commit (see `vault-memory staged`), or --all")
    with state(ctx).memory() as mem:
        report = mem.commit_all(parse_now(now)) if all_ else mem.commit(ids, supersedes=supersedes,
                                                                         now=parse_now(now))
    if as_json:
        emit_json(report.to_dict())
    else:
        _render_report(report)
    if not all_ and report.left:
        raise typer.Exit(1)  # something that was asked for by name was not committed


@app.command()
def discard(ctx: typer.Context, id: Annotated[str, typer.Argument(help="Staged memory id (or staged path)")]) -> None:
    """Move a staged memory to the vault's .trash/ (nothing is deleted)."""
    with state(ctx).memory() as mem:
        where = mem.discard(id)
    typer.echo(where)


@app.command()
def remember(ctx: typer.Context, text: Text, title: Title = None, tag: Tags = None, as_json: AsJson = False,
             now: Now = None) -> None:
    """Stage and commit a memory in one step; prints its node_id. Conflicts are reported, not blocking."""
    with state(ctx).memory() as mem:
        _index_first(mem)
        done = mem.remember(text, title=title, tags=tag or [], now=parse_now(now))
    if as_json:
        emit_json(done.to_dict())
        return
    typer.echo(done.node_id)
    if done.existing:
        _note(f"already remembered in {done.path}; rehearsed it instead of writing a copy")
        return
    _note(f"remembered: {done.title!r} in {done.path}")
    _conflict_lines(done.node_id, done.conflicts, committed=True)


def _pin(ctx: typer.Context, target: str, pinned: bool, as_json: bool) -> None:
    with state(ctx).memory() as mem:
        result = mem.pin(target) if pinned else mem.unpin(target)
    if as_json:
        emit_json(result.to_dict())
        return
    verb = "pinned" if pinned else "unpinned"
    typer.echo(f"{verb} {result.path}" + ("" if result.changed else f" (it already was {verb})"))


@app.command()
def pin(ctx: typer.Context, target: Target, as_json: AsJson = False) -> None:
    """Pin a note: full strength, never dormant, never expires."""
    _pin(ctx, target, True, as_json)


@app.command()
def unpin(ctx: typer.Context, target: Target, as_json: AsJson = False) -> None:
    """Unpin a note: it decays like any other again."""
    _pin(ctx, target, False, as_json)


@app.command("log")
def log_cmd(ctx: typer.Context, text: Annotated[str, typer.Argument(help="What happened")],
            now: Annotated[str | None, typer.Option("--now", help="Time of the entry, ISO 8601 (default: now, local)")]
            = None) -> None:
    """Append `- HH:MM TEXT` to today's episodic note (Memory/Episodes/YYYY-MM-DD.md)."""
    with state(ctx).memory() as mem:
        rel = mem.log(text, now=parse_now(now))
    typer.echo(rel)
