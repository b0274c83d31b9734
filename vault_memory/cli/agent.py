"""CLI commands for agents: `prefetch` (the memory block for a turn) and `mcp` (the MCP server)."""

from __future__ import annotations

import typer
from vault_memory_cli.main import app, emit_json, parse_now, state


@app.command()
def prefetch(ctx: typer.Context, text: str = typer.Argument(..., help="The user's turn, as sent"),
             budget: int | None = typer.Option(None, "--budget", min=0,
                                               help="Max characters of the whole block, markers included "
                                                    "[config: prefetch_budget, default 1200]"),
             as_json: bool = typer.Option(False, "--json", help="Print the block and its entries as JSON"),
             now: str | None = typer.Option(None, "--now", help="Evaluate decay at this ISO 8601 instant"),
             no_refresh: bool = typer.Option(False, "--no-refresh-staged",
                                             help="Do not extend the expiry of staged memories the turn is about"),
             touch: bool = typer.Option(False, "--touch", help="Rehearse the notes shown (off by default)")) -> None:
    """The [RELEVANT_LEARNED_MEMORY] block for TEXT, to put in a system prompt (prints nothing if none)."""
    with state(ctx).memory() as mem:
        mem.ensure_current()
        result = mem.prefetch(text, budget=budget, now=parse_now(now), refresh_staged=not no_refresh, touch=touch)
    if as_json:
        emit_json(result.to_dict())
    elif result.block:
        typer.echo(result.block)
    else:
        typer.echo("no relevant memory", err=True)


@app.command()
def mcp(ctx: typer.Context) -> None:
    """Serve the vault to an MCP client over stdio (Claude Desktop, Cursor, agent shells).

    Keeps the index current while it runs (it holds the writer lock; if another process
    has it, this server serves reads). Logs go to stderr; stdout is the protocol.
    """
    from vault_memory.mcp_server import serve

    serve(state(ctx).config())
