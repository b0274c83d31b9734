"""The Python API: `from vault_memory import Memory`, keyword settings, context manager, documented."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import vault_memory
from vault_memory import Memory, PrefetchResult
from vault_memory.internals import internals


def test_memory_from_keywords_as_a_context_manager(tmp_path: Path) -> None:
    vault = tmp_path / "notes"
    vault.mkdir()
    (vault / "tea.md").write_text("I drink green tea in the afternoon.\n")
    with Memory(vault=str(vault), index_dir=str(tmp_path / "ix"), embedder="fake") as mem:
        assert internals(mem).config.embedder == "fake" and internals(mem).embedder.identity.startswith("fake")
        mem.index()
        result = mem.prefetch("green tea in the afternoon")
        assert isinstance(result, PrefetchResult) and "tea.md" in result.block
        assert mem.recall("green tea")[0].path == "tea.md"
        internals(mem).hold_writer_lock()
    assert not internals(mem).lock.held  # closed on exit: another writer may take the index now
    with Memory(vault=vault, index_dir=tmp_path / "ix", embedder="fake") as again:
        internals(again).hold_writer_lock(wait=0.5)


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


def _readme_operations() -> set[str]:
    """The operations the docs list as `Memory`'s public methods: docs/python-api.md's headings
    (one `### `Memory.name(...)`` each) when it exists, else README "Python API" ("every public
    method is documented: `index`, ...") and `close` (README: "Closing ... releases the index")."""
    root = Path(__file__).resolve().parent.parent
    page = root / "docs" / "python-api.md"
    if page.is_file():
        return set(re.findall(r"^### `Memory\.(\w+)\(", page.read_text(encoding="utf-8"), re.M))
    text = root.joinpath("README.md").read_text("utf-8")
    text = text[text.index("### Python API") :]
    text = text[: text.index("\n## ")]
    listed = re.search(r"every public method is documented:(.*?)\.\s", text, re.S)
    assert listed, "the docs no longer list Memory's public methods"
    names = set(re.findall(r"`(\w+)`", listed.group(1)))
    assert "Closing" in text or "close" in names
    return names | {"close"}


def test_memorys_public_members_are_exactly_the_documented_operations() -> None:
    from vault_memory.memory import DOCUMENTED_OPERATIONS

    public = {name for name in dir(Memory) if not name.startswith("_")}
    assert public == set(DOCUMENTED_OPERATIONS) == _readme_operations()
    assert list(DOCUMENTED_OPERATIONS) == sorted(DOCUMENTED_OPERATIONS)
