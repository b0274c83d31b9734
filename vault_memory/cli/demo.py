"""`vault-memory demo [FOLDER]`: a vault to try vault-memory on, from any folder (after pipx or uv tool)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from vault_memory.demo import copy_demo

from .output import note, say

QUICK_START_QUERY = "which hot drink does she start the day with"


def demo(
    folder: Annotated[
        Path,
        typer.Argument(help="Where to put the demo vault (a new or empty folder)", show_default=True),
    ] = Path("vault-memory-demo"),
) -> None:
    """Copy the small demo vault shipped with vault-memory into FOLDER; prints its path and the command to try.

    The copy is yours: recall may record a use in it. Nothing else is written.
    """
    where = copy_demo(folder)
    say(str(where))
    note(f"a demo vault is in {where}; try:")
    note(f'  vault-memory --vault {shlex.quote(str(where))} recall "{QUICK_START_QUERY}"')
