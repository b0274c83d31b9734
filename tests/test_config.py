"""Configuration precedence and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault_memory.config import resolve_config
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
        encoding="utf-8")
    cfg = resolve_config({"vault": vault}, env={"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml")})
    assert cfg.chroma_url is None and cfg.ollama_host is None and cfg.index_dir is None
    assert "ignoring chroma_url" in caplog.text


def test_bad_values_name_the_source(tmp_path: Path) -> None:
    env = {"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml"), "VAULT_MEMORY_STAGED_TTL_DAYS": "soon"}
    with pytest.raises(ConfigError, match="VAULT_MEMORY_STAGED_TTL_DAYS"):
        resolve_config({"vault": tmp_path}, env=env)
    with pytest.raises(ConfigError, match="no vault"):
        resolve_config({}, env={"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml")})
    (tmp_path / ".vault-memory.toml").write_text("read_only = maybe\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve_config({"vault": tmp_path}, env={"VAULT_MEMORY_CONFIG": str(tmp_path / "none.toml")})
