"""CLI commands that keep the index in step with the vault: `watch` and `doctor`."""

from __future__ import annotations

import os

import typer
from vault_memory_cli.main import app, emit_json, render_report, state


@app.command()
def watch(ctx: typer.Context,
          debounce: float | None = typer.Option(None, "--debounce", min=0.0,
                                                help="Seconds without events before a batch is applied "
                                                     "[config: debounce_seconds, default 0.3]"),
          quiet: float | None = typer.Option(None, "--quiet-seconds", min=0.0,
                                             help="Seconds a note must be quiet before its edit is recorded "
                                                  "as a rehearsal [config: quiet_seconds, default 5]"),
          no_rehearse: bool = typer.Option(False, "--no-rehearse-edits",
                                           help="Do not record human edits in frontmatter (revision, "
                                                "last_accessed)")) -> None:
    """Reconcile, then follow the vault and keep the index current until Ctrl-C or SIGTERM.

    Holds the index's writer lock while it runs; `recall` keeps working meanwhile.
    """
    from vault_memory.watch import BatchResult, Watcher, serve

    def show(result: BatchResult) -> None:
        if result.changed:
            typer.echo(result.line(), err=True)

    with state(ctx).memory() as mem:
        watcher = Watcher(mem, debounce=debounce, quiet=quiet, rehearse_edits=not no_rehearse, on_batch=show)
        try:
            report = watcher.start()
        except BaseException:
            watcher.close()
            raise
        typer.echo(render_report(report), err=True)
        typer.echo(f"watching {mem.vault} (pid {os.getpid()}); Ctrl-C to stop", err=True)
        serve(watcher)
    typer.echo("stopped", err=True)


@app.command()
def doctor(ctx: typer.Context,
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON"),
           do_fix: bool = typer.Option(False, "--fix",
                                       help="Reconcile the index with the vault, then re-check")) -> None:
    """Compare vault and index; exit 0 when consistent, 1 when they have drifted."""
    from vault_memory.doctor import diagnose, fix

    fixed = False
    with state(ctx).memory() as mem:
        report = diagnose(mem)
        if do_fix and not report.ok:
            report, fixed = fix(mem), True
    if as_json:
        emit_json(report.to_dict() | {"fixed": fixed})
    else:
        verdict = "consistent" if report.ok else "drift found"
        typer.echo(f"{report.notes_in_vault} notes in the vault, {report.notes_in_index} in the index: {verdict}"
                   + (" (after --fix)" if fixed else ""))
        vs = report.vector_store
        typer.echo(f"vectors: {vs.get('backend')}" + (f" at {vs['url']}" if vs.get("url") else "")
                   + f", collection {vs.get('collection')}")
        for line in report.problems():
            typer.echo(f"  - {line}")
        if report.writer_pid:
            typer.echo(f"  (the index is being written by process {report.writer_pid})")
        if not report.ok and not do_fix:
            typer.echo("run `vault-memory doctor --fix` to reconcile")
    # SystemExit, not typer.Exit: `run()` calls the app with standalone_mode=False, where click
    # returns typer.Exit's code instead of exiting with it.
    if not report.ok:
        raise SystemExit(1)
