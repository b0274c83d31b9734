"""`vault-memory mcp`: the vault as a Model Context Protocol server over stdio (official `mcp` SDK 2.x).

    service.py  Service: the tools' Memory, and the watcher thread keeping the index current
    tools.py    Tools: one method per tool (`@tool(hints, description)`), input bounds, errors
    schemas.py  what each tool returns (TypedDicts: the tools' outputSchema)
    server.py   build_server: registers the tools, refuses unknown arguments, notes as resources

Tools: recall, read, related, recent, prefetch, status (finding and reading); remember, stage,
staged_list, commit, commit_all, discard, pin, unpin, log (writing).

Models are untrusted callers: inputs are validated and bounded, unknown arguments are refused,
paths go through `safe_path` (no `..`, absolute paths or symlinks out of the vault), no tool
deletes a note, and every failure returns as a tool error saying what to do; the server never
dies of a bad call. stdout is the protocol: logs go to stderr, and the SDK points fd 1 at stderr
while serving, so stray prints cannot corrupt the stream.
"""

from __future__ import annotations

from .server import CLI_ONLY, CLI_VERB, NOTE_URI, StrictServer, build_server, serve
from .service import Service
from .tools import Tools, specs

__all__ = ["CLI_ONLY", "CLI_VERB", "NOTE_URI", "Service", "StrictServer", "Tools", "build_server", "serve", "specs"]
