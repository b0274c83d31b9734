"""Commands that keep the index in step with the vault: `watch` and `doctor`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from ..internals import internals
from .options import AsJson, state
from .output import Progress, emit_json, note, render_index_report, say

if TYPE_CHECKING:
    from vault_memory.watch import BatchResult


def watch(
    ctx: typer.Context,
    debounce: Annotated[
        float | None,
        typer.Option(
            "--debounce",
            min=0.0,
            metavar="S",
            show_default=False,
            help="Seconds without events before a batch is applied [config: debounce_seconds; default: 0.3]",
        ),
    ] = None,
    quiet: Annotated[
        float | None,
        typer.Option(
            "--quiet-seconds",
            min=0.0,
            metavar="S",
            show_default=False,
            help="Seconds a note must be quiet before its edit is recorded as a rehearsal "
            "[config: quiet_seconds; default: 5]",
        ),
    ] = None,
    no_rehearse: Annotated[
        bool,
        typer.Option("--no-rehearse-edits", help="Do not record human edits in frontmatter (last_accessed)"),
    ] = False,
) -> None:
    """Reconcile, then follow the vault and keep the index current until Ctrl-C or SIGTERM.

    Holds the index's writer lock while it runs; `recall` keeps working meanwhile.
    """
    from vault_memory.config import check_setting
    from vault_memory.errors import ConfigError
    from vault_memory.watch import Watcher, serve

    for flag, name, value in (
        ("--debounce", "debounce_seconds", debounce),
        ("--quiet-seconds", "quiet_seconds", quiet),
    ):
        problem = check_setting(name, value)
        if problem is not None:
            raise ConfigError(f"{flag} {value}: {problem}")

    progress = Progress("embedding", detail=lambda: "  (recall answers by keyword until done)")

    def show(result: BatchResult) -> None:
        if result.changed:
            progress.close()  # end an embedding progress line before the batch's own
            note(result.line())

    def filled(done: int, total: int) -> None:
        progress(done, total)
        if done >= total:
            progress.close()
            note(f"embedded {done} texts: recall ranks by meaning and keyword again")

    with state(ctx).memory() as mem:
        watcher = Watcher(
            mem, debounce=debounce, quiet=quiet, rehearse_edits=not no_rehearse, on_batch=show, on_fill=filled
        )
        try:
            report = watcher.start()
        except BaseException:
            watcher.close()
            raise
        note(render_index_report(report))
        note(f"watching {internals(mem).vault} (pid {os.getpid()}); Ctrl-C to stop")
        try:
            serve(watcher)
        finally:
            progress.close()
    note("stopped")


def doctor(
    ctx: typer.Context,
    as_json: AsJson = False,
    do_fix: Annotated[bool, typer.Option("--fix", help="Reconcile the index with the vault, then re-check")] = False,
) -> None:
    """Compare vault and index; exit 0 when consistent, 1 when they have drifted."""
    from vault_memory.doctor import diagnose, fix

    fixed = False
    with state(ctx).memory() as mem:
        report = diagnose(mem)
        if do_fix and not report.ok:
            report, fixed = fix(mem, report), True
    if as_json:
        emit_json(report.to_dict() | {"fixed": fixed})
    else:
        damaged = bool(report.catalog_damage or report.store_damage)
        verdict = "consistent" if report.ok else "index damaged" if damaged else "drift found"
        if report.catalog_damage:
            say(f"index at {internals(mem).index_dir}: {verdict}")
        else:
            say(
                f"{report.notes_in_vault} notes in the vault, {report.notes_in_index} in the index: {verdict}"
                + (" (after --fix)" if fixed else "")
            )
        vs = report.vector_store
        if vs.get("backend") == "exact":
            say("vectors: exact search over the catalog's vectors (no HNSW index kept at this size)")
        else:
            say(
                f"vectors: {vs.get('backend')}"
                + (f" at {vs['url']}" if vs.get("url") else "")
                + f", collection {vs.get('collection')}"
            )
        for line in report.problems():
            say(f"  - {line}")
        if report.writer_pid:
            say(f"  (the index is being written by process {report.writer_pid})")
        if not report.ok and not do_fix:
            say("run `vault-memory doctor --fix` to " + ("repair it" if damaged else "reconcile"))
    if not report.ok:
        raise typer.Exit(1)
