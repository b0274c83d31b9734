"""What every command shares: option declarations (declared once, as `Annotated` aliases),
the per-invocation state holding the global flags, and the few parsing helpers.

Help texts name the environment variable or config key in brackets; the app renders help
without rich markup (main.py), so the brackets are printed as written.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from vault_memory.config import Config, Source, resolve_config, resolve_config_sources
from vault_memory.errors import ConfigError

if TYPE_CHECKING:
    from vault_memory.memory import Memory

# -- global options (the app callback) ----------------------------------------------------
# A string, not a Path: click turns `--vault ''` (an unset shell variable) into Path('.'), the current
# folder, which it then indexed; config.resolve_config refuses the empty string instead.
VaultOpt = Annotated[
    str | None,
    typer.Option("--vault", metavar="PATH", show_default=False, help="The vault folder [env: VAULT_MEMORY_VAULT]"),
]
IndexDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--index-dir",
        metavar="PATH",
        show_default=False,
        help="Index folder [env: VAULT_MEMORY_INDEX_DIR; default: one per vault in the user cache dir]",
    ),
]
EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        metavar="SPEC",
        show_default=False,
        help="minilm | ollama:MODEL | fake [env: VAULT_MEMORY_EMBEDDER; default: minilm, offline]",
    ),
]
OllamaHostOpt = Annotated[
    str | None,
    typer.Option(
        "--ollama-host",
        metavar="URL",
        show_default=False,
        help="Ollama server [env: VAULT_MEMORY_OLLAMA_HOST; default: OLLAMA_HOST or http://127.0.0.1:11434]",
    ),
]
ChromaUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--chroma-url",
        metavar="URL",
        show_default=False,
        help="Use a Chroma server at this URL [env: VAULT_MEMORY_CHROMA_URL; default: embedded store]",
    ),
]
LexicalFallbackOpt = Annotated[
    bool | None,
    typer.Option(
        "--lexical-fallback/--no-lexical-fallback",
        show_default=False,
        help="Serve BM25-only recall when the vector store is unreachable "
        "[env: VAULT_MEMORY_LEXICAL_FALLBACK; default: off]",
    ),
]
ReadOnlyOpt = Annotated[
    bool | None,
    typer.Option(
        "--read-only/--writable",
        show_default=False,
        help="Never write to the vault: no node_ids, no rehearsal [env: VAULT_MEMORY_READ_ONLY; default: writable]",
    ),
]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log more on stderr")]

# -- options shared by commands ---------------------------------------------------------
AsJson = Annotated[
    bool, typer.Option("--json", help="Print one JSON object on stdout (shapes: docs/agents.md, JSON output)")
]
Now = Annotated[
    str | None,
    typer.Option(
        "--now", metavar="ISO", show_default=False, help="Act as if it were this ISO 8601 instant (default: now)"
    ),
]
Text = Annotated[str, typer.Argument(help="The memory, in plain words", show_default=False)]
Title = Annotated[
    str | None, typer.Option("--title", show_default=False, help="Title (default: the first words of the text)")
]
Tags = Annotated[list[str] | None, typer.Option("--tag", show_default=False, help="A tag (repeatable)")]
Target = Annotated[
    str,
    typer.Argument(help="A note: its title, alias, file name, vault path, [[wikilink]] or node_id", show_default=False),
]

# -- filters on recall and prefetch (vault_memory/search/filters.py) ---------------------------------
FilterTag = Annotated[
    list[str] | None,
    typer.Option(
        "--tag",
        metavar="TAG",
        show_default=False,
        help="Only notes with this tag; nested tags count (travel matches travel/japan); repeatable: all must match",
    ),
]
FilterFolder = Annotated[
    str | None,
    typer.Option(
        "--folder", metavar="FOLDER", show_default=False, help="Only notes in this vault folder (at any depth)"
    ),
]
FilterType = Annotated[
    str | None,
    typer.Option("--type", metavar="TYPE", show_default=False, help="Only notes whose frontmatter type is TYPE"),
]
FilterAfter = Annotated[
    str | None,
    typer.Option(
        "--after",
        metavar="WHEN",
        show_default=False,
        help="Only notes stated on or after WHEN: a date (2026-10-01), a time, or a span back (7d, 2w, 3m, 1y)",
    ),
]
FilterBefore = Annotated[
    str | None,
    typer.Option("--before", metavar="WHEN", show_default=False, help="Only notes stated before WHEN (as --after)"),
]

# Global flags by Config field, for saying where a setting came from.
FLAGS = {
    "vault": "--vault",
    "index_dir": "--index-dir",
    "embedder": "--embedder",
    "ollama_host": "--ollama-host",
    "chroma_url": "--chroma-url",
    "lexical_fallback": "--lexical-fallback",
    "read_only": "--read-only",
}


@dataclass
class State:
    """The global flags of one invocation (None: not given, so the environment and files decide)."""

    overrides: dict[str, Any]

    def config(self) -> Config:
        return resolve_config(self.overrides)

    def config_sources(self) -> tuple[Config, dict[str, Source]]:
        return resolve_config_sources(self.overrides)

    def memory(self) -> Memory:
        from vault_memory.memory import Memory  # numpy and the index code load only for commands that need them

        return Memory(self.config())


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if not isinstance(obj, State):  # a bug: a command invoked without the app's callback
        raise RuntimeError("the CLI state was not set up; invoke the app, not a command function")
    return obj


def parse_now(value: str | None) -> dt.datetime | None:
    if value is None:
        return None
    try:
        out = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ConfigError(f"--now {value!r} is not ISO 8601; use e.g. 2026-11-29T12:00:00+00:00") from exc
    return out if out.tzinfo else out.replace(tzinfo=dt.UTC)
