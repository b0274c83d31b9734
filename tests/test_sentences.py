"""Sentence vectors written with the index (search/sentences.py, issue 38): a new question embeds
only itself, recall answers exactly as it did when the sentences were embedded at query time, an
edit embeds only its new sentences, and the file is derived (bad, missing or another model's: the
writer starts it again and recall answers meanwhile)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import MemoryFactory, write_notes
from tests.test_index import FailingEmbedder
from vault_memory.errors import EmbedderError
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.search.rules import DEFAULT_RULES
from vault_memory.search.sentences import PAGE_SIZE, SENTENCES_NAME, SentenceStore, sentence_texts
from vault_memory.search.windows import Subject

QUESTIONS = [
    "where is the spare key",
    "which editor do I use",
    "when was the boiler installed",
    "what did Ruth say about the garden",
    "who do I call when the heating fails",
    "what is the wifi password",
]


def _ranked(mem, query: str) -> list[tuple[str, float, str | None]]:
    hits = mem.recall(query, k=5, touch=False, explain=True)
    return [(h.path, round(h.score, 9), (h.explain or {}).get("window")) for h in hits]


def test_a_chunk_offers_its_sentences_of_three_words_and_its_property_lines_with_the_title() -> None:
    assert sentence_texts("One line only, however long it is.") == []
    body = "installed: 2019\nThe boiler is in the cellar. Call Ana.\nSee it."
    subject = Subject("Boiler", frozenset({"installed: 2019"}))
    assert sentence_texts(body) == ["The boiler is in the cellar."]
    assert sentence_texts("The boiler is in the cellar. It was serviced in May.") == [
        "The boiler is in the cellar.",
        "It was serviced in May.",
    ]
    body = "installed: by Ana Lopez\nThe boiler is in the cellar."
    assert sentence_texts(body, subject) == ["installed: by Ana Lopez", "The boiler is in the cellar."]  # not stated
    body = "installed: 2019 by Ana Lopez\nThe boiler is in the cellar."
    subject = Subject("Boiler", frozenset({"installed: 2019 by Ana Lopez"}))
    assert sentence_texts(body, subject) == [
        "installed: 2019 by Ana Lopez",
        "Boiler: installed: 2019 by Ana Lopez",
        "The boiler is in the cellar.",
    ]


def test_after_index_a_new_question_embeds_only_itself(make_memory: MemoryFactory) -> None:
    emb = FakeEmbedder()
    mem = make_memory(embedder=emb)
    report = mem.index()
    assert report.sentences_embedded > 0 and report.sentences_pending == 0
    before = emb.texts_embedded
    mem.recall("what colour is the shed door", k=5, touch=False)
    assert emb.texts_embedded - before == 1  # the question; every answer sentence was there

    off = FakeEmbedder()
    cold = make_memory(embedder=off, index_sentences=False, index_dir=internals(mem).index_dir.parent / "off")
    assert cold.index().sentences_embedded == 0
    before = off.texts_embedded
    cold.recall("what colour is the shed door", k=5, touch=False)
    assert off.texts_embedded - before > 1  # without them, the question embeds its sentences


def test_recall_and_prefetch_answer_the_same_with_and_without_sentence_vectors(
    make_memory: MemoryFactory, index_dir: Path
) -> None:
    on = make_memory()
    on.index()
    # without them every sentence is embedded at query time, when no cap on what a question may embed
    # stops it: the vectors change when a sentence is embedded, never what it scores
    off = make_memory(
        index_sentences=False, index_dir=index_dir.parent / "off", rules=DEFAULT_RULES.but(embed_candidates=10**6)
    )
    off.index()
    assert not (index_dir.parent / "off" / SENTENCES_NAME).exists() or internals(off).sentences().count() == (0, 0)
    for q in QUESTIONS:
        assert _ranked(on, q) == _ranked(off, q), q
        assert on.prefetch(q, refresh_staged=False).block == off.prefetch(q, refresh_staged=False).block, q


def test_without_them_a_question_embeds_the_sentences_of_its_most_relevant_chunks_only(
    make_memory: MemoryFactory, index_dir: Path
) -> None:
    emb = FakeEmbedder()
    capped = make_memory(embedder=emb, index_sentences=False, rules=DEFAULT_RULES.but(embed_candidates=2))
    capped.index()
    before = emb.texts_embedded
    hits = capped.recall("who do I call when the heating fails", k=10, touch=False, explain=True)
    few = emb.texts_embedded - before
    wide = FakeEmbedder()
    every = make_memory(
        embedder=wide,
        index_sentences=False,
        index_dir=index_dir.parent / "every",
        rules=DEFAULT_RULES.but(embed_candidates=10**6),
    )
    every.index()
    before = wide.texts_embedded
    every.recall("who do I call when the heating fails", k=10, touch=False)
    assert 1 < few < wide.texts_embedded - before  # the question and two chunks' sentences, not every candidate's
    # asked again, it answers the same and embeds nothing: what the first asking embedded is kept
    before = emb.texts_embedded
    again = capped.recall("who do I call when the heating fails", k=10, touch=False, explain=True)
    assert _ranked(capped, "who do I call when the heating fails") == [
        (h.path, round(h.score, 9), (h.explain or {}).get("window")) for h in hits[:5]
    ]
    assert [h.path for h in again] == [h.path for h in hits] and emb.texts_embedded - before <= 1


def test_an_edit_embeds_only_its_new_sentence_and_a_deleted_notes_sentences_go(
    make_memory: MemoryFactory, vault: Path
) -> None:
    emb = FakeEmbedder()
    write_notes(
        vault,
        {
            "Areas/Shed.md": "The shed door is painted green. The key hangs by the back door.\n",
            "Areas/Bike.md": "My bike is a grey gravel bike. It lives in the shed over winter.\n",
        },
    )
    mem = make_memory(embedder=emb)
    mem.index()
    store = internals(mem).sentences()
    held = store.count()[1]
    before = emb.texts_embedded
    (vault / "Areas/Shed.md").write_text(
        "The shed door is painted blue. The key hangs by the back door.\n", encoding="utf-8"
    )
    report = mem.index()
    # the chunk's own text, and the one sentence that changed; the unchanged one is not embedded again
    assert emb.texts_embedded - before == 2 and report.sentences_embedded == 1
    assert store.count()[1] == held  # the green door's sentence is gone, the blue one's is there
    (vault / "Areas/Shed.md").write_text(
        "The shed door is painted green. The key hangs by the back door.\n", encoding="utf-8"
    )
    before = emb.texts_embedded
    report = mem.index()  # undone: the chunk is embedded again (the catalog pruned it), its sentences not
    assert emb.texts_embedded - before == 1 and report.sentences_embedded == 0  # green: from the window cache
    assert store.count()[1] == held
    (vault / "Areas/Bike.md").unlink()
    mem.index()
    assert store.count()[1] == held - 2


def test_a_readers_reconcile_leaves_a_first_index_of_sentences_to_index(make_memory: MemoryFactory) -> None:
    emb = FakeEmbedder()
    mem = make_memory(embedder=emb, index_sentences=False)
    mem.index()  # chunks only
    mem.close()
    mem = make_memory(embedder=emb)
    report = mem.index(embed_budget=512)  # as a one-shot recall's reconcile
    assert report.sentences_embedded == 0 and report.sentences_pending > 16
    pending = report.sentences_pending
    emptied = internals(mem).catalog.chunk_text_hashes
    internals(mem).catalog.chunk_text_hashes = lambda: {}  # type: ignore[method-assign]
    assert mem.index(embed_budget=512).sentences_pending == pending  # known: the chunks are not listed again
    internals(mem).catalog.chunk_text_hashes = emptied  # type: ignore[method-assign]
    seen: list[tuple[int, int]] = []
    report = mem.index(sentence_progress=lambda done, total: seen.append((done, total)))
    assert report.sentences_embedded > 0 and report.sentences_pending == 0
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] > 16
    assert internals(mem).sentences().up_to_date(internals(mem).catalog)
    before = emb.texts_embedded
    assert mem.index().sentences_embedded == 0 and emb.texts_embedded == before


def test_the_watcher_fills_sentences_after_the_chunks(make_memory: MemoryFactory) -> None:
    mem = make_memory(index_sentences=False)
    mem.index()
    mem.close()
    mem = make_memory()
    folder = internals(mem)
    steps = 0
    while True:
        report = folder.fill_vectors(limit=64)  # the watcher's idle step (watch.FILL_STEP texts)
        steps += 1
        if report.sentences_pending == 0:
            break
        assert report.texts_embedded == 0 and report.sentences_embedded > 0
    assert steps > 1  # a step covers 64 / 8 chunks, not the whole vault
    assert folder.sentences().up_to_date(folder.catalog)


def test_another_model_starts_them_again_and_a_bad_file_is_replaced(
    make_memory: MemoryFactory, index_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mem = make_memory()
    mem.index()
    held = internals(mem).sentences().count()
    mem.close()
    with sqlite3.connect(index_dir / SENTENCES_NAME) as db:  # ten 1.5 KB vectors a page, not two
        assert db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 16384
    other = SentenceStore(index_dir / SENTENCES_NAME, "another-model/384")
    assert other.get(["0" * 64]) == {} and other.count() == (0, 0)  # a reader of another model sees none
    other.close()

    (index_dir / SENTENCES_NAME).write_bytes(b"not a database, a torn copy" * 100)
    for suffix in ("-wal", "-shm"):
        (index_dir / (SENTENCES_NAME + suffix)).unlink(missing_ok=True)
    emb = FakeEmbedder()
    mem = make_memory(embedder=emb)
    assert mem.recall("where is the spare key", k=3, touch=False)  # answers: the sentences embedded now
    mem.close()
    mem = make_memory(embedder=emb)
    with caplog.at_level("WARNING"):
        internals(mem).ensure_current()
        mem.index()
    assert "could not be read; starting them again" in caplog.text
    assert internals(mem).sentences().count() == held


def test_rebuild_drops_the_sentence_vectors_with_the_rest(make_memory: MemoryFactory, index_dir: Path) -> None:
    emb = FakeEmbedder()
    mem = make_memory(embedder=emb)
    mem.index()
    first = emb.texts_embedded
    report = mem.index(rebuild=True)
    assert report.sentences_embedded > 0  # embedded again: a rebuild trusts nothing the index held
    assert internals(mem).sentences().up_to_date(internals(mem).catalog)
    assert emb.texts_embedded > first


def test_an_embedder_failing_on_the_sentences_fails_no_reconcile_and_the_next_index_resumes(
    make_memory: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    chunks_only = make_memory(index_sentences=False)
    calls = len(list(range(0, chunks_only.index().texts_embedded, 128))) or 1  # the chunk slices
    chunks_only.close()
    for name in ("catalog.sqlite", "catalog.sqlite-wal", "catalog.sqlite-shm"):
        (internals(chunks_only).index_dir / name).unlink(missing_ok=True)
    mem = make_memory(embedder=FailingEmbedder(calls, EmbedderError("the embedding server stopped answering")))
    with caplog.at_level("WARNING"):
        report = mem.index()
    assert report.texts_pending == 0 and report.sentences_pending > 0
    assert "answer sentences not embedded now" in caplog.text
    assert mem.vectors().complete  # every chunk has its vector: recall by meaning is whole
    mem.close()
    mem = make_memory()
    report = mem.index()
    assert report.sentences_embedded > 0 and report.sentences_pending == 0


def test_status_says_how_many_chunks_wait_for_their_sentences(make_memory: MemoryFactory, vault: Path) -> None:
    from typer.testing import CliRunner

    from vault_memory.cli import app

    mem = make_memory(index_sentences=False)
    mem.index()
    sent = mem.status()["sentences"]
    assert sent == {"on": False, "chunks": sent["chunks"], "covered": 0, "vectors": 0} and sent["chunks"] > 16
    index_dir = internals(mem).index_dir
    mem.close()
    args = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", "fake"]
    out = CliRunner().invoke(app, [*args, "status"])
    assert out.exit_code == 0 and f"the answer sentences of {sent['chunks']:,} chunks" in out.output
    out = CliRunner().invoke(app, [*args, "index"])
    assert out.exit_code == 0 and "answer sentences in" in out.output
    out = CliRunner().invoke(app, [*args, "status", "--json"])
    assert f'"covered": {sent["chunks"]}' in out.output


def test_a_chunk_below_the_embedding_cap_is_judged_by_the_index_not_by_what_earlier_questions_embedded(
    tmp_path: Path,
) -> None:
    from vault_memory.index.catalog import ChunkRow
    from vault_memory.index.embedders import embed_query
    from vault_memory.search.vectorcache import WindowCache
    from vault_memory.search.windows import best_windows

    emb = FakeEmbedder()
    a = ChunkRow("a#0", "a", 0, "", "The shed key hangs by the door. The shed is green.", "ha")
    b = ChunkRow("b#0", "b", 0, "", "Ruth keeps the shed key. She lives next door.", "hb")
    q = "where is the shed key"
    qvec = embed_query(emb, q)
    with WindowCache(None, emb.identity) as cache:
        assert set(best_windows([b, a], qvec, q, emb, cache, embed=1)) == {"b#0"}  # b embedded: first
        assert set(best_windows([a, b], qvec, q, emb, cache, embed=1)) == {"a#0"}  # b held, not by the index
        assert set(best_windows([a, b], qvec, q, emb, cache)) == {"a#0", "b#0"}  # no cap: both


def test_the_window_cache_keeps_at_most_mem_rows_in_memory_and_the_rest_on_disk(tmp_path: Path) -> None:
    from vault_memory.search import vectorcache as windows

    assert windows.MEM_ROWS == 20_000  # 30 MB of vectors in a process that answers for weeks
    emb = FakeEmbedder()
    texts = [f"sentence number {i} of five" for i in range(5)]
    with windows.WindowCache(tmp_path / "w.sqlite", emb.identity, mem_rows=3) as cache:
        first = cache.vectors(texts, emb)
        assert len(cache._mem) == 3 and len(first) == 5
        cache.flush()
        again = cache.vectors(texts, emb)  # the two dropped from memory are read back from the file
        assert emb.texts_embedded == 5 and all((again[t] == first[t]).all() for t in texts)


def test_a_reader_that_opened_the_file_before_it_was_filled_reads_it_once_it_is(
    make_memory: MemoryFactory, index_dir: Path
) -> None:
    writer = make_memory(index_sentences=False)
    writer.index()
    reader = SentenceStore(index_dir / SENTENCES_NAME, internals(writer).model.identity)
    reader._looked_at = -1e9  # as if it opened long ago
    assert reader.get(["0" * 64]) == {}  # nothing written yet: not usable
    writer.close()
    filled = make_memory()
    filled.index()
    store = internals(filled).sentences()
    (h,) = [r[0] for r in store._db.execute("SELECT text_hash FROM sentences LIMIT 1")]  # type: ignore[union-attr]
    reader._looked_at = -1e9  # RECHECK_SECONDS later
    assert list(reader.get([h])) == [h]
    reader.close()
