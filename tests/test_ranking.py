"""ranking.coverage: the fast search gives exactly what the word-set definition gives."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_memory.search import ranking
from vault_memory.search.ranking import coverage, query_terms, word_cue

EVERY_WORD = "every word of the query"  # --explain's words

_WORD = re.compile(r"\w+")


def coverage_by_word_set(terms: frozenset[str], text: str) -> float:
    """The definition: the share of terms that are the 5-character stem of one of the text's words."""
    if not terms:
        return 1.0
    words = {w[:5] for w in _WORD.findall(text.lower())}
    return len(terms & words) / len(terms)


# Letters that case-fold into two code points (İ), titlecase (ǅ), non-ASCII digits and
# letters, combining marks (not \w), underscores, punctuation and whitespace.
ALPHABET = st.sampled_from(list("abcdeio ABCDE_-.,'\n\t0123456789") + ["é", "ß", "İ", "ǅ", "٣", "\u0301", "ﬁ", "Σ"])
TEXT = st.lists(
    st.one_of(ALPHABET, st.sampled_from(["tea", "teapot", "teas", "morning", "morni", "ab", "a_b"])), max_size=60
).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=TEXT, query=TEXT, extra=st.lists(TEXT, max_size=3))
def test_coverage_equals_the_word_set_definition(text: str, query: str, extra: list[str]) -> None:
    for terms in (query_terms(query), query_terms(text), frozenset(extra) | query_terms(query)):
        assert coverage(terms, text) == coverage_by_word_set(terms, text), (terms, text)


def test_coverage_examples() -> None:
    terms = query_terms("which hot drink does she like in the morning")
    assert terms == {"hot", "drink", "like", "morni"}
    assert coverage(terms, "She drinks tea every morning.") == 0.5  # drink(s), morni(ng)
    assert coverage(terms, "A hotel, a shot: nothing hot-ish?") == 0.25  # hot- counts, hotel and shot do not
    assert coverage(terms, "") == 0.0
    assert coverage(frozenset(), "anything") == 1.0
    assert coverage(frozenset({"morning"}), "morning") == 0.0  # longer than a stem: never a word's stem
    assert word_cue(frozenset({"tea", "morni"}), "Tea, in the mornings") == EVERY_WORD
    four = frozenset({"tea", "morni", "sugar", "milk"})
    assert word_cue(four, "Tea, in the mornings") == ""  # 2 of 4: not every word
    assert word_cue(frozenset({"tea"}), "Tea") == ""  # one word is never a cue


def test_word_char_is_what_regex_w_matches() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert set(re.findall(r"\w", every)) == {c for c in every if ranking._is_word_char(c)}


def test_k_hits_when_every_note_has_several_chunks(tmp_path: Path) -> None:
    """A side's first 100 chunks of 60 notes of 3 sections each are 34 notes: `-k 50` must still
    give 50 hits, in every mode, and the first n of any k must stay the first n of k = 60."""
    from tests.conftest import write_notes
    from vault_memory.config import Config
    from vault_memory.index.embedders import FakeEmbedder
    from vault_memory.memory import Memory
    from vault_memory.search.rules import DEFAULT_RULES

    def sections(i: int) -> str:  # each note's own words: copies of one line would be one hit (fold_copies)
        return "".join(
            f"\n## Part {s}\n\nThe lighthouse keeper logs the tide, entry {s} of log {100 + i}.\n" for s in range(3)
        )

    notes = {f"Logs/log {i:02d}.md": f"# Log {i}\n{sections(i)}" for i in range(60)}
    vault = write_notes(tmp_path / "v", notes)
    with Memory(Config(vault=vault, index_dir=tmp_path / "i", embedder="fake"), embedder=FakeEmbedder()) as m:
        m.index()
        assert 3 * 34 > DEFAULT_RULES.candidates  # the case: the pool's chunks hold fewer notes than asked for
        for mode in ("bm25", "dense", "hybrid"):
            full = [h.path for h in m.recall("lighthouse keeper tide", k=60, mode=mode, decay=False, touch=False)]
            assert len(full) == 60 and len(set(full)) == 60
            for k in (10, 34, 35, 50):
                got = [h.path for h in m.recall("lighthouse keeper tide", k=k, mode=mode, decay=False, touch=False)]
                assert got == full[:k]


def test_a_notes_names_count_as_words_it_covers(tmp_path: Path) -> None:
    """Issue 38: `recall "heating"` ranked Boiler (`aliases: [heating]`) 9th: coverage read the
    chunk's words only, so the alias's BM25 match was multiplied by 0. A note's title, aliases and
    file name are words each of its chunks covers."""
    from tests.conftest import write_notes
    from vault_memory.config import Config
    from vault_memory.index.embedders import FakeEmbedder
    from vault_memory.memory import Memory
    from vault_memory.search.rules import DEFAULT_RULES

    notes = {
        "Areas/Boiler.md": "---\naliases: [heating]\n---\nVaillant ecoTEC, pressure between 1.0 and 1.5 bar.\n",
        "Daily/2026-10-02.md": "Long day. Talked about the heating bill, bikes, lunch and the garden shed.\n",
        **{f"n{i}.md": f"Note {i} about bikes, lunch and the garden shed.\n" for i in range(6)},
    }
    vault = write_notes(tmp_path / "v", notes)
    cfg = Config(vault=vault, index_dir=tmp_path / "i", embedder="fake")
    place = {}
    for on in (True, False):
        with Memory(cfg, embedder=FakeEmbedder(), rules=DEFAULT_RULES.but(names_count=on)) as m:
            m.index()
            hits = m.recall("heating", k=10, mode="hybrid", decay=False, touch=False, explain=True)
            place[on] = [h.path for h in hits].index("Areas/Boiler.md")
            assert hits[place[on]].explain["coverage"] == (1.0 if on else 0.0)  # type: ignore[index]
    assert place[True] < place[False]


def test_a_notes_file_name_is_among_the_names_bm25_weights_as_its_title(tmp_path: Path) -> None:
    """Obsidian names a note by its file. `ARCS method.md` opens on a section's H1, "# A - Attractive
    Quality", which the catalog takes for its title; BM25's title field held title, aliases and tags
    only, so "the ARCS method" did not find the note so named. The file name joins them when it adds
    a word of letters (a journal named by its date adds none)."""
    from tests.conftest import write_notes
    from vault_memory.config import Config
    from vault_memory.index.catalog import _names_text
    from vault_memory.index.embedders import FakeEmbedder
    from vault_memory.memory import Memory

    notes = {
        "ARCS method.md": "From a video guide.\n\n# A - Attractive Quality\n\nOften a strength.\n\n"
        "# R - Room for Growth\n\nHow innocence turns into giving up.\n",
        "Howto.md": "# Howto\n\nA method for a character: arcs, goals, a method to grow, and the method again.\n",
        **{f"n{i}.md": f"Note {i} about a method for bread.\n" for i in range(4)},
    }
    vault = write_notes(tmp_path / "v", notes)
    with Memory(Config(vault=vault, index_dir=tmp_path / "i", embedder="fake"), embedder=FakeEmbedder()) as m:
        m.index()
        hits = m.recall("the ARCS method", k=3, mode="bm25", decay=False, touch=False)
        assert hits[0].path == "ARCS method.md"
    assert _names_text("A - Attractive Quality", [], [], "ARCS method.md") == "A - Attractive Quality ARCS method"
    assert _names_text("Generate A UUID", [], [], "postgres/generate-a-uuid.md") == "Generate A UUID"
    assert _names_text("Apr 15th, 2021", [], [], "journals/2021_04_15.md") == "Apr 15th, 2021"


def _relevance_at_half_and_whole(
    tmp_path: Path, notes: dict[str, str], query: str
) -> tuple[dict[str, float], dict[str, float]]:
    """Each hit's relevance for `query` over `notes`, with `navigation_weight` at its default (half)
    and at 1.0 (whole), over one index."""
    from tests.conftest import write_notes
    from vault_memory.config import Config
    from vault_memory.index.embedders import FakeEmbedder
    from vault_memory.memory import Memory
    from vault_memory.search.rules import DEFAULT_RULES

    vault = write_notes(tmp_path / "v", notes)
    cfg = Config(vault=vault, index_dir=tmp_path / "i", embedder="fake")
    relevance: dict[float, dict[str, float]] = {}
    for weight in (DEFAULT_RULES.navigation_weight, 1.0):
        with Memory(cfg, embedder=FakeEmbedder(), rules=DEFAULT_RULES.but(navigation_weight=weight)) as m:
            m.index()
            hits = m.recall(query, k=9, mode="hybrid", decay=False, touch=False, explain=True)
            relevance[weight] = {h.path: h.explain["relevance"] for h in hits}  # type: ignore[index]
    return relevance[DEFAULT_RULES.navigation_weight], relevance[1.0]


def test_a_page_that_only_says_its_name_or_points_elsewhere_keeps_half_its_relevance(tmp_path: Path) -> None:
    """`flancian`'s Foam garden: "what's my handle on Matrix" found `matrix.md` first, a page a link
    created and nobody filled in ("# Matrix"), above the person's own page that gives the handle. A
    chunk that only says its own name keeps `navigation_weight` of its relevance, as one that only
    points elsewhere does (a README of links); a chunk that says something keeps all of it."""
    from vault_memory.search.rules import DEFAULT_RULES

    notes = {
        "matrix.md": "# Matrix\n",
        "readme.md": "# Index\n\n- [Matrix](matrix.md)\n- [Handles](flancian.md)\n",
        "flancian.md": "# Flancian\n\n- Find me at @flancian@matrix.org, and as @flancian on Twitter and GitHub.\n",
        **{f"n{i}.md": f"# Note {i}\n\nBikes, lunch and the garden shed, day {i}.\n" for i in range(6)},
    }
    half, whole = _relevance_at_half_and_whole(tmp_path, notes, "what's my handle on Matrix")
    assert DEFAULT_RULES.navigation_weight == 0.5
    for page in ("matrix.md", "readme.md"):
        assert whole[page] > 0 and abs(half[page] - whole[page] / 2) < 1e-3, page
    assert half["flancian.md"] == whole["flancian.md"] > 0


def test_a_web_page_saved_under_a_title_that_names_it_keeps_all_its_relevance(tmp_path: Path) -> None:
    """Stop 82: `flancian` keeps a person's Twitter page as "# Rodrigo Baraglia" over
    `- https://twitter.com/encincovoy`, and "thank Rodrigo Baraglia, tagging him" found the note 33rd:
    a chunk of bare URLs pointed elsewhere and kept half its relevance, though its title names what
    it saves. A page saved under a title is a bookmark, as a Markdown link whose text names the page
    is (stop 80): it keeps all its relevance. Bare URLs under a day's title still say nothing."""
    notes = {
        "rodrigo-baraglia.md": "# Rodrigo Baraglia\n- https://twitter.com/encincovoy\n",
        "2020-06-24.md": "- https://twitter.com/encincovoy/status/1275894239327588355\n",
        "readme.md": "# Index\n\n- [Rodrigo Baraglia](rodrigo-baraglia.md)\n",
        **{f"n{i}.md": f"# Note {i}\n\nBikes, lunch and the garden shed, day {i}.\n" for i in range(6)},
    }
    half, whole = _relevance_at_half_and_whole(tmp_path, notes, "thank Rodrigo Baraglia on encincovoy twitter")
    assert half["rodrigo-baraglia.md"] == whole["rodrigo-baraglia.md"] > 0
    for page in ("2020-06-24.md", "readme.md"):  # a day's bare link, a way to another note
        assert whole[page] > 0 and abs(half[page] - whole[page] / 2) < 1e-3, page
