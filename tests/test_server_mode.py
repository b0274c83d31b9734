"""Server mode: the same vault memory against a real Chroma server (`chroma run` on loopback).

One server serves the whole module; the outage tests start their own so they can stop it.
The index/recall tests of test_index.py run here again with `make_memory` pointing at the
server (see the import below), and recall must equal the embedded store's, byte for byte.
test_rebuild_equals_incremental is the exception: HNSW built through a history of deletes
and updates may answer a little differently from one built fresh (approximate search), so
here the invariant is checked on what is stored instead.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.chroma_server import ChromaServer, free_port
from tests.conftest import MemoryFactory, snapshot
from tests.test_index import (  # noqa: F401  (collected again, here against the server)
    edit_history,
    test_a_frontmatter_change_that_states_nothing_embeds_nothing,
    test_body_edit_embeds_only_changed_chunks,
    test_copied_note_is_known_by_path_until_a_write_gives_it_an_id,
    test_corrupt_catalog_is_rebuilt,
    test_delete_removes_rows_from_both_indexes,
    test_embedder_mismatch_is_refused_with_advice,
    test_first_index_writes_nothing_and_second_is_noop,
    test_interrupted_index_resumes_without_reembedding,
    test_partial_sync_of_paths_equals_full_reconcile,
    test_rename_and_move_keep_id_and_vectors,
    test_second_writer_gets_clear_message,
)
from vault_memory import Hit
from vault_memory.errors import ConfigError, VectorStoreUnavailableError
from vault_memory.index import vectorstore
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.memory import Memory

# A Chroma server process per module, and the index tests run again against it: the full suite only.
pytestmark = pytest.mark.slow

QUERIES = ["agent sandbox write access", "keep alive ollama", "tokyo trip", "gpu windows", "weekly review", "sourdough"]


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with ChromaServer(tmp_path_factory.mktemp("chroma") / "data") as server:
        yield server


@pytest.fixture()
def own_server(tmp_path: Path) -> Iterator[ChromaServer]:
    """A server this test may stop, pause and restart."""
    with ChromaServer(tmp_path / "own-chroma") as server:
        yield server


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "VAULT_MEMORY_CHROMA_TOKEN",
        "CHROMA_TOKEN",
        "VAULT_MEMORY_CHROMA_HEADERS",
        "VAULT_MEMORY_CHROMA_TIMEOUT",
        "VAULT_MEMORY_CHROMA_URL",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def make_memory(make_memory: MemoryFactory, chroma: ChromaServer) -> MemoryFactory:
    """conftest's factory, on the module's server unless chroma_url is given (None: embedded)."""

    def factory(embedder: Any = None, **overrides: Any) -> Memory:
        overrides.setdefault("chroma_url", chroma.url)
        return make_memory(embedder, **overrides)

    return factory


def recall_json(mem: Memory, modes: tuple[str, ...] = ("hybrid", "dense", "bm25")) -> str:
    out = {
        m: [[h.to_dict() for h in mem.recall(q, k=5, touch=False, mode=m)] for q in QUERIES]  # type: ignore[arg-type]
        for m in modes
    }
    return json.dumps(out, sort_keys=True)


def in_sync(mem: Memory) -> bool:
    assert internals(mem).store is not None
    return internals(mem).store.ids() == internals(mem).catalog.chunk_ids()


# --------------------------------------------------------------------------- equivalence


def test_rebuild_equals_incremental_on_the_server(make_memory: MemoryFactory, vault: Path, tmp_path: Path) -> None:
    mem = make_memory()
    mem.index()
    edit_history(vault)
    mem.index()
    rebuilt = make_memory(index_dir=tmp_path / "index2")
    rebuilt.index(rebuild=True)
    assert in_sync(mem) and in_sync(rebuilt)
    assert internals(mem).catalog.chunk_ids() == internals(rebuilt).catalog.chunk_ids()
    ids = sorted(internals(mem).catalog.chunk_ids())
    mine, theirs = internals(mem).catalog.chunks_by_ids(ids), internals(rebuilt).catalog.chunks_by_ids(ids)
    assert all(mine[c].text_hash == theirs[c].text_hash for c in ids)
    # lexical recall does not depend on the ANN graph: equal byte for byte
    assert recall_json(mem, ("bm25",)) == recall_json(rebuilt, ("bm25",))
    # and every dense hit each returns is one the other scores identically (exact cosines from the
    # catalog's and the window cache's vectors) where both return that chunk, and finds: by note,
    # since the two HNSW graphs (one built with deletes, one fresh) may pick a different chunk of a
    # note among near-equal ones (a full-suite CI run once saw that). Nearly all of one's top 5 are
    # in the other's top 20.
    found = total = same = 0
    for q in QUERIES:
        theirs_hits = rebuilt.recall(q, k=20, touch=False, mode="dense")
        theirs_paths = {g.path for g in theirs_hits}
        theirs_sim = {g.chunk_id: g.similarity for g in theirs_hits}
        for h in mem.recall(q, k=5, touch=False, mode="dense"):
            if h.chunk_id in theirs_sim:
                assert theirs_sim[h.chunk_id] == h.similarity
                same += 1
            total += 1
            found += h.path in theirs_paths
    assert same >= total // 2, (same, total)
    assert total and found >= total - 1, (found, total)


def test_server_index_and_recall_equal_embedded(make_memory: MemoryFactory, tmp_path: Path) -> None:
    embedded = make_memory(chroma_url=None, index_dir=tmp_path / "embedded")
    embedded.index()
    server = make_memory(index_dir=tmp_path / "server")
    report = server.index()
    assert internals(server).store is not None and internals(embedded).store is not None
    assert internals(server).store.describe()["backend"] == "chroma-http"
    assert internals(embedded).store.describe()["backend"] == "chroma-embedded"
    assert report.chunks == internals(embedded).catalog.chunk_count() and in_sync(server)
    reference = recall_json(embedded)
    assert recall_json(server) == reference
    server.index(rebuild=True)
    assert in_sync(server)
    assert recall_json(server) == reference


def test_rebuild_drops_the_server_collection(make_memory: MemoryFactory) -> None:
    mem = make_memory()
    mem.index()
    assert internals(mem).store is not None
    old_id = internals(mem).store.collection.id
    internals(mem).store.upsert(["stray#0"], np.ones((1, internals(mem).embedder.dim), dtype=np.float32))
    report = mem.index(rebuild=True)
    assert report.rebuilt and internals(mem).store.collection.id != old_id
    assert "stray#0" not in internals(mem).store.ids() and in_sync(mem)
    names = [c.name for c in internals(mem).store.client.list_collections()]
    assert names.count(internals(mem).store.name) == 1


def test_existing_index_moves_to_a_server_without_reembedding(make_memory: MemoryFactory) -> None:
    fake = FakeEmbedder()
    local = make_memory(fake, chroma_url=None)
    local.index()
    reference = recall_json(local, ("hybrid",))
    local.close()
    before = fake.texts_embedded
    server = make_memory(fake)  # same index folder, now with --chroma-url
    report = server.index()
    assert report.store_resynced == internals(server).catalog.chunk_count() > 0
    assert fake.texts_embedded == before, "the catalog's vector cache fills the server"
    assert in_sync(server)
    assert recall_json(server, ("hybrid",)) == reference


def test_two_vaults_and_two_index_folders_share_one_server(
    make_memory: MemoryFactory, vault: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-vault"
    other.mkdir()
    for i, topic in enumerate(["sourdough starter feeding", "rye bread hydration", "agent runbook for bakers"]):
        (other / f"bake {i}.md").write_text(f"# Bake {i}\n\nNotes on {topic}.\n", encoding="utf-8")
    a = make_memory()
    b = make_memory(vault=other, index_dir=tmp_path / "index-other")
    a.index()
    b.index()
    assert internals(a).store is not None and internals(b).store is not None
    assert internals(a).store.name != internals(b).store.name
    assert internals(a).store.name.startswith("vm-vault-") and internals(b).store.name.startswith("vm-other-vault-")
    assert "fake" in internals(a).store.name
    assert in_sync(a) and in_sync(b)
    assert not internals(a).store.ids() & internals(b).store.ids()
    a_count = internals(a).store.count()
    hits = b.recall("agent runbook", k=5, touch=False)
    assert hits and all((other / h.path).is_file() for h in hits)
    b.index(rebuild=True)
    assert internals(a).store.count() == a_count and in_sync(a)
    # The same vault indexed into a second folder (another machine, another user) gets its own collection.
    c = make_memory(index_dir=tmp_path / "index-second")
    c.index()
    assert internals(c).store is not None and internals(c).store.name != internals(a).store.name
    c.index(rebuild=True)
    assert internals(a).store.count() == a_count and in_sync(a) and in_sync(c)
    # The collection a folder uses is stable across processes.
    a2 = make_memory()
    assert internals(a2).store is not None and internals(a2).store.name == internals(a).store.name


def test_doctor_shows_the_server_and_repairs_its_collection(make_memory: MemoryFactory, chroma: ChromaServer) -> None:
    from vault_memory.doctor import diagnose, fix

    mem = make_memory()
    mem.index()
    assert internals(mem).store is not None
    report = diagnose(mem)
    assert report.ok and report.vector_store == {
        k: v for k, v in internals(mem).store.describe().items() if k != "hnsw"
    }
    assert report.vector_store["url"] == chroma.url
    lost = sorted(internals(mem).store.ids())[:3]
    internals(mem).store.delete(lost)  # someone else's mistake on the shared server
    report = diagnose(mem)
    assert not report.ok and report.vectors_missing == 3
    assert fix(mem).ok and in_sync(mem)


# --------------------------------------------------------------------------- outages


def test_server_stopped_mid_run(
    make_memory: MemoryFactory,
    vault: Path,
    own_server: ChromaServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = own_server.url
    mem = make_memory(chroma_url=url)
    mem.index()
    fallback = make_memory(chroma_url=url, lexical_fallback=True)
    assert fallback.recall("agent runbook", k=3, touch=False)  # the server answers

    # what lexical fallback must return: the BM25 ranking, each hit saying it is lexical-only (not
    # the answer sentences `--mode bm25` finds with the store up: they need the vectors)
    def ranking(hits: list[Hit]) -> list[tuple[str, float, float, bool]]:
        return [(h.path, h.relevance, h.strength, h.dormant) for h in hits]

    bm25 = ranking(mem.recall("agent runbook", k=3, touch=False, mode="bm25"))
    before = snapshot(vault)

    own_server.stop()

    with pytest.raises(VectorStoreUnavailableError) as err:
        mem.recall("agent runbook", k=3)  # same process, server gone mid-run (touch=True: nothing written)
    msg = str(err.value)
    assert url in msg and "is not reachable" in msg
    for hint in (
        "chroma run",
        "/api/v2/heartbeat",
        "VAULT_MEMORY_CHROMA_URL",
        "VAULT_MEMORY_CHROMA_TOKEN",
        "--lexical-fallback",
        "vault is not affected",
    ):
        assert hint in msg, hint
    with pytest.raises(VectorStoreUnavailableError, match="is not reachable"):
        mem.index()
    fresh = make_memory(chroma_url=url)  # a new process
    with pytest.raises(VectorStoreUnavailableError, match="is not reachable"):
        fresh.recall("agent runbook", k=3)
    with pytest.raises(VectorStoreUnavailableError, match="is not reachable"):
        fresh.index()
    with pytest.raises(VectorStoreUnavailableError):
        fresh.index(rebuild=True)
    assert snapshot(vault) == before, "a server failure never touches the vault"
    assert internals(fresh).catalog.chunk_count() > 0, "a failed rebuild leaves the index as it was"

    # Lexical fallback, mid-run (same object) and at open (new object): BM25 results plus a warning.
    with caplog.at_level(logging.WARNING):
        hits = fallback.recall("agent runbook", k=3, touch=False)
    assert ranking(hits) == bm25 and all(h.lexical_only for h in hits)
    assert "BM25" in caplog.text and url in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        hits = make_memory(chroma_url=url, lexical_fallback=True).recall("agent runbook", k=3, touch=False)
    assert ranking(hits) == bm25 and all(h.lexical_only for h in hits) and "BM25" in caplog.text
    assert fallback.status()["vector_store"]["url"] == url and "error" in fallback.status()["vector_store"]
    from vault_memory.doctor import diagnose

    doctor = diagnose(fallback)
    assert not doctor.ok and url in (doctor.store_error or "") and doctor.vector_store["url"] == url

    # Indexing with fallback keeps the catalog current and marks the store for a resync.
    (vault / "outage note.md").write_text("# Outage\n\nWritten while the zeppelin server was down.\n", encoding="utf-8")
    fallback.index()
    assert internals(fallback).catalog.get_meta("store_dirty") == "1"
    assert fallback.recall("zeppelin", k=1, touch=False)[0].path == "outage note.md"

    # The server comes back: the same objects recover (the fallback one after its retry interval).
    own_server.start()
    monkeypatch.setattr("vault_memory.indexfolder.STORE_RETRY_SECONDS", 0.0)
    report = fallback.index()
    assert report.store_resynced > 0 and internals(fallback).catalog.get_meta("store_dirty") == "0"
    assert in_sync(fallback)
    assert fallback.recall("zeppelin", k=1, touch=False, mode="dense")[0].path == "outage note.md"
    assert mem.recall("zeppelin", k=1, touch=False)[0].path == "outage note.md"


class StopsServer(FakeEmbedder):
    """Stops the server during the n-th embed call, so a later store write fails mid-index."""

    def __init__(self, server: ChromaServer, at_call: int) -> None:
        super().__init__()
        self.server = server
        self.at_call = at_call

    def embed(self, texts: Any) -> Any:
        self.at_call -= 1
        if self.at_call == 0:
            self.server.stop()
        return super().embed(texts)


def test_server_dies_during_index_then_catches_up(
    make_memory: MemoryFactory, vault: Path, tmp_path: Path, own_server: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vault_memory.index.indexer as indexer

    reference_mem = make_memory(chroma_url=None, index_dir=tmp_path / "reference", index_sentences=False)
    reference_mem.index()  # assigns node_ids, so the outage run below writes nothing to the vault
    reference = recall_json(reference_mem)
    before = snapshot(vault)
    monkeypatch.setattr(indexer, "EMBED_SLICE", 2)
    monkeypatch.setattr(indexer, "WAVE_CHUNKS", 4)
    dying = StopsServer(own_server, at_call=3)  # two waves written, the server dies in the third
    mem = make_memory(dying, chroma_url=own_server.url, index_sentences=False)  # chunks only
    with pytest.raises(VectorStoreUnavailableError, match="is not reachable"):
        mem.index()
    assert snapshot(vault) == before
    embedded_before = dying.texts_embedded
    assert embedded_before > 0
    assert internals(mem).catalog.get_meta("store_dirty") == "1", "the catalog knows the store is behind"
    assert 0 < internals(mem).catalog.chunk_count() < internals(reference_mem).catalog.chunk_count()
    mem.close()

    own_server.start()
    fresh = FakeEmbedder()
    again = make_memory(fresh, chroma_url=own_server.url, index_sentences=False)
    report = again.index()
    total = internals(again).catalog.db.execute("SELECT count(DISTINCT text_hash) FROM chunks").fetchone()[0]
    assert fresh.texts_embedded == total - embedded_before, "nothing embedded before the outage is redone"
    assert internals(again).catalog.get_meta("store_dirty") == "0" and in_sync(again)
    assert report.counts["new"] + report.counts["unchanged"] == report.notes
    assert recall_json(again) == reference


@pytest.mark.posix
def test_hung_server_times_out(
    make_memory: MemoryFactory, own_server: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_MEMORY_CHROMA_TIMEOUT", "1")
    monkeypatch.setattr(vectorstore, "CONNECT_TIMEOUT", 1.0)
    mem = make_memory(chroma_url=own_server.url)
    mem.index()
    own_server.pause()
    try:
        started = time.monotonic()
        with pytest.raises(VectorStoreUnavailableError, match="did not answer within 1s"):
            mem.recall("agent runbook", k=3, touch=False)
        with pytest.raises(VectorStoreUnavailableError, match="did not answer"):
            make_memory(chroma_url=own_server.url).recall("agent runbook", k=3, touch=False)
        assert time.monotonic() - started < 15
    finally:
        own_server.resume()


# --------------------------------------------------------------------------- configuration


def test_credentials_come_from_the_environment_only(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert vectorstore.server_headers({}) == {}
    assert vectorstore.server_headers({"VAULT_MEMORY_CHROMA_TOKEN": "t0k"}) == {"Authorization": "Bearer t0k"}
    assert vectorstore.server_headers({"CHROMA_TOKEN": "t1"}) == {"Authorization": "Bearer t1"}
    both = vectorstore.server_headers(
        {
            "VAULT_MEMORY_CHROMA_TOKEN": "t0k",
            "VAULT_MEMORY_CHROMA_HEADERS": '{"authorization": "Basic xyz", "X-Team": "a"}',
        }
    )
    assert both == {"authorization": "Basic xyz", "X-Team": "a"}
    for bad in ('{"X-Chroma-Token": "sekrit"', '["sekrit"]', '{"X-N": 5}'):
        with pytest.raises(ConfigError, match="VAULT_MEMORY_CHROMA_HEADERS") as err:
            vectorstore.server_headers({"VAULT_MEMORY_CHROMA_HEADERS": bad})
        assert "sekrit" not in str(err.value)

    monkeypatch.setenv("VAULT_MEMORY_CHROMA_TOKEN", "sekrit-token")
    monkeypatch.setenv("VAULT_MEMORY_CHROMA_HEADERS", '{"X-Chroma-Token": "sekrit-token"}')
    mem = make_memory()
    mem.index()
    assert internals(mem).store is not None
    sent = internals(mem).store.client._server._session.headers
    assert sent["authorization"] == "Bearer sekrit-token" and sent["x-chroma-token"] == "sekrit-token"
    status = json.dumps(mem.status())
    assert "sekrit" not in status
    down = make_memory(chroma_url=f"http://127.0.0.1:{free_port()}", index_dir=tmp_path / "down")
    with pytest.raises(VectorStoreUnavailableError) as err:
        down.recall("agent runbook", touch=False)
    assert "sekrit" not in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        "localhost:8000",
        "ftp://127.0.0.1:8000",
        "http://127.0.0.1:8000/chroma",
        "http://user:pw@127.0.0.1:8000",
        "http://127.0.0.1:notaport",
    ],
)
def test_malformed_url_is_a_config_error(make_memory: MemoryFactory, url: str) -> None:
    mem = make_memory(chroma_url=url, lexical_fallback=True)  # not an outage: fallback does not hide it
    with pytest.raises(ConfigError, match="chroma-url"):
        mem.recall("agent runbook", touch=False)


# --------------------------------------------------------------------------- CLI


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "vault-memory"
    cmd = [str(exe)] if exe.is_file() else [sys.executable, "-m", "vault_memory"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_MEMORY_", "CHROMA_"))}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120, env=clean | (env or {}))


def test_cli_against_the_server(vault: Path, tmp_path: Path, chroma: ChromaServer) -> None:
    base = ["--vault", str(vault), "--index-dir", str(tmp_path / "cli-index"), "--embedder", "fake"]
    r = cli(*base, "--chroma-url", chroma.url, "recall", "agent runbook sandbox", "--json", "--no-touch")
    assert r.returncode == 0, r.stderr  # recall indexes first: a vault this small is embedded before it answers
    got = json.loads(r.stdout)
    assert got["hits"][0]["path"] == "Inbox/agent runbook.md"
    assert not got["lexical_only"] and 0 < got["vectors"]["embedded"] == got["vectors"]["chunks"]
    r = cli(*base, "--chroma-url", chroma.url, "index")  # nothing left to embed (the vectors are on the server)
    assert r.returncode == 0, r.stderr
    r = cli(*base, "--chroma-url", chroma.url, "status", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    store = info["vector_store"]
    assert store["backend"] == "chroma-http" and store["url"] == chroma.url
    assert store["collection"].startswith("vm-vault-") and store["vectors"] == info["chunks"] > 0
    r = cli(*base, "status", env={"VAULT_MEMORY_CHROMA_URL": chroma.url})  # the environment instead of the flag
    assert r.returncode == 0, r.stderr
    assert f"chroma-http at {chroma.url}, collection {store['collection']} ({info['chunks']})" in r.stdout


def test_cli_when_the_server_is_down(vault: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    base = [
        "--vault",
        str(vault),
        "--index-dir",
        str(tmp_path / "cli-index"),
        "--embedder",
        "fake",
        "--chroma-url",
        url,
    ]
    before = snapshot(vault)
    r = cli(*base, "recall", "agent runbook", "--json")
    assert r.returncode == 7, r.stderr
    assert url in r.stderr and "chroma run" in r.stderr and "Traceback" not in r.stderr
    assert snapshot(vault) == before
    r = cli(*base, "status", "--json")
    assert r.returncode == 0, r.stderr
    store = json.loads(r.stdout)["vector_store"]
    assert store["url"] == url and store["collection"].startswith("vm-vault-") and "is not reachable" in store["error"]
    r = cli(*base, "--lexical-fallback", "recall", "agent runbook", "--json", "--no-touch")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hits"] and "BM25" in r.stderr
