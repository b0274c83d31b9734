"""The `vault-memory` command line: a thin typer layer over `vault_memory.Memory`.

    main.py       the app, global options, the command list, errors -> exit codes
    options.py    shared option declarations (Annotated aliases) and per-run state
    output.py     JSON on stdout, notes and progress on stderr
    search.py     index, recall, status
    notes.py      read, related, recent
    sync.py       watch, doctor
    lifecycle.py  stage, staged, commit, discard, remember, pin, unpin, log
    agent.py      prefetch, mcp
    settings.py   config

The library never imports this package.
"""

from __future__ import annotations

from .main import app, execute, run

__all__ = ["app", "execute", "run"]
