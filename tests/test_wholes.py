"""wholes.py: the dense side of relevance mixes a note's best part with the note as a whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vault_memory.search.wholes import dense_side, mean_cosines

QUERY = "sourdough starter feeding schedule"

#: A page about the starter (one chunk), and a day's log whose one short part answers in the
#: query's own words among parts about other things (each heading a chunk of its own).
NOTES = {
    "Baking/Sourdough.md": "# Sourdough starter\n\nThe feeding schedule: feed it every twelve hours, equal "
    "flour and water.\n",
    "Journal/2026-03-02.md": "# 2026-03-02\n\n## Bread\n\nSourdough starter feeding schedule.\n\n"
    + "".join(
        f"## {topic}\n\n" + f"{topic} today: meetings, errands, the bike to the shop, lunch with Jonas. " * 12 + "\n\n"
        for topic in ("Work", "Garden", "Errands", "Family", "Reading", "Running")
    ),
    **{f"Notes/n{i}.md": f"# Note {i}\n\nBikes, lunch and the garden shed, day {i}.\n" for i in range(6)},
}


def test_dense_side_mixes_each_part_with_its_notes_whole() -> None:
    got = dense_side([0.8, 0.6, 0.5], ["a", "a", "b"], {"a": 0.4}, 0.25)
    assert np.allclose(got, [0.7, 0.55, 0.5])  # b has no whole: its part's cosine as it was
    assert dense_side([0.8, 0.6], ["a", "b"], {"a": 0.4, "b": 0.1}, 0.0) == [0.8, 0.6]
    assert dense_side([0.8], ["a"], {}, 0.3) == [0.8]


def test_mean_cosines_are_the_cosine_to_each_notes_mean() -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(7, 5)).astype(np.float32)
    qvec = rng.normal(size=5).astype(np.float32)
    codes = np.array([4, 1, 4, 2, 1, 4, 2])
    got = mean_cosines(codes, vecs, qvec)
    assert sorted(got) == [1, 2, 4]
    for note, cos in got.items():
        mean = vecs[codes == note].mean(axis=0)
        assert abs(cos - float(mean @ qvec) / float(np.linalg.norm(mean))) < 1e-5
    assert mean_cosines(np.array([3, 3]), np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1.0, 0.0])) == {}
    assert mean_cosines(np.array([], dtype=np.int64), np.zeros((0, 5)), qvec) == {}


def _relevance(tmp_path: Path, name: str, **settings: object) -> dict[str, dict[str, float]]:
    """Each hit's relevance for QUERY at the default `whole_note` and at 0, over one index."""
    from tests.conftest import write_notes
    from vault_memory.config import Config
    from vault_memory.index.embedders import FakeEmbedder
    from vault_memory.memory import Memory
    from vault_memory.search.rules import DEFAULT_RULES

    vault = write_notes(tmp_path / "v", NOTES)
    cfg = Config(vault=vault, index_dir=tmp_path / name, embedder="fake", **settings)  # type: ignore[arg-type]
    out: dict[str, dict[str, float]] = {}
    for label, share in (("default", DEFAULT_RULES.whole_note), ("off", 0.0)):
        with Memory(cfg, embedder=FakeEmbedder(), rules=DEFAULT_RULES.but(whole_note=share)) as m:
            m.index()
            hits = m.recall(QUERY, k=9, mode="dense", decay=False, touch=False, explain=True)
            out[label] = {h.path: h.explain["relevance"] for h in hits}  # type: ignore[index]
    return out


def test_a_note_about_the_query_outranks_a_day_that_mentions_it_once(tmp_path: Path) -> None:
    """A day's log whose short part says the query's words outranks, by its best part alone, the
    page about the subject that says it in its own words; the day's other parts are about other
    things, and the note as a whole says so (stop 83: the dense side is `whole_note` of the note's
    mean vector)."""
    from vault_memory.search.rules import DEFAULT_RULES

    assert DEFAULT_RULES.whole_note > 0
    got = _relevance(tmp_path, "i")
    off, on = got["off"], got["default"]
    assert max(off, key=off.__getitem__) == "Journal/2026-03-02.md"
    assert max(on, key=on.__getitem__) == "Baking/Sourdough.md"


def test_the_whole_is_the_same_from_the_exact_vectors_and_from_the_catalog(tmp_path: Path) -> None:
    """Exact search takes the candidates' rows of the vectors it holds in memory; a Chroma index
    (here forced by `exact_search_limit = 0`) reads their chunk vectors from the catalog. Both give
    each note the same whole, so a vault's order does not depend on its size or its server."""
    exact = _relevance(tmp_path, "exact")["default"]
    store = _relevance(tmp_path, "store", exact_search_limit=0)["default"]
    assert exact.keys() == store.keys() and len(exact) >= 3
    for path, relevance in exact.items():
        assert abs(store[path] - relevance) < 1e-5, path
