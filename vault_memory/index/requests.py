"""Paths a process wrote into the vault while another process held the index writer lock.

`remember`, `pin` or `log` from the command line write their note and then re-index it; when
another process is writing the index (a first `index` embedding for minutes, `watch`, the MCP
server), they cannot, and the note would stay unfindable until that writer happened to look.
So they leave a request: a small file in `<index>/requests/` naming the paths. The writer takes
the requests between embedding steps and between batches, re-indexes those paths (keyword
search finds them at once; their vectors follow), and removes each request it took.

A request is written whole (temp file + rename) and read whole; one lost (a crash) only means the
next reconcile of the whole vault picks the note up, as before.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

FOLDER = "requests"
MAX_TAKEN = 10_000  # paths taken at once; more is a bulk change, which a full reconcile handles


def ask(index_dir: Path, paths: Iterable[str]) -> bool:
    """Leave a request for the writer to re-index `paths`; False if the index folder cannot be written."""
    todo = sorted({p for p in paths if p and "\n" not in p})
    if not todo:
        return True
    folder = index_dir / FOLDER
    name = f"{os.getpid()}-{secrets.token_hex(4)}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.tmp"
        tmp.write_text("\n".join(todo) + "\n", encoding="utf-8")
        os.replace(tmp, folder / f"{name}.paths")
    except OSError:
        return False
    return True


def take(index_dir: Path) -> list[str]:
    """The paths requested so far (the caller holds the writer lock); the requests are removed."""
    folder = index_dir / FOLDER
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".paths"))
    except OSError:
        return []
    out: dict[str, None] = {}
    for name in names:
        path = folder / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        with contextlib.suppress(OSError):
            path.unlink()
        out.update(dict.fromkeys(line for line in text.splitlines() if line.strip()))
        if len(out) >= MAX_TAKEN:
            break
    return list(out)


__all__ = ["ask", "take"]
