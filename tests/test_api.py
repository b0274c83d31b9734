"""The Python API: `from vault_memory import Memory`, keyword settings, context manager, documented."""

from __future__ import annotations

import inspect
from pathlib import Path

import vault_memory
from vault_memory import Memory, PrefetchResult


def test_memory_from_keywords_as_a_context_manager(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    vault.mkdir()
    (vault / "tea.md").write_text("I drink green tea in the afternoon.\n")
    with Memory(vault=str(vault), index_dir=str(tmp_path / "ix"), embedder="fake") as mem:
        assert mem.config.embedder == "fake" and mem.embedder.identity.startswith("fake")
        mem.index()
        result = mem.prefetch("green tea in the afternoon")
        assert isinstance(result, PrefetchResult) and "tea.md" in result.block
        assert mem.recall("green tea")[0].path == "tea.md"
        mem.hold_writer_lock()
    assert not mem.lock.held  # closed on exit: another writer may take the index now
    with Memory(vault=vault, index_dir=tmp_path / "ix", embedder="fake") as again:
        again.hold_writer_lock(wait=0.5)


def test_every_public_method_is_documented_and_typed() -> None:
    for name, member in inspect.getmembers(Memory):
        if name.startswith("_"):
            continue
        target = member.fget if isinstance(member, property) else member
        assert inspect.getdoc(target), f"Memory.{name} has no docstring"
        if callable(target):
            hints = inspect.signature(target)
            assert hints.return_annotation is not inspect.Signature.empty, f"Memory.{name} has no return type"
    for name in vault_memory.__all__:
        assert inspect.getdoc(getattr(vault_memory, name)), name
