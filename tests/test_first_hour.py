"""The first hour (issue 25): the quick start answers by meaning, and each friction a newcomer
met on a fresh clone, reproduced the way a person meets it (through the installed console
script where the edge matters, in process for the fast lane)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE, MemoryFactory, snapshot
from vault_memory import memory as memory_mod
from vault_memory.cli.main import execute
from vault_memory.embedders import FakeEmbedder

EXE = str(Path(sys.executable).parent / "vault-memory")
#: The README's quick-start query: no word of it is in Coffee.md ("first thing after I get up"),
#: so only meaning finds it. "... in the morning" is not it: "morning" is a keyword of
#: Daily/2026-10-03 ("Allotment in the morning."), which then ranks first, rightly, by BM25 and
#: its best sentence.
QUICK_START_QUERY = "which hot drink does she start the day with"


def script(args: list[str], cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, cwd=cwd, env={**os.environ, **env}, timeout=300, check=False
    )


def cli(*args: str) -> tuple[int, str, str]:
    """`execute` in process (the console script's own code path): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = execute(list(args))
    return code, out.getvalue(), err.getvalue()


def bulk(vault: Path, n: int) -> None:
    (vault / "Bulk").mkdir(exist_ok=True)
    for i in range(n):
        (vault / f"Bulk/note {i}.md").write_text(
            f"# Bulk {i}\n\nBulk note {i} is about kettles and zebra{i % 7}, with enough words to make it a "
            "paragraph of ordinary length that costs the embedder a few dozen tokens.\n",
            encoding="utf-8",
        )


# -- 1. the quick start ----------------------------------------------------------------------


@pytest.mark.model
def test_quick_start_command_answers_coffee_first_on_a_fresh_clone() -> None:
    """The README's first command, exactly as written, from the repository, with an empty cache."""
    before = snapshot(SAMPLE)
    out = script(["--vault", "sample_vault", "--read-only", "recall", QUICK_START_QUERY], cwd=REPO)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("1. Coffee  (Preferences/Coffee.md"), out.stdout
    assert "first run: embedding this vault's" in out.stderr and "keyword-only" not in out.stderr, out.stderr
    assert snapshot(SAMPLE) == before, "--read-only: the demo writes nothing into the repository"


def test_a_small_vault_is_embedded_before_the_first_answer(vault: Path, index_dir: Path) -> None:
    code, out, err = cli("--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "recall", "tea")
    assert code == 0, err
    assert "first run: embedding this vault's" in err and "before answering" in err
    assert "no vector yet" not in err and "keyword-only" not in err


def test_a_large_vault_answers_by_keyword_meanwhile_and_says_why(
    vault: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bulk(vault, 40)
    monkeypatch.setattr(memory_mod, "READER_EMBED_TOKENS", 500)  # a large vault, in tokens
    code, out, err = cli("--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake", "recall", "zebra3")
    assert code == 0, err
    assert out.startswith("1. Bulk ") and "zebra3" in out.splitlines()[1], out
    assert "first run" not in err
    assert "no vector yet (more than a command embeds before it answers; `vault-memory index` embeds them" in err
    assert "results are keyword-only (BM25) meanwhile" in err


def test_the_reader_budget_is_in_tokens_not_texts(make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedding costs tokens: few texts of many tokens are left to `index` as many small ones are."""
    fake = FakeEmbedder()
    mem = make_memory(fake)
    indexer = mem.indexer()
    texts = {c.text_hash: c.text for n in indexer.scan().parsed.values() for c in indexer.chunk_note("x", n)}
    tokens = sum(fake.count_tokens(t) for t in texts.values())
    assert len(texts) < memory_mod.READER_EMBED_BUDGET and tokens < memory_mod.READER_EMBED_TOKENS
    monkeypatch.setattr(memory_mod, "READER_EMBED_TOKENS", tokens - 1)
    report = mem.ensure_current()
    assert report is not None and report.texts_embedded == 0 and fake.texts_embedded == 0
    assert mem.vectors().pending == mem.vectors().chunks > 0
    monkeypatch.setattr(memory_mod, "READER_EMBED_TOKENS", tokens)
    report = mem.ensure_current()
    assert report is not None and report.texts_embedded == len(texts) and mem.vectors().complete
