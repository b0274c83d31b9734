"""The CLI reference, generated from the command tree itself: `python -m vault_memory.cli.reference --write`
(or `> docs/cli.md`).

Everything in it comes from what `--help` shows (click's command tree under typer): each
command's usage and help, each argument and option with its help, the environment variable,
config key and default its help names (`[env: ...; config: ...; default: ...]`, options.py),
and the defaults and ranges click adds. The exit codes come from the error tree (errors.py).
tests/test_docs.py regenerates it and fails when docs/cli.md differs, so the reference cannot
drift from the CLI; nothing here is written by hand but the few lines of `PREAMBLE`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import typer.main

from vault_memory import errors
from vault_memory.lifecycle import resolve

from .main import COMMANDS, PROG, app

#: Modules that define error classes, imported so the tree is the same whatever else is loaded.
ERROR_MODULES = (errors, resolve)

PREAMBLE = """\
# CLI reference

Generated from the command line itself by `python -m vault_memory.cli.reference --write` (or `> docs/cli.md`);
`tests/test_docs.py` fails when this file is stale, so edit the help texts in `vault_memory/cli/`,
not this file. What the commands do is explained in the chapters (see the [README](../README.md)).

Global options go before the command, the command's own options after it:
`vault-memory --vault ~/notes recall "tea" -k 3`. `-h` works anywhere (`vault-memory recall -h`).
Data goes to stdout (text, or exactly one JSON object with `--json`: shapes in
[agents.md](agents.md#json-output)); warnings, logs and progress go to stderr.
Every setting a global option sets can also come from the environment or a config file
([configuration.md](configuration.md)); flags win.
"""

# The bracketed notes a help text ends with: ours ("[env: X; config: y; default: z]") and click's
# ("[default: 5; 1<=x<=100]", "[required]", "[x>=0]").
_BRACKET = re.compile(r"\s*\[([^\[\]]*)\]")
_KEYS = ("env", "config", "default")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def split_help(help_text: str) -> tuple[str, dict[str, str]]:
    """(the help without its bracketed notes, {env, config, default, range, required} from them).

    Only brackets that hold those notes are taken out: `[[wikilink]]` in a help text stays."""
    notes: dict[str, str] = {}
    kept = help_text
    for m in list(_BRACKET.finditer(help_text)):
        inner = m.group(1).strip()
        parts = [p.strip() for p in inner.split(";") if p.strip()]
        if not parts or m.start() > 0 and help_text[m.start() - 1] == "[":
            continue
        found: dict[str, str] = {}
        for part in parts:
            key, sep, value = part.partition(":")
            if sep and key.strip() in _KEYS:
                found[key.strip()] = value.strip()
            elif part == "required":
                found["required"] = "yes"
            elif "x" in part and re.fullmatch(r"[-\d.<>=x ]+", part):
                found["range"] = part
            else:
                found = {}
                break
        if found:
            for key, value in found.items():
                notes[key] = f"{notes[key]}; {value}" if key in notes and key != "required" else value
            kept = kept.replace(m.group(0), "", 1)
    return kept.strip(), notes


def _rows(cmd: Any, ctx: Any) -> Iterator[str]:
    params = [p for p in cmd.get_params(ctx) if p.name != "help"]
    if not params:
        return
    yield "| argument or option | help | env | config key | default |"
    yield "|---|---|---|---|---|"
    for p in params:
        record = p.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        text, notes = split_help(help_text)
        if notes.get("range"):
            text += f" (range: {notes['range']})"
        if notes.get("required"):
            text += " (required)"
        yield (
            f"| {_code(names)} | {_cell(text)} | "
            + " | ".join(_code(notes[k]) if k in notes and k != "default" else _cell(notes.get(k, "")) for k in _KEYS)
            + " |"
        )


def _first_line(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def exit_codes() -> list[tuple[int, str]]:
    """(code, what it means) for every exit code: click's and the error tree's (errors.py, and the
    children other modules define: resolve.py's; tests/test_docs.py finds any other by reading the code)."""
    by_code: dict[int, list[str]] = {}
    seen: set[type] = set()
    todo: list[type] = [errors.VaultMemoryError]
    while todo:
        cls = todo.pop(0)
        if cls in seen or not cls.__module__.startswith("vault_memory."):
            continue
        seen.add(cls)
        by_code.setdefault(int(getattr(cls, "exit_code", 1)), []).append(
            f"`{cls.__name__}`: {_first_line(cls.__doc__).rstrip('.')}"
        )
        todo.extend(sorted(cls.__subclasses__(), key=lambda c: c.__name__))
    rows = [(0, "success")]
    usage = "a usage error (an unknown command or option, a missing argument, a value out of range)"
    rows.append((2, usage))
    for code in sorted(by_code):
        rows.append((code, "; ".join(by_code[code])))
    rows.append((130, "interrupted (Ctrl-C)"))
    merged: dict[int, list[str]] = {}
    for code, text in rows:
        merged.setdefault(code, []).append(text)
    return [(code, "; ".join(texts)) for code, texts in sorted(merged.items())]


def reference() -> str:
    """docs/cli.md, from the app's command tree."""
    group = typer.main.get_command(app)
    root = group.make_context(PROG, [], resilient_parsing=True)
    out = [PREAMBLE]
    out += ["## Global options", "", "`vault-memory [GLOBAL OPTIONS] COMMAND [ARGS]...`", ""]
    out += [_first_line(group.help), ""]
    out += list(_rows(group, root)) + [""]
    out += ["## Exit codes", "", "From the error tree in `vault_memory/errors.py`.", ""]
    out += ["| code | meaning |", "|---|---|"]
    out += [f"| {code} | {_cell(text)} |" for code, text in exit_codes()]
    out += [""]
    commands: dict[str, Any] = getattr(group, "commands", {})
    out += ["## Commands", ""]
    for name, _ in COMMANDS:
        out.append(f"- [`{name}`](#vault-memory-{name}): {_cell(commands[name].get_short_help_str(200))}")
    out += [""]
    for name, _ in COMMANDS:
        cmd = commands[name]
        ctx = cmd.make_context(name, [], parent=root, resilient_parsing=True)
        usage = cmd.get_usage(ctx).removeprefix("Usage: ").strip()
        out += [f"### `vault-memory {name}`", "", f"`{usage}`", ""]
        for para in (cmd.help or "").strip().split("\n\n"):
            out += [" ".join(para.split()), ""]
        out += list(_rows(cmd, ctx)) + [""]
    text = "\n".join(line.rstrip() for line in "\n".join(out).split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def main(argv: list[str] | None = None) -> None:
    """Print the reference, or with `--write` write it to docs/cli.md of the checkout this runs from."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--write"]:
        from pathlib import Path

        target = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
        target.write_text(reference(), encoding="utf-8", newline="\n")
        sys.stderr.write(f"wrote {target}\n")
    elif args:
        raise SystemExit("usage: python -m vault_memory.cli.reference [--write]")
    else:
        sys.stdout.write(reference())


if __name__ == "__main__":
    main()
