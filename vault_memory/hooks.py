"""Hooks: the memory block in an agent's turn without a tool call (issue 40).

An agent client runs a command at the start of every turn with the turn as JSON on stdin, and
adds what the command prints to the turn. `vault-memory hook run CLIENT` is that command: it
reads the client's JSON (`parse_event`), asks `Memory.prefetch` for the turn's block, and prints
it the way the client reads it (`reply`). `hook install` writes the command into the client's
settings file beside the hooks already there (`install`), `hook remove` takes exactly it out
again (`remove`), giving back the file's own bytes when nothing else changed meanwhile.

    event = parse_event(CLIENTS["claude-code"], stdin_text)     # HookEvent, or ConfigError
    text = reply(mem, client, event, now=now)                    # "" when nothing is relevant
    change = install(client, settings_path, command, backups=dir)

What each client reads and prints, and where its settings live, is in `CLIENTS`, from the
clients' own documents (docs/agents.md says which ones and which versions):

- **Claude Code** (`claude-code`): `UserPromptSubmit` gets `prompt`, `cwd`, `session_id`,
  `hook_event_name`; on exit 0 the JSON `{"hookSpecificOutput": {"hookEventName": ...,
  "additionalContext": ...}}` is added to the turn; `SessionStart` the same, once per session.
  Settings: `~/.claude/settings.json` (user), `.claude/settings.json` (project); `timeout` in
  seconds. Output up to 10,000 characters reaches the model whole (longer becomes a preview).
- **Gemini CLI** (`gemini-cli`): `BeforeAgent` gets `prompt`; stdout must be JSON only;
  `hookSpecificOutput.additionalContext` is appended to the prompt for that turn; `SessionStart`
  as Claude Code's. Settings: `~/.gemini/settings.json`, `.gemini/settings.json`; `timeout` in ms.

The hook never fails the user's turn: the CLI (cli/hook.py) catches every failure, prints
nothing, exits 0 and logs why.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, StorageError, storage_message
from .text import in_folder
from .vault.fields import parse_bool

if TYPE_CHECKING:
    from .memory import Memory

#: The block's markers for what is pinned (the turn's block is prefetch's `[RELEVANT_LEARNED_MEMORY]`).
PINNED_OPEN, PINNED_CLOSE = "[PINNED_MEMORY]", "[/PINNED_MEMORY]"
#: Most bytes read from stdin: a turn is a prompt, not a file.
STDIN_MAX = 1 << 20
#: What the installed command's own deadline is (seconds): it prints nothing past it. Under
#: the `timeout` written into the client's settings, so the client never has to kill it.
DEADLINE_SECONDS = 10.0


@dataclass(frozen=True)
class Client:
    """One agent client's hook: its events, what it takes, where its settings live."""

    name: str
    prompt_event: str  # the event that carries the user's turn (`prompt`)
    start_event: str  # the event at the start of a session
    settings: str  # the settings file, relative to the home folder (user) or the project (project)
    max_chars: int  # output the client hands to the model whole
    timeout: int  # the `timeout` written into its settings, in the client's unit
    json_only: bool  # stdout must be JSON (Gemini CLI), not plain text

    @property
    def events(self) -> tuple[str, str]:
        return (self.prompt_event, self.start_event)


CLIENTS: dict[str, Client] = {
    "claude-code": Client(
        "claude-code", "UserPromptSubmit", "SessionStart", ".claude/settings.json", 10_000, 30, False
    ),
    "gemini-cli": Client("gemini-cli", "BeforeAgent", "SessionStart", ".gemini/settings.json", 10_000, 30_000, True),
}
SCOPES = ("user", "project")


@dataclass(frozen=True)
class HookEvent:
    """What a client's hook JSON says: the event, and the turn's text for a prompt event."""

    name: str
    prompt: str = ""
    cwd: str = ""
    session_id: str = ""


def client_named(name: str) -> Client:
    if name not in CLIENTS:
        raise ConfigError(f"no hook for client {name!r}; the clients are: {', '.join(CLIENTS)}")
    return CLIENTS[name]


def parse_event(client: Client, raw: str) -> HookEvent:
    """The client's hook JSON as a HookEvent; ConfigError (saying what is wrong) for anything else."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{client.name} hook: stdin is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{client.name} hook: stdin is JSON but not an object")
    name = data.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{client.name} hook: no hook_event_name in the JSON on stdin")
    prompt = data.get("prompt", "")
    if name == client.prompt_event and not isinstance(prompt, str):
        raise ConfigError(f"{client.name} hook: `prompt` is not a string")

    def text(key: str) -> str:
        value = data.get(key, "")
        return value if isinstance(value, str) else ""

    return HookEvent(name, prompt if isinstance(prompt, str) else "", text("cwd"), text("session_id"))


def render(client: Client, event: HookEvent, block: str) -> str:
    """What the client adds to the turn: the JSON both clients read ("" when there is no block)."""
    if not block:
        return ""
    body = {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": block}}
    return json.dumps(body, ensure_ascii=False)


def reply(
    mem: Memory, client: Client, event: HookEvent, *, budget: int | None = None, now: dt.datetime | None = None
) -> str:
    """What to print for `event`: the turn's prefetch block (prompt event), what is pinned (start
    event), as the client reads it; "" when nothing is relevant or the event is not ours. The
    block is at most the budget (`prefetch_budget` by default), and never more than the client
    takes whole."""
    from .internals import internals

    folder = internals(mem)
    cap = client.max_chars - 200  # room for the JSON around the block
    budget = min(folder.config.prefetch_budget if budget is None else budget, cap)
    if event.name == client.prompt_event:
        if not event.prompt.strip():
            return ""
        folder.ensure_current()
        block = mem.prefetch(event.prompt, budget=budget, now=now).block
    elif event.name == client.start_event:
        folder.ensure_current()
        block = pinned_block(mem, budget)
    else:
        return ""
    return render(client, event, block)


def pinned_block(mem: Memory, budget: int) -> str:
    """The notes pinned in the vault (never fading, so worth having at the start of every
    session), one line each, the first of their text, within `budget` characters; "" for none.
    Staged drafts are left out; private notes are never indexed."""
    from .internals import internals

    folder = internals(mem)
    staging = folder.config.staging_folder.strip("/")
    notes = sorted(
        (n for n in folder.catalog.notes() if parse_bool(n.meta.get("pinned"))),
        key=lambda n: n.path,
    )
    lines: list[str] = []
    used = len(PINNED_OPEN) + len(PINNED_CLOSE) + 2
    for note in notes:
        if staging and in_folder(note.path, staging):
            continue
        chunks = folder.catalog.chunks_of(note.node_id)
        body = " ".join(" ".join(c.body.split()) for c in chunks[:1])
        for marker in (PINNED_OPEN, PINNED_CLOSE, "[RELEVANT_LEARNED_MEMORY]", "[/RELEVANT_LEARNED_MEMORY]"):
            body = body.replace(marker, marker.strip("[]"))  # a note cannot close the block
        prefix = f"- ({note.path}) "
        room = min(400, budget - used - 1) - len(prefix)
        if room < 40:
            break
        if len(body) > room:
            body = body[: room - 1].rsplit(" ", 1)[0] + "…"
        lines.append(prefix + body)
        used += len(lines[-1]) + 1
    if not lines:
        return ""
    return "\n".join([PINNED_OPEN, *lines, PINNED_CLOSE])


# -- the settings file ---------------------------------------------------------------------


def settings_path(client: Client, scope: str, *, home: Path, cwd: Path) -> Path:
    """The client's settings file for `scope`: user (under `home`) or project (under `cwd`)."""
    if scope not in SCOPES:
        raise ConfigError(f"--scope {scope!r}: one of {', '.join(SCOPES)}")
    return (home if scope == "user" else cwd) / client.settings


def hook_command(client: Client, program: list[str], vault: Path) -> str:
    """The command the client runs: this program, the vault baked in, `hook run CLIENT`."""
    return shlex.join([*program, "--vault", str(vault), "hook", "run", client.name])


def is_ours(client: Client, entry: Any) -> bool:
    """Whether a hook entry of the settings file is the one `install` writes (any vault, any path)."""
    if not isinstance(entry, Mapping):
        return False
    command = entry.get("command")
    if not isinstance(command, str):
        return False
    words = command.split()
    return words[-3:] == ["hook", "run", client.name] and ("vault-memory" in command or "vault_memory" in command)


@dataclass(frozen=True)
class SettingsChange:
    """What `install` or `remove` did to one settings file."""

    path: Path
    action: str  # installed | already installed | removed | not installed
    command: str = ""
    restored: bool = False  # remove gave back the file's bytes from before the install

    @property
    def changed(self) -> bool:
        return self.action in ("installed", "removed")

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": self.action, "command": self.command, "restored": self.restored}


def _load(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """The settings as an object, and the file's bytes (None: no file)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise StorageError(storage_message(exc, "read the settings file", path)) from None
    if not raw.strip():
        return {}, raw
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except ValueError as exc:
        raise ConfigError(
            f"{path}: not plain JSON ({exc}); vault-memory leaves it as it is: fix it, or add the hook by hand "
            "(docs/agents.md, Hooks)"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the settings are not a JSON object; vault-memory leaves the file as it is")
    return data, raw


def _strip(client: Client, data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """`data` without our hook entries (a group, event or `hooks` table left empty by that
    dropped too), and how many were taken out. Everything else stays as it was, in its order."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data, 0
    taken = 0
    new_hooks: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            new_hooks[event] = groups
            continue
        kept_groups = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                kept_groups.append(group)
                continue
            kept = [e for e in entries if not is_ours(client, e)]
            taken += len(entries) - len(kept)
            if kept or not entries:
                kept_groups.append({**group, "hooks": kept} if len(kept) != len(entries) else group)
        if kept_groups or not groups:
            new_hooks[event] = kept_groups
    out = dict(data)
    if new_hooks or not hooks:
        out["hooks"] = new_hooks
    else:
        out.pop("hooks")
    return out, taken


def _entry(client: Client, command: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "command", "command": command, "timeout": client.timeout}
    if client.json_only:
        entry = {"name": "vault-memory", **entry}
    return entry


def _write(path: Path, text: str) -> None:
    """Write the settings file whole: a temp file beside it, then a rename (never half a file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        fd, tmp = tempfile.mkstemp(prefix=".vm-tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise StorageError(storage_message(exc, "write the settings file", path)) from None


def _dump(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _backup_file(backups: Path, path: Path) -> Path:
    key = hashlib.sha256(str(path.absolute()).encode()).hexdigest()[:20]
    return backups / f"{key}.json"


def install(client: Client, path: Path, command: str, *, backups: Path) -> SettingsChange:
    """Add our hook for the client's prompt and start events to the settings file at `path`,
    after the hooks already there (never replacing one); an older copy of ours (another vault,
    another path) is replaced, so installing twice leaves one. The file's bytes from before the
    first install are kept in `backups` for `remove`. Writes nothing when it is already there."""
    data, raw = _load(path)
    if "hooks" in data and not isinstance(data["hooks"], dict):
        raise ConfigError(f"{path}: `hooks` is not a JSON object; vault-memory leaves the file as it is")
    clean, _ = _strip(client, data)
    found = clean.get("hooks")
    hooks: dict[str, Any] = dict(found) if isinstance(found, dict) else {}
    for event in client.events:
        groups = hooks.get(event)
        groups = list(groups) if isinstance(groups, list) else []
        groups.append({"hooks": [_entry(client, command)]})
        hooks[event] = groups
    new = {**clean, "hooks": hooks}
    if new == data:
        return SettingsChange(path, "already installed", command)
    record = _backup_file(backups, path)
    if not record.exists():
        try:
            backups.mkdir(parents=True, exist_ok=True)
            original = None if raw is None else raw.decode("utf-8")
            record.write_text(json.dumps({"path": str(path.absolute()), "bytes": original}), encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass  # without it, remove still takes exactly our hook out (the layout may differ)
    _write(path, _dump(new))
    return SettingsChange(path, "installed", command)


def remove(client: Client, path: Path, *, backups: Path) -> SettingsChange:
    """Take our hook out of the settings file at `path`, and nothing else. When the rest is what
    it was before `install`, the file gets its own bytes back (or is deleted, if install made it)."""
    data, raw = _load(path)
    clean, taken = _strip(client, data)
    record = _backup_file(backups, path)
    if not taken:
        return SettingsChange(path, "not installed")
    before: dict[str, Any] | None = None
    try:
        saved = json.loads(record.read_text(encoding="utf-8"))
        before = saved if isinstance(saved, dict) and saved.get("path") == str(path.absolute()) else None
    except (OSError, ValueError):
        before = None
    restored = False
    if before is not None and before.get("bytes") is None and not clean:
        try:
            path.unlink()
        except OSError as exc:
            raise StorageError(storage_message(exc, "remove the settings file", path)) from None
        restored = True
    elif before is not None and isinstance(before.get("bytes"), str):
        original = before["bytes"]
        try:
            same = (json.loads(original) if original.strip() else {}) == clean
        except ValueError:
            same = False
        if same:
            _write(path, original)
            restored = True
    if not restored:
        _write(path, _dump(clean))
    record.unlink(missing_ok=True)
    return SettingsChange(path, "removed", restored=restored)


__all__ = [
    "CLIENTS",
    "DEADLINE_SECONDS",
    "PINNED_CLOSE",
    "PINNED_OPEN",
    "SCOPES",
    "Client",
    "HookEvent",
    "SettingsChange",
    "client_named",
    "hook_command",
    "install",
    "is_ours",
    "parse_event",
    "pinned_block",
    "remove",
    "render",
    "reply",
    "settings_path",
]
