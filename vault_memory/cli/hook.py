"""`vault-memory hook run|install|remove CLIENT`: memory in every turn of an agent client.

`run` is what the client starts on each turn: it must never fail the user's turn, so every
failure (a missing or broken vault, JSON it cannot read, the deadline passing) prints nothing,
exits 0, and is logged: one line on stderr (which the client shows only in its debug view) and
the same line appended to the hook log (`log_file`), which `hook run` names in its help.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import threading
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from vault_memory import hooks

from .options import AsJson, state
from .output import clean, emit_json, note, say

LOG_MAX_BYTES = 1 << 20  # the hook log keeps its last half when it grows past this


class Action(StrEnum):
    run = "run"
    install = "install"
    remove = "remove"


class ClientName(StrEnum):  # hooks.CLIENTS (a test checks they agree)
    claude_code = "claude-code"
    gemini_cli = "gemini-cli"


class Scope(StrEnum):
    user = "user"
    project = "project"


def log_file() -> Path:
    """Where `hook run` logs why it printed nothing (the user log folder: on Linux
    ~/.local/state/vault-memory/log/hook.log)."""
    from platformdirs import user_log_path

    return user_log_path("vault-memory") / "hook.log"


def _log(client: str, why: str) -> None:
    line = f"{dt.datetime.now().astimezone():%Y-%m-%d %H:%M:%S%z} hook run {client}: {' '.join(why.split())}"
    try:
        print(clean(line), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    try:
        path = log_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            path.write_bytes(path.read_bytes()[-LOG_MAX_BYTES // 2 :])
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError:
        pass  # nowhere to log: still nothing printed, still exit 0


def _program() -> list[str]:
    """How the client should start vault-memory: the console script beside this interpreter
    (a virtualenv, pipx, uv tool), else the one on PATH, else this interpreter with -m."""
    beside = Path(sys.executable).parent / ("vault-memory.exe" if os.name == "nt" else "vault-memory")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("vault-memory")
    return [found] if found else [sys.executable, "-m", "vault_memory"]


def _run(ctx: typer.Context, client: hooks.Client, deadline: float) -> None:
    result: list[str] = []
    failure: list[str] = []

    def work() -> None:
        try:  # stdin is read here too, under the deadline: a terminal left open never holds the turn
            raw = sys.stdin.buffer.read(hooks.STDIN_MAX + 1) if sys.stdin is not None else b""
            if len(raw) > hooks.STDIN_MAX:
                raise ValueError(f"stdin is longer than {hooks.STDIN_MAX:,} bytes")
            event = hooks.parse_event(client, raw.decode("utf-8", errors="replace"))
            with state(ctx).memory() as mem:
                result.append(hooks.reply(mem, client, event))
        except BaseException as exc:  # noqa: BLE001 - the user's turn never fails because of us
            failure.append(f"{type(exc).__name__}: {exc}")

    worker = threading.Thread(target=work, name="hook-run", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        _log(client.name, f"no answer within {deadline:g} s (a first index of a large vault? run `vault-memory index`)")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # the worker may be inside the model or SQLite: leave without waiting for it
    if failure:
        _log(client.name, failure[0])
        return
    if result and result[0]:
        sys.stdout.write(result[0] + "\n")
        sys.stdout.flush()


def hook(
    ctx: typer.Context,
    action: Annotated[Action, typer.Argument(help="run (what the client starts each turn), install or remove")],
    client: Annotated[ClientName, typer.Argument(help="The agent client", show_default=False)],
    scope: Annotated[
        Scope,
        typer.Option(
            "--scope", help="install/remove: the user's settings file (every project) or this folder's (project)"
        ),
    ] = Scope.user,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline", min=0.1, max=300, metavar="SECONDS", help="run: print nothing after this long (logged)"
        ),
    ] = hooks.DEADLINE_SECONDS,
    as_json: AsJson = False,
) -> None:
    """Give an agent client the memory block on every turn, without a tool call.

    `hook run CLIENT` reads the client's hook JSON on stdin and prints what the client adds to the
    turn: the [RELEVANT_LEARNED_MEMORY] block for the prompt, what is pinned at a session's start,
    nothing when nothing is relevant. It always exits 0; when it cannot answer (no vault, bad
    JSON, past --deadline) it prints nothing and logs why on stderr and in hook.log in the user
    log folder. `hook install CLIENT` adds that command, with this --vault, to the client's
    settings file beside the hooks there; `hook remove CLIENT` takes exactly it out again.
    Clients: claude-code (~/.claude/settings.json, or .claude/settings.json with --scope project),
    gemini-cli (~/.gemini/settings.json, .gemini/settings.json).
    """
    chosen = hooks.client_named(client.value)
    if action is Action.run:
        _run(ctx, chosen, deadline)
        return
    from platformdirs import user_data_path

    path = hooks.settings_path(chosen, scope.value, home=Path.home(), cwd=Path.cwd())
    backups = user_data_path("vault-memory") / "hook-backups"
    if action is Action.install:
        vault = state(ctx).config().vault.expanduser().resolve()
        if not vault.is_dir():
            from vault_memory.errors import VaultNotFoundError

            raise VaultNotFoundError(f"{vault}: no such folder; pass the vault to remember with --vault PATH")
        command = hooks.hook_command(chosen, _program(), vault)
        change = hooks.install(chosen, path, command, backups=backups)
    else:
        change = hooks.remove(chosen, path, backups=backups)
    if as_json:
        emit_json(change.to_dict())
        return
    say(f"{change.action}: {change.path}")
    if change.command:
        note(f"  {' and '.join(chosen.events)} run: {change.command}")
    if change.restored:
        note("  the file is as it was before the install")
