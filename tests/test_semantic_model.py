"""End to end with the real offline embedder (all-MiniLM-L6-v2, int8 ONNX from PyPI)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, MemoryFactory
from vault_memory.index.embedders import make_embedder

pytestmark = pytest.mark.model

QUERIES = json.loads((REPO / "tests/fixtures/sample_queries.json").read_text(encoding="utf-8"))
STOP = set(
    "a an and are as at be but by can could did do does for from had has have how i if in into is it its me my "
    "of on or our she he her his they them their so than that the this those to was we were what when where "
    "which who whom why will with would you your about".split()
)


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    return make_embedder("minilm")


def words(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP and len(w) > 2}


def test_paraphrase_queries_share_no_words_with_their_notes(vault: Path) -> None:
    paraphrases = [q for q in QUERIES if q["kind"] == "paraphrase"]
    assert len(paraphrases) >= 6
    for q in paraphrases:
        text = (vault / q["expected"]).read_text(encoding="utf-8")
        assert not words(q["query"]) & words(text), q


def test_semantic_recall_on_paraphrases(make_memory: MemoryFactory, minilm: object) -> None:
    mem = make_memory(minilm)
    mem.index()
    paraphrases = [q for q in QUERIES if q["kind"] == "paraphrase"]
    found_top3 = 0
    for q in paraphrases:
        dense = [h.path for h in mem.recall(q["query"], k=3, mode="dense", touch=False, decay=False)]
        hybrid = [h.path for h in mem.recall(q["query"], k=3, touch=False, decay=False)]
        found_top3 += q["expected"] in hybrid
        assert q["expected"] in dense, (q, dense)
    assert found_top3 == len(paraphrases)
    # the lexical index alone cannot do this: no shared words
    lexical_hits = sum(
        q["expected"] in [h.path for h in mem.recall(q["query"], k=3, mode="bm25", touch=False)] for q in paraphrases
    )
    assert lexical_hits < len(paraphrases)
