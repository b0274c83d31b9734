"""`config`: the effective settings and where each one came from."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from vault_memory.config import VAULT_CONFIG_NAME, Config, Source, user_config_path
from vault_memory.errors import ConfigError

from ..internals import internals
from .options import FLAGS, AsJson, state
from .output import emit_json, say


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _origin(name: str, source: Source) -> str | None:
    """The flag, variable or file a value came from, as a user would type or open it."""
    if source.kind == "flag":
        return FLAGS.get(name, source.where)
    return source.where or None


def settings_table(cfg: Config, sources: dict[str, Source]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in dataclasses.fields(cfg):
        if f.name not in sources:  # `extra`: not a setting
            continue
        value = getattr(cfg, f.name)
        if f.name == "index_dir" and value is None:
            value = cfg.resolved_index_dir  # say where it is, not that it is unset
        source = sources[f.name]
        out[f.name] = {"value": _jsonable(value), "source": source.kind, "from": _origin(f.name, source)}
    return out


def config(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Show the effective settings and where each came from: flag, environment, vault file, user file, default."""
    cfg, sources = state(ctx).config_sources()
    table = settings_table(cfg, sources)
    user_file = user_config_path(os.environ)
    vault_file = cfg.vault / VAULT_CONFIG_NAME
    files = {
        "user": {"path": str(user_file), "exists": user_file.is_file()},
        "vault": {"path": str(vault_file), "exists": vault_file.is_file()},
    }
    if as_json:
        emit_json({"settings": table, "files": files})
        return
    width = max(map(len, table))
    for name, row in table.items():
        value = row["value"]
        if isinstance(value, list):
            shown = ", ".join(map(str, value)) or "(none)"
        else:
            shown = "(not set)" if value is None else str(value)
        origin = f" {row['from']}" if row["from"] else ""
        say(f"{name:<{width}}  {shown}  ({row['source']}{origin})")
    for kind, info in files.items():
        say(f"{kind} file: {info['path']}" + ("" if info["exists"] else " (not present)"))


def calibrate(
    ctx: typer.Context,
    save: Annotated[bool, typer.Option("--save", help="Keep the measured record in the index folder")] = False,
    as_json: AsJson = False,
) -> None:
    """Measure this embedder's cosine scale and show the thresholds it would rank with (--save keeps them)."""
    from vault_memory.index.calibration import calibrate as measure
    from vault_memory.index.calibration import save as keep

    with state(ctx).memory() as mem:
        current = internals(mem).calibration
        try:
            measured = measure(internals(mem).model)
        except ValueError as exc:
            raise ConfigError(f"{exc}; keeping {current.source}") from exc
        path = keep(internals(mem).index_dir, measured) if save else None
    if as_json:
        emit_json({"current": current.to_dict(), "measured": measured.to_dict(), "saved": str(path) if path else None})
        return
    say(f"embedder:  {measured.embedder}")
    say(f"ranks with: {current.source}")
    for name in ("weak", "strong", "conflict", "asked_bar"):
        label = name.removesuffix("_bar")
        say(f"  {label:<9} {getattr(current, name):.3f}   measured now: {getattr(measured, name):.3f}")
    say(f"  (mean cosine of a question to its answer {measured.answer_mean}, to other answers {measured.other_mean})")
    say(f"saved to {path}" if path else "not saved: pass --save to rank with the measured numbers")
