"""Shared fixtures: a temporary copy of sample_vault/ and Memory objects over it."""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vault_memory.config import Config
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.memory import Memory
from vault_memory.vault import atomic

REPO = Path(__file__).resolve().parent.parent
HAS_FCNTL = importlib.util.find_spec("fcntl") is not None
# Without fcntl on a POSIX system (the simulation in tests/no_fcntl/), mcp's stdio server cannot be
# imported (it imports fcntl there); on Windows it can.
collect_ignore = ["test_mcp.py"] if not HAS_FCNTL and sys.platform != "win32" else []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Model tests are slow tests (the fast lane leaves them out); POSIX-only tests are skipped where
    fcntl is absent (Windows) instead of failing."""
    no_posix = pytest.mark.skip(reason="needs POSIX (fcntl is absent on this platform)")
    for item in items:
        if item.get_closest_marker("model") is not None:
            item.add_marker(pytest.mark.slow)
        if not HAS_FCNTL and item.get_closest_marker("posix") is not None:
            item.add_marker(no_posix)


SAMPLE = REPO / "sample_vault"
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="session")
def shared_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One MiniLM integer-graph cache for the session (one per xdist worker): building and checking it
    costs ~1.5 s, which every model test would pay again in its empty home. Tests of the cache itself
    pass their own `cache_dir`."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, shared_model_cache: Path
) -> Path:
    """Every test runs without the developer's settings: no VAULT_MEMORY_* or OLLAMA_HOST variables, and a
    fresh, empty home, so no user config file (~/.config/vault-memory/config.toml, XDG_CONFIG_HOME) and no
    user cache leak in. Subprocesses inherit the same environment. Returns the home folder."""
    for key in list(os.environ):
        if key.startswith("VAULT_MEMORY_") or key == "OLLAMA_HOST":
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("home")
    for var, path in {
        "HOME": home,
        "USERPROFILE": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
    }.items():
        monkeypatch.setenv(var, str(path))
    (home / ".cache" / "vault-memory").mkdir(parents=True)
    (home / ".cache" / "vault-memory" / "models").symlink_to(shared_model_cache, target_is_directory=True)
    return home


@pytest.fixture(autouse=True)
def _fresh_files_are_quiet(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests write a note and edit it a moment later; the in-place-save guard would make each of
    them wait `QUIET_SECONDS`. Tests of the guard itself are marked `save_race` and keep it."""
    if request.node.get_closest_marker("save_race") is None:
        monkeypatch.setattr(atomic, "QUIET_SECONDS", 0.0)


@pytest.fixture()
def vault(tmp_path: Path) -> Path:
    dst = tmp_path / "vault"
    shutil.copytree(SAMPLE, dst, symlinks=True)
    return dst


@pytest.fixture()
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


MemoryFactory = Callable[..., Memory]


@pytest.fixture()
def make_memory(vault: Path, index_dir: Path) -> Iterator[MemoryFactory]:
    opened: list[Memory] = []

    def factory(embedder: Any = None, calibration: Any = None, rules: Any = None, **overrides: Any) -> Memory:
        cfg = Config(
            vault=overrides.pop("vault", vault),
            index_dir=overrides.pop("index_dir", index_dir),
            embedder="fake",
            **overrides,
        )
        mem = Memory(cfg, embedder=embedder or FakeEmbedder(), clock=lambda: NOW, calibration=calibration, rules=rules)
        opened.append(mem)
        return mem

    yield factory
    for mem in opened:
        mem.close()


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes), dot-folders included."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write_notes(root: Path, notes: dict[str, str]) -> Path:
    """A vault at root holding these notes (vault path -> text), folders made as needed."""
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root
