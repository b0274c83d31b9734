"""ranking.coverage: the fast search gives exactly what the word-set definition gives."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_memory.search import ranking
from vault_memory.search.ranking import coverage, is_full_cue, query_terms

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
    assert is_full_cue(frozenset({"tea", "morni"}), "Tea, in the mornings") is True


def test_word_char_is_what_regex_w_matches() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert set(re.findall(r"\w", every)) == {c for c in every if ranking._is_word_char(c)}
