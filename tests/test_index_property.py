"""Property: after any sequence of writes, edits, renames, copies, deletes, our own first writes and
reindexes, the index's ids and hashes equal the vault's, and equal what a rebuild from scratch produces."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from vault_memory.config import Config
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.internals import internals
from vault_memory.lifecycle.edits import edit_note
from vault_memory.memory import Memory
from vault_memory.vault.notefile import parse_note

WORDS = st.sampled_from("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split())
TEXT = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)
NAMES = st.sampled_from([f"n{i}.md" for i in range(8)] + [f"sub/m{i}.md" for i in range(4)])


def index_rows(mem: Memory) -> set[tuple[str, str, str, str]]:
    return {(r.node_id, r.path, r.file_hash, r.body_hash) for r in internals(mem).catalog.notes()}


class VaultMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="vm-prop-"))
        self.vault = self.root / "vault"
        self.vault.mkdir()
        # exact_search_limit=0: keep a vector store at any size, so the invariant below checks it
        self.mem = Memory(
            Config(vault=self.vault, index_dir=self.root / "index", embedder="fake", exact_search_limit=0),
            embedder=FakeEmbedder(),
        )

    def teardown(self) -> None:
        self.mem.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.vault)) for p in self.vault.rglob("*.md"))

    @rule(name=NAMES, title=TEXT, body=TEXT, with_fm=st.booleans())
    def write(self, name: str, title: str, body: str, with_fm: bool) -> None:
        path = self.vault / name
        path.parent.mkdir(parents=True, exist_ok=True)
        fm = f"---\ntags: [{title.split()[0]}]\n---\n" if with_fm else ""
        path.write_text(f"{fm}# {title}\n\n{body}\n", encoding="utf-8")

    @precondition(lambda self: bool(self.files()))
    @rule(data=st.data(), body=TEXT)
    def edit_body(self, data: st.DataObject, body: str) -> None:
        name = data.draw(st.sampled_from(self.files()))
        path = self.vault / name
        path.write_text(path.read_text(encoding="utf-8") + f"\n{body}\n", encoding="utf-8")

    @precondition(lambda self: bool(self.files()))
    @rule(data=st.data(), value=WORDS)
    def edit_frontmatter(self, data: st.DataObject, value: str) -> None:
        name = data.draw(st.sampled_from(self.files()))
        path = self.vault / name
        text = path.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            path.write_text(text.replace("---\n", f"---\nmood: {value}\n", 1), encoding="utf-8")

    @precondition(lambda self: bool(self.files()))
    @rule(data=st.data(), dest=NAMES)
    def rename(self, data: st.DataObject, dest: str) -> None:
        name = data.draw(st.sampled_from(self.files()))
        dst = self.vault / dest
        if dst.exists():
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        (self.vault / name).rename(dst)

    @precondition(lambda self: bool(self.files()))
    @rule(data=st.data())
    def copy(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(self.files()))
        dst = self.vault / ("copy-" + Path(name).name)
        if not dst.exists():
            dst.write_bytes((self.vault / name).read_bytes())

    @precondition(lambda self: bool(self.files()))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        (self.vault / data.draw(st.sampled_from(self.files()))).unlink()

    @precondition(lambda self: bool(self.files()))
    @rule(data=st.data())
    def first_write(self, data: st.DataObject) -> None:
        """Our first write of state kept about a note gives it a node_id, or a fresh one if a copy shares its id."""
        rel = data.draw(st.sampled_from(self.files()))
        edit_note(internals(self.mem), rel, lambda note: ({"tier": "long"}, []))
        internals(self.mem).index_paths([rel])

    @precondition(lambda self: bool(self.files()))
    @rule(data=st.data(), unpin=st.booleans())
    def pin(self, data: st.DataObject, unpin: bool) -> None:
        """A pin writes `pinned` alone (a fresh node_id only for a copy sharing one); unpin takes it away."""
        rel = data.draw(st.sampled_from(self.files()))
        self.mem.pin(rel)
        if unpin:
            self.mem.unpin(rel)

    @rule()
    def reindex(self) -> None:
        self.check_equal_to_vault()

    @rule(data=st.data())
    def partial_sync(self, data: st.DataObject) -> None:
        known = [r.path for r in internals(self.mem).catalog.notes()]
        pool = sorted(set(known) | set(self.files()))
        if pool:
            internals(self.mem).sync_paths(data.draw(st.lists(st.sampled_from(pool), max_size=4)))

    @invariant()
    def index_rows_point_at_real_notes(self) -> None:
        # Whatever has been indexed so far still names real hashes of those notes or is stale-but-consistent:
        # chroma and the catalog always agree on chunk ids.
        store = internals(self.mem).store
        assert store is not None
        assert store.ids() == internals(self.mem).catalog.chunk_ids()

    def check_equal_to_vault(self) -> None:
        self.mem.index()
        claims: dict[str, str | None] = {}
        notes = {}
        for rel in self.files():
            raw = (self.vault / rel).read_bytes()
            notes[rel] = (raw, parse_note(rel, raw))
            nid = notes[rel][1].meta.get("node_id")
            claims[rel] = str(nid) if nid else None
        holders = Counter(v for v in claims.values() if v)
        vault_rows = set()
        for rel, (raw, note) in notes.items():
            # a note's identity is the node_id it carries when no other note carries it, else its path
            nid = claims[rel]
            identity = nid if nid and holders[nid] == 1 else f"path:{rel}"
            vault_rows.add((identity, rel, hashlib.sha256(raw).hexdigest(), note.body_hash))
        assert index_rows(self.mem) == vault_rows
        # and a rebuild from nothing gives the same rows and chunks
        chunks = {
            (c, internals(self.mem).catalog.chunks_by_ids([c])[c].text_hash)
            for c in internals(self.mem).catalog.chunk_ids()
        }
        other = Memory(
            Config(vault=self.vault, index_dir=self.root / "index2", embedder="fake"), embedder=FakeEmbedder()
        )
        try:
            other.index(rebuild=True)
            assert index_rows(other) == vault_rows
            assert {
                (c, internals(other).catalog.chunks_by_ids([c])[c].text_hash)
                for c in internals(other).catalog.chunk_ids()
            } == chunks
        finally:
            other.close()
            shutil.rmtree(self.root / "index2", ignore_errors=True)


VaultMachine.TestCase.settings = settings(
    max_examples=20, stateful_step_count=15, deadline=None, suppress_health_check=list(HealthCheck)
)
TestVaultMachine = VaultMachine.TestCase
TestVaultMachine = pytest.mark.slow(TestVaultMachine)  # 20 random histories: the full suite only
