"""Commands that look at notes: `read` (a note, a section, a line range), `related`, `recent`.

stdout is the data (`read` prints the text itself, so `vault-memory read X > x.md` works);
where it came from goes to stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .options import AsJson, Now, Target, parse_now, state
from .output import emit_json, ensure_current, note


def read(
    ctx: typer.Context,
    target: Target,
    heading: Annotated[
        str | None,
        typer.Option(
            "--heading",
            metavar="HEADING",
            show_default=False,
            help="Only this heading's section (a [[Note#Heading]] target picks it too)",
        ),
    ] = None,
    lines: Annotated[
        str | None,
        typer.Option(
            "--lines",
            metavar="A:B",
            show_default=False,
            help="Only body lines A to B (1-based; 40: to the end, :20 the first 20)",
        ),
    ] = None,
    everything: Annotated[
        bool,
        typer.Option("--all", help="Also what recall never shows: comments and private notes (yours to see)"),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Print a note (or one section, or some lines of it); where it is and its dates go to stderr."""
    with state(ctx).memory() as mem:
        got = mem.read(target, heading=heading, lines=lines, everything=everything)
    if as_json:
        emit_json(got.to_dict())
        return
    where = got.path + (f" > {got.heading}" if got.heading else "")
    span = f"lines {got.start_line}-{got.end_line} of {got.line_count}" if got.line_count else "empty"
    dates = ", ".join(f"{k} {v[:10]}" for k, v in (("stated", got.stated), ("last used", got.last_accessed)) if v)
    marks = "".join(
        [
            " [pinned]" if got.pinned else "",
            f" [superseded by {', '.join(got.superseded_by)}]" if got.superseded_by else "",
        ]
    )
    note(f"{where}  ({got.title}; {got.node_id}; {span}{'; ' + dates if dates else ''}){marks}")
    typer.echo(got.text)


def related(
    ctx: typer.Context,
    target: Target,
    k: Annotated[int, typer.Option("-k", min=1, max=50, help="How many unlinked similar notes (1-50)")] = 10,
    as_json: AsJson = False,
) -> None:
    """Notes related to TARGET: its links, its backlinks, and notes similar in meaning (marked if linked)."""
    with state(ctx).memory() as mem:
        ensure_current(mem)
        found = mem.related(target, k=k)
    if as_json:
        emit_json(found.to_dict())
        return
    note(
        f"{found.path}: {found.links_out} link(s) out, {found.backlinks} backlink(s)"
        + (f"; unresolved: {', '.join(found.unresolved)}" if found.unresolved else "")
    )
    if not found.related:
        typer.echo("no related notes")
    for r in found.related:
        sim = f"{r.similarity:.2f}" if r.similarity is not None else "  - "
        tag = "linked  " if r.linked else "unlinked"
        links = "; ".join(x for x in r.reasons if not x.startswith("similar:"))
        mark = " [superseded]" if r.superseded_by else ""  # as recall marks it: a newer note says otherwise
        typer.echo(f"{sim}  {tag}  {r.path}{mark}" + (f"  ({links})" if links else ""))
        if any(x.startswith("similar:") for x in r.reasons):
            typer.echo(f"      {r.snippet}")
        if r.also_in:  # the same line copied into other notes: one entry, as recall folds them
            names = ", ".join(p.rsplit("/", 1)[-1].removesuffix(".md") for p in r.also_in[:5])
            more = f" and {len(r.also_in) - 5} more" if len(r.also_in) > 5 else ""
            typer.echo(f"      also in {len(r.also_in)} other notes through the same line: {names}{more}")


def recent(
    ctx: typer.Context,
    days: Annotated[float, typer.Option("--days", min=0, max=3650, help="How far back, in days")] = 7,
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="How many notes (1-100)")] = 20,
    as_json: AsJson = False,
    now: Now = None,
) -> None:
    """Notes written, committed, recalled or logged lately, newest first (from frontmatter, not file times)."""
    when = parse_now(now)
    with state(ctx).memory() as mem:
        ensure_current(mem)
        items = mem.recent(days=days, k=k, now=when)
    if as_json:
        emit_json({"notes": [r.to_dict() for r in items], "count": len(items)})
        return
    if not items:
        typer.echo(f"nothing in the last {days:g} days")
    for r in items:
        typer.echo(f"{r.when[:16].replace('T', ' '):16}  {r.event:9}  {r.path}  ({r.title})")
