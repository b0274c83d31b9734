"""`vault-memory`: a thin typer layer. Each command parses, makes one library call, renders.

Data goes to stdout (human text, or JSON with --json); logs, warnings and progress go to
stderr. Errors are translated to exit codes in one place (`run`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import typer

from vault_memory.config import Config, resolve_config
from vault_memory.errors import ConfigError, VaultMemoryError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="A Markdown vault as an AI agent's memory: index it, recall from it, remember into it.")


@dataclass
class State:
    overrides: dict[str, Any]

    def config(self) -> Config:
        return resolve_config(self.overrides)

    def memory(self) -> Any:
        from vault_memory.memory import Memory

        return Memory(self.config())


@app.callback()
def main(
    ctx: typer.Context,
    vault: Path | None = typer.Option(None, "--vault", help="The vault folder [env: VAULT_MEMORY_VAULT]"),
    index_dir: Path | None = typer.Option(None, "--index-dir",
                                          help="Index folder (default: per vault, in the user cache dir) "
                                               "[env: VAULT_MEMORY_INDEX_DIR]"),
    embedder: str | None = typer.Option(None, "--embedder",
                                        help="minilm (default, offline) | ollama:MODEL | fake "
                                             "[env: VAULT_MEMORY_EMBEDDER]"),
    ollama_host: str | None = typer.Option(None, "--ollama-host",
                                           help="Ollama server URL [env: VAULT_MEMORY_OLLAMA_HOST]"),
    chroma_url: str | None = typer.Option(None, "--chroma-url",
                                          help="Use a Chroma server at this URL [env: VAULT_MEMORY_CHROMA_URL]"),
    lexical_fallback: bool | None = typer.Option(None, "--lexical-fallback/--no-lexical-fallback",
                                                 help="Serve BM25-only recall when the vector store is unreachable"),
    read_only: bool | None = typer.Option(None, "--read-only/--writable",
                                          help="Never write to the vault (no node_ids, no rehearsal)"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log more on stderr"),
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s: %(message)s")
    for noisy in ("chromadb", "httpx", "urllib3", "watchdog", "mcp"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    ctx.obj = State({"vault": vault, "index_dir": index_dir, "embedder": embedder, "ollama_host": ollama_host,
                     "chroma_url": chroma_url, "lexical_fallback": lexical_fallback, "read_only": read_only})


def state(ctx: typer.Context) -> State:
    obj = ctx.obj
    assert isinstance(obj, State)
    return obj


def emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def parse_now(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        out = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ConfigError(f"--now {value!r} is not ISO 8601; use e.g. 2026-11-29T12:00:00+00:00") from exc
    return out if out.tzinfo else out.replace(tzinfo=dt.UTC)


class Progress:
    """A progress bar on stderr when it is a terminal; silent otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None
        self.last = 0

    def __call__(self, done: int, total: int) -> None:
        if not sys.stderr.isatty() or total == 0:
            return
        if self.bar is None:
            self.bar = typer.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.last)
        self.last = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def render_report(report: Any) -> str:
    counts = report.counts
    parts = [f"{counts.get(k, 0)} {k}" for k in ("new", "modified", "moved", "meta", "deleted", "unchanged")]
    lines = [f"indexed {report.notes} notes, {report.chunks} chunks ({', '.join(parts)}); "
             f"embedded {report.texts_embedded} texts in {report.seconds:.2f}s"]
    if report.ids_assigned:
        lines.append(f"assigned node_id to {len(report.ids_assigned)} notes")
    if report.failures:
        lines.append(f"skipped {len(report.failures)} notes that could not be read (see warnings above)")
    return "\n".join(lines)


@app.command()
def index(ctx: typer.Context,
          rebuild: bool = typer.Option(False, "--rebuild", help="Drop the index and build it from nothing"),
          as_json: bool = typer.Option(False, "--json", help="Print the report as JSON")) -> None:
    """Reconcile the index with the vault: embed only what changed."""
    progress = Progress("embedding")
    with state(ctx).memory() as mem:
        try:
            report = mem.index(rebuild=rebuild, progress=progress)
        finally:
            progress.close()
    if as_json:
        emit_json(report.to_dict())
    else:
        typer.echo(render_report(report))


@app.command()
def recall(ctx: typer.Context, query: str = typer.Argument(..., help="What to recall, in plain words"),
           k: int = typer.Option(5, "-k", min=1, max=100, help="How many notes"),
           as_json: bool = typer.Option(False, "--json", help="Print hits as a JSON array"),
           now: str | None = typer.Option(None, "--now", help="Evaluate decay at this ISO 8601 instant"),
           no_touch: bool = typer.Option(False, "--no-touch", help="Read only: do not rehearse returned notes"),
           mode: str = typer.Option("hybrid", "--mode", help="hybrid | bm25 | dense"),
           no_decay: bool = typer.Option(False, "--no-decay", help="Rank by relevance alone")) -> None:
    """Recall the notes most relevant to QUERY (semantic + keyword), freshest first among equals."""
    if mode not in ("hybrid", "bm25", "dense"):
        raise ConfigError(f"--mode {mode!r}: use hybrid, bm25 or dense")
    progress = Progress("indexing")
    with state(ctx).memory() as mem:
        try:
            mem.ensure_current(progress)
        finally:
            progress.close()
        hits = mem.recall(query, k=k, now=parse_now(now), touch=not no_touch, mode=mode, decay=not no_decay)
    if as_json:
        emit_json([h.to_dict() for h in hits])
        return
    if not hits:
        typer.echo("no matching notes")
    for i, h in enumerate(hits, 1):
        flags = "".join([" [pinned]" if h.pinned else "", " [reactivated]" if h.reactivated else ""])
        where = f" > {h.heading}" if h.heading else ""
        typer.echo(f"{i}. {h.title}  ({h.path}{where})  score {h.score:.3f}{flags}")
        typer.echo(f"   {h.snippet}")


@app.command()
def status(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print as JSON")) -> None:
    """Notes, chunks, index location, embedder and what is pending."""
    with state(ctx).memory() as mem:
        info = mem.status()
    if as_json:
        emit_json(info)
        return
    typer.echo(f"vault:     {info['vault']}")
    typer.echo(f"index:     {info['index_dir']}")
    typer.echo(f"embedder:  {info['embedder']}")
    store = info["vector_store"]
    where = f" at {store['url']}" if store.get("url") else ""
    typer.echo(f"vectors:   {store.get('backend', 'unavailable')}{where}, collection {store.get('collection', '?')} "
               f"({store['vectors'] if 'vectors' in store else 'unavailable: ' + str(store.get('error', '?'))})")
    typer.echo(f"notes:     {info['notes']}   chunks: {info['chunks']}")
    pending = ", ".join(f"{v} {k}" for k, v in info["pending"].items()) or "nothing"
    typer.echo(f"pending:   {pending}")
    for path, err in info["failures"].items():
        typer.echo(f"unreadable: {err if err.startswith(path) else f'{path}: {err}'}")


def fail(message: str, code: int) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise SystemExit(code)


def run() -> None:
    """Console entry point: the one place errors become exit codes."""
    try:
        app(standalone_mode=False)
    except VaultMemoryError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except typer.Abort:
        fail("aborted", 1)
    except SystemExit:
        raise
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            raise SystemExit(exc.exit_code) from None
        raise


from vault_memory_cli import agent as _agent  # noqa: E402,F401
from vault_memory_cli import lifecycle as _lifecycle  # noqa: E402,F401
from vault_memory_cli import sync as _sync  # noqa: E402,F401

if __name__ == "__main__":
    run()
