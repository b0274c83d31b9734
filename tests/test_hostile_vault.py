"""Notes that misbehave never stop the vault (issue 12): alias bombs, symlink loops, links to notes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MemoryFactory
from vault_memory.doctor import diagnose
from vault_memory.errors import NoteParseError
from vault_memory.internals import internals
from vault_memory.vault.notefile import parse_note

EXE = str(Path(sys.executable).parent / "vault-memory")

BOMB = (
    "---\na: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n---\n# Laughs\n\nbody\n"
)


def test_a_yaml_alias_bomb_is_skipped_in_milliseconds(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "bomb.md").write_text(BOMB, encoding="utf-8")
    assert len(BOMB) < 1024
    (vault / "fine.md").write_text("# Fine\n\nThe rest of the vault is indexed.\n", encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(NoteParseError, match="aliases"):
        parse_note("bomb.md", BOMB.encode())
    assert time.perf_counter() - started < 0.5  # milliseconds in fact; generous for a loaded CI machine
    mem = make_memory(vault=vault)
    report = mem.index()
    assert "aliases" in report.failures["bomb.md"] and "bomb.md" not in {r.path for r in internals(mem).catalog.notes()}
    assert [h.path for h in mem.recall("rest of the vault", touch=False)] == ["fine.md"]


def test_symlink_loops_and_links_to_notes_are_reported_once_and_settle(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "real.md").write_text("# Real\n\nThe real note about lighthouses.\n", encoding="utf-8")
    os.symlink(vault / "b.md", vault / "a.md")  # a -> b -> a
    os.symlink(vault / "a.md", vault / "b.md")
    os.symlink(vault / "self.md", vault / "self.md")
    os.symlink(vault / "real.md", vault / "alias.md")  # a link to a note: the target is indexed, once
    os.symlink(vault, vault / "loop-folder")
    mem = make_memory(vault=vault)
    first = mem.index()
    assert {r.path for r in internals(mem).catalog.notes()} == {"real.md"}
    assert set(first.passed) == {"a.md", "b.md", "self.md", "alias.md"}
    assert "loops" in first.passed["self.md"] and "real.md" in first.passed["alias.md"]
    again = mem.index()
    assert again.counts["unchanged"] == 1 and sum(again.counts.values()) == 1  # settled
    assert (vault / "real.md").read_text(encoding="utf-8").startswith("# Real")  # no id written, ever
    assert diagnose(mem).ok
    assert [h.path for h in mem.recall("lighthouses", touch=False)] == ["real.md"]
    assert set(mem.status()["passed_over"]) == {"a.md", "b.md", "self.md", "alias.md"}
    internals(mem).sync_paths(["a.md", "self.md", "alias.md"])  # the watcher's path: same rule, no crash


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_cli_survives_symlink_loops(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "n.md").write_text("# N\n\nnote\n", encoding="utf-8")
    os.symlink(vault / "self.md", vault / "self.md")
    base = [EXE, "--vault", str(vault), "--index-dir", str(tmp_path / "i"), "--embedder", "fake"]
    for args in (["index"], ["status"], ["doctor"], ["recall", "note"], ["remember", "A fact to keep."]):
        out = subprocess.run([*base, *args], capture_output=True, text=True, timeout=120)
        assert "Traceback" not in out.stderr, (args, out.stderr)
        assert out.returncode == 0, (args, out.stderr)


def test_a_note_too_big_for_the_memory_there_is_is_skipped_naming_it(
    make_memory: MemoryFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MemoryError reading, parsing or chunking a note (a `max_note_bytes` raised past what the machine
    allows) skips that note with a message naming it and the setting, never a traceback; the rest of the
    vault is indexed, `read` says why, and status and doctor list it."""
    from vault_memory.errors import NoteParseError
    from vault_memory.index import indexer
    from vault_memory.vault import notefile

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "huge.md").write_text("# Huge\n\nAn export of everything.\n", encoding="utf-8")
    (vault / "long.md").write_text("# Long\n\nOne line of a thousand words.\n", encoding="utf-8")
    (vault / "fine.md").write_text("# Fine\n\nThe rest of the vault is indexed.\n", encoding="utf-8")
    parse, chunk = notefile.parse_note, indexer.Indexer.chunk_note

    def parse_or_fail(rel: str, raw: bytes, mtime: float = 0.0, **how: bool) -> notefile.ParsedNote:
        if rel == "huge.md":
            raise MemoryError
        return parse(rel, raw, mtime, **how)

    def chunk_or_fail(self: indexer.Indexer, node_id: str, note: notefile.ParsedNote) -> list[Any]:
        if note.path == "long.md":
            raise MemoryError
        return chunk(self, node_id, note)

    monkeypatch.setattr(indexer, "parse_note", parse_or_fail)
    monkeypatch.setattr(notefile, "parse_note", parse_or_fail)
    monkeypatch.setattr(indexer.Indexer, "chunk_note", chunk_or_fail)
    mem = make_memory(vault=vault)
    report = mem.index()
    assert "not enough memory to read it" in report.failures["huge.md"]
    assert "max_note_bytes" in report.failures["huge.md"]
    assert [r.path for r in internals(mem).catalog.notes()] == ["fine.md"]
    assert "not enough memory to chunk it" in mem.status()["failures"]["long.md"]
    assert set(diagnose(mem).unreadable) == {"huge.md", "long.md"}
    with pytest.raises(NoteParseError, match="huge.md: not enough memory"):
        mem.read("huge.md")


@pytest.mark.slow  # spawns processes
@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_AS through preexec_fn")
def test_a_limit_raised_past_the_memory_there_is_is_a_skipped_file_not_a_traceback(tmp_path: Path) -> None:
    """Issue 41, finding 3 as reported: a 1000 MB sparse note under `ulimit -v` killed index, recall,
    status and doctor with a MemoryError traceback. The vault's own file can no longer raise the limit
    (the note is refused by its size); raised by the user, the note is skipped with a message naming it."""
    import resource

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# Tea\n\nA note about tea.\n", encoding="utf-8")
    (vault / ".vault-memory.toml").write_text("max_note_bytes = 1073741824\n", encoding="utf-8")
    with open(vault / "big.md", "wb") as f:
        f.truncate(1000 * 1024 * 1024)
    base = [EXE, "--vault", str(vault), "--index-dir", str(tmp_path / "i"), "--embedder", "fake"]

    def small_memory() -> None:  # about 1.1 GB of address space: python and the CLI, not the note too
        resource.setrlimit(resource.RLIMIT_AS, (1_100_000 * 1024, 1_100_000 * 1024))

    for raised in ("", "1073741824"):
        env = {**os.environ, "VAULT_MEMORY_MAX_NOTE_BYTES": raised}
        for args in (["index"], ["recall", "tea"], ["status"], ["doctor"]):
            out = subprocess.run(
                [*base, *args], capture_output=True, text=True, env=env, timeout=120, preexec_fn=small_memory
            )
            assert out.returncode == 0 and "Traceback" not in out.stderr and "MemoryError" not in out.stderr, (
                raised,
                args,
                out.stderr[-800:],
            )
        said = out.stdout + out.stderr
        assert "big.md" in said and ("not enough memory" in said if raised else "max_note_bytes" in said), said
