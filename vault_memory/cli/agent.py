"""Commands for agents: `prefetch` (the memory block for a turn) and `mcp` (the MCP server)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..internals import internals
from .options import AsJson, FilterAfter, FilterBefore, FilterFolder, FilterTag, FilterType, Now, parse_now, state
from .output import emit_json, note, say


def prefetch(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The user's turn, as sent", show_default=False)],
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            min=0,
            metavar="CHARS",
            show_default=False,
            help="Max characters of the whole block, markers included [config: prefetch_budget; default: 1200]",
        ),
    ] = None,
    as_json: AsJson = False,
    now: Now = None,
    no_refresh: Annotated[
        bool, typer.Option("--no-refresh-staged", help="Do not extend the expiry of staged memories the turn is about")
    ] = False,
    touch: Annotated[bool, typer.Option("--touch", help="Rehearse the notes shown (off by default)")] = False,
    no_decay: Annotated[
        bool, typer.Option("--no-decay", help="No forgetting and no dates: recall's relevance order, dormant notes too")
    ] = False,
    tag: FilterTag = None,
    folder: FilterFolder = None,
    type: FilterType = None,
    after: FilterAfter = None,
    before: FilterBefore = None,
) -> None:
    """The [RELEVANT_LEARNED_MEMORY] block for TEXT, to put in a system prompt (prints nothing if none)."""
    if not text.strip():  # before the vault is opened: a usage error, as `recall ""` and the MCP tool say
        raise typer.BadParameter(
            'the turn is empty; pass the user\'s message, e.g. vault-memory prefetch "how do I take my coffee?"',
            param_hint="'TEXT'",
        )
    when = parse_now(now)
    with state(ctx).memory() as mem:
        internals(mem).ensure_current()
        result = mem.prefetch(
            text,
            budget=budget,
            now=when,
            refresh_staged=not no_refresh,
            touch=touch,
            decay=not no_decay,
            tags=tag,
            folder=folder,
            type=type,
            after=after,
            before=before,
        )
    if as_json:
        emit_json(result.to_dict())
    elif result.block:
        say(result.block)
    elif result.relevant:
        many = "entries are" if result.relevant > 1 else "entry is"
        note(
            f"{result.relevant} relevant {many} too long for --budget {result.budget} (the whole block, markers "
            "included): give a larger --budget"
        )
    else:
        note("no relevant memory")


def mcp(ctx: typer.Context) -> None:
    """Serve the vault to an MCP client over stdio (Claude Desktop, Cursor, agent shells).

    Keeps the index current while it runs (it holds the writer lock; if another process
    has it, this server serves reads). Logs go to stderr; stdout is the protocol.
    """
    from vault_memory.mcp_server.server import serve

    serve(state(ctx).config())
