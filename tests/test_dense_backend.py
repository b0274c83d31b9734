"""Exact dense search over the catalog's vectors, and Chroma opened only when it is needed.

A one-shot `vault-memory recall` on an unchanged vault must not pay for importing chromadb
and loading its HNSW segment (~1.2 s of a ~2 s cold start); exact search over the catalog's
cached vectors must rank exactly as the ANN path does on a small vault, and must see every
change a reconcile makes, in this process or another.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import NOW, MemoryFactory
from vault_memory.index.vectorstore import VectorStore
from vault_memory.internals import internals

QUERIES = ["sourdough starter", "agent sandbox write access", "keep alive ollama", "tokyo trip", "gpu windows"]


def ranked(mem: object, mode: str = "dense") -> str:
    return json.dumps(
        [
            [h.to_dict() for h in mem.recall(q, k=5, touch=False, mode=mode, now=NOW)]  # type: ignore[attr-defined]
            for q in QUERIES
        ],
        sort_keys=True,
    )


def test_exact_search_ranks_like_chroma(make_memory: MemoryFactory, tmp_path: Path) -> None:
    exact = make_memory()
    exact.index()
    assert internals(exact).exact_search()
    ann = make_memory(index_dir=tmp_path / "ann", exact_search_limit=0)
    ann.index()
    assert not internals(ann).exact_search() and internals(ann).store is not None
    for mode in ("dense", "hybrid"):
        assert ranked(exact, mode) == ranked(ann, mode)


@pytest.mark.slow
def test_unchanged_vault_never_opens_chroma(make_memory: MemoryFactory, vault: Path, index_dir: Path) -> None:
    make_memory().index()
    make_memory().close()
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from vault_memory.config import Config
        from vault_memory.index.embedders import FakeEmbedder
        from vault_memory.memory import Memory
        cfg = Config(vault=Path({str(vault)!r}), index_dir=Path({str(index_dir)!r}), embedder="fake", read_only=True)
        with Memory(cfg, embedder=FakeEmbedder()) as mem:
            from vault_memory.internals import internals
            rep = internals(mem).ensure_current()
            hits = mem.recall("sourdough starter", k=3, touch=False)
            print(rep.counts["unchanged"], len(hits), "chromadb" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    unchanged, n_hits, imported = out.stdout.split()
    assert int(unchanged) > 40 and int(n_hits) == 3
    assert imported == "False", "a no-op reconcile and an exact recall must not import chromadb"


def test_exact_cache_follows_changes(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    mem.index()
    assert not any(
        "zeppelin" in h.text
        for h in mem.recall("zeppelin airship hangar", k=3, touch=False, mode="dense", granularity="chunk")
    )
    (vault / "Zeppelin.md").write_text(
        "# Zeppelin\n\nThe zeppelin airship hangar in Friedrichshafen.\n", encoding="utf-8"
    )
    mem.index()
    hits = mem.recall("zeppelin airship hangar", k=3, touch=False, mode="dense", granularity="chunk")
    assert hits and hits[0].path == "Zeppelin.md"
    # another process (here: another Memory) removes it; this one's cached matrix must notice
    other = make_memory()
    (vault / "Zeppelin.md").unlink()
    other.index()
    other.close()
    assert all(
        h.path != "Zeppelin.md"
        for h in mem.recall("zeppelin airship hangar", k=3, touch=False, mode="dense", granularity="chunk")
    )


def test_chroma_is_caught_up_when_a_write_opens_it(make_memory: MemoryFactory, vault: Path, index_dir: Path) -> None:
    # An index that has kept a store (it once outgrew exact_search_limit: here forced with 0) keeps
    # it, and serves from the catalog's vectors while it is within the limit again.
    first = make_memory(exact_search_limit=0)
    first.index()
    first.close()
    # The chroma folder is disposable: lose it. A no-op reconcile does not notice (nor need to) ...
    VectorStore.destroy(index_dir / "chroma")  # (and forget Chroma's cached client)
    mem = make_memory()
    rep = mem.index()
    assert rep.store_resynced == 0 and internals(mem)._store is None
    assert mem.recall("sourdough starter", k=3, touch=False)
    # ... the first write opens Chroma, finds it empty, and refills it from the catalog (no embedding).
    (vault / "New note.md").write_text("# New\n\nA brand new note about kites.\n", encoding="utf-8")
    rep = mem.index()
    assert rep.store_resynced > 0 and rep.texts_embedded == 1
    assert internals(mem).store is not None and internals(mem).store.ids() == internals(mem).catalog.chunk_ids()
    assert internals(mem).catalog.get_meta("store_dirty") == "0"


def test_large_vaults_use_chroma_and_check_it_first(make_memory: MemoryFactory, index_dir: Path) -> None:
    first = make_memory()
    first.index()
    first.close()
    VectorStore.destroy(index_dir / "chroma")  # (and forget Chroma's cached client)
    mem = make_memory(exact_search_limit=10)  # the sample vault has ~100 chunks: ANN path
    rep = mem.index()
    assert rep.store_resynced == internals(mem).catalog.chunk_count() > 10
    assert internals(mem).store is not None and internals(mem).store.ids() == internals(mem).catalog.chunk_ids()
    assert mem.recall("sourdough starter", k=3, touch=False, mode="dense")


def test_exact_rows_come_from_the_same_snapshot_as_the_vectors() -> None:
    """Another process may change the vectors between two reads of them: the row map a searcher
    uses must be the one of the matrix in hand (save_race caught rows of one generation applied
    to the matrix of the next: IndexError)."""
    from vault_memory.index.catalog import ChunkRow
    from vault_memory.search.search import Searcher

    two = (["a#0", "b#0"], np.eye(2, 4, dtype=np.float32))
    one = (["b#0"], np.eye(1, 4, k=2, dtype=np.float32))
    calls = iter([two, one, two, one, two, one])

    def exact() -> tuple[list[str], np.ndarray]:
        return next(calls)  # a new generation on every read

    def rows(ids: Any) -> dict[str, int]:
        return {c: i for i, c in enumerate(ids)}

    searcher = Searcher(None, None, None, exact=exact, rows=rows)  # type: ignore[arg-type]
    b = ChunkRow("b#0", "b", 0, "", "text b", "hb")
    for snapshot in (two, one, two):
        got = searcher.vectors_of([b])
        ids, mat = snapshot
        assert np.array_equal(got["hb"], mat[ids.index("b#0")])
