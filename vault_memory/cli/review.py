"""`vault-memory review`: what the memory is doing, in the terminal and as the review note in the vault.

`--interactive` walks the drafts one by one (commit / discard / supersede / skip / quit), using
the same `Memory` calls as `commit` and `discard`, then writes the review note again.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Annotated

import typer

from vault_memory.errors import VaultMemoryError

from ..internals import internals
from .options import AsJson, Now, parse_now, state
from .output import emit_json, ensure_current, note

if TYPE_CHECKING:
    import datetime as dt

    from vault_memory.memory import Memory
    from vault_memory.review.review import DraftView, NoteView, Review

WIDTH = 88


def _wrap(text: str, indent: str = "    ") -> str:
    out = []
    for line in text.strip().split("\n"):
        out.append(textwrap.fill(line, WIDTH, initial_indent=indent, subsequent_indent=indent) if line.strip() else "")
    return "\n".join(out)


def _day(value: dt.datetime | None) -> str:
    return value.date().isoformat() if value is not None else "-"


def _draft_lines(d: DraftView, n: int, total: int) -> list[str]:
    head = f"[{n}/{total}] {d.title}  ({d.path})"
    flags = [
        f"id {d.node_id}" if d.node_id else "",
        f"staged {_day(d.created)}",
        ("EXPIRED " if d.expired else "expires ") + _day(d.expires) if d.expires else "does not expire",
    ]
    out = [head, "  " + " · ".join(f for f in flags if f), "  draft says:", _wrap(d.text)]
    for c in d.conflicts:
        out += [
            f"  conflicts with {c.title or c.node_id} ({c.path or 'not in the index'}), which says:",
            _wrap(c.text or "(not readable)"),
        ]
    return out


def _notes(title: str, notes: list[NoteView], what: str) -> list[str]:
    if not notes:
        return []
    out = [f"{title}:"]
    for n in notes:
        when = {"dormant": _day(n.dormant_on), "back": _day(n.reactivated)}[what]
        out.append(f"  {n.title}  ({n.path})  strength {n.strength:.2f}, {what} {when}")
    return out


def render_text(r: Review) -> str:
    """The review for a terminal: the same content as the note, as plain lines."""
    out = [f"review at {r.now.isoformat()}  ({r.window_days:g}-day window)", ""]
    out.append(f"drafts awaiting commit: {len(r.drafts)}" if r.drafts else "drafts awaiting commit: none")
    for i, d in enumerate(r.drafts, 1):
        out += ["", *_draft_lines(d, i, len(r.drafts)), "  resolve with:"]
        out += [f"    {cmd}    # {meaning}" for meaning, cmd in d.commands]
    out.append("")
    out += _notes(f"fading (dormant within {r.window_days:g} days)", r.fading, "dormant")
    out += _notes(f"went dormant (last {r.window_days:g} days)", r.dormant, "dormant")
    out += _notes("came back (reactivated)", r.reactivated, "back")
    if r.superseded:
        out.append("superseded:")
        out += [f"  {s.old_title} ({s.old_path}) -> {s.new_title} ({s.new_path}) {_day(s.when)}" for s in r.superseded]
    if r.unreadable:
        out.append("could not be read:")
        out += [f"  {p}: {why}" for p, why in r.unreadable]
    if r.chart:
        out.append(f"strength ahead (now, then weekly for {len(r.chart_days) - 1} weeks):")
        out += [f"  {c.note.title[:40]:40}  " + " ".join(f"{v:.2f}" for v in c.values) for c in r.chart]
    return "\n".join(out).rstrip()


def _ask(prompt: str, choices: dict[str, str]) -> str:
    keys = "/".join(choices)
    while True:
        answer = str(typer.prompt(f"{prompt} [{keys}]", default="k", show_default=False)).strip().lower()
        if answer in choices:
            return answer
        note(f"answer one of: {', '.join(f'{k} ({v})' for k, v in choices.items())}")


def _walk(mem: Memory, r: Review, when: dt.datetime | None) -> tuple[int, int, int]:
    """Ask about each draft; returns (committed, discarded, skipped)."""
    choices = {"c": "commit", "d": "discard", "s": "supersede a note", "k": "skip", "q": "quit"}
    done = [0, 0, 0]
    for i, d in enumerate(r.drafts, 1):
        typer.echo("\n".join(["", *_draft_lines(d, i, len(r.drafts))]))
        ident = d.node_id or d.path
        while True:
            answer = _ask("commit, discard, supersede, skip or quit?", choices)
            try:
                if answer == "q":
                    done[2] += len(r.drafts) - i + 1
                    return done[0], done[1], done[2]
                if answer == "k":
                    done[2] += 1
                elif answer == "d":
                    typer.echo(f"discarded: {mem.discard(ident)}")
                    done[1] += 1
                else:
                    old: str | None = None
                    if answer == "s":
                        old = _which(d)
                        if old is None:
                            continue
                    report = mem.commit([ident], supersedes=old, now=when)
                    for c in report.committed:
                        extra = f" (supersedes {old})" if old else ""
                        typer.echo(f"committed: {c.path}{extra}")
                    for x in report.left:
                        typer.echo(f"left: {x.reason}")
                    done[0] += len(report.committed)
                break
            except VaultMemoryError as exc:
                note(f"error: {exc}")
    return done[0], done[1], done[2]


def _which(d: DraftView) -> str | None:
    """The note a draft supersedes: one of its conflicts by number, or any note by title, link or path."""
    for n, c in enumerate(d.conflicts, 1):
        typer.echo(f"  {n}. {c.title or c.node_id} ({c.path})")
    hint = "number, or a note's title, [[link]] or path" if d.conflicts else "a note's title, [[link]] or path"
    answer = str(
        typer.prompt(f"  which note does it replace? ({hint}; empty to go back)", default="", show_default=False)
    ).strip()
    if not answer:
        return None
    if answer.isdigit() and 1 <= int(answer) <= len(d.conflicts):
        c = d.conflicts[int(answer) - 1]
        return c.path or c.node_id
    return answer


def review(
    ctx: typer.Context,
    as_json: AsJson = False,
    now: Now = None,
    no_write: Annotated[bool, typer.Option("--no-write", help="Show the review; do not write the review note")] = False,
    interactive: Annotated[
        bool,
        typer.Option(
            "--interactive", "-i", help=("Walk the drafts one by one: commit, discard, supersede a note, or skip each")
        ),
    ] = False,
) -> None:
    """What the memory is doing: drafts and their conflicts, what fades, went dormant, came back or was
    superseded, unreadable notes; writes the review note (Memory/Review.md) unless --no-write."""
    when = parse_now(now)
    if interactive and as_json:
        note("--interactive asks questions; it prints no JSON")
        raise typer.Exit(2)
    with state(ctx).memory() as mem:
        ensure_current(mem)
        write = not no_write and not internals(mem).config.read_only
        if interactive:
            first = mem.review(when, write=False)
            if not first.drafts:
                typer.echo("no drafts awaiting commit")
            else:
                c, d, k = _walk(mem, first, when)
                typer.echo(f"\ncommitted {c}, discarded {d}, left {k} staged")
            result = mem.review(when, write=write)
        else:
            result = mem.review(when, write=write)
    if as_json:
        emit_json(result.to_dict())
    elif not interactive:
        typer.echo(render_text(result))
    if result.kept_edit:
        note(f"the review note had been edited; your version is kept as {result.kept_edit}")
    if result.written:
        note(f"wrote {result.path}")
    elif write and result.path and not result.skipped:
        note(f"{result.path} is up to date")
    elif result.skipped and write:
        note(f"error: the review note was not written: {result.skipped}")
        raise typer.Exit(1)
