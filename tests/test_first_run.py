"""A first index that serves by keyword while vectors fill in, stat stamps instead of re-reading
unchanged notes, no HNSW index below exact_search_limit, and query vectors embedded once."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import NOW, MemoryFactory
from vault_memory.doctor import diagnose
from vault_memory.index import indexer as indexer_mod
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.memory import READER_EMBED_BUDGET


def rows(mem: Any) -> set[tuple[str, str, str, str]]:
    return {(r.node_id, r.path, r.file_hash, r.body_hash) for r in internals(mem).catalog.notes()}


def chunks(mem: Any) -> set[tuple[str, str]]:
    return {(c, h) for c, h in internals(mem).catalog.db.execute("SELECT chunk_id, text_hash FROM chunks")}


def bulk(vault: Path, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        (vault / "Bulk").mkdir(exist_ok=True)
        (vault / f"Bulk/note {i}.md").write_text(
            f"# Bulk {i}\n\nBulk note {i} mentions the word zebra{i % 7} and kettle.\n\n## More\n\nLine {i}.\n",
            encoding="utf-8",
        )


# -- catalog first, vectors after -------------------------------------------------------------


def test_catalog_first_serves_by_keyword_then_fills_to_what_a_rebuild_gives(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake)
    report = mem.index(embed_budget=0)  # every note into the catalog, no vector yet
    assert fake.texts_embedded == 0 and report.texts_embedded == 0
    total = internals(mem).catalog.chunk_count()
    assert report.texts_pending > 0 and mem.vectors().embedded == 0 and mem.vectors().chunks == total
    status = mem.status()
    assert status["recall"] == "lexical-only" and status["vectors"]["pending"] == total
    hits = mem.recall("sourdough starter", k=3, touch=False, now=NOW)
    assert hits and all(h.lexical_only for h in hits)
    assert hits[0].path == "Preferences/Food.md"  # the one note that mentions sourdough
    assert not diagnose(mem).ok and any("no vector yet" in p for p in diagnose(mem).problems())

    queries = fake.texts_embedded
    assert queries == 0  # no chunk has a vector: no cosine to judge dormancy by, so not even the query
    step = internals(mem).fill_vectors(limit=10)
    assert step.texts_embedded == 10 == fake.texts_embedded - queries
    assert 0 < mem.vectors().embedded < total and not mem.vectors().complete
    rest = mem.index()
    assert rest.texts_pending == 0 and mem.vectors().complete
    assert fake.texts_embedded - queries == step.texts_embedded + rest.texts_embedded + rest.sentences_embedded, (
        "nothing embedded twice"
    )
    hits = mem.recall("sourdough starter", k=3, touch=False, now=NOW)
    assert hits and not any(h.lexical_only for h in hits)
    assert diagnose(mem).ok

    clean = make_memory(index_dir=tmp_path / "rebuilt")
    clean.index(rebuild=True)
    assert rows(clean) == rows(mem) and chunks(clean) == chunks(mem)
    assert np.array_equal(
        internals(clean).catalog.all_chunk_vectors()[1], internals(mem).catalog.all_chunk_vectors()[1]
    )
    for mode in ("hybrid", "dense", "bm25"):
        assert [h.to_dict() for h in clean.recall("sourdough starter", k=5, mode=mode, touch=False, now=NOW)] == [
            h.to_dict() for h in mem.recall("sourdough starter", k=5, mode=mode, touch=False, now=NOW)
        ]


def test_catalog_first_commits_notes_while_it_is_still_chunking(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the budget the writer does not chunk the whole vault before its first row: a reader
    finds the first notes while the rest are still being chunked."""
    mem = make_memory()
    seen: list[int] = []
    real = indexer_mod.Indexer.chunk_note

    def spy(self: Any, node_id: str, note: Any) -> Any:
        seen.append(internals(mem).catalog.chunk_count())
        return real(self, node_id, note)

    monkeypatch.setattr(indexer_mod, "COMMIT_CHUNKS", 8)
    monkeypatch.setattr(indexer_mod.Indexer, "chunk_note", spy)
    mem.index(embed_budget=0)
    assert seen[0] == 0 and seen[-1] > 0, "rows were committed before the last note was chunked"


def test_reader_embeds_a_few_texts_and_leaves_a_first_index_to_the_writer(
    make_memory: MemoryFactory, vault: Path
) -> None:
    bulk(vault, READER_EMBED_BUDGET)  # more new texts than a reader embeds
    fake = FakeEmbedder()
    mem = make_memory(fake)
    report = internals(mem).ensure_current()
    assert report is not None and report.counts["new"] > READER_EMBED_BUDGET
    assert fake.texts_embedded == 0, "a reader never embeds a first index"
    assert report.texts_pending == mem.vectors().pending > READER_EMBED_BUDGET
    hits = mem.recall("zebra3 kettle", k=3, touch=False, now=NOW)
    assert hits and hits[0].path.startswith("Bulk/") and hits[0].lexical_only
    mem.index()
    before = fake.texts_embedded
    # A few new notes later: embedded on the spot, so recall stays hybrid.
    bulk(vault, 3, start=1000)
    report = internals(mem).ensure_current()
    assert report is not None and report.counts["new"] == 3 and report.texts_pending == 0
    assert 0 < fake.texts_embedded - before <= 3 * 2 + 1
    assert not mem.recall("zebra3 kettle", k=3, touch=False, now=NOW)[0].lexical_only


def test_an_interrupted_fill_resumes_without_reembedding(make_memory: MemoryFactory) -> None:
    class Failing(FakeEmbedder):
        def embed(self, texts: Any) -> Any:
            if self.texts_embedded >= 20:
                raise RuntimeError("killed")
            return super().embed(texts)

    failing = Failing()
    mem = make_memory(failing, index_sentences=False)  # chunks only (sentence vectors: test_sentences.py)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(indexer_mod, "EMBED_SLICE", 10)
    monkey.setattr(indexer_mod, "INLINE_TEXTS", 0)  # as for a vault of thousands of notes: catalog first
    try:
        with pytest.raises(RuntimeError):
            mem.index()
    finally:
        monkey.undo()
    # The rows went in first: the vault is searchable by keyword, 20 texts already have vectors.
    assert internals(mem).catalog.chunk_count() > 20 and mem.vectors().embedded >= 20
    assert internals(mem).catalog.get_meta("embedding_pending") == "1"
    mem.close()
    fresh = FakeEmbedder()
    again = make_memory(fresh, index_sentences=False)
    report = again.index()
    assert report.counts["unchanged"] == report.notes, "the rows were all written before the embedding"
    assert (
        report.texts_embedded == fresh.texts_embedded == internals(again).catalog.chunk_count() - 20 - duplicates(again)
    )
    assert again.vectors().complete and internals(again).catalog.get_meta("embedding_pending") == "0"


def duplicates(mem: Any) -> int:
    """Chunks whose text another chunk also has (embedded once for both)."""
    (n,) = internals(mem).catalog.db.execute("SELECT count(*) - count(DISTINCT text_hash) FROM chunks").fetchone()
    return int(n)


@pytest.mark.slow
@pytest.mark.posix
def test_recall_answers_within_seconds_while_another_process_embeds(vault: Path, index_dir: Path) -> None:
    """A first index in another process, with an embedder slow enough to take minutes: a one-shot
    `recall` answers by keyword from what is catalogued, says so, and does not wait for it."""
    bulk(vault, 300)
    slow_index = textwrap.dedent("""
        import sys, time
        import vault_memory.index.indexer
        vault_memory.index.indexer.INLINE_TEXTS = 100  # the 5,000 chunks of 2,000 notes, in less test time
        from vault_memory.index.embedders import FakeEmbedder
        real = FakeEmbedder.embed
        def slow(self, texts):  # 20 texts a second: minutes for this vault
            time.sleep(0.05 * len(texts))
            return real(self, texts)
        FakeEmbedder.embed = slow
        from vault_memory.cli import run
        sys.argv = ["vault-memory", *sys.argv[1:]]
        run()
    """)
    args = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    started = time.monotonic()
    writer = subprocess.Popen(
        [sys.executable, "-c", slow_index, *args, "index"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = started + 60
        while not (index_dir / "catalog.sqlite").exists() or not notes_in(index_dir):
            assert writer.poll() is None and time.monotonic() < deadline, "the writer did not start"
            time.sleep(0.05)
        answered = None
        while time.monotonic() < deadline and answered is None:
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "from vault_memory.cli import run; run()",
                    *args,
                    "--read-only",
                    "recall",
                    "zebra3 kettle",
                    "--json",
                    "--no-touch",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert out.returncode == 0, out.stderr
            got = json.loads(out.stdout)
            if got["count"]:
                answered = (time.monotonic() - started, got, out.stderr)
        assert answered is not None, "recall never answered while the index was being built"
        seconds, got, stderr = answered
        assert writer.poll() is None, "the writer finished: the vault was not big enough to test this"
        assert got["lexical_only"] and not got["vectors"]["complete"], got
        assert all(h["path"].startswith("Bulk/") for h in got["hits"][:1])
        assert "no vector yet" in stderr and f"process {writer.pid}" in stderr
        assert seconds < 30, f"took {seconds:.1f}s"
    finally:
        writer.kill()
        writer.wait()


def notes_in(index_dir: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{index_dir / 'catalog.sqlite'}?mode=ro", uri=True)
        try:
            return int(db.execute("SELECT count(*) FROM notes").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


# -- stat stamps ------------------------------------------------------------------------------


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []
    real = open

    def counting(path: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(indexer_mod, "open", counting, raising=False)
    return opened


def age(vault: Path, seconds: float = 60.0) -> None:
    """Make every note look written a while ago (stamps of files changed just now are not trusted)."""
    then = time.time() - seconds
    for p in vault.rglob("*.md"):
        os.utime(p, (then, then))


def test_unchanged_notes_are_not_read_again(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory()
    age(vault)
    # ctime moved with the utime above; stamps need it RACY_SECONDS in the past too
    monkeypatch.setattr(indexer_mod, "RACY_SECONDS", 0.0)
    mem.index()
    opened = count_reads(monkeypatch)
    report = mem.index()
    assert report.counts["unchanged"] == report.notes and opened == []
    # An edit that keeps the size and puts the modification time back is still seen (ctime moved).
    path = vault / "Preferences/Food.md"
    st = path.stat()
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"a", b"e", 1) if b"a" in raw else raw + b"!")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    report = mem.index()
    assert report.counts["unchanged"] == report.notes - 1 and opened == [str(path)]


def paths_found(mem: Any, query: str) -> set[str]:
    """What a reader finds after bringing the index up to date as the CLI does (ensure_current)."""
    internals(mem).ensure_current()
    return {h.path for h in mem.recall(query, k=10, touch=False, now=NOW, mode="bm25")}


def test_trusted_stamps_never_hide_a_change(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With every stamp trusted, each kind of change is still seen by the next reader: an edit
    in place (same size, modification time put back: the folder's mtime does not move), a new
    note in a new subfolder, a rename, a delete. Stamps skip reading a file, never its stat."""
    mem = make_memory()
    age(vault)
    monkeypatch.setattr(indexer_mod, "RACY_SECONDS", 0.0)
    mem.index()
    mem.index()  # every stamp recorded and trusted from here on
    opened = count_reads(monkeypatch)
    assert internals(mem).ensure_current() is not None and opened == []

    # in place: same size, mtime set back, the folder untouched
    path = vault / "Preferences/Food.md"
    folder_mtime = path.parent.stat().st_mtime_ns
    st = path.stat()
    raw = path.read_bytes()
    word = raw.split(b"sourdough", 1)
    assert len(word) == 2
    path.write_bytes(b"quokkaxyz".join(word))  # same length as "sourdough"
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert path.parent.stat().st_mtime_ns == folder_mtime
    assert paths_found(mem, "quokkaxyz") == {"Preferences/Food.md"}

    # a new note in a new subfolder (the vault root's folder listing is what changed)
    (vault / "Projects/Deep/Deeper").mkdir(parents=True)
    (vault / "Projects/Deep/Deeper/Wombat.md").write_text("# Wombat\n\nThe wombatqq burrow plan.\n", encoding="utf-8")
    assert paths_found(mem, "wombatqq") == {"Projects/Deep/Deeper/Wombat.md"}

    # a rename, and a rename that swaps two notes' contents under the same names
    (vault / "Projects/Deep/Deeper/Wombat.md").rename(vault / "Projects/Deep/Burrow.md")
    assert paths_found(mem, "wombatqq") == {"Projects/Deep/Burrow.md"}
    a, b = vault / "Projects/Deep/Burrow.md", vault / "Preferences/Food.md"
    tmp = vault / "swap.tmp"
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)
    assert paths_found(mem, "wombatqq") == {"Preferences/Food.md"}
    assert paths_found(mem, "quokkaxyz") == {"Projects/Deep/Burrow.md"}

    # a delete
    (vault / "Projects/Deep/Burrow.md").unlink()
    assert paths_found(mem, "quokkaxyz") == set()
    assert diagnose(mem).ok


def test_a_note_changed_just_before_it_was_read_is_read_again(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory()
    mem.index()  # every file was written a moment ago: none of their stamps is trusted yet
    opened = count_reads(monkeypatch)
    mem.index()
    assert len(opened) >= 40


def test_doctor_reads_every_note(make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = make_memory()
    age(vault)
    monkeypatch.setattr(indexer_mod, "RACY_SECONDS", 0.0)
    mem.index()
    opened = count_reads(monkeypatch)
    assert diagnose(mem).ok
    assert len(opened) >= 40


# -- no HNSW below exact_search_limit ---------------------------------------------------------


@pytest.mark.slow  # spawns a process or takes over 2 s
def test_small_local_index_keeps_no_store_until_it_outgrows_exact_search(
    make_memory: MemoryFactory, index_dir: Path
) -> None:
    mem = make_memory()
    mem.index()
    assert not internals(mem).keeps_store() and not (index_dir / "chroma").exists()
    assert internals(mem).exact_search() and internals(mem).catalog.get_meta("store") == "none"
    assert mem.status()["vector_store"]["backend"] == "exact" and diagnose(mem).ok
    mem.close()
    # Past the limit: the store is filled from the catalog's vectors, embedding nothing.
    fake = FakeEmbedder()
    big = make_memory(fake, exact_search_limit=10)
    report = big.index()
    assert report.store_resynced == internals(big).catalog.chunk_count() and fake.texts_embedded == 0
    assert (
        internals(big).keeps_store()
        and internals(big).catalog.get_meta("store") == "live"
        and not internals(big).exact_search()
    )
    assert internals(big).store is not None and internals(big).store.ids() == internals(big).catalog.chunk_ids()
    assert diagnose(big).ok
    hits = big.recall("sourdough starter", k=3, touch=False, now=NOW)
    assert hits and not hits[0].lexical_only


def test_a_store_left_by_an_earlier_version_is_removed(make_memory: MemoryFactory, index_dir: Path) -> None:
    old = make_memory(exact_search_limit=0)  # what every local index kept before
    old.index()
    assert (index_dir / "chroma").exists()
    old.close()
    db = sqlite3.connect(index_dir / "catalog.sqlite")
    db.execute("DELETE FROM meta WHERE key = 'store'")  # as an earlier version left it
    db.commit()
    db.close()
    mem = make_memory()
    mem.index()
    assert not (index_dir / "chroma").exists() and internals(mem).catalog.get_meta("store") == "none"
    assert diagnose(mem).ok


# -- query vectors ----------------------------------------------------------------------------


class _Recording(FakeEmbedder):
    """Remembers every text it embedded: recall also embeds the answer windows (sentences) of its
    best candidates (windows.py), once each, so the query is counted by its text."""

    def __init__(self, *, delay: float = 0.0) -> None:
        super().__init__()
        self.delay, self.seen = delay, []

    def embed(self, texts: Any) -> Any:
        time.sleep(self.delay)
        self.seen += list(texts)
        return super().embed(texts)


def test_a_query_is_embedded_once_across_processes(make_memory: MemoryFactory) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake)
    mem.index()
    mem.close()
    first = _Recording()
    a = make_memory(first)
    hits_a = a.recall("sourdough starter", k=3, touch=False, now=NOW)
    assert first.seen.count("sourdough starter") == 1
    a.recall("sourdough starter", k=3, touch=False, now=NOW)
    assert first.seen.count("sourdough starter") == 1, "a long-lived process embeds a query once"
    assert len(first.seen) == len(set(first.seen)), "nor any answer window twice"
    a.close()
    second = _Recording()
    b = make_memory(second)
    assert [h.to_dict() for h in b.recall("sourdough starter", k=3, touch=False, now=NOW)] == [
        h.to_dict() for h in hits_a
    ]
    assert second.seen == [], "a one-shot process finds the query and its windows in the index folder"
    b.recall("sourdough starters", k=3, touch=False, now=NOW)
    assert second.seen.count("sourdough starters") == 1
    other = make_memory(FakeEmbedder(dim=32), index_dir=internals(b).index_dir.parent / "other")
    assert internals(other).embedder.embed(["sourdough starter"]).shape == (1, 32), "never another model's vector"


def test_warm_query_embeds_in_the_background_once(make_memory: MemoryFactory) -> None:
    slow = _Recording(delay=0.2)
    mem = make_memory(slow)
    mem.index()
    started = time.monotonic()
    internals(mem).warm_query("agent sandbox write access")
    assert time.monotonic() - started < 0.15, "warming does not block"
    hits = mem.recall("agent sandbox write access", k=3, touch=False, now=NOW)
    assert hits and slow.seen.count("agent sandbox write access") == 1


def test_an_unusable_query_cache_is_only_a_miss(make_memory: MemoryFactory, index_dir: Path) -> None:
    mem = make_memory()
    mem.index()
    mem.close()
    (index_dir / "query-vectors.sqlite").write_bytes(b"not a database at all" * 100)
    again = make_memory()
    assert again.recall("sourdough starter", k=3, touch=False, now=NOW)


def test_batches_pass_through_the_query_cache(make_memory: MemoryFactory) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake)
    internals(mem).embedder.embed(["one", "two"])
    internals(mem).embedder.embed(["one", "two"])
    assert fake.texts_embedded == 4
    with pytest.raises(TypeError):
        internals(mem).embedder.embed("one")  # type: ignore[arg-type]
    shutil.rmtree(internals(mem).index_dir, ignore_errors=True)


# -- the settled vault: a no-op reconcile that reads no catalog rows ---------------------------


def settled(mem: Any, vault: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Index until every note is stamped and the catalog is marked settled; returns a list that
    records each full scan from then on (Indexer.scan is what the settled path skips)."""
    age(vault)
    monkeypatch.setattr(indexer_mod, "RACY_SECONDS", 0.0)
    mem.index()
    mem.index()
    assert internals(mem).catalog.get_meta(indexer_mod.SETTLED_KEY)
    scans: list[str] = []
    real = indexer_mod.Indexer.scan

    def scan(self: Any, paths: Any = None, **kw: Any) -> Any:
        scans.append("partial" if paths is not None else "full")
        return real(self, paths, **kw)

    monkeypatch.setattr(indexer_mod.Indexer, "scan", scan)
    return scans


def test_a_settled_vault_is_reconciled_without_a_scan_and_reports_the_same(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (vault / "Private.md").write_text("---\nprivate: true\n---\nMy secret.\n", encoding="utf-8")
    (vault / "Broken.md").write_bytes(b"Caf\xe9 notes.\n")  # not UTF-8: unreadable until re-saved
    mem = make_memory()
    scans = settled(mem, vault, monkeypatch)
    quick = mem.index()
    assert scans == []  # answered from the stamps alone
    assert quick.counts["unchanged"] == quick.notes and sum(quick.counts.values()) == quick.notes
    internals(mem).catalog.set_meta(indexer_mod.SETTLED_KEY, "")  # the same question, answered by a scan
    full = mem.index()
    assert scans == ["full"]
    assert (quick.counts, quick.notes, quick.chunks) == (full.counts, full.notes, full.chunks)
    assert quick.failures == full.failures and "Broken.md" in quick.failures
    assert quick.passed == full.passed and "Private.md" in quick.passed


@pytest.mark.parametrize("change", ["in place", "new", "deleted", "renamed", "ignore rules", "other writer"])
def test_any_change_takes_a_settled_vault_back_to_a_scan(
    change: str, make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory()
    scans = settled(mem, vault, monkeypatch)
    path = vault / "Preferences/Food.md"
    if change == "in place":  # same size, mtime put back: only ctime moves
        st = path.stat()
        raw = path.read_bytes()
        path.write_bytes(raw.replace(b"sourdough", b"quokkaxyz", 1))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        want = {"quokkaxyz": {"Preferences/Food.md"}}
    elif change == "new":
        (vault / "Deep/Er").mkdir(parents=True)
        (vault / "Deep/Er/Wombat.md").write_text("# Wombat\n\nThe wombatqq burrow.\n", encoding="utf-8")
        want = {"wombatqq": {"Deep/Er/Wombat.md"}}
    elif change == "deleted":
        path.unlink()
        want = {"sourdough": set()}
    elif change == "renamed":
        path.rename(vault / "Preferences/Baking.md")
        want = {"sourdough": {"Preferences/Baking.md"}}
    elif change == "ignore rules":
        (vault / ".vaultmemoryignore").write_text("Preferences/\n", encoding="utf-8")
        mem.close()
        mem = make_memory()  # rules are read when a Memory opens
        want = {"sourdough": set()}
    else:  # another process wrote the catalog (a watcher, a rehearsal): the mark no longer holds
        with internals(mem).catalog.transaction():
            internals(mem).catalog.upsert_note(internals(mem).catalog.note_by_path("Preferences/Food.md"))  # type: ignore[arg-type]
        want = {"sourdough": {"Preferences/Food.md"}}
    for query, paths in want.items():
        assert paths_found(mem, query) == paths
    assert scans[:1] == ["full"]
    assert internals(mem).catalog.get_meta(indexer_mod.SETTLED_KEY)  # and settled again after that scan
    assert diagnose(mem).ok


def test_a_vault_with_a_note_too_fresh_to_stamp_is_not_settled(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    mem.index()  # every file was written a moment ago: not stamped, so a later delete must be seen
    assert not internals(mem).catalog.get_meta(indexer_mod.SETTLED_KEY)
    (vault / "Preferences/Food.md").unlink()
    assert paths_found(mem, "sourdough") == set()


# -- the exact vectors file ------------------------------------------------------------------


def test_exact_vectors_file_round_trips_and_refuses_anything_else(tmp_path: Path) -> None:
    from vault_memory.index import exactfile

    path = tmp_path / exactfile.FILE_NAME
    ids = [f"n{i}#0" for i in range(exactfile.MIN_ROWS)]
    mat = np.random.default_rng(1).standard_normal((len(ids), 8)).astype(np.float32)
    exactfile.write(path, "k1", ids, mat)
    got = exactfile.read(path, "k1")
    assert got is not None and got[0] == ids and np.array_equal(got[1], mat)
    assert exactfile.read(path, "k2") is None  # another catalog or generation
    data = path.read_bytes()
    path.write_bytes(data[:-4])  # torn
    assert exactfile.read(path, "k1") is None
    path.write_bytes(b"garbage" * 10)
    assert exactfile.read(path, "k1") is None
    exactfile.write(tmp_path / "small.bin", "k", ids[:10], mat[:10])  # small: the catalog is as fast
    assert not (tmp_path / "small.bin").exists()


def test_a_new_process_reads_the_exact_vectors_from_the_file_while_they_are_current(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vault_memory.index import exactfile

    monkeypatch.setattr(exactfile, "MIN_ROWS", 1)
    bulk(vault, 30)
    mem = make_memory()
    mem.index()
    want = {h.path for h in mem.recall("zebra3 kettle", k=5, touch=False, now=NOW)}
    assert (internals(mem).index_dir / exactfile.FILE_NAME).is_file()
    mem.close()
    from vault_memory.index import catalog as catalog_mod

    loads: list[int] = []
    real = catalog_mod.Catalog.all_chunk_vectors
    monkeypatch.setattr(catalog_mod.Catalog, "all_chunk_vectors", lambda self: loads.append(1) or real(self))
    again = make_memory()
    assert {h.path for h in again.recall("zebra3 kettle", k=5, touch=False, now=NOW)} == want
    assert loads == []  # from the file
    (vault / "Bulk/note 3.md").write_text("# Bulk 3\n\nNow about a walrusqq only.\n", encoding="utf-8")
    again.index()
    hits = again.recall("walrusqq", k=3, touch=False, now=NOW, mode="dense")
    assert loads == [1]  # the vectors changed: read from the catalog, and the file rewritten
    assert hits[0].path == "Bulk/note 3.md"
