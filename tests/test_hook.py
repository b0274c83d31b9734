"""`vault-memory hook run|install|remove` (issue 40): the block in the agent's turn without a tool
call, fed the JSON each client documents; the settings file merged, never overwritten, and given
back byte for byte."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from tests.conftest import snapshot
from vault_memory import hooks
from vault_memory.cli.hook import ClientName, log_file
from vault_memory.cli.main import execute

COFFEE = "can you remind me how I take my espresso in the morning?"
UNRELATED = "How many legs does a spider have?"


def claude(prompt: str, event: str = "UserPromptSubmit") -> str:
    """The JSON Claude Code sends a UserPromptSubmit (or SessionStart) hook on stdin."""
    body = {
        "session_id": "abc123",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if event == "UserPromptSubmit":
        body["prompt"] = prompt
    else:
        body["source"] = "startup"
    return json.dumps(body)


def gemini(prompt: str) -> str:
    """The JSON Gemini CLI sends a BeforeAgent hook on stdin."""
    return json.dumps(
        {
            "session_id": "s1",
            "transcript_path": "/tmp/t.json",
            "cwd": "/tmp",
            "hook_event_name": "BeforeAgent",
            "timestamp": "2026-11-29T12:00:00Z",
            "prompt": prompt,
        }
    )


def run_hook(
    monkeypatch: pytest.MonkeyPatch, stdin: str, *args: str, client: str = "claude-code"
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8"))))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = execute([*args, "hook", "run", client])
    return code, out.getvalue(), err.getvalue()


def base(vault: Path, index_dir: Path) -> list[str]:
    return ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]


def test_the_cli_offers_every_client_the_library_knows() -> None:
    assert [c.value for c in ClientName] == list(hooks.CLIENTS)


def test_user_prompt_submit_gets_the_block_as_additional_context(
    vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_hook(monkeypatch, claude(COFFEE), *base(vault, index_dir))
    assert code == 0, err
    reply = json.loads(out)
    assert set(reply) == {"hookSpecificOutput"}
    assert reply["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    context = reply["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[RELEVANT_LEARNED_MEMORY]\n") and context.endswith("[/RELEVANT_LEARNED_MEMORY]")
    assert "Preferences/Coffee.md" in context and "espresso" in context  # the fact the turn needs
    assert len(out) <= hooks.CLIENTS["claude-code"].max_chars


def test_an_unrelated_turn_prints_nothing(vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run_hook(monkeypatch, claude(UNRELATED), *base(vault, index_dir))
    assert (code, out) == (0, ""), err


def test_gemini_before_agent_gets_the_block_and_nothing_for_an_unrelated_turn(
    vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run_hook(monkeypatch, gemini(COFFEE), *base(vault, index_dir), client="gemini-cli")
    reply = json.loads(out)  # stdout is JSON alone, as Gemini CLI requires
    assert code == 0 and reply["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "Preferences/Coffee.md" in reply["hookSpecificOutput"]["additionalContext"]
    code, out, _ = run_hook(monkeypatch, gemini(UNRELATED), *base(vault, index_dir), client="gemini-cli")
    assert (code, out) == (0, "")


def test_session_start_gets_what_is_pinned(vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run_hook(monkeypatch, claude("", "SessionStart"), *base(vault, index_dir))
    assert code == 0 and "Memory/home-server-hearth.md" in out and "Coffee" not in out  # the one pinned memory
    assert execute([*base(vault, index_dir), "pin", "Preferences/Coffee.md"]) == 0
    code, out, _ = run_hook(monkeypatch, claude("", "SessionStart"), *base(vault, index_dir))
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert context["additionalContext"].startswith(hooks.PINNED_OPEN) and "Preferences/Coffee.md" in out
    assert context["additionalContext"].endswith(hooks.PINNED_CLOSE)
    for note in (vault / "Memory/home-server-hearth.md", vault / "Preferences/Coffee.md"):
        note.write_text(note.read_text(encoding="utf-8").replace("pinned: true", "pinned: false"), encoding="utf-8")
    code, out, _ = run_hook(monkeypatch, claude("", "SessionStart"), *base(vault, index_dir))
    assert (code, out) == (0, "")  # nothing pinned: nothing added


@pytest.mark.parametrize(
    "stdin",
    [
        "not json",
        "[1, 2]",
        json.dumps({"prompt": "coffee"}),  # no hook_event_name
        json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": 42}),
        "",
    ],
    ids=["not-json", "not-an-object", "no-event", "prompt-not-text", "empty"],
)
def test_input_it_cannot_read_prints_nothing_exits_0_and_logs_why(
    vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch, stdin: str
) -> None:
    code, out, err = run_hook(monkeypatch, stdin, *base(vault, index_dir))
    assert (code, out) == (0, "")
    assert "hook run claude-code: ConfigError" in err
    assert "ConfigError" in log_file().read_text(encoding="utf-8")


def test_a_missing_or_broken_vault_prints_nothing_and_exits_0(
    tmp_path: Path, vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_hook(monkeypatch, claude(COFFEE), "--vault", str(tmp_path / "gone"), "--embedder", "fake")
    assert (code, out) == (0, "") and "VaultNotFoundError" in err
    (vault / ".vault-memory.toml").write_text("half_life_short_days = [", encoding="utf-8")  # broken config
    code, out, err = run_hook(monkeypatch, claude(COFFEE), *base(vault, index_dir))
    assert (code, out) == (0, "") and "ConfigError" in err
    (vault / ".vault-memory.toml").unlink()
    index_dir.mkdir(parents=True, exist_ok=True)
    (index_dir / "catalog.sqlite").write_bytes(b"this is not a database" * 100)  # a damaged index
    code, out, err = run_hook(monkeypatch, claude(COFFEE), *base(vault, index_dir))
    assert code == 0 and (out == "" or "hookSpecificOutput" in out), err  # never a traceback, never exit != 0


@pytest.mark.slow
def test_past_the_deadline_it_prints_nothing_and_exits_0(vault: Path, index_dir: Path) -> None:
    """Through the console script: the worker is still indexing when the deadline passes."""
    exe = str(Path(sys.executable).parent / "vault-memory")
    out = subprocess.run(
        [exe, *base(vault, index_dir), "hook", "run", "claude-code", "--deadline", "0.1"],
        input=claude(COFFEE),
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
        check=False,
    )
    assert (out.returncode, out.stdout) == (0, "")
    assert "no answer within 0.1 s" in out.stderr


# -- install / remove ----------------------------------------------------------------------

OTHER_HOOK = (
    "{\n"
    '    "permissions": {"allow": ["Bash(ls)"]},\n'
    '    "hooks": {\n'
    '        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo other"}]}]\n'
    "    }\n"
    "}\n"
)


def settings_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = execute(list(args))
    return code, out.getvalue(), err.getvalue()


def commands(path: Path, event: str) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [h["command"] for group in data["hooks"].get(event, []) for h in group["hooks"]]


def test_install_twice_keeps_the_other_hook_and_one_copy_and_remove_gives_the_bytes_back(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(OTHER_HOOK, encoding="utf-8")
    before = settings.read_bytes()
    monkeypatch.chdir(project)
    for _ in range(2):
        code, out, err = settings_cli("--vault", str(vault), "hook", "install", "claude-code", "--scope", "project")
        assert code == 0, err
    assert "already installed" in out
    prompt = commands(settings, "UserPromptSubmit")
    ours = [c for c in prompt if c.endswith("hook run claude-code")]
    assert prompt[0] == "echo other" and len(ours) == 1 and str(vault.resolve()) in ours[0]
    assert commands(settings, "SessionStart") == ours
    assert json.loads(settings.read_text(encoding="utf-8"))["permissions"] == {"allow": ["Bash(ls)"]}
    code, out, err = settings_cli("hook", "remove", "claude-code", "--scope", "project")
    assert code == 0 and "removed" in out and "as it was before" in err, err
    assert settings.read_bytes() == before
    assert settings_cli("hook", "remove", "claude-code", "--scope", "project")[1].startswith("not installed")


def test_user_scope_makes_the_file_and_remove_takes_it_away_again(vault: Path, isolated_env: Path) -> None:
    settings = isolated_env / ".claude" / "settings.json"
    assert not settings.exists()
    assert settings_cli("--vault", str(vault), "hook", "install", "claude-code")[0] == 0
    assert len(commands(settings, "UserPromptSubmit")) == 1
    assert settings_cli("hook", "remove", "claude-code")[0] == 0
    assert not settings.exists()


def test_remove_after_another_edit_takes_only_our_hook_out(vault: Path, isolated_env: Path) -> None:
    settings = isolated_env / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"hooks": {"enabled": true}, "theme": "dark"}', encoding="utf-8")
    assert settings_cli("--vault", str(vault), "hook", "install", "gemini-cli")[0] == 0
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert data["hooks"]["enabled"] is True and data["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] == 30_000
    data["model"] = "gemini-2.5-pro"  # a person edits the settings meanwhile
    settings.write_text(json.dumps(data), encoding="utf-8")
    assert settings_cli("hook", "remove", "gemini-cli")[0] == 0
    assert json.loads(settings.read_text(encoding="utf-8")) == {
        "hooks": {"enabled": True},
        "theme": "dark",
        "model": "gemini-2.5-pro",
    }


def test_a_settings_file_that_is_not_json_is_left_alone(vault: Path, isolated_env: Path) -> None:
    settings = isolated_env / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"hooks": // a comment\n}', encoding="utf-8")
    before = snapshot(settings.parent)
    code, _, err = settings_cli("--vault", str(vault), "hook", "install", "claude-code")
    assert code == 2 and "not plain JSON" in err and str(settings) in err
    assert snapshot(settings.parent) == before


def test_an_empty_vault_option_is_refused_at_install(isolated_env: Path) -> None:
    code, _, err = settings_cli("--vault", "", "hook", "install", "claude-code")
    assert code == 2 and not (isolated_env / ".claude").exists(), err
