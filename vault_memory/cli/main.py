"""`vault-memory`: the app, its global options, the command list, and the one place where
errors become exit codes (`execute`).

Exit codes: 0 ok, 1 generic, 2 usage or bad input/config, 3 not found, 4 embedder, 5 index
state (damaged, other model), 6 locked, 7 vector store unreachable, 8 a file cannot be written
or read (read-only, permissions, full disk, I/O error; vault_memory/errors.py), 130 interrupted.
An OSError or sqlite3 error that reaches this edge is a message naming the file, never a traceback.

Usage errors are click exceptions. typer < 0.26 raises them from `click`, typer >= 0.26 from
its vendored copy `typer._click`; the two share no classes, so they are recognised by
class name along the exception's MRO, whichever copy raised them.
"""

from __future__ import annotations

import difflib
import logging
import shlex
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer
import typer.main

from vault_memory import __version__
from vault_memory.errors import StorageError, VaultMemoryError, storage_message

from . import agent, demo, hook, lifecycle, notes, review, search, settings, sync
from .options import (
    ChromaUrlOpt,
    EmbedderOpt,
    IndexDirOpt,
    LexicalFallbackOpt,
    OllamaHostOpt,
    ReadOnlyOpt,
    State,
    VaultOpt,
    VerboseOpt,
)
from .output import clean

PROG = "vault-memory"
HELP = "A Markdown vault as an AI agent's memory: index it, recall from it, remember into it."

app = typer.Typer(
    name=PROG,
    help=HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain click help: rich markup would swallow "[env: ...]" and "[config: ...]" in option help.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Every command, in the order `--help` lists them; registered here and nowhere else.
COMMANDS: list[tuple[str, Callable[..., None]]] = [
    ("index", search.index),
    ("recall", search.recall),
    ("read", notes.read),
    ("related", notes.related),
    ("recent", notes.recent),
    ("status", search.status),
    ("watch", sync.watch),
    ("doctor", sync.doctor),
    ("stage", lifecycle.stage),
    ("staged", lifecycle.staged),
    ("commit", lifecycle.commit),
    ("discard", lifecycle.discard),
    ("remember", lifecycle.remember),
    ("pin", lifecycle.pin),
    ("unpin", lifecycle.unpin),
    ("log", lifecycle.log),
    ("review", review.review),
    ("prefetch", agent.prefetch),
    ("mcp", agent.mcp),
    ("hook", hook.hook),
    ("config", settings.config),
    ("calibrate", settings.calibrate),
    ("demo", demo.demo),
]
for _name, _fn in COMMANDS:
    app.command(_name)(_fn)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"{PROG} {__version__}")
        raise typer.Exit()


@app.callback()
def callback(
    ctx: typer.Context,
    vault: VaultOpt = None,
    index_dir: IndexDirOpt = None,
    embedder: EmbedderOpt = None,
    ollama_host: OllamaHostOpt = None,
    chroma_url: ChromaUrlOpt = None,
    lexical_fallback: LexicalFallbackOpt = None,
    read_only: ReadOnlyOpt = None,
    verbose: VerboseOpt = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit")
    ] = False,
) -> None:
    """Global options; each is also read from the environment and the config files (flags win)."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr, format="%(levelname)s: %(message)s"
    )
    for handler in logging.getLogger().handlers:  # log lines name notes and quote them: clean them too
        if not isinstance(handler.formatter, _CleanFormatter):
            handler.setFormatter(_CleanFormatter("%(levelname)s: %(message)s"))
    for noisy in ("chromadb", "httpx", "urllib3", "watchdog", "mcp"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    ctx.obj = State(
        {
            "vault": vault,
            "index_dir": index_dir,
            "embedder": embedder,
            "ollama_host": ollama_host,
            "chroma_url": chroma_url,
            "lexical_fallback": lexical_fallback,
            "read_only": read_only,
        }
    )


class _CleanFormatter(logging.Formatter):
    """Log lines for a terminal: without escape sequences or control characters (output.clean)."""

    def format(self, record: logging.LogRecord) -> str:
        return clean(super().format(record))


# -- errors -> exit codes ---------------------------------------------------------------------


def _click_class(exc: BaseException, name: str) -> bool:
    """True if `exc` is a click `name` (ClickException, UsageError, Abort, ...) from click or typer._click."""
    return any(cls.__name__ == name and cls.__module__.split(".")[0] in ("click", "typer") for cls in type(exc).__mro__)


def _say(message: str) -> None:
    typer.echo(clean(message), err=True)


def _os_error(exc: OSError) -> int:
    """An OSError nothing below caught: which file, why, what to do; exit 8 (StorageError)."""
    _say(f"error: {storage_message(exc)}")
    return StorageError.exit_code


def _sqlite_error(exc: sqlite3.Error) -> int:
    """An sqlite3 error nothing below caught: it is about the index catalog."""
    from vault_memory.index.integrity import is_corruption, is_unwritable

    if is_corruption(exc):
        _say(
            f"error: the index catalog is damaged ({exc}); `vault-memory doctor --fix` sets it aside and rebuilds "
            "it from the vault (nothing in the vault is lost)"
        )
        return 5
    if is_unwritable(exc):
        _say(
            f"error: cannot write the index catalog ({exc}): free some space or make the index folder writable, "
            "or pass --index-dir to a writable folder"
        )
        return StorageError.exit_code
    _say(f"error: the index catalog failed ({exc}); `vault-memory doctor` says what is wrong with it")
    return 5


def _help_text() -> str:
    group = typer.main.get_command(app)
    with group.make_context(PROG, [], resilient_parsing=True) as ctx:
        return group.get_help(ctx)


def _commands_with_option(option: str) -> list[str]:
    group = typer.main.get_command(app)
    commands: dict[str, Any] = getattr(group, "commands", {})
    return [name for name, cmd in commands.items() if any(option in (*p.opts, *p.secondary_opts) for p in cmd.params)]


def _global_options() -> dict[str, bool]:
    """The app's own options (`--vault`, `--read-only`, ...) -> whether each takes a value."""
    group = typer.main.get_command(app)
    return {
        name: not getattr(p, "is_flag", False) and not getattr(p, "count", False)
        for p in group.params
        for name in (*p.opts, *p.secondary_opts)
    }


def _globals_first(args: Sequence[str], command: str) -> str | None:
    """`args` with the global options given after the command moved before it, as a command line;
    None if there is nothing to move. Options the command itself takes stay where they are."""
    takes_value = _global_options()
    own = {name for name in takes_value if command in _commands_with_option(name)}
    names = {name for name, _ in COMMANDS}
    at, i = None, 0
    while i < len(args):  # the command: the first word that is not a global option or its value
        word = args[i]
        if word in names:
            at = i
            break
        key = word.split("=", 1)[0]
        i += 1 + (1 if takes_value.get(key) and "=" not in word else 0)
    if at is None:
        return None
    moved: list[str] = []
    rest: list[str] = []
    i = at + 1
    while i < len(args):
        word = args[i]
        key = word.split("=", 1)[0]
        if word == "--":
            rest += args[i:]
            break
        if key in takes_value and key not in own:
            moved.append(word)
            if takes_value[key] and "=" not in word:
                if i + 1 >= len(args):
                    return None  # its value is missing: no command line to offer
                moved.append(args[i + 1])
                i += 1
        else:
            rest.append(word)
        i += 1
    if not moved:
        return None
    return shlex.join([PROG, *args[:at], *moved, args[at], *rest])


def _usage_error(exc: Exception, args: Sequence[str] = ()) -> int:
    """One line saying what is wrong (with a close command if one was mistyped), one saying where help is."""
    message = " ".join(str(exc.format_message()).split())  # type: ignore[attr-defined]
    message = message.replace(" (env var: 'None')", "")  # typer 0.2x with click 8.2 names a missing variable
    ctx = getattr(exc, "ctx", None)
    if message.startswith("No such command") and "Did you mean" not in message:  # older typer does not suggest
        wrong = message.split("'")[1] if message.count("'") >= 2 else ""
        close = difflib.get_close_matches(wrong, [name for name, _ in COMMANDS], n=1)
        if close:
            message = f"{message.rstrip('.')}. Did you mean '{close[0]}'?"
    path = getattr(ctx, "command_path", None)
    where = path if isinstance(path, str) and path else PROG
    option = getattr(exc, "option_name", None)
    command = where.split()[-1] if where != PROG else ""
    if isinstance(option, str) and command and option in _global_options() and message.startswith("No such option"):
        # `vault-memory recall tea --vault X`: a global option after the command
        fixed = _globals_first(args, command)
        _say(f"error: {option} is a global option: it goes before the command" + (f"; run: {fixed}" if fixed else ""))
        _say(f"Try '{PROG} -h' for the global options.")
        return 2
    if isinstance(option, str) and where == PROG:  # `vault-memory -k 3 recall x`: a command's option too early
        owners = _commands_with_option(option)
        if owners:
            message = message.split(" (Possible options:")[0]
            of = ", ".join(owners) if len(owners) <= 3 else f"{owners[0]} and {len(owners) - 1} other commands"
            message += f" (it is an option of {of}: put it after the command)"
    _say(f"error: {message}")
    _say(f"Try '{where} -h' for help.")
    return int(getattr(exc, "exit_code", 2))


def execute(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on `argv` (default: sys.argv[1:]) and return the exit code, printing errors on stderr."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:  # bare `vault-memory`: a usage error, with the whole help as the message
        _say(_help_text())
        return 2
    try:
        rv: Any = app(args=args, prog_name=PROG, standalone_mode=False)
    except VaultMemoryError as exc:
        _say(f"error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    except OSError as exc:
        return _os_error(exc)
    except sqlite3.Error as exc:
        return _sqlite_error(exc)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Exception as exc:
        if _click_class(exc, "NoArgsIsHelpError"):  # a group without its subcommand (click >= 8.2)
            _say(str(exc.format_message()))  # type: ignore[attr-defined]
            return 2
        if _click_class(exc, "UsageError"):
            return _usage_error(exc, args)
        if _click_class(exc, "ClickException"):  # e.g. a file that cannot be opened
            _say(f"error: {exc.format_message()}")  # type: ignore[attr-defined]
            return int(getattr(exc, "exit_code", 1))
        if _click_class(exc, "Abort"):  # a prompt answered with Ctrl-C / Ctrl-D
            _say("aborted")
            return 1
        raise
    # With standalone_mode=False, click *returns* the code of `raise typer.Exit(n)` (and Ctrl-C
    # becomes 130); a command that finished normally returns None.
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


def run() -> None:
    """Console entry point (`vault-memory`, `python -m vault_memory`)."""
    sys.exit(execute())
