"""Configuration precedence and validation."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from vault_memory.config import Config, Source, resolve_config, resolve_config_sources, user_config_path
from vault_memory.errors import ConfigError


def test_precedence_flags_env_vault_user(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    user = tmp_path / "user.toml"
    user.write_text('embedder = "fake:8"\nstaged_ttl_days = 3\nhalf_life_long_days = 30\n', encoding="utf-8")
    (vault / ".vault-memory.toml").write_text("staged_ttl_days = 5\nhalf_life_long_days = 40\n", encoding="utf-8")
    env = {"VAULT_MEMORY_CONFIG": str(user), "VAULT_MEMORY_VAULT": str(vault), "VAULT_MEMORY_HALF_LIFE_LONG_DAYS": "50"}
    cfg = resolve_config({}, env=env)
    assert cfg.embedder == "fake:8"  # user file
    assert cfg.staged_ttl_days == 5  # vault file beats user file
    assert cfg.half_life_long_days == 50  # environment beats files
    assert resolve_config({"half_life_long_days": 70}, env=env).half_life_long_days == 70  # flags win


def test_vault_file_cannot_redirect_credentials_or_index(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / ".vault-memory.toml").write_text(
        'chroma_url = "http://evil.example:8000"\nollama_host = "http://evil.example"\nindex_dir = "/tmp/x"\n',
        encoding="utf-8",
    )
    cfg = resolve_config({"vault": vault}, env={"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml")})
    assert cfg.chroma_url is None and cfg.ollama_host is None and cfg.index_dir is None
    assert "ignoring chroma_url" in caplog.text


def test_a_vault_file_may_lower_a_limit_but_never_raise_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 41, finding 3: a vault's `max_note_bytes = 1073741824` undid the bounded read. Every setting
    that bounds what a run spends is the user's: a vault file may lower it, not raise it."""
    from vault_memory.config import LIMITS

    higher = {
        "max_note_bytes": 1 << 30,
        "exact_search_limit": 10**9,
        "prefetch_budget": 1_000_000,
        "prefetch_entry_cap": 1_000_000,
        "embed_timeout": 86_400.0,
    }
    assert set(higher) == LIMITS
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / ".vault-memory.toml").write_text("".join(f"{k} = {v}\n" for k, v in higher.items()), encoding="utf-8")
    defaults = Config(vault=vault)
    cfg, sources = resolve_config_sources({"vault": vault}, env={"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml")})
    for key in LIMITS:
        assert getattr(cfg, key) == getattr(defaults, key) and sources[key].kind == "default", key
        assert f"ignoring {key}" in caplog.text
    # the user's own file raises them; the vault may then ask for less, never for more
    user = tmp_path / "user.toml"
    user.write_text("max_note_bytes = 67108864\nprefetch_budget = 3000\n", encoding="utf-8")
    (vault / ".vault-memory.toml").write_text("max_note_bytes = 33554432\nprefetch_budget = 5000\n", encoding="utf-8")
    cfg = resolve_config({"vault": vault}, env={"VAULT_MEMORY_CONFIG": str(user)})
    assert cfg.max_note_bytes == 32 * 1024 * 1024 and cfg.prefetch_budget == 3000
    env = {"VAULT_MEMORY_CONFIG": str(user), "VAULT_MEMORY_PREFETCH_BUDGET": "9000"}
    assert resolve_config({"vault": vault}, env=env).prefetch_budget == 9000  # the environment is the user's


def test_bad_values_name_the_source(tmp_path: Path) -> None:
    env = {"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml"), "VAULT_MEMORY_STAGED_TTL_DAYS": "soon"}
    with pytest.raises(ConfigError, match="VAULT_MEMORY_STAGED_TTL_DAYS"):
        resolve_config({"vault": tmp_path}, env=env)
    with pytest.raises(ConfigError, match="no vault"):
        resolve_config({}, env={"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml")})
    (tmp_path / ".vault-memory.toml").write_text("read_only = maybe\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve_config({"vault": tmp_path}, env={"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml")})


def test_sources_name_where_each_value_came_from(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    user = tmp_path / "user.toml"
    user.write_text('embedder = "fake:8"\nstaged_ttl_days = 3\nhalf_life_long_days = 30\n', encoding="utf-8")
    vault_file = vault / ".vault-memory.toml"
    vault_file.write_text("staged_ttl_days = 5\nhalf_life_long_days = 40\nread_only = true\n", encoding="utf-8")
    env = {"VAULT_MEMORY_CONFIG": str(user), "VAULT_MEMORY_VAULT": str(vault), "VAULT_MEMORY_HALF_LIFE_LONG_DAYS": "50"}
    cfg, sources = resolve_config_sources({"prefetch_budget": 300, "chroma_url": None}, env=env)
    assert cfg == resolve_config({"prefetch_budget": 300, "chroma_url": None}, env=env)  # the same resolution
    assert sources["embedder"] == Source("user file", str(user))
    assert sources["staged_ttl_days"] == Source("vault file", str(vault_file))
    assert sources["half_life_long_days"] == Source("env", "VAULT_MEMORY_HALF_LIFE_LONG_DAYS")
    assert sources["vault"] == Source("env", "VAULT_MEMORY_VAULT")
    assert sources["prefetch_budget"] == Source("flag", "prefetch_budget")
    assert sources["chroma_url"] == Source("default")  # None is "not given", not a flag
    assert sources["read_only"].kind == "vault file" and cfg.read_only
    assert set(sources) == {f.name for f in dataclasses.fields(Config)} - {"extra"}
    assert str(sources["half_life_long_days"]) == "env (VAULT_MEMORY_HALF_LIFE_LONG_DAYS)"


def test_tests_do_not_see_the_developers_settings(isolated_env: Path) -> None:
    """The autouse fixture in conftest.py: no VAULT_MEMORY_* variables, and the user config file is in an
    empty home made for the test."""
    assert not [k for k in os.environ if k.startswith("VAULT_MEMORY_")]
    assert user_config_path(os.environ).is_relative_to(isolated_env)
    assert not user_config_path(os.environ).exists()
    assert Path.home() == isolated_env


def test_a_retired_setting_given_as_a_keyword_is_dropped_with_a_word(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`assign_ids` is no field of Config (issue 37): an old caller's `assign_ids=False` still loads,
    silently (it says what is always true now); any other retired keyword loads with a warning."""
    assert "assign_ids" not in {f.name for f in dataclasses.fields(Config)}
    with caplog.at_level("WARNING"):
        cfg = resolve_config({"vault": tmp_path, "assign_ids": False}, env={})
    assert cfg.vault == tmp_path and not caplog.records
    with caplog.at_level("WARNING"):
        resolve_config({"vault": tmp_path, "assign_ids": True, "reactivate_cap": 0.5}, env={})
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "assign_ids is no longer a setting" in said and "reactivate_cap is no longer a setting" in said


def test_a_config_built_in_code_takes_its_folders_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Config(vault="~/notes")` is what a person writes in a script: the folders given as text are
    paths (with `~` expanded, as on the command line), and nothing else is taken for one."""
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = Config(vault="~/notes", index_dir=str(tmp_path / "idx"))  # type: ignore[arg-type]
    assert cfg.vault == tmp_path / "notes" and isinstance(cfg.vault, Path)
    assert cfg.index_dir == tmp_path / "idx"
    assert Config(vault=tmp_path).resolved_index_dir.name.startswith(tmp_path.name)
    with pytest.raises(ConfigError, match="vault is empty"):
        Config(vault="  ")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a folder's path"):
        Config(vault=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="index_dir = 3"):
        Config(vault=tmp_path, index_dir=3)  # type: ignore[arg-type]
