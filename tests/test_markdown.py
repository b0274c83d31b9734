"""Tests for vault_memory.vault.markdown: note info extraction and chunking."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from vault_memory.errors import ConfigError
from vault_memory.vault.markdown import (
    Chunk,
    NoteInfo,
    approx_tokens,
    chunk_body,
    chunk_note,
    extract_info,
    strip_comments,
    strip_queries,
)

# --------------------------------------------------------------------------- #
# extract_info: title
# --------------------------------------------------------------------------- #


def test_title_prefers_frontmatter() -> None:
    info = extract_info({"title": "From YAML"}, "# From heading\n", "stem")
    assert info.title == "From YAML"


def test_title_frontmatter_non_string_is_stringified() -> None:
    assert extract_info({"title": dt.date(2026, 10, 2)}, "# H\n", "s").title == "2026-10-02"
    assert extract_info({"title": 42}, "", "s").title == "42"


@pytest.mark.parametrize("empty", [None, "", "   "])
def test_title_empty_frontmatter_falls_back_to_heading(empty: object) -> None:
    assert extract_info({"title": empty}, "intro\n\n# Real Title\n", "s").title == "Real Title"


def test_title_is_first_level_one_heading_outside_code() -> None:
    body = (
        "## Second level\n\n```\n# fenced, not a heading\n```\n\n    # indented code\n\n# The *Real* `One`\n\n# Later\n"
    )
    assert extract_info({}, body, "stem").title == "The Real One"


def test_title_setext_heading_counts() -> None:
    assert extract_info({}, "Big Title\n=========\n\ntext\n", "stem").title == "Big Title"


def test_title_falls_back_to_stem() -> None:
    assert extract_info({}, "just text\n\n## only h2\n", "2026-10-02").title == "2026-10-02"
    assert extract_info({}, "", "Empty").title == "Empty"


def test_title_ignores_heading_inside_blockquote() -> None:
    assert extract_info({}, "> # quoted\n\ntext\n", "stem").title == "stem"


# --------------------------------------------------------------------------- #
# extract_info: tags
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"tags": ["Project", "#home-lab", "ai/agents"]}, ("project", "home-lab", "ai/agents")),
        ({"tags": "alpha, beta gamma"}, ("alpha", "beta", "gamma")),
        ({"tags": "#one,#two"}, ("one", "two")),
        ({"tag": "single"}, ("single",)),
        ({"tags": ["a"], "tag": ["b", "A"]}, ("a", "b")),
        ({"tags": None}, ()),
        ({"tags": 2026}, ()),  # a pure number is not a tag
        ({"tags": [None, True, "", "#", "ok", 7, ["nested"]]}, ("ok", "nested")),
        ({"tags": {"weird": "mapping"}}, ()),
    ],
)
def test_frontmatter_tag_forms(meta: dict[str, object], expected: tuple[str, ...]) -> None:
    assert extract_info(meta, "", "s").tags == expected


def test_inline_tags_positive_forms_in_order() -> None:
    body = (
        "#start of line and #Tag, #nested/deep/tag and #tag-with-dash.\n"
        "- a list item #in_list\n"
        "> quoted #quoted\n\n"
        "## A heading #heading-tag\n\n"
        "| col |\n|---|\n| cell #in-table |\n"
        "#y1984 is a tag\n"
    )
    info = extract_info({"tags": ["tag"]}, body, "s")
    assert info.tags == (
        "tag",
        "start",
        "nested/deep/tag",
        "tag-with-dash",
        "in_list",
        "quoted",
        "heading-tag",
        "in-table",
        "y1984",
    )


@pytest.mark.parametrize(
    "body",
    [
        "# Heading\n",
        "### Heading three\n",
        "use `#code` here\n",
        "use ``a `#x` b`` here\n",
        "```\n#fenced\n```\n",
        "~~~md\n#tilde\n~~~\n",
        "para\n\n    #indented code\n",
        "see http://example.com/page#section\n",
        "see https://example.com/#/route\n",
        "issue #123 and #2026\n",
        "foo#bar\n",
        "a [link](#anchor)\n",
        "escaped \\#nope\n",
        "<div>\n#inhtml\n</div>\n",
        "[[Note#Heading]]\n",
        "[[Note|shown #alias]]\n",
    ],
)
def test_inline_tag_negatives(body: str) -> None:
    assert extract_info({}, body, "s").tags == ()


def test_unclosed_backtick_does_not_hide_tags() -> None:
    assert extract_info({}, "a ` stray backtick #real\n", "s").tags == ("real",)


def test_tags_lowercased_and_deduplicated() -> None:
    info = extract_info({"tags": "Eris"}, "#ERIS #eris #Other #other\n", "s")
    assert info.tags == ("eris", "other")


# --------------------------------------------------------------------------- #
# extract_info: aliases
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"aliases": ["Eris", "the agent"]}, ("Eris", "the agent")),
        ({"aliases": "Eris"}, ("Eris",)),
        ({"aliases": "Eris, Agent"}, ("Eris", "Agent")),
        ({"alias": "Solo"}, ("Solo",)),
        ({"aliases": ["A"], "alias": ["B", "A"]}, ("A", "B")),
        ({"aliases": None}, ()),
        ({"aliases": [None, "", 2026, "x"]}, ("2026", "x")),
        ({}, ()),
    ],
)
def test_aliases(meta: dict[str, object], expected: tuple[str, ...]) -> None:
    assert extract_info(meta, "", "s").aliases == expected


# --------------------------------------------------------------------------- #
# extract_info: wikilinks
# --------------------------------------------------------------------------- #


def test_wikilink_forms() -> None:
    body = (
        "See [[Note]], [[Other Note|shown text]], [[Third#Some Heading]], "
        "[[Fourth#^block|x]] and [[Folder/Fifth]].\n\n"
        "![[diagram.png]] ![[Scan.PDF]] ![[Embedded Note]] ![[Sixth.md]]\n\n"
        "[[#Local heading]] [[Note]] [[ Spaced ]]\n\n"
        "| a | b |\n|---|---|\n| [[Table Link\\|alias]] | y |\n"
    )
    assert extract_info({}, body, "s").links == (
        "Note",
        "Other Note",
        "Third",
        "Fourth",
        "Folder/Fifth",
        "Embedded Note",
        "Sixth.md",
        "Spaced",
        "Table Link",
    )


def test_wikilinks_inside_code_are_ignored() -> None:
    body = "`[[InSpan]]`\n\n```\n[[InFence]]\n```\n\n    [[Indented]]\n\n- item [[Real]]\n\n> quote [[Quoted]]\n"
    assert extract_info({}, body, "s").links == ("Real", "Quoted")


def test_non_embed_link_to_file_is_kept() -> None:
    assert extract_info({}, "[[report.pdf]]\n", "s").links == ("report.pdf",)


def test_extract_info_returns_noteinfo_and_tolerates_crlf() -> None:
    info = extract_info({}, "# Title\r\n\r\ntext #tag [[Link]]\r\n", "s")
    assert info == NoteInfo(title="Title", tags=("tag",), aliases=(), links=("Link",))


# --------------------------------------------------------------------------- #
# chunk_body: helpers
# --------------------------------------------------------------------------- #


def content_of(chunk: Chunk) -> str:
    """The chunk's own text, without its heading path line."""
    if not chunk.heading:
        return chunk.text
    first, _, rest = chunk.text.partition("\n")
    # The heading line is the path, or shortened: "… > Child" (ancestors dropped) or "Chi…" (cut).
    dropped = first.startswith("… > ") and chunk.heading.endswith(" > " + first[len("… > ") :])
    cut = first.endswith("…") and chunk.heading.split(" > ")[-1].startswith(first[:-1].rstrip())
    assert first == chunk.heading or dropped or cut, (first, chunk.heading)
    return rest


def nonspace(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace())


def heading_lines(body: str) -> set[int]:
    """Line numbers of the top-level headings that head something, by the same CommonMark parser
    (the oracle): a heading whose next top-level block is a heading of its level or above, or
    that ends the body, heads nothing, and is text."""
    blocks = [
        t for t in MarkdownIt("commonmark").enable("table").parse(body) if t.level == 0 and t.map and t.nesting >= 0
    ]
    lines: set[int] = set()
    for i, tok in enumerate(blocks):
        if tok.type != "heading_open" or tok.map is None:
            continue
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if nxt is not None and not (nxt.type == "heading_open" and int(nxt.tag[1:]) <= int(tok.tag[1:])):
            lines.update(range(tok.map[0], tok.map[1]))
    return lines


def is_subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(ch in it for ch in needle)


def check_chunks(body: str, chunks: list[Chunk], max_tokens: int, count: Callable[[str], int]) -> None:
    """Every invariant chunk_body promises, for any body."""
    # chunk_body indexes what Obsidian shows: `%% comments %%` are not content (random noise can
    # write "%%"; a body that is only a comment has no chunks), nor are query blocks' sources (a
    # Dataview block shows its results). Lines are kept, so line numbers hold.
    body = strip_queries(strip_comments(body.replace("\r\n", "\n").replace("\r", "\n")))
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert count(chunk.text) <= max_tokens, chunk
        assert chunk.text == chunk.text.strip()
        assert content_of(chunk).strip()
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)

    lines = body.split("\n")
    for chunk in chunks:
        first_line = content_of(chunk).strip().split("\n")[0].strip()
        assert first_line in lines[chunk.start_line]

    heads = heading_lines(body)
    expected = nonspace("\n".join(ln for i, ln in enumerate(lines) if i not in heads))
    got = nonspace("".join(content_of(c) for c in chunks))
    if not body.strip():
        assert chunks == []
        return
    assert chunks
    if not expected:  # only headings: the headings themselves are the content
        expected = nonspace(body)
    # Nothing lost, nothing invented, order kept.
    assert is_subsequence(expected, got)
    assert is_subsequence(got, nonspace(body))
    if all(c.text.startswith(c.heading + "\n") for c in chunks if c.heading):
        assert got == expected  # exact: no duplicates either


def words(n: int, seed: int = 0) -> str:
    vocab = ["garden", "valve", "sensor", "schedule", "water", "soil", "pump", "relay"]
    return " ".join(vocab[(i * 7 + seed) % len(vocab)] for i in range(n))


# --------------------------------------------------------------------------- #
# chunk_body: structure
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("body", ["", "   ", "\n\n\t\n"])
def test_blank_body_has_no_chunks(body: str) -> None:
    assert chunk_body(body) == []


def test_chunks_follow_heading_paths() -> None:
    body = (
        "Preamble line.\n\n"
        "# Projects\n\nProjects intro.\n\n"
        "## Eris\n\nThe agent.\n\n"
        "### Decisions\n\n- use sqlite\n- keep markdown canonical\n\n"
        "## Garden\n\nIrrigation.\n\n"
        "#### Deep\n\nskipped levels\n\n"
        "# Travel\n\nBike trip.\n"
    )
    chunks = chunk_body(body)
    assert [(c.heading, content_of(c)) for c in chunks] == [
        ("", "Preamble line."),
        ("Projects", "Projects intro."),
        ("Projects > Eris", "The agent."),
        ("Projects > Eris > Decisions", "- use sqlite\n- keep markdown canonical"),
        ("Projects > Garden", "Irrigation."),
        ("Projects > Garden > Deep", "skipped levels"),
        ("Travel", "Bike trip."),
    ]
    assert chunks[3].text == "Projects > Eris > Decisions\n- use sqlite\n- keep markdown canonical"
    lines = body.split("\n")
    assert [lines[c.start_line] for c in chunks] == [
        "Preamble line.",
        "Projects intro.",
        "The agent.",
        "- use sqlite",
        "Irrigation.",
        "skipped levels",
        "Bike trip.",
    ]
    check_chunks(body, chunks, 256, approx_tokens)


def test_a_heading_with_nothing_under_it_is_text_and_small_sections_are_not_merged() -> None:
    # "## Empty" heads no text and no heading below it: no heading path carries it, so it is a
    # line of the section it is in ("A"), not dropped; B and C stay chunks of their own
    body = "# A\n\n## Empty\n\n## B\n\none\n\n## C\n\ntwo\n"
    chunks = chunk_body(body)
    assert [(c.heading, c.text) for c in chunks] == [
        ("A", "A\n## Empty"),
        ("A > B", "A > B\none"),
        ("A > C", "A > C\ntwo"),
    ]
    assert [c.index for c in chunks] == [0, 1, 2]
    # a Logseq graph's heading blocks are its statements: every one is found
    journal = (
        "## Decided to be more intentional with what I listen to\n### Less [[podcasts]]\n### More [[music]]\n"
        "### Thinking of the security aphorism\n    - Don't download anything you didn't go looking for\n"
    )
    text = " ".join(c.text for c in chunk_body(journal))
    assert "Less [[podcasts]]" in text and "More [[music]]" in text


def test_headings_only_note_gives_one_chunk() -> None:
    body = "# Title\n\n## Section\n\n### Sub\n"
    chunks = chunk_body(body)
    assert len(chunks) == 1
    assert chunks[0].heading == "Title > Section"  # the last heading heads nothing: it is the text
    assert chunks[0].text == "Title > Section\n### Sub"
    assert chunks[0].start_line == 4
    assert [c.text for c in chunk_body("# Building an Agora\n")] == ["# Building an Agora"]  # a title alone


def test_headings_in_code_fences_and_quotes_do_not_split() -> None:
    body = "# Real\n\n```bash\n# comment, not a heading\necho hi\n```\n\n> # quoted heading\n> text\n"
    chunks = chunk_body(body)
    assert len(chunks) == 1
    assert chunks[0].heading == "Real"
    assert "# comment, not a heading" in chunks[0].text
    assert "> # quoted heading" in chunks[0].text


def test_setext_heading_and_inline_markup_in_path() -> None:
    body = "The *Big* `Plan`\n================\n\nbody\n"
    (chunk,) = chunk_body(body)
    assert chunk.heading == "The Big Plan"
    assert chunk.text == "The Big Plan\nbody"


def test_sibling_heading_pops_the_stack() -> None:
    body = "# A\n## B\nb\n### C\nc\n## D\nd\n# E\ne\n"
    assert [c.heading for c in chunk_body(body)] == ["A > B", "A > B > C", "A > D", "E"]


def test_deterministic() -> None:
    body = "# H\n\n" + "\n\n".join(words(40, s) + "." for s in range(30))
    assert chunk_body(body, max_tokens=80, target_tokens=60) == chunk_body(body, max_tokens=80, target_tokens=60)


# --------------------------------------------------------------------------- #
# chunk_body: splitting long sections
# --------------------------------------------------------------------------- #


def test_long_section_splits_on_list_items() -> None:
    items = [f"- item {i}: {words(25, i)}" for i in range(30)]
    body = "# Garden\n\n## Log\n\n" + "\n".join(items) + "\n"
    chunks = chunk_body(body, max_tokens=120, target_tokens=100)
    assert len(chunks) > 3
    seen: list[str] = []
    for chunk in chunks:
        assert chunk.heading == "Garden > Log"
        assert chunk.text.startswith("Garden > Log\n- item ")
        assert approx_tokens(chunk.text) <= 120
        body_lines = content_of(chunk).split("\n")
        assert all(line in items for line in body_lines)  # no item cut in half
        seen.extend(body_lines)
    assert seen == items
    check_chunks(body, chunks, 120, approx_tokens)


def test_query_blocks_are_not_text_but_code_is() -> None:
    # ../shared/obsidian-vault's reading list: "TABLE author, rating FROM #book" made it recall's
    # #1 for "Book a table for Jonas on Friday", and its "answer".
    body = (
        "# Reading list\n\n```dataview\nTABLE author, rating FROM #book SORT rating DESC\n```\n\n"
        "- [ ] The Mom Test\n\n~~~tasks\nnot done\n~~~\n\n````query\ntag:#book\n```\nstill a query\n````\n\n"
        "```bash\nhelm rollback ingest -n atlas\n```\n\n```DataviewJS\ndv.table([], [])\n```\n"
    )
    (chunk,) = chunk_body(body)
    assert re.sub(r"\n{3,}", "\n\n", chunk.text) == (
        "Reading list\n- [ ] The Mom Test\n\n```bash\nhelm rollback ingest -n atlas\n```"
    )
    assert strip_queries(body).count("\n") == body.count("\n")  # lines kept: line numbers hold
    assert chunk.start_line == 6
    # an unclosed query fence hides the rest, as Obsidian renders it (a query to the end)
    assert strip_queries("a\n```tasks\nnot done\nb") == "a\n\n\n"
    assert strip_queries("no fences here") == "no fences here"


def test_a_fence_line_with_an_info_string_inside_a_fence_is_code_for_comments_and_queries() -> None:
    """CommonMark, and the chunker's parser: a closing fence has nothing after it. strip_comments
    took "```python" inside a ``` block for its end, so it cut the block's `%%` text and kept the
    person's `%% comment %%` after the block in the index (recall and read showed it)."""
    body = "```\ncode\n```python\n%% still code %%\n```\n%% the shed code is 4471 %%\ntext"
    assert strip_comments(body) == "```\ncode\n```python\n%% still code %%\n```\n\ntext"
    (chunk,) = chunk_body(body)
    assert "4471" not in chunk.text and "still code" in chunk.text
    query = "```dataview\nTABLE x\n```js\nLIST y\n```\nafter"
    assert strip_queries(query) == "\n\n\n\n\nafter"  # the whole query, to its real end


def test_properties_end_the_first_chunk_or_are_chunks_of_their_own() -> None:
    props = [("model", "Vaillant ecoTEC plus 832"), ("installed", "2019")]
    body = "# Boiler\n\nPressure should sit between 1.0 and 1.5 bar.\n\n## Service\n\nEvery February.\n"
    plain = chunk_body(body)
    assert chunk_note(body, (), "Boiler") == plain
    first, second = chunk_note(body, props, "Boiler")
    assert first.text == plain[0].text + "\n\n- model: Vaillant ecoTEC plus 832\n- installed: 2019"
    assert (first.heading, first.index, second) == (plain[0].heading, 0, plain[1])  # ids stay
    # too many to fit beside the first chunk: after the body's, headed by the title
    many = [(f"key{i}", "a value of several words") for i in range(12)]
    got = chunk_note(body, many, "Boiler", max_tokens=40, target_tokens=40)
    assert got[:2] == chunk_body(body, max_tokens=40, target_tokens=40)
    extra = got[2:]
    assert len(extra) >= 2 and [c.index for c in got] == list(range(len(got)))
    assert all(c.heading == "Boiler > Properties" and c.text.startswith("Boiler > Properties\n- key") for c in extra)
    assert all(approx_tokens(c.text) <= 40 for c in got)
    assert "".join(c.text for c in extra).count("a value of several words") == 12
    # a note that is only properties
    (only,) = chunk_note("", props, "Boiler")
    assert only.text == "Boiler > Properties\n- model: Vaillant ecoTEC plus 832\n- installed: 2019"


def test_long_section_keeps_code_fence_and_table_intact() -> None:
    fence = "```python\n" + "\n".join(f"x{i} = {i}  # step {i}" for i in range(12)) + "\n```"
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {words(3, i)} |" for i in range(6))
    paras = [words(30, i) + "." for i in range(6)]
    body = "# Notes\n\n" + "\n\n".join([paras[0], paras[1], fence, paras[2], table, *paras[3:]])
    chunks = chunk_body(body, max_tokens=150, target_tokens=120)
    assert len(chunks) > 1
    assert sum(fence in c.text for c in chunks) == 1
    assert sum(table in c.text for c in chunks) == 1
    check_chunks(body, chunks, 150, approx_tokens)


def test_giant_single_paragraph_splits_on_sentences() -> None:
    sentences = [f"Sentence {i} talks about the {words(12, i)}." for i in range(200)]
    body = "# Essay\n\n" + " ".join(sentences) + "\n"
    chunks = chunk_body(body, max_tokens=100, target_tokens=80)
    assert len(chunks) > 10
    for chunk in chunks:
        assert approx_tokens(chunk.text) <= 100
        content = content_of(chunk)
        assert content.startswith("Sentence ")
        assert content.endswith(".")
    assert " ".join(content_of(c) for c in chunks) == " ".join(sentences)
    check_chunks(body, chunks, 100, approx_tokens)


def test_giant_sentence_splits_on_whitespace() -> None:
    text = words(2000)  # no sentence boundary at all
    chunks = chunk_body(text, max_tokens=64, target_tokens=50)
    assert len(chunks) > 10
    assert all(approx_tokens(c.text) <= 64 for c in chunks)
    assert " ".join(c.text for c in chunks) == text  # cut between words only


def test_giant_word_splits_on_characters() -> None:
    blob = "".join(chr(ord("a") + i % 26) for i in range(5000))
    body = f"# Blob\n\n{blob}\n"
    chunks = chunk_body(body, max_tokens=100, target_tokens=80, count_tokens=len)
    assert all(len(c.text) <= 100 for c in chunks)
    assert "".join(content_of(c) for c in chunks) == blob
    assert len(chunks) == -(-len(blob) // (100 - len("Blob\n")))  # pieces are as long as allowed


def test_giant_heading_is_shortened_without_losing_text() -> None:
    title = words(300)
    body = f"# {title}\n\nshort body\n"
    chunks = chunk_body(body, max_tokens=64, target_tokens=50)
    assert all(approx_tokens(c.text) <= 64 for c in chunks)
    assert all(c.heading == title for c in chunks)
    assert all(c.text.split("\n", 1)[0].endswith("…") for c in chunks)
    assert is_subsequence(nonspace(body), nonspace("".join(content_of(c) for c in chunks)))


def test_deep_heading_path_drops_ancestors_first() -> None:
    body = "".join(f"{'#' * (i + 1)} {words(6, i)}\n" for i in range(6)) + "leaf text\n"
    (chunk,) = chunk_body(body, max_tokens=40, target_tokens=30)
    first, _, rest = chunk.text.partition("\n")
    assert first.startswith("… > ")
    assert first.endswith(words(6, 5))
    assert rest == "leaf text"
    assert approx_tokens(first) <= 20


def test_long_section_inside_blockquote_splits_inside_it() -> None:
    body = "# Q\n\n" + "\n>\n".join(f"> {words(30, i)}." for i in range(20)) + "\n"
    chunks = chunk_body(body, max_tokens=90, target_tokens=70)
    assert len(chunks) > 3
    check_chunks(body, chunks, 90, approx_tokens)


def test_target_larger_than_max_is_clamped() -> None:
    body = "\n\n".join(words(20, i) for i in range(40))
    chunks = chunk_body(body, max_tokens=60, target_tokens=1000)
    check_chunks(body, chunks, 60, approx_tokens)


def test_custom_counter_is_used() -> None:
    body = "\n\n".join(f"para {i}" for i in range(10))
    chunks = chunk_body(body, max_tokens=3, target_tokens=3, count_tokens=lambda t: len(t.split()))
    assert [c.text for c in chunks] == [f"para {i}" for i in range(10)]


@pytest.mark.parametrize(("max_tokens", "target"), [(0, 10), (10, 0), (-5, -5)])
def test_bad_budgets_raise_config_error(max_tokens: int, target: int) -> None:
    with pytest.raises(ConfigError):
        chunk_body("text", max_tokens=max_tokens, target_tokens=target)


def test_budget_too_small_for_one_character_raises() -> None:
    with pytest.raises(ConfigError, match="max_tokens=3"):
        chunk_body("word " * 50, max_tokens=3, target_tokens=3)


def test_approx_tokens() -> None:
    assert approx_tokens("") == 2
    assert approx_tokens("hello") == 4  # ceil(1.3 + 2)
    assert approx_tokens("hello, world!") == 8  # 4 tokens -> ceil(7.2)


# --------------------------------------------------------------------------- #
# chunk_body: properties over random Markdown
# --------------------------------------------------------------------------- #

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzéß0123456789", min_size=1, max_size=12)
_sentence = (
    st.lists(_word, min_size=1, max_size=30)
    .map(" ".join)
    .flatmap(lambda s: st.sampled_from([".", "!", "?", "", ",", ":"]).map(lambda p: s + p))
)
_paragraph = st.lists(_sentence, min_size=1, max_size=15).map(" ".join)
_heading = st.tuples(st.integers(1, 6), st.lists(_word, min_size=0, max_size=4)).map(
    lambda t: "#" * t[0] + " " + " ".join(t[1])
)
_list = st.lists(
    st.tuples(st.sampled_from(["- ", "* ", "1. ", "  - ", "    - "]), _paragraph),
    min_size=1,
    max_size=12,
).map(lambda items: "\n".join(m + p for m, p in items))
_fence = st.tuples(st.lists(st.one_of(_paragraph, _heading), max_size=8), st.booleans()).map(
    lambda t: "```\n" + "\n".join(t[0]) + ("\n```" if t[1] else "")
)
_quote = st.lists(st.one_of(_paragraph, _heading), min_size=1, max_size=6).map(
    lambda ps: "\n".join("> " + p for p in ps)
)
_table = st.lists(st.tuples(_word, _sentence), min_size=1, max_size=8).map(
    lambda rows: "| a | b |\n|---|---|\n" + "\n".join(f"| {x} | {y} |" for x, y in rows)
)
_noise = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\r", max_codepoint=0x2FFF)
    | st.sampled_from("#`*_-=>|[]!\t    \n"),
    max_size=120,
)
_block = st.one_of(_paragraph, _heading, _list, _fence, _quote, _table, _noise)
markdown_bodies = st.lists(st.tuples(_block, st.sampled_from(["\n", "\n\n", "\n\n\n"])), max_size=20).map(
    lambda parts: "".join(b + sep for b, sep in parts)
)

_counters: list[tuple[str, Callable[[str], int], int]] = [
    ("approx", approx_tokens, 8),
    ("chars", len, 30),
    ("words", lambda t: len(t.split()) + 1, 6),
    ("utf8", lambda t: len(t.encode()), 40),
]


@st.composite
def budgets(draw: st.DrawFn) -> tuple[Callable[[str], int], int, int]:
    _, count, low = draw(st.sampled_from(_counters))
    max_tokens = draw(st.integers(low, low * 12))
    target = draw(st.integers(1, max_tokens + 10))
    return count, max_tokens, target


def _one_unit_at_a_time(self: Any, header: str, units: Any) -> list[tuple[int, int]]:
    """The packing before issue 41, the oracle: each unit added to the chunk and the chunk counted
    again, until one no longer fits."""
    out: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    for unit in units:
        if cur is not None:
            if self.fits(header, cur[0], unit.end, self.target_tokens):
                cur = (cur[0], unit.end)
                continue
            out.append(cur)
            cur = None
        if self.fits(header, unit.start, unit.end, self.max_tokens):
            cur = (unit.start, unit.end)
            continue
        smaller = list(self.split(unit))
        out.extend(_one_unit_at_a_time(self, header, smaller) if smaller else self.char_pieces(header, unit))
    if cur is not None:
        out.append(cur)
    return out


_long_lines = st.lists(
    st.sampled_from(["tea", "coffee.", "river", "a", "mountain!", "x" * 30, "\n", "  "]), max_size=400
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(markdown_bodies, _long_lines.map(" ".join)), budget=budgets())
def test_galloping_cuts_the_chunks_adding_one_unit_at_a_time_cut(
    body: str, budget: tuple[Callable[[str], int], int, int]
) -> None:
    """Packing by galloping and bisecting (a few counts per chunk, issue 41: a 1 MB line took 175,000
    counts) gives exactly the chunks of adding one unit at a time: the index need not re-chunk."""
    from vault_memory.vault import markdown

    count, max_tokens, target = budget
    try:
        fast = chunk_body(body, max_tokens=max_tokens, target_tokens=target, count_tokens=count)
    except ConfigError:
        return  # a budget too small for one character, either way
    packed = markdown._Chunker.pack
    markdown._Chunker.pack = _one_unit_at_a_time  # type: ignore[method-assign]
    try:
        slow = chunk_body(body, max_tokens=max_tokens, target_tokens=target, count_tokens=count)
    finally:
        markdown._Chunker.pack = packed  # type: ignore[method-assign]
    assert fast == slow


def test_a_long_line_is_chunked_with_a_few_counts_per_chunk() -> None:
    """A 1 MB line without a sentence end took 8 s: every word counted the growing chunk again (175,000
    counts), and 100 MB took over 300 s and 2.7 GB (issue 41). Now a few counts per chunk, and the words
    are made units one at a time: 100 MB in 125 s and 0.6 GB with the fake embedder, most of it embedding."""
    calls = 0

    def count(text: str) -> int:
        nonlocal calls
        calls += 1
        return len(text.split()) + 2

    import tracemalloc

    line = " ".join(["tea", "coffee", "river", "mountain", "garden"] * 20_000) + "\n"  # ~640 KB, one line
    tracemalloc.start()
    try:
        chunks = chunk_body(line, max_tokens=256, count_tokens=count)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "".join(c.text + " " for c in chunks).split() == line.split()
    assert calls < 20 * len(chunks) < len(line.split()) / 5  # 100,000 words; 2 or 3 counts per chunk
    assert peak < 8 * len(line)  # its words are never a list of units at once: 3.6x here, 25x before


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=markdown_bodies, budget=budgets())
def test_property_coverage_and_budget(body: str, budget: tuple[Callable[[str], int], int, int]) -> None:
    count, max_tokens, target = budget
    chunks = chunk_body(body, max_tokens=max_tokens, target_tokens=target, count_tokens=count)
    check_chunks(body, chunks, max_tokens, count)
    assert chunks == chunk_body(body, max_tokens=max_tokens, target_tokens=target, count_tokens=count)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(body=markdown_bodies)
def test_property_default_budget(body: str) -> None:
    check_chunks(body, chunk_body(body), 256, approx_tokens)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=400))
def test_property_arbitrary_text_never_loses_characters(text: str) -> None:
    body = text.replace("\r", "\n")
    chunks = chunk_body(body, max_tokens=40, target_tokens=30, count_tokens=len)
    check_chunks(body, chunks, 40, len)


def test_coverage_check_can_fail() -> None:
    """The invariant checker itself catches a dropped word (guards against a vacuous property)."""
    body = "# H\n\nalpha beta gamma\n"
    good = chunk_body(body)
    check_chunks(body, good, 256, approx_tokens)
    bad = [Chunk(0, "H", "H\nalpha gamma", 2)]
    with pytest.raises(AssertionError):
        check_chunks(body, bad, 256, approx_tokens)


def test_start_line_points_at_content() -> None:
    body = "\n\n# A\n\n\n   first para\n\n## B\nsecond\n"
    chunks = chunk_body(body)
    assert [c.start_line for c in chunks] == [5, 8]
    assert re.sub(r"\s+", " ", chunks[0].text) == "A first para"


def test_headings_only_with_shortened_header_keeps_every_heading() -> None:
    # Found by Hypothesis: an empty heading, then one too long for the header budget.
    body = "#\n# 0:\n"
    chunks = chunk_body(body, max_tokens=8, target_tokens=1)
    assert [c.text for c in chunks] == ["#\n# 0:"]
    check_chunks(body, chunks, 8, approx_tokens)


def test_giant_paragraph_of_lines_splits_on_lines() -> None:
    # A log / day's notes: one entry per source line, no blank lines, several sentences per line.
    entries = [f"E{i} note: the {words(8, i)} was checked. Then the {words(5, i + 1)} ran." for i in range(120)]
    body = "# Log\n\n" + "\n".join(entries) + "\n"
    chunks = chunk_body(body, max_tokens=100, target_tokens=80)
    assert len(chunks) > 10
    for chunk in chunks:
        assert all(line in entries for line in content_of(chunk).split("\n"))  # no line cut in half
    assert "\n".join(content_of(c) for c in chunks) == "\n".join(entries)
    check_chunks(body, chunks, 100, approx_tokens)


def test_giant_line_of_a_line_paragraph_falls_back_to_sentences() -> None:
    long_line = " ".join(f"Sentence {i} talks about the {words(12, i)}." for i in range(40))
    body = "first line\n" + long_line + "\nLast line\n"
    chunks = chunk_body(body, max_tokens=100, target_tokens=80)
    assert all(c.text.startswith(("Sentence ", "first line", "Last line")) for c in chunks)
    assert any(c.text.startswith("Sentence 0 ") for c in chunks)  # the long line starts its own chunk
    check_chunks(body, chunks, 100, approx_tokens)


def test_hard_wrapped_prose_still_splits_on_sentences() -> None:
    import textwrap

    sentences = [f"Sentence {i} talks about the {words(12, i)} again." for i in range(100)]
    wrapped = textwrap.fill(" ".join(sentences), 72)
    assert "\n" in wrapped
    body = "# Essay\n\n" + wrapped + "\n"
    chunks = chunk_body(body, max_tokens=100, target_tokens=80)
    assert len(chunks) > 5
    for chunk in chunks:
        content = " ".join(content_of(chunk).split())  # a sentence may start just before a wrap
        assert content.startswith("Sentence ")
        assert content.endswith(".")
    check_chunks(body, chunks, 100, approx_tokens)


def test_link_reference_definitions_are_not_text() -> None:
    """Foam appends a definition for every wikilink ("Autogenerated link references"), which
    Markdown shows as nothing: a note of three words carried every linked note's title."""
    from vault_memory.vault.markdown import strip_link_definitions

    body = (
        "- A [[person]] on [[twitter]].\n\n"
        '[//begin]: # "Autogenerated link references for markdown compatibility"\n'
        '[person]: person "Person"\n'
        "[twitter]: ../twitter 'Twitter'\n"
        '[//end]: # "Autogenerated link references"\n'
    )
    got = strip_link_definitions(body)
    assert got.split("\n")[0] == "- A [[person]] on [[twitter]]." and "Autogenerated" not in got
    assert len(got.split("\n")) == len(body.split("\n"))
    code = "```\n[x]: y\n```\n\npara\n[x]: y"  # in code, or continuing a paragraph: not a definition
    assert strip_link_definitions(code) == code
    assert [c.text for c in chunk_body(body)] == ["- A [[person]] on [[twitter]]."]


def test_dataview_inline_queries_read_as_their_values() -> None:
    """A note written as "`= this.name` > `= this.rating`" with its values in its properties was
    indexed and shown as code; `= this.key` reads as the property, any other query not at all."""
    from vault_memory.vault.markdown import chunk_note, resolve_inline_queries

    body = "# Dune\n\n`= this.name` > `= this.rating` stars, read `= date(today)`\n"
    props = [("name", "Dune"), ("rating", "5")]
    assert resolve_inline_queries(body, props) == "# Dune\n\nDune > 5 stars, read \n"
    assert resolve_inline_queries("`$= dv.current().x` and `code`", []) == " and `code`"
    assert "this." not in chunk_note(body, props, "Dune")[0].text


def test_what_obsidian_hides_or_draws_is_not_text() -> None:
    """HTML comments are hidden like `%% %%` ones (a private line stays private), a callout's
    `[!type]` reads as its title, a block's `^id` is gone; code keeps all three, and every line
    keeps its place."""
    from vault_memory.vault.markdown import chunk_body, strip_comments, strip_reader_marks

    body = (
        "> [!warning]- Pressure\n"
        "> Keep it between 1.0 and 1.5 bar. ^pressure-note\n"
        "> [!tip]\n"
        "> Bleed the radiators in October.\n"
        "Spare key <!-- in the blue tin\n"
        "by the door --> is with Ana. Highlight text. ^rw60275595\n"
        "`<!-- literal -->` and 2^10 stay.\n"
        "```html\n<!-- markup --> ^id\n> [!note] code\n```\n"
    )
    got = strip_reader_marks(strip_comments(body))
    lines = got.split("\n")
    assert len(lines) == len(body.split("\n"))
    assert lines[0] == "> Pressure:" and lines[1] == "> Keep it between 1.0 and 1.5 bar."
    assert lines[2] == "> Tip:"
    assert lines[4] == "Spare key " and lines[5] == " is with Ana. Highlight text."
    assert lines[6] == "`<!-- literal -->` and 2^10 stay."
    assert lines[8:10] == ["<!-- markup --> ^id", "> [!note] code"]
    assert strip_comments("a <!-- never closed\nb") == "a <!-- never closed\nb"  # text, not the rest hidden
    assert strip_comments("a %% never closed\nb") == "a \n"
    assert strip_comments("x <!-- one --> y <!-- two\nlines --> z") == "x  y \n z"
    text = " ".join(c.text for c in chunk_body(body))
    assert "blue tin" not in text and "^rw" not in text and "[!warning]" not in text and "Pressure:" in text


def test_inline_html_that_formats_text_reads_as_that_text() -> None:
    """Obsidian draws `<mark class="hltr-yellow">…</mark>` (the Highlightr plugin), `<u>`, `<sup>` and
    `<span style=…>` as the text they hold; a block printed the tags (a stranger's vault, stop 80).
    A tag the line does not close is text ("the <b> tag" of a note about HTML), and so is code."""
    from vault_memory.vault.markdown import chunk_body, strip_reader_marks

    body = (
        '- <mark class="hltr-yellow">2 x Thunderbolt 4 USB Type-C</mark> port(s)\n'
        "Wrap it in the <b> tag, then <u>check</u> it.<sup>1</sup> <I><em>Both</em></i>\n"
        "`<mark>kept</mark>` in a code span, <span style='color:red'>red</span> outside\n"
        "```html\n<b>markup</b>\n```\n"
    )
    lines = strip_reader_marks(body).split("\n")
    assert lines[0] == "- 2 x Thunderbolt 4 USB Type-C port(s)"
    assert lines[1] == "Wrap it in the <b> tag, then check it.1 Both"
    assert lines[2] == "`<mark>kept</mark>` in a code span, red outside"
    assert lines[4] == "<b>markup</b>"
    text = " ".join(c.text for c in chunk_body(body))
    assert "hltr" not in text and "Thunderbolt 4 USB Type-C port(s)" in text


def test_a_logseq_page_states_its_names_and_hides_its_bookkeeping() -> None:
    """A Logseq page opens with its properties where Obsidian has frontmatter: `title::`,
    `alias::` and `tags::` name it as frontmatter's would (links unwrapped, comma lists split).
    `collapsed:: true` and a block's `id:: <uuid>`, which Logseq keeps for itself and never shows,
    are left out of what is read, each line keeping its place; any other `key:: value` stays."""
    from vault_memory.vault.markdown import extract_info, page_properties, strip_reader_marks

    page = "title:: Business Ideas 2022\nalias:: App Ideas, [[Startup ideas]]\n"
    page += "tags:: money, [[side projects]]\n\n- #bonmec\n"
    info = extract_info({}, page, "Business Ideas")
    assert info.title == "Business Ideas 2022" and info.aliases == ("App Ideas", "Startup ideas")
    assert info.tags[:2] == ("money", "side projects")
    framed = extract_info({"title": "Ideas", "aliases": ["Plans"]}, page, "x")  # frontmatter first
    assert framed.title == "Ideas" and framed.aliases == ("Plans", "App Ideas", "Startup ideas")
    assert page_properties("- a block\nalias:: not a page property\n") == {}  # only the lines it opens with
    body = "- [[Trip]]\ncollapsed:: true\n\t- Wed\n\t  id:: 6408c2a1-1234-4abc-9def-0123456789ab\n\t  city:: Quebec\n"
    assert strip_reader_marks(body) == "- [[Trip]]\n\n\t- Wed\n\n\t  city:: Quebec\n"


def test_a_view_of_obsidian_bases_is_read_as_its_results_are_not() -> None:
    """A line that only embeds a Bases view (`![[PROJECTS.base]]`, a list item's, a named view's)
    and a `base` code block show a table of other notes in Obsidian: blanked, lines kept. A `.base`
    named inside a sentence, and any other embed, are text."""
    from vault_memory.vault.markdown import chunk_body, strip_queries

    body = (
        "## BrainDump\nI understand things quickly by testing them.\n## Projects\n![[PROJECTS.base]]\n"
        "- ![[Books.base#Shelf|shelf]]\nsee ![[a.base]] for more\n```base\nfilters: x\n```\n![[photo.png]]\n"
    )
    assert strip_queries(body) == (
        "## BrainDump\nI understand things quickly by testing them.\n## Projects\n\n\nsee ![[a.base]] for more\n"
        "\n\n\n![[photo.png]]\n"
    )
    assert not any("PROJECTS.base" in c.text for c in chunk_body(body))


def test_a_logseq_drawer_is_hidden_and_what_it_sits_under_is_read() -> None:
    """Logseq's drawers, `:PROPERTIES:` (its older block properties: `:id:`, `:heading: true`) and
    `:LOGBOOK:` (a task's clock lines), each to its `:END:`, are never shown: their lines are left
    empty, in their places. A drawer with no `:END:` is text, and so is one in a code fence."""
    from vault_memory.vault.markdown import chunk_body, strip_reader_marks

    body = (
        "## On Sunday I will go to the doctor to start some tests\n:PROPERTIES:\n"
        ":id: 6020f3af-008a-4614-bdf6-74f21c7592ba\n:END:\n### Stool test\n#### Full blood test\n"
        "- DONE book the GP\n  :LOGBOOK:\n  CLOCK: [2021-02-05 Fri 10:00:00]--[2021-02-05 Fri 10:05:00] =>  00:05:00\n"
        "  :END:\n```\n:LOGBOOK:\n:END:\n```\n:PROPERTIES:\nnever closed\n"
    )
    assert strip_reader_marks(body) == (
        "## On Sunday I will go to the doctor to start some tests\n\n\n\n### Stool test\n#### Full blood test\n"
        "- DONE book the GP\n\n\n\n```\n:LOGBOOK:\n:END:\n```\n:PROPERTIES:\nnever closed\n"
    )
    text = " ".join(c.text for c in chunk_body(body))
    assert "6020f3af" not in text and "CLOCK" not in text and "Full blood test" in text


def test_a_logseq_query_is_read_as_its_results_are_not() -> None:
    """Logseq shows a query's results, not its source: an advanced query (`#+BEGIN_QUERY` …
    `#+END_QUERY`, under a bullet or not) and a block that is only a `{{query …}}` macro are
    blanked, each line keeping its place; the same text inside a code fence is code, and stays."""
    from vault_memory.vault.markdown import strip_queries

    body = (
        '- Focus areas\n- #+BEGIN_QUERY\n  {:title "Focus"\n   :query [:find (pull ?b [*])]}\n  #+END_QUERY\n'
        "- {{query (property type book)}}\n- see {{query TODO}} later\n```\n#+BEGIN_QUERY\n```\n- done\n"
    )
    assert strip_queries(body) == (
        "- Focus areas\n\n\n\n\n\n- see {{query TODO}} later\n```\n#+BEGIN_QUERY\n```\n- done\n"
    )
