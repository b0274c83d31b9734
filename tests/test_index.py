"""Indexing: reconcile, identity, no re-embedding, resume, rebuild equivalence."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import NOW, MemoryFactory, snapshot
from vault_memory.doctor import diagnose
from vault_memory.errors import EmbedderMismatchError, LockHeldError, NoteParseError
from vault_memory.index import indexer as indexer_mod
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.vault.notefile import read_note


def index_state(mem: object) -> dict[str, tuple[str, str]]:
    """node_id -> (path, body_hash) as the index has it."""
    return {r.node_id: (r.path, r.body_hash) for r in internals(mem).catalog.notes()}  # type: ignore[attr-defined]


def vault_state(vault: Path, mem: object) -> dict[str, tuple[str, str]]:
    out = {}
    for rel in internals(mem).indexer().scan().entries:  # type: ignore[attr-defined]
        out[rel.node_id] = (rel.path, rel.body_hash)
    return out


def test_first_index_writes_nothing_and_second_is_noop(make_memory: MemoryFactory, vault: Path) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake)
    files = snapshot(vault)
    times = {p: p.stat().st_mtime_ns for p in vault.rglob("*.md")}
    first = mem.index()
    assert first.counts["new"] >= 40
    assert first.texts_embedded > 0
    assert snapshot(vault) == files and {p: p.stat().st_mtime_ns for p in vault.rglob("*.md")} == times
    # a note with no node_id of its own is identified by its path until we have state to keep in it
    rows = {r.path: r for r in internals(mem).catalog.notes()}
    assert rows["Inbox/agent runbook.md"].node_id == "path:Inbox/agent runbook.md"
    assert rows["Memory/answer-style.md"].id_in_file
    before = fake.texts_embedded
    second = mem.index()
    assert second.counts["unchanged"] == first.notes
    assert fake.texts_embedded == before, "an unchanged vault must embed nothing"
    assert second.texts_embedded == 0


def test_unreadable_note_is_reported_and_left_alone(make_memory: MemoryFactory, vault: Path) -> None:
    raw = (vault / "Inbox/deliberately-not-utf8.md").read_bytes()
    report = make_memory().index()
    assert "Inbox/deliberately-not-utf8.md" in report.failures
    assert "UTF-8" in report.failures["Inbox/deliberately-not-utf8.md"]
    assert (vault / "Inbox/deliberately-not-utf8.md").read_bytes() == raw


def test_a_frontmatter_change_that_states_nothing_embeds_nothing(make_memory: MemoryFactory, vault: Path) -> None:
    # our own keys (a rehearsal), a display setting and tags: the note states what it stated
    fake = FakeEmbedder()
    mem = make_memory(fake)
    mem.index()
    rel = "Projects/" + sorted(p.name for p in (vault / "Projects").glob("*.md"))[0]
    note = read_note(vault, rel)
    text = (vault / rel).read_text(encoding="utf-8")
    added = "---\nlast_accessed: 2026-11-30\nrevision: 3\ncssclasses: [wide]\ncreated: 2026-01-02\n"
    (vault / rel).write_text(text.replace("---\n", added, 1), encoding="utf-8")
    before = fake.texts_embedded
    report = mem.index()
    assert report.counts["meta"] == 1
    assert fake.texts_embedded == before
    assert internals(mem).catalog.note_by_path(rel).meta["cssclasses"] == ["wide"]  # type: ignore[union-attr]
    assert note.body_hash == read_note(vault, rel).body_hash


def test_a_property_a_person_writes_is_recalled_and_its_edit_is_indexed(
    make_memory: MemoryFactory, vault: Path
) -> None:
    # ../shared/obsidian-vault keeps facts in properties (`model: Vaillant ecoTEC plus 832`,
    # `company: Northwind`, `due: 2026-12-15`): recall never saw them.
    (vault / "Areas").mkdir(exist_ok=True)
    boiler = vault / "Areas/Boiler.md"
    boiler.write_text(
        "---\ntags: [home]\nmodel: Vaillant ecoTEC plus 832\ninstalled: 2019\n---\n# Boiler\n\n"
        "Pressure should sit between 1.0 and 1.5 bar.\n",
        encoding="utf-8",
    )
    fake = FakeEmbedder()
    mem = make_memory(fake)
    mem.index()
    (hit,) = mem.recall("Vaillant ecoTEC", k=1, touch=False, mode="bm25")
    assert hit.path == "Areas/Boiler.md" and "model: Vaillant ecoTEC plus 832" in hit.text
    assert hit.heading == "Boiler"  # in the note's first chunk, beside its text: not a chunk of its own
    assert "Vaillant" in mem.prefetch("what model is my Vaillant boiler", now=NOW).block
    # a person's edit of a property is an edit of the note: its first chunk is embedded again
    before = fake.texts_embedded
    boiler.write_text(boiler.read_text(encoding="utf-8").replace("ecoTEC plus 832", "ecoTEC pro 630"), encoding="utf-8")
    report = mem.index()
    assert report.counts["modified"] == 1 and fake.texts_embedded - before == 1 + report.sentences_embedded
    assert report.sentences_embedded == 2  # the new line, alone and with its title (search/sentences.py)
    (hit,) = mem.recall("Vaillant ecoTEC", k=1, touch=False, mode="bm25")
    assert "model: Vaillant ecoTEC pro 630" in hit.text


#: a person note as Obsidian shows it and YAML refuses: `[[link]] text` is a list followed by words
#: (../shared/real-vaults/dexter: 190 of 1,249 notes, 6 of its 24 people notes, were never indexed)
JAKE = (
    "---\nCompany: St Thomas University\nLocation: [[Apple Valley, [[MN]]]]\n"
    "How We Met: [[River Valley Church]] through [[Sam Tupy]]\nBirthday: [[October 11th]]\nTags: #People\n---\n"
    "Plays pickup soccer on Sundays.\n"
)


def test_a_note_whose_yaml_is_broken_is_indexed_by_its_text_and_never_written(
    make_memory: MemoryFactory, vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (vault / "People").mkdir(exist_ok=True)
    jake = vault / "People/Jake Stachel.md"
    jake.write_text(JAKE, encoding="utf-8")
    secret = vault / "People/Secret.md"
    secret.write_text("---\nprivate: [yes\nHow We Met: [[x]] y\n---\nMy secret.\n", encoding="utf-8")
    mem = make_memory()
    with caplog.at_level(logging.WARNING):
        report = mem.index()
    # said once, naming the file, the line and what happens until it is fixed
    [why] = [r.getMessage() for r in caplog.records if "Jake Stachel" in r.getMessage()]
    assert why.startswith("People/Jake Stachel.md: invalid YAML in frontmatter at line 4")
    assert "nothing is written" in why and "People/Jake Stachel.md" not in report.failures
    assert report.properties_unread == {"People/Jake Stachel.md": why}
    # found by its name and by what its properties say; a `private` that cannot be read counts as true
    (hit,) = mem.recall("Jake Stachel", k=1, touch=False, mode="bm25")
    assert hit.path == "People/Jake Stachel.md" and "How We Met: River Valley Church, through, Sam Tupy" not in hit.text
    assert "How We Met: [[River Valley Church]] through [[Sam Tupy]]" in hit.text and "Company: St Thomas" in hit.text
    assert "People/Secret.md" in report.passed and internals(mem).catalog.note_by_path("People/Secret.md") is None
    assert "Plays pickup soccer" in mem.read(hit.path).text  # what recall found, `read` reads
    # never written into: a recall long after is no rehearsal of it, and a pin says why
    raw = jake.read_bytes()
    mem.recall("Jake Stachel soccer", k=3, now=NOW.replace(year=NOW.year + 2))
    with pytest.raises(NoteParseError, match="Jake Stachel.md: invalid YAML"):
        mem.pin("People/Jake Stachel.md")
    assert jake.read_bytes() == raw
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert mem.index().properties_unread == {}  # unchanged: not read again, not said again
    assert not any("Jake" in r.getMessage() for r in caplog.records)
    doctor = diagnose(mem)
    assert doctor.ok and doctor.properties_unread == {"People/Jake Stachel.md": why}
    # fixed by hand: its properties are read as YAML again
    jake.write_text(JAKE.replace("]] through [[Sam Tupy]]", "]]"), encoding="utf-8")
    assert mem.index().properties_unread == {}
    (hit,) = mem.recall("Jake Stachel", k=1, touch=False, mode="bm25")
    assert "How We Met: River Valley Church" in hit.text


def test_a_note_an_earlier_version_skipped_for_its_yaml_is_read_now(make_memory: MemoryFactory, vault: Path) -> None:
    (vault / "People").mkdir(exist_ok=True)
    (vault / "People/Jake Stachel.md").write_text(JAKE, encoding="utf-8")
    mem = make_memory()
    mem.index()
    mem.index()  # settled: the stamps say nothing changed
    cat, indexer = internals(mem).catalog, internals(mem).indexer()
    row = cat.note_by_path("People/Jake Stachel.md")
    assert row is not None

    def as_an_earlier_version_left_it() -> None:
        """No rows for the note, a failure record of its bytes, and its settled mark (no `READS`)."""
        with cat.transaction():
            cat.delete_note(row.node_id)
            cat.set_failure(
                "People/Jake Stachel.md",
                row.file_hash,
                "People/Jake Stachel.md: invalid YAML in frontmatter at line 4: did not find expected key; "
                "fix the YAML between the --- lines; the note is skipped until then",
            )
            earlier = indexer._settled_token().removesuffix("|" + indexer_mod.READS)
            cat.set_meta(indexer_mod.SETTLED_KEY, earlier)

    as_an_earlier_version_left_it()  # its settled mark does not stand for this version: scanned, and read
    report = mem.index()
    assert report.counts["new"] == 1 and "People/Jake Stachel.md" in report.properties_unread
    assert cat.note_by_path("People/Jake Stachel.md") is not None and "People/Jake Stachel.md" not in cat.failures()


def test_body_edit_embeds_only_changed_chunks(make_memory: MemoryFactory, vault: Path) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake)
    mem.index()
    rel = "Inbox/agent runbook.md"
    p = vault / rel
    p.write_text(
        p.read_text(encoding="utf-8") + "\n\n## Added later\n\nA brand new paragraph about the zebra.\n",
        encoding="utf-8",
    )
    before = fake.texts_embedded
    report = mem.index()
    assert report.counts["modified"] == 1
    assert 1 <= fake.texts_embedded - before <= 2
    hits = mem.recall("zebra paragraph", k=1, touch=False)
    assert hits[0].path == rel


def test_rename_and_move_keep_id_and_vectors(make_memory: MemoryFactory, vault: Path) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake)
    mem.index()
    rel = "Memory/answer-style.md"  # a note with a node_id keeps it
    nid = read_note(vault, rel).meta["node_id"]
    (vault / "Archive").mkdir()
    (vault / rel).rename(vault / "Archive/answer style renamed.md")
    before = fake.texts_embedded
    report = mem.index()
    assert report.counts["moved"] == 1 and report.counts["deleted"] == 0
    assert fake.texts_embedded == before
    row = internals(mem).catalog.note_by_id(str(nid))
    assert row is not None and row.path == "Archive/answer style renamed.md"
    # a note without one is known by its path: a rename re-indexes it from the vector cache
    (vault / "Inbox/ollama keep-alive.md").rename(vault / "Archive/keep alive renamed.md")
    report = mem.index()
    assert report.counts["new"] == 1 and report.counts["deleted"] == 1
    assert fake.texts_embedded == before, "a renamed note's text is never embedded again"
    assert internals(mem).catalog.note_by_id("path:Archive/keep alive renamed.md") is not None


def test_copied_note_is_known_by_path_until_a_write_gives_it_an_id(
    make_memory: MemoryFactory, vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake)
    mem.index()
    src = vault / "Memory/answer-style.md"
    nid = str(read_note(vault, "Memory/answer-style.md").meta["node_id"])
    (vault / "Memory/answer-style copy.md").write_bytes(src.read_bytes())
    files = snapshot(vault)
    before = fake.texts_embedded
    with caplog.at_level(logging.WARNING):
        report = mem.index()
    assert "carried by" in caplog.text and snapshot(vault) == files  # said, not written
    rows = {r.path: r.node_id for r in internals(mem).catalog.notes()}
    assert rows["Memory/answer-style.md"] == "path:Memory/answer-style.md"  # neither owns the id alone
    assert rows["Memory/answer-style copy.md"] == "path:Memory/answer-style copy.md"
    assert fake.texts_embedded == before, "identical text is never embedded twice"
    assert len(internals(mem).catalog.notes()) == report.notes
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        mem.index()
    assert "carried by" not in caplog.text  # said once
    mem.pin("Memory/answer-style copy.md")  # our first write into the copy gives it an id of its own
    copy_id = read_note(vault, "Memory/answer-style copy.md").meta["node_id"]
    assert copy_id != nid
    rows = {r.path: r.node_id for r in internals(mem).catalog.notes()}
    assert rows == {**rows, "Memory/answer-style.md": nid, "Memory/answer-style copy.md": copy_id}


def test_delete_removes_rows_from_both_indexes(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory(exact_search_limit=0)  # keep a vector store at any size (ANN path)
    mem.index()
    rel = "Inbox/ollama keep-alive.md"
    nid = f"path:{rel}"
    assert internals(mem).catalog.note_by_id(nid) is not None
    (vault / rel).unlink()
    report = mem.index()
    assert report.counts["deleted"] == 1
    assert internals(mem).catalog.note_by_id(nid) is None
    assert not any(cid.startswith(nid) for cid in internals(mem).store.ids())  # type: ignore[union-attr]
    assert internals(mem).store.ids() == internals(mem).catalog.chunk_ids()  # type: ignore[union-attr]


def test_ignored_paths(make_memory: MemoryFactory, vault: Path) -> None:
    (vault / "Private").mkdir()
    (vault / "Private/secret.md").write_text("# Secret\nnot for the agent\n", encoding="utf-8")
    (vault / "drafts-1.md").write_text("# Draft\n", encoding="utf-8")
    (vault / ".vaultmemoryignore").write_text("Private/\ndrafts-*.md\n", encoding="utf-8")
    mem = make_memory()
    mem.index()
    paths = {r.path for r in internals(mem).catalog.notes()}
    assert not any(p.startswith((".obsidian", ".trash", "Private/")) or p == "drafts-1.md" for p in paths)
    assert "Inbox/agent runbook.md" in paths


def test_read_only_mode_never_writes(make_memory: MemoryFactory, vault: Path) -> None:
    before = snapshot(vault)
    mem = make_memory(read_only=True)
    report = mem.index()
    mem.recall("agent runbook", k=3)
    assert snapshot(vault) == before
    assert report.notes > 40
    assert all(r.node_id.startswith("path:") or r.id_in_file for r in internals(mem).catalog.notes())


def edit_history(vault: Path) -> None:
    """A history of edits, renames, deletes and new notes, for incremental-vs-rebuild tests."""
    (vault / "Inbox/ollama keep-alive.md").rename(vault / "Inbox/keepalive.md")
    (vault / "Inbox/weekly review.md").unlink()
    (vault / "new note.md").write_text("# Fresh\n\nA note about sourdough starters and rye.\n", encoding="utf-8")
    p = vault / "Inbox/agent runbook.md"
    p.write_text(p.read_text(encoding="utf-8").replace("Never", "Do not ever"), encoding="utf-8")


@pytest.mark.slow
def test_rebuild_equals_incremental(make_memory: MemoryFactory, vault: Path, tmp_path: Path) -> None:
    mem = make_memory()
    mem.index()
    edit_history(vault)
    mem.index()
    queries = ["sourdough", "agent sandbox write access", "keep alive ollama", "tokyo trip", "gpu windows"]
    incremental = [[h.to_dict() for h in mem.recall(q, k=5, touch=False)] for q in queries]
    rebuilt_mem = make_memory(index_dir=tmp_path / "index2")
    rebuilt_mem.index(rebuild=True)
    rebuilt = [[h.to_dict() for h in rebuilt_mem.recall(q, k=5, touch=False)] for q in queries]
    assert json.dumps(incremental, sort_keys=True) == json.dumps(rebuilt, sort_keys=True)
    mem.index(rebuild=True)
    again = [[h.to_dict() for h in mem.recall(q, k=5, touch=False)] for q in queries]
    assert json.dumps(again, sort_keys=True) == json.dumps(incremental, sort_keys=True)


class Boom(RuntimeError):
    pass


class FailingEmbedder(FakeEmbedder):
    """Dies after `budget` embed calls, like a process killed mid-run (or raises `error`: an
    embedding server that stopped answering)."""

    def __init__(self, budget: int, error: Exception | None = None) -> None:
        super().__init__()
        self.budget = budget
        self.error = error

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if self.budget <= 0:
            raise self.error or Boom("killed")
        self.budget -= 1
        return super().embed(texts)


def test_interrupted_index_resumes_without_reembedding(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vault_memory.index.indexer as indexer

    monkeypatch.setattr(indexer, "EMBED_SLICE", 8)
    monkeypatch.setattr(indexer, "WAVE_CHUNKS", 16)
    failing = FailingEmbedder(budget=3)
    # with a vector store to keep in step; chunks only (sentence vectors: test_sentences.py)
    mem = make_memory(failing, exact_search_limit=0, index_sentences=False)
    with pytest.raises(Boom):
        mem.index()
    done_first = failing.texts_embedded
    assert done_first >= 8  # at least one slice was committed before the crash
    mem.close()
    fresh = FakeEmbedder()
    mem2 = make_memory(fresh, exact_search_limit=0, index_sentences=False)
    report = mem2.index()
    total = internals(mem2).catalog.db.execute("SELECT count(DISTINCT text_hash) FROM chunks").fetchone()[0]
    assert done_first < total
    assert fresh.texts_embedded == total - done_first, "work done before the crash is not redone"
    assert internals(mem2).store.ids() == internals(mem2).catalog.chunk_ids()  # type: ignore[union-attr]
    assert report.counts["new"] + report.counts["unchanged"] == report.notes


def store_vectors(mem: Any, ids: list[str]) -> dict[str, np.ndarray]:
    got = internals(mem).store.collection.get(ids=ids, include=["embeddings"])
    return {cid: np.asarray(v, dtype=np.float32) for cid, v in zip(got["ids"], got["embeddings"], strict=True)}


def test_edit_writes_only_changed_chunks_and_a_crash_cannot_leave_an_old_vector(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vault_memory.index.indexer as indexer

    mem = make_memory(exact_search_limit=0)  # the store is opened and written as on a large vault
    mem.index()
    note = vault / "Inbox/agent runbook.md"
    node = internals(mem).catalog.note_by_path("Inbox/agent runbook.md")
    assert node is not None
    before = internals(mem).catalog.chunk_hashes_of(node.node_id)
    assert len(before) > 1
    text = note.read_text(encoding="utf-8")
    first = internals(mem).catalog.chunks_of(node.node_id)[0].text.split("\n")[1].strip()  # its first line
    assert first in text
    note.write_text(text.replace(first, first + " Edited once."), encoding="utf-8")
    written: list[str] = []
    real_upsert = internals(mem).store.upsert  # type: ignore[union-attr]

    def spy(ids: Any, vectors: Any) -> None:
        written.extend(ids)
        real_upsert(ids, vectors)

    monkeypatch.setattr(internals(mem).store, "upsert", spy)
    mem.index()
    after = internals(mem).catalog.chunk_hashes_of(node.node_id)
    changed = sorted(c for c in after if before.get(c) != after[c])
    assert written == changed and 0 < len(changed) < len(after)
    # Now the process dies after the catalog took the new text but before Chroma did.
    monkeypatch.undo()
    note.write_text(text.replace(first, first + " Edited twice."), encoding="utf-8")

    def crash(self: Any, store: Any, catalog: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(indexer.StoreBatch, "flush", crash)
    with pytest.raises(KeyboardInterrupt):
        mem.index()
    monkeypatch.undo()
    mem.close()
    again = make_memory(exact_search_limit=0)
    report = again.index()
    assert report.store_resynced >= 1 and internals(again).catalog.get_meta("store_dirty") == "0"
    assert not internals(again).catalog.store_pending()
    ids = sorted(internals(again).catalog.chunk_hashes_of(node.node_id))
    rows = internals(again).catalog.chunks_by_ids(ids)
    want = internals(again).catalog.get_vectors([rows[c].text_hash for c in ids])
    have = store_vectors(again, ids)
    for c in ids:
        assert np.allclose(have[c], want[rows[c].text_hash], atol=1e-6), f"{c} kept a stale vector in Chroma"


def test_embedder_mismatch_is_refused_with_advice(make_memory: MemoryFactory) -> None:
    make_memory().index()
    other = make_memory(FakeEmbedder(dim=32))
    with pytest.raises(EmbedderMismatchError, match="--rebuild"):
        other.index()


def test_corrupt_catalog_is_rebuilt(make_memory: MemoryFactory, index_dir: Path) -> None:
    mem = make_memory()
    mem.index()
    mem.close()
    (index_dir / "catalog.sqlite").write_bytes(b"this is not a database" * 100)
    for extra in ("catalog.sqlite-wal", "catalog.sqlite-shm"):
        (index_dir / extra).unlink(missing_ok=True)
    mem2 = make_memory()
    report = mem2.index()
    assert report.counts["new"] == report.notes
    assert mem2.recall("agent runbook", k=1, touch=False)


def test_second_writer_gets_clear_message(make_memory: MemoryFactory) -> None:
    a = make_memory()
    a.index()
    internals(a).hold_writer_lock()  # as `watch` and the MCP server do
    b = make_memory()
    with pytest.raises(LockHeldError) as err:
        b.index(wait=0.2)
    assert "process" in str(err.value) and err.value.pid is not None
    # a reader still works while the writer holds the lock
    assert b.recall("agent runbook", k=1, touch=False)


def test_vault_bytes_change_only_in_owned_keys(make_memory: MemoryFactory, vault: Path) -> None:
    from vault_memory.vault.notefile import OWNED_KEYS

    before = snapshot(vault)
    mem = make_memory()
    mem.index()
    mem.recall("agent runbook sandbox", k=3)
    after = snapshot(vault)
    assert set(before) == set(after)
    for rel, old in before.items():
        new = after[rel]
        if old == new:
            continue
        old_lines = old.decode("utf-8").splitlines()
        new_lines = new.decode("utf-8").splitlines()
        owned = tuple(f"{k}:" for k in OWNED_KEYS)
        stripped_new = [ln for ln in new_lines if not ln.startswith(owned)]
        stripped_old = [ln for ln in old_lines if not ln.startswith(owned)]
        if stripped_new != stripped_old:
            # a note without frontmatter gained a block: only the fences were added
            assert [ln for ln in stripped_new if ln != "---"] == [ln for ln in stripped_old if ln != "---"], rel
        assert hashlib.sha256(new).hexdigest() == read_note(vault, rel).file_hash


def test_partial_sync_of_paths_equals_full_reconcile(make_memory: MemoryFactory, vault: Path, tmp_path: Path) -> None:
    mem = make_memory()
    mem.index()
    (vault / "Inbox/ollama keep-alive.md").rename(vault / "Inbox/keepalive.md")
    (vault / "Inbox/weekly review.md").unlink()
    (vault / "fresh.md").write_text("# Fresh\n\nSourdough starter feeding schedule.\n", encoding="utf-8")
    (vault / "copy.md").write_bytes((vault / "Inbox/agent runbook.md").read_bytes())
    report = internals(mem).sync_paths(
        [
            "Inbox/ollama keep-alive.md",
            "Inbox/keepalive.md",
            "Inbox/weekly review.md",
            "fresh.md",
            "copy.md",
            "not-there.md",
        ]
    )
    # the id-less rename is new + deleted; the copy of an id-less note is simply new
    assert report.counts["deleted"] == 2 and report.counts["new"] == 3
    partial = {(r.node_id, r.path, r.file_hash, r.body_hash) for r in internals(mem).catalog.notes()}
    assert mem.index().counts["unchanged"] == len(partial), "a full reconcile finds nothing left to do"
    assert {(r.node_id, r.path, r.file_hash, r.body_hash) for r in internals(mem).catalog.notes()} == partial


def test_changed_chunking_rules_rechunk_without_reembedding_known_text(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vault_memory.index.indexer as indexer

    fake = FakeEmbedder()
    mem = make_memory(fake)
    mem.index()
    chunks_before = internals(mem).catalog.chunk_count()
    monkeypatch.setattr(indexer, "CHUNKER_VERSION", "test-2")
    original = indexer.chunk_note
    monkeypatch.setattr(
        indexer,
        "chunk_note",
        lambda body, props, title, **kw: original(body, props, title, **{**kw, "max_tokens": 80, "target_tokens": 60}),
    )
    before = fake.texts_embedded
    report = mem.index()
    assert report.counts["modified"] == report.notes  # every note re-chunked
    assert internals(mem).catalog.chunk_count() > chunks_before
    assert fake.texts_embedded - before - report.sentences_embedded == report.texts_embedded
    assert report.texts_embedded <= internals(mem).catalog.chunk_count()
    assert mem.index().counts["unchanged"] == report.notes  # and then it is settled


def test_old_schema_is_upgraded_keeping_cached_vectors(make_memory: MemoryFactory, index_dir: Path) -> None:
    fake = FakeEmbedder()
    mem = make_memory(fake, exact_search_limit=0)
    mem.index()
    with internals(mem).catalog.transaction():
        internals(mem).catalog.set_meta("schema", "0-old")
    mem.close()
    fresh = FakeEmbedder()
    again = make_memory(fresh, exact_search_limit=0)
    report = again.index()
    assert report.counts["new"] == report.notes  # rebuilt from the vault ...
    assert fresh.texts_embedded == 0  # ... without embedding anything again
    assert internals(again).store.ids() == internals(again).catalog.chunk_ids()  # type: ignore[union-attr]
    assert again.recall("ollama keep alive", k=1, touch=False)[0].path == "Inbox/ollama keep-alive.md"


def test_an_edit_prunes_the_vectors_of_the_texts_it_replaced_and_no_other(
    make_memory: MemoryFactory, vault: Path
) -> None:
    """prune_vectors looks only at the texts of chunks deleted or replaced since the last prune
    (not every vector: 4.5 s at 102k chunks), and keeps a vector another chunk still uses."""
    (vault / "A.md").write_text("# A\n\nThe shared sentence about otters.\n", encoding="utf-8")
    (vault / "B.md").write_text("# A\n\nThe shared sentence about otters.\n", encoding="utf-8")  # same chunk text
    (vault / "C.md").write_text("# C\n\nA sentence only C has, about herons.\n", encoding="utf-8")
    mem = make_memory()
    mem.index()
    cat = internals(mem).catalog

    def hashes(path: str) -> set[str]:
        row = cat.note_by_path(path)
        assert row is not None
        return {c.text_hash for c in cat.chunks_of(row.node_id)}

    shared, only_c = hashes("A.md"), hashes("C.md")
    assert shared == hashes("B.md")
    (vault / "A.md").write_text("# A\n\nNow about beavers instead.\n", encoding="utf-8")
    (vault / "C.md").write_text("# C\n\nNow C is about cranes.\n", encoding="utf-8")
    mem.index()
    assert shared <= set(cat.get_vectors(sorted(shared)))  # B still uses it
    assert not set(cat.get_vectors(sorted(only_c)))  # nobody does
    # an orphan the targeted prune cannot know of (e.g. left by a crash): only the full prune finds it
    with cat.transaction():
        cat.put_vectors(["0" * 64], np.zeros((1, internals(mem).embedder.dim), dtype=np.float32))
    with cat.transaction():
        assert cat.prune_vectors() == 0
        assert cat.prune_vectors(everything=True) == 1


# -- issue 41: the index cannot drift silently ------------------------------------------------

COFFEE = "---\ntitle: Coffee\ndate: 2020-01-01\n---\nI drink a double espresso every morning.\n"


def unembedded(mem: Any) -> list[str]:
    """Texts of the chunks that have no vector (recall by meaning never finds them)."""
    cat = internals(mem).catalog
    return [cat.texts_by_rids([rid])[rid] for rid, _, _ in cat.unembedded_chunks()]


def test_a_request_taken_between_embedding_steps_prunes_no_vector_the_run_still_writes(
    make_memory: MemoryFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 1, the MCP server's arrangement in one process: a writer holding the lock (its watcher)
    and a reader (the tools). A recall rehearses a note (its first node_id: indexed again under its id,
    deleted under its path) and a `remember` follows at once, leaving a request; the writer syncs both,
    and takes the request between two embedding steps. That nested run used to prune the vector of the
    rehearsed note's text, deleted by the outer run and not yet written again: its chunk kept no vector,
    and nothing (doctor included) said so."""
    from vault_memory import indexfolder

    monkeypatch.setattr(indexfolder, "REQUESTS_EVERY", 0.0)  # take requests at every step, as a busy writer may
    vault = tmp_path / "v"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes" / "coffee.md").write_text(COFFEE, encoding="utf-8")
    writer = make_memory(vault=vault, index_dir=tmp_path / "i")
    writer.index()
    internals(writer).hold_writer_lock()
    tools = make_memory(vault=vault, index_dir=tmp_path / "i")
    hits = tools.recall("double espresso every morning", k=1)
    assert hits[0].rehearsed and "node_id:" in (vault / "Notes" / "coffee.md").read_text(encoding="utf-8")
    bike = tools.remember("The user's bike is a steel Surly.")
    assert (tmp_path / "i" / "requests").is_dir()  # the writer holds the lock: the reader asked it
    internals(writer).sync_paths(["Notes/coffee.md", bike.path])
    assert unembedded(writer) == []
    found = writer.recall("double espresso every morning", k=1, mode="dense", touch=False)
    assert found and found[0].path == "Notes/coffee.md"
    assert diagnose(writer).ok


def test_a_rehearsal_after_an_edit_the_index_has_not_seen_indexes_the_edit(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    """Finding 2: a rehearsal through the Python API (no `watch`) after a person's edit recorded the
    rewritten file's hash on the note's old chunks: `index` then said "unchanged" for good."""
    import datetime as dt

    vault = tmp_path / "v"
    vault.mkdir()
    walrus = vault / "walrus.md"
    walrus.write_text(
        "---\ntitle: Walrus\ndate: 2029-01-02\nnode_id: 0123456789abcdef\n---\n# Walrus\n\n"
        "This note is about the walrus kazoo.\n",
        encoding="utf-8",
    )
    (vault / "other.md").write_text("Something else entirely about tea.\n", encoding="utf-8")
    mem = make_memory(vault=vault, index_dir=tmp_path / "i")
    mem.index()
    with open(walrus, "a", encoding="utf-8") as f:
        f.write("The walrus moved to Zanzibar in March.\n")
    hit = mem.recall("walrus kazoo", k=1, now=dt.datetime(2030, 6, 1, tzinfo=dt.UTC))[0]
    assert hit.rehearsed
    report = mem.index()
    assert report.counts["unchanged"] == 2  # already indexed when the rehearsal was recorded
    cat = internals(mem).catalog
    assert any("Zanzibar" in c.text for c in cat.chunks_of("0123456789abcdef"))
    assert mem.recall("Zanzibar", k=1, mode="bm25", touch=False)[0].path == "walrus.md"
    assert diagnose(mem).ok


def test_doctor_counts_chunks_without_a_vector_and_index_embeds_them(make_memory: MemoryFactory) -> None:
    """A chunk whose vector is gone with no run owing it one (what finding 1 left): doctor says so at any
    time, not only while `embedding_pending` is set, and `index` embeds it without `--rebuild`."""
    mem = make_memory()
    mem.index()
    cat = internals(mem).catalog
    _, chunk_id, text_hash = cat.unembedded_chunks() or next(
        (0, c.chunk_id, c.text_hash) for c in cat.chunks_of(cat.notes()[0].node_id)
    )
    with cat.transaction():
        cat.db.execute("DELETE FROM vectors WHERE text_hash = ?", (text_hash,))
        cat.set_meta("embedding_pending", "0")
    report = diagnose(mem)
    assert not report.ok and report.vectors_pending >= 1
    assert any("no vector" in p for p in report.problems())
    mem.index()
    assert unembedded(mem) == [] and diagnose(mem).ok


def stamp_over_old_chunks(mem: Any, vault: Path, rel: str, line: str) -> None:
    """What an earlier version's rehearsal left: a person's edit, then the row given the new file's
    hash over the old chunks (its `note_written` never compared the text)."""
    from dataclasses import replace

    path = vault / rel
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    cat = internals(mem).catalog
    row = cat.note_by_path(rel)
    assert row is not None
    with cat.transaction():
        cat.upsert_note(replace(row, file_hash=read_note(vault, rel).file_hash))


def chunk_text(mem: Any, rel: str) -> str:
    cat = internals(mem).catalog
    row = cat.note_by_path(rel)
    assert row is not None
    return " ".join(c.text for c in cat.chunks_of(row.node_id))


def test_doctor_finds_a_note_whose_recorded_hash_is_not_its_text_and_fix_repairs_it(
    make_memory: MemoryFactory, vault: Path
) -> None:
    """`doctor` reads every note's text and compares it with what the index holds, at any time; the
    file hashes alone agree, so a plain `index` trusts them, and `--fix` re-chunks the note."""
    from vault_memory.doctor import fix

    mem = make_memory()
    mem.index()
    stamp_over_old_chunks(mem, vault, "Preferences/Coffee.md", "The grinder moved to the attic.")
    assert mem.index().counts["modified"] == 0  # a verified catalog trusts recorded hashes
    report = diagnose(mem)
    assert report.drifted == ["Preferences/Coffee.md"] and not report.ok and not report.stale
    assert any("holds other text" in p for p in report.problems())
    assert fix(mem).ok
    assert "grinder moved to the attic" in chunk_text(mem, "Preferences/Coffee.md")


def test_index_verifies_a_catalog_of_an_earlier_version_once_and_repairs_its_drift(
    make_memory: MemoryFactory, vault: Path
) -> None:
    """A catalog an earlier version wrote may hold such notes: the first `index` reads every note's text
    once (BODIES_CHECKED) and re-chunks them, without `--rebuild`; the next one trusts the stamps again."""
    from vault_memory.index.catalog import BODIES_CHECKED

    mem = make_memory()
    mem.index()
    cat = internals(mem).catalog
    stamp_over_old_chunks(mem, vault, "Preferences/Coffee.md", "The grinder moved to the attic.")
    with cat.transaction():
        cat.db.execute("DELETE FROM meta WHERE key = ?", (BODIES_CHECKED,))
    assert mem.index().counts["modified"] == 1
    assert "grinder moved to the attic" in chunk_text(mem, "Preferences/Coffee.md")
    assert cat.get_meta(BODIES_CHECKED) == "1" and diagnose(mem).ok


def test_a_note_changed_between_scan_and_write_is_rechunked_not_stamped(
    make_memory: MemoryFactory, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A moved (or frontmatter-only) note is read again when it is written to the catalog; if a person
    saved it in between, its new text is chunked, never recorded under the old chunks."""
    from vault_memory.index.indexer import Indexer

    mem = make_memory()
    mem.index()
    src, dst = vault / "Memory" / "answer-style.md", vault / "Memory" / "answer-style (moved).md"
    src.rename(dst)  # it carries a node_id: a move, its chunks kept
    plan = Indexer.plan

    def edit_after_planning(self: Indexer, scan: Any) -> Any:
        out = plan(self, scan)
        assert [c.kind.value for c in out.changes if c.entry.path == "Memory/answer-style (moved).md"] == ["moved"]
        scan.parsed.pop("Memory/answer-style (moved).md", None)  # as a note known by its stamp: read again later
        with open(dst, "a", encoding="utf-8") as f:
            f.write("\nSaved while indexing: oat milk now.\n")
        return out

    monkeypatch.setattr(Indexer, "plan", edit_after_planning)
    mem.index()
    monkeypatch.undo()
    assert "oat milk" in chunk_text(mem, "Memory/answer-style (moved).md")
    assert diagnose(mem).ok
