"""Tests for vault_memory.vault.notefile: parsing edge cases, byte-exact edits, CAS, paths, moves."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
import re
import stat
import tempfile
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from vault_memory.errors import (
    ConcurrentEditError,
    NoteError,
    NoteNotFoundError,
    NoteParseError,
    NoteWriteError,
    UnsafePathError,
)
from vault_memory.vault import atomic
from vault_memory.vault.atomic import TMP_PREFIX
from vault_memory.vault.notefile import (
    OWNED_KEYS,
    ParsedNote,
    content_hash,
    move_note,
    parse_note,
    read_note,
    safe_path,
    stated_properties,
    write_note,
)

SAMPLE_VAULT = Path(__file__).resolve().parent.parent / "sample_vault"
BOM = b"\xef\xbb\xbf"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """An empty vault (overrides conftest's copy of sample_vault: these tests build their own files)."""
    root = tmp_path / "vault"
    root.mkdir()
    return root


def put(vault: Path, rel: str, data: bytes) -> ParsedNote:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return read_note(vault, rel)


def leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(TMP_PREFIX)]


# --------------------------------------------------------------------------- parsing


def test_no_frontmatter_is_all_body() -> None:
    note = parse_note("a.md", b"# Title\n\nText: with colon\n")
    assert not note.has_frontmatter
    assert note.meta == {}
    assert note.body == "# Title\n\nText: with colon\n"


def test_hashes_and_size() -> None:
    raw = b"---\nlast_accessed: 2026-01-01\ntags: [a]\n---\nbody\n"
    note = parse_note("a.md", raw, mtime=12.5)
    assert note.file_hash == sha(raw)
    assert note.body_hash == sha(b"body\n")  # no property that states something: the body's hash
    assert (note.size, note.mtime) == (len(raw), 12.5)
    stated = parse_note("a.md", b"---\nx: 1\n---\nbody\n")
    assert stated.body_hash == content_hash("body\n", {"x": 1}) != note.body_hash


def test_stated_properties_are_what_a_person_states_in_frontmatter() -> None:
    meta = {
        "title": "Boiler",
        "aliases": ["heating"],
        "tags": ["home"],
        "cssclasses": ["wide"],
        "type": "appliance",
        "kanban-plugin": "basic",
        "node_id": "mem-1",
        "last_accessed": dt.date(2026, 1, 1),
        "status": "done",  # ours (a draft's status): a person's `status:` is left out too
        "created": dt.date(2019, 5, 1),
        "Date Modified": "2026-01-01",  # the note's own dates date it
        "model": "Vaillant   ecoTEC\nplus 832",
        "installed": 2019,
        "context_window": 8192,  # read as words: "what context window does the agent use"
        "due": dt.date(2026, 12, 15),
        "owner": [["Maya Chen"]],  # `owner: [[Maya Chen]]` unquoted
        "related": ["[[Project Atlas]]", "", None],
        "serviced": True,
        "limits": {"min": 1.0, "max": 1.5, "none": None},
        "mood": None,
        "empty": [],
    }
    assert stated_properties(meta) == (
        ("model", "Vaillant ecoTEC plus 832"),
        ("installed", "2019"),
        ("context window", "8192"),
        ("due", "2026-12-15"),
        ("owner", "Maya Chen"),
        ("related", "[[Project Atlas]]"),
        ("serviced", "true"),
        ("limits", "min: 1.0; max: 1.5"),
    )
    # every key we write is left out: a rehearsal or a commit never changes what is indexed
    assert stated_properties({k: "x" for k in OWNED_KEYS}) == ()


def test_bom_is_stripped_before_fence() -> None:
    note = parse_note("a.md", BOM + b"---\ntitle: x\n---\nbody\n")
    assert note.has_frontmatter
    assert note.meta == {"title": "x"}
    assert note.body == "body\n"


def test_bom_without_frontmatter_not_in_body() -> None:
    note = parse_note("a.md", BOM + b"hello\n")
    assert note.body == "hello\n"
    assert note.body_hash == sha(b"hello\n")


def test_crlf_normalised_and_recorded() -> None:
    lf = parse_note("a.md", b"---\ntitle: x\ntags:\n- a\n---\nline 1\nline 2\n")
    crlf = parse_note("a.md", b"---\r\ntitle: x\r\ntags:\r\n- a\r\n---\r\nline 1\r\nline 2\r\n")
    assert crlf.newline == "\r\n"
    assert lf.newline == "\n"
    assert crlf.meta == lf.meta == {"title": "x", "tags": ["a"]}
    assert crlf.body == lf.body == "line 1\nline 2\n"
    assert crlf.body_hash == lf.body_hash


def test_invalid_utf8_names_byte_and_fix() -> None:
    raw = b"---\ntitle: x\n---\nCaf\xe9\n"
    with pytest.raises(NoteParseError) as err:
        parse_note("old.md", raw)
    assert err.value.path == "old.md"
    bad_at = raw.index(b"\xe9")
    assert f"not valid UTF-8 at byte {bad_at}" in str(err.value)
    assert "re-save the file as UTF-8" in str(err.value)


def test_nul_bytes_are_binary() -> None:
    with pytest.raises(NoteParseError, match="binary"):
        parse_note("img.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def test_utf16_is_named() -> None:
    with pytest.raises(NoteParseError, match="UTF-16"):
        parse_note("w.md", "hello".encode("utf-16"))


@pytest.mark.parametrize(
    ("raw", "has_fm", "meta", "body"),
    [
        (b"", False, {}, ""),
        (b"---\ntitle: x\n---", True, {"title": "x"}, ""),
        (b"---\ntitle: x\n---\n", True, {"title": "x"}, ""),
        (b"---\n---\n", True, {}, ""),
        (b"---\n---", True, {}, ""),
        (b"---\n# only a comment\n\n---\nbody", True, {}, "body"),
        (b"---  \r\na: 1\r\n--- \t\r\nb\r\n", True, {"a": 1}, "b\n"),
        (b"---\na: 1\n...\nbody\n", True, {"a": 1}, "body\n"),
        (b"\n---\na: 1\n---\n", False, {}, "\n---\na: 1\n---\n"),
        (b"----\na: 1\n----\n", False, {}, "----\na: 1\n----\n"),
    ],
    ids=[
        "empty",
        "fm-only",
        "fm-only-nl",
        "empty-block",
        "empty-block-eof",
        "comment-only",
        "fence-trailing-space",
        "dots-close",
        "leading-blank-line",
        "four-dashes",
    ],
)
def test_degenerate_files_parse(raw: bytes, has_fm: bool, meta: dict[str, Any], body: str) -> None:
    note = parse_note("a.md", raw)
    assert (note.has_frontmatter, note.meta, note.body) == (has_fm, meta, body)


def test_horizontal_rule_without_closing_fence_is_body() -> None:
    raw = b"---\nJust a rule at the top of the note.\nNo closing fence.\n"
    note = parse_note("a.md", raw)
    assert not note.has_frontmatter
    assert note.body == raw.decode()


def test_horizontal_rules_around_prose_are_body() -> None:
    # Two thematic breaks around prose that YAML cannot parse (": " inside a paragraph).
    raw = b"---\nI reviewed the notes.\nIt kept suggesting the old schedule: that is stale.\n---\nmore\n"
    note = parse_note("a.md", raw)
    assert not note.has_frontmatter
    assert note.meta == {}
    assert note.body == raw.decode()


def test_block_that_is_not_a_mapping_is_body() -> None:
    raw = b"---\n- just\n- a list\n---\ntext\n"
    note = parse_note("a.md", raw)
    assert not note.has_frontmatter
    assert note.body == raw.decode()


def test_lenient_reading_takes_each_property_that_yaml_can_read_and_the_text_of_the_rest() -> None:
    raw = (
        b"---\nCompany: St Thomas\nHow We Met: [[River Valley Church]] through [[Sam Tupy]]\n"
        b"Birthday: [[October 11th]]\ntags:\n  - people\n  - friends\nprivate: [oops\n---\nBody line.\n"
    )
    with pytest.raises(NoteParseError, match="nothing is written into it until then"):
        parse_note("People/Jake.md", raw)  # what every write reads: a broken note is never edited
    note = parse_note("People/Jake.md", raw, lenient=True)
    assert note.meta == {
        "Company": "St Thomas",
        "How We Met": "[[River Valley Church]] through [[Sam Tupy]]",
        "Birthday": [["October 11th"]],
        "tags": ["people", "friends"],
        "private": True,  # unreadable, so counted as true: a note is never shown by mistake
    }
    assert note.body == "Body line.\n" and note.has_frontmatter
    assert note.properties_error.startswith("People/Jake.md: invalid YAML in frontmatter at line 3")
    assert note.properties_error.endswith("nothing is written into it")
    assert parse_note("ok.md", b"---\na: 1\n---\nx\n", lenient=True).properties_error == ""


def test_invalid_yaml_names_line_and_fix() -> None:
    raw = b"---\ntitle: ok\ntags: [unclosed\nother: 1\n---\nbody\n"
    with pytest.raises(NoteParseError) as err:
        parse_note("notes/bad.md", raw)
    msg = str(err.value)
    assert msg.startswith("notes/bad.md: invalid YAML in frontmatter")
    assert "line 3" in msg  # the flow sequence opens on file line 3
    assert "fix the YAML between the --- lines; nothing is written into it until then" in msg


@pytest.mark.parametrize(
    "block",
    [b"key: [unclosed", b"a: 1\n\tb: 2", b"title: x\ntitle2: 'open", b"d: 2025-02-30"],
    ids=["unclosed", "tab-indent", "open-quote", "impossible-date"],
)
def test_broken_yaml_raises_not_silently_body(block: bytes) -> None:
    with pytest.raises(NoteParseError, match="invalid YAML"):
        parse_note("a.md", b"---\n" + block + b"\n---\nbody\n")


def test_yaml_types_kept_as_safe_load_gives_them() -> None:
    raw = b"---\ndate: 2025-10-24\nreviewed: yes\nversion: 1.10\nenabled: on\nwhen: 2025-10-24T10:00:00Z\n---\n"
    meta = parse_note("a.md", raw).meta
    assert meta["date"] == date(2025, 10, 24)
    assert meta["reviewed"] is True
    assert meta["enabled"] is True
    assert meta["version"] == 1.1
    assert meta["when"] == datetime(2025, 10, 24, 10, 0, tzinfo=UTC)


def test_non_string_keys_coerced() -> None:
    raw = b"---\nyes: a\n2025-01-02: b\n3: c\n~: d\n1.5: e\n---\n"
    meta = parse_note("a.md", raw).meta
    assert meta == {"true": "a", "2025-01-02": "b", "3": "c", "null": "d", "1.5": "e"}
    assert all(isinstance(k, str) for k in meta)


def test_path_uses_forward_slashes() -> None:
    assert parse_note("a\\b\\c.md", b"").path == "a/b/c.md"


def test_read_note_records_mtime(vault: Path) -> None:
    (vault / "sub").mkdir()
    (vault / "sub" / "n.md").write_bytes(b"hi\n")
    note = read_note(vault, "sub/n.md")
    assert note.path == "sub/n.md"
    assert note.mtime == (vault / "sub" / "n.md").stat().st_mtime


def test_read_missing_note(vault: Path) -> None:
    with pytest.raises(NoteNotFoundError):
        read_note(vault, "nope.md")


# --------------------------------------------------------------------------- byte-exact edits

SET = {
    "node_id": "n-1",
    "tier": "warm",
    "access_count": 3,
    "last_accessed": datetime(2026, 11, 29, 15, 4, 0, 123456, tzinfo=UTC),
}
SET_META = {**SET, "last_accessed": datetime(2026, 11, 29, 15, 4, tzinfo=UTC)}
APPENDED = {
    "node_id": "node_id: n-1\n",
    "tier": "tier: warm\n",
    "access_count": "access_count: 3\n",
    "last_accessed": "last_accessed: 2026-11-29T15:04:00+00:00\n",
}


def appended(*skip: str) -> str:
    return "".join(line for key, line in APPENDED.items() if key not in skip)


# (before, after) written out by hand: the expectation does not come from the code under test.
EDIT_CASES: dict[str, tuple[str, str]] = {
    "comments-quotes-blank-lines": (
        '---\n# header comment\ntitle: "Quoted: title"   # trailing comment\n'
        "tier: hot  # set by hand\n'single': 'x'\n\ntags: [a, \"b c\"]\n---\n"
        "Body mentions tier: cold\n---\nand a rule.\n",
        '---\n# header comment\ntitle: "Quoted: title"   # trailing comment\n'
        "tier: warm  # set by hand\n'single': 'x'\n\ntags: [a, \"b c\"]\n" + appended("tier") + "---\n"
        "Body mentions tier: cold\n---\nand a rule.\n",
    ),
    "odd-order-lists-multiline": (
        "---\nzeta: 1\naccess_count: 7\nalpha:\n- one\n- two\nsummary: |\n  line one\n\n  line three\n"
        "nested:\n  deep: true\n  items:\n    - x\nlast_accessed: 2020-01-01\n---\ntext\n",
        "---\nzeta: 1\naccess_count: 3\nalpha:\n- one\n- two\nsummary: |\n  line one\n\n  line three\n"
        "nested:\n  deep: true\n  items:\n    - x\nlast_accessed: 2026-11-29T15:04:00+00:00\n"
        + appended("access_count", "last_accessed")
        + "---\ntext\n",
    ),
    "owned-multiline-value": (
        "---\ntitle: t\nnode_id: >\n  folded\n  id\n\n# keep me\nstatus: active\n---\nbody\n",
        "---\ntitle: t\nnode_id: n-1\n\n# keep me\nstatus: active\n" + appended("node_id") + "---\nbody\n",
    ),
    "quoted-owned-key": (
        '---\n"tier": hot\nname: n\n---\n',
        "---\ntier: warm\nname: n\n" + appended("tier") + "---\n",
    ),
    "duplicate-owned-key": (
        "---\ntier: hot\ntitle: t\ntier: cold\n---\n",
        "---\ntier: warm\ntitle: t\n" + appended("tier") + "---\n",
    ),
    "dates-yaml-mangles": (
        "---\ndate: 2025-10-24\nreviewed: yes\nversion: 1.10\n---\n# Eval\n",
        "---\ndate: 2025-10-24\nreviewed: yes\nversion: 1.10\n" + appended() + "---\n# Eval\n",
    ),
    "unicode": (
        "---\ntitle: Größe 東京 🎉\n---\n本文 ✅\n",
        "---\ntitle: Größe 東京 🎉\n" + appended() + "---\n本文 ✅\n",
    ),
    "empty-block": ("---\n---\nbody\n", "---\n" + appended() + "---\nbody\n"),
    "frontmatter-only-no-final-newline": (
        "---\ntitle: x\n---",
        "---\ntitle: x\n" + appended() + "---",
    ),
    "no-frontmatter": (
        "Just text\n\nmore: text\n",
        "---\n" + appended() + "---\nJust text\n\nmore: text\n",
    ),
    "horizontal-rule-body": (
        "---\nSome prose, not YAML.\nIt says: stale things.\n---\nrest\n",
        "---\n" + appended() + "---\n---\nSome prose, not YAML.\nIt says: stale things.\n---\nrest\n",
    ),
    "empty-file": ("", "---\n" + appended() + "---\n"),
}


@pytest.mark.parametrize("encoding", ["lf", "crlf", "bom", "bom+crlf"])
@pytest.mark.parametrize("case", sorted(EDIT_CASES))
def test_edit_changes_only_owned_lines(vault: Path, case: str, encoding: str) -> None:
    before, after = EDIT_CASES[case]
    if "crlf" in encoding:
        if "\n" not in before:
            pytest.skip("no line ending to take the style from")
        before, after = before.replace("\n", "\r\n"), after.replace("\n", "\r\n")
    prefix = BOM if "bom" in encoding else b""
    old = put(vault, "n.md", prefix + before.encode())
    human = {k: v for k, v in old.meta.items() if k not in OWNED_KEYS}

    new = write_note(vault, "n.md", expected_hash=old.file_hash, set_fields=SET)

    on_disk = (vault / "n.md").read_bytes()
    assert on_disk == prefix + after.encode()
    assert new.file_hash == sha(on_disk)
    assert {k: v for k, v in new.meta.items() if k not in OWNED_KEYS} == human
    assert {k: new.meta[k] for k in SET} == SET_META
    assert new.body == old.body
    assert new.newline == old.newline
    assert not leftovers(vault)


def test_remove_and_replace_multiline_list(vault: Path) -> None:
    before = (
        "---\ntitle: t\nconflicts_with:\n  - old-1\n  - old-2\n\nstatus: active  # human note\n"
        "needs_review:\n- a\n- b\nsource: web\n---\nbody\n"
    )
    old = put(vault, "n.md", before.encode())
    write_note(
        vault,
        "n.md",
        expected_hash=old.file_hash,
        set_fields={"conflicts_with": ["n-2", "n 3"]},
        remove_fields=["status", "needs_review", "expires"],
    )
    expected = "---\ntitle: t\nconflicts_with: [n-2, n 3]\n\n# human note\nsource: web\n---\nbody\n"
    assert (vault / "n.md").read_text() == expected


def test_a_comment_on_an_owned_key_line_survives_setting_and_removing_it(vault: Path) -> None:
    """Issue 41, finding 4: `pinned: false  # unpinned on purpose` lost its comment on pin and unpin."""
    before = "---\ntitle: Tea\npinned: false  # unpinned on purpose\nmood: calm\n---\nGreen tea.\n"
    old = put(vault, "n.md", before.encode())
    pinned = write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"pinned": True})
    assert (vault / "n.md").read_text() == before.replace("pinned: false", "pinned: true")
    write_note(vault, "n.md", expected_hash=pinned.file_hash, remove_fields=["pinned"])
    assert (vault / "n.md").read_text() == "---\ntitle: Tea\n# unpinned on purpose\nmood: calm\n---\nGreen tea.\n"


def test_a_comment_line_after_an_owned_key_is_not_taken_for_its_value(vault: Path) -> None:
    """An indented comment line after an owned key (a continuation of the value, to a line-based reader)
    disappeared on a rehearsal; comment lines inside an owned list survive its rewrite too."""
    before = (
        "---\nlast_accessed: 2021-01-01  # by hand\n  # when I last checked it myself\nmood: calm\n"
        "conflicts_with:\n  - a\n  # b was wrong\n  - c\n---\nbody\n"
    )
    old = put(vault, "n.md", before.encode())
    when = datetime(2030, 1, 1, tzinfo=UTC)
    write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"last_accessed": when, "conflicts_with": ["d"]})
    assert (vault / "n.md").read_text() == (
        "---\nlast_accessed: 2030-01-01T00:00:00+00:00  # by hand\n  # when I last checked it myself\nmood: calm\n"
        "conflicts_with: [d]\n  # b was wrong\n---\nbody\n"
    )


@pytest.mark.parametrize(
    "line, comment",
    [
        ("pinned: false  # unpinned on purpose", "  # unpinned on purpose"),
        ("tier: 'a # b'  # real", "  # real"),
        ('tier: "a \\" # b"   # real', "   # real"),
        ("tier: a#b", ""),
        ("tier: [x, 'y # z'] # list", " # list"),
        ("conflicts_with:   # people", "   # people"),
        ("tier: 'it''s # here'", ""),
    ],
)
def test_the_comment_of_a_key_line_is_found_outside_quotes(line: str, comment: str) -> None:
    from vault_memory.vault.notefile import _key_comment

    assert _key_comment(line + "\n") == comment
    assert yaml.safe_load(line + "\n") is not None  # each line is valid YAML


def test_the_write_path_refuses_a_rewrite_that_loses_a_byte_outside_our_values(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The self-check compares bytes outside the owned values, not parsed values: a rewrite that drops a
    person's comment parses to the very same values, and is refused all the same (the note untouched)."""
    from vault_memory.vault import notefile

    before = b"---\ntitle: Tea  # mine\ntier: hot\n# a line of mine\n---\nbody\n"
    old = put(vault, "n.md", before)
    edit = notefile._edit_text

    def losing_comments(*args: Any, **kwargs: Any) -> str:
        return "\n".join(ln.split("  #")[0] for ln in edit(*args, **kwargs).split("\n") if not ln.startswith("#"))

    monkeypatch.setattr(notefile, "_edit_text", losing_comments)
    with pytest.raises(NoteError, match="bytes outside our keys"):
        write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"tier": "warm"})
    assert (vault / "n.md").read_bytes() == before


def test_same_value_keeps_human_spelling_and_skips_write(vault: Path) -> None:
    raw = b"---\npinned: yes   # yes, really\ntier: hot\n---\nx\n"
    old = put(vault, "n.md", raw)
    inode = (vault / "n.md").stat().st_ino
    new = write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"pinned": True, "tier": "hot"})
    assert (vault / "n.md").read_bytes() == raw
    assert (vault / "n.md").stat().st_ino == inode  # not rewritten at all
    assert new.file_hash == old.file_hash


def test_body_replacement_keeps_frontmatter_bytes_and_crlf(vault: Path) -> None:
    head = b"\xef\xbb\xbf---\r\n# c\r\ntitle: 'x'\r\n---\r\n"
    old = put(vault, "n.md", head + b"old body\r\n")
    new = write_note(vault, "n.md", expected_hash=old.file_hash, body="new\nbody\n")
    assert (vault / "n.md").read_bytes() == head + b"new\r\nbody\r\n"
    assert new.body == "new\nbody\n"


def test_body_replacement_with_field_edit(vault: Path) -> None:
    old = put(vault, "n.md", b"---\ntitle: x\n---")
    write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"tier": "cold"}, body="b\n")
    assert (vault / "n.md").read_bytes() == b"---\ntitle: x\ntier: cold\n---\nb\n"


@pytest.mark.parametrize(
    ("value", "line", "loaded"),
    [
        ("plain text", "plain text", "plain text"),
        ("yes", "'yes'", "yes"),
        ("1.10", "'1.10'", "1.10"),
        ("2025-10-24", "'2025-10-24'", "2025-10-24"),
        ("2026-11-29T15:04:00+00:00", "'2026-11-29T15:04:00+00:00'", "2026-11-29T15:04:00+00:00"),
        ("a: b", "'a: b'", "a: b"),
        ("# not a comment", "'# not a comment'", "# not a comment"),
        ("- dash", "'- dash'", "- dash"),
        ("", "''", ""),
        ("null", "'null'", "null"),
        ("two\nlines", '"two\\nlines"', "two\nlines"),
        ("Größe 東京 🎉", "Größe 東京 🎉", "Größe 東京 🎉"),
        (42, "42", 42),
        (True, "true", True),
        (False, "false", False),
        (None, "null", None),
        (date(2025, 10, 24), "2025-10-24", date(2025, 10, 24)),
        (
            datetime(2026, 11, 29, 15, 4, 5, 999, tzinfo=UTC),
            "2026-11-29T15:04:05+00:00",
            datetime(2026, 11, 29, 15, 4, 5, tzinfo=UTC),
        ),
        (
            datetime(2026, 1, 2, 3, 4, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T03:04:00+02:00",
            datetime(2026, 1, 2, 1, 4, tzinfo=UTC),
        ),
        (["a", "b c", "x, y", "yes", 3], "[a, b c, 'x, y', 'yes', 3]", ["a", "b c", "x, y", "yes", 3]),
        ((), "[]", []),
    ],
)
def test_value_serialisation_round_trips(vault: Path, value: Any, line: str, loaded: Any) -> None:
    old = put(vault, "n.md", b"---\ntitle: t\n---\n")
    new = write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"status": value})
    assert (vault / "n.md").read_text(encoding="utf-8") == f"---\ntitle: t\nstatus: {line}\n---\n"
    assert new.meta["status"] == loaded
    assert type(new.meta["status"]) is type(loaded)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"last_accessed": datetime(2026, 1, 1)}, ValueError),  # naive: ambiguous instant
        ({"tier": {"nested": 1}}, TypeError),
        ({"tier": b"bytes"}, TypeError),
        ({"title": "human key"}, ValueError),
    ],
    ids=["naive-datetime", "dict", "bytes", "not-owned"],
)
def test_bad_edits_refused_before_touching_file(vault: Path, fields: dict[str, Any], error: type) -> None:
    raw = b"---\ntitle: t\n---\n"
    old = put(vault, "n.md", raw)
    with pytest.raises(error):
        write_note(vault, "n.md", expected_hash=old.file_hash, set_fields=fields)
    assert (vault / "n.md").read_bytes() == raw


def test_set_and_remove_same_key_refused(vault: Path) -> None:
    old = put(vault, "n.md", b"x\n")
    with pytest.raises(ValueError, match="both set and removed"):
        write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"tier": "hot"}, remove_fields=["tier"])


def test_broken_yaml_note_is_never_edited(vault: Path) -> None:
    raw = b"---\ntitle: [oops\n---\nbody\n"
    (vault / "n.md").write_bytes(raw)
    with pytest.raises(NoteParseError):
        write_note(vault, "n.md", expected_hash=sha(raw), set_fields={"tier": "hot"})
    assert (vault / "n.md").read_bytes() == raw
    assert not leftovers(vault)


@pytest.mark.parametrize(
    "raw",
    [
        b"---\n{title: x, tier: hot}\n---\n",  # flow-style mapping
        b"---\ntier: &b hot\nother: *b\n---\n",  # owned value anchors a human alias
        b"---\nconflicts_with: [a,\nb]\ntitle: t\n---\n",  # flow list continued at column 0
    ],
    ids=["flow-mapping", "anchor", "flow-continuation"],
)
def test_unusual_layout_refused_not_corrupted(vault: Path, raw: bytes) -> None:
    (vault / "n.md").write_bytes(raw)
    with pytest.raises(NoteError, match="cannot edit the frontmatter in place"):
        write_note(
            vault,
            "n.md",
            expected_hash=sha(raw),
            set_fields={"tier": "cold", "conflicts_with": ["z"]},
            remove_fields=["node_id"],
        )
    assert (vault / "n.md").read_bytes() == raw
    assert not leftovers(vault)


# --------------------------------------------------------------------------- property

_KEY = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\r"), max_size=30)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), _TEXT, st.dates(), st.floats(allow_nan=False))
_HUMAN_VALUE = st.one_of(_SCALAR, st.lists(_SCALAR, max_size=4), st.dictionaries(_KEY, _SCALAR, max_size=3))
_OWNED_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    _TEXT,
    st.dates(),
    st.datetimes(timezones=st.just(UTC)),
    st.lists(st.one_of(_TEXT, st.integers()), max_size=3),
)
_OWNED = st.sampled_from(sorted(OWNED_KEYS))


def _expected(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(microsecond=0)
    return value


_SEPARATORS = st.sampled_from(["", "", "\n", "# a human comment: with colon\n", "#\n", "\n# c\n\n"])


@st.composite
def _notes(draw: st.DrawFn) -> tuple[bytes, set[str]]:
    """A note whose frontmatter a human might have written: yaml-dumped entries, any order,
    block or flow collections, folded long strings, comments and blank lines between keys,
    some owned keys already present (maybe quoted), CRLF or LF, maybe a BOM."""
    human = draw(st.dictionaries(_KEY.filter(lambda k: k not in OWNED_KEYS), _HUMAN_VALUE, max_size=6))
    owned = draw(st.dictionaries(_OWNED, _HUMAN_VALUE, max_size=4))
    unicode, width = draw(st.booleans()), draw(st.sampled_from([20, 80]))
    block = draw(_SEPARATORS)
    for key, value in draw(st.permutations([*human.items(), *owned.items()])):
        style = draw(st.sampled_from([False, None]))  # None: flow style for lists of scalars
        entry = yaml.safe_dump({key: value}, default_flow_style=style, allow_unicode=unicode, width=width)
        if entry.startswith("{"):  # a one-key mapping of a scalar came out as flow: not top-level block
            entry = yaml.safe_dump({key: value}, default_flow_style=False, allow_unicode=unicode, width=width)
        if key in OWNED_KEYS and draw(st.booleans()):
            entry = f'"{key}"' + entry[len(key) :]
        if key in OWNED_KEYS and entry.count("\n") == 1 and draw(st.booleans()):
            entry = entry[:-1] + f"  # on {key}'s line\n"  # issue 41: a comment on an owned key's line
        if key in OWNED_KEYS and draw(st.booleans()):
            entry += f"  # under {key}, indented\n"  # ... and an indented one after it
        block += entry + draw(_SEPARATORS)
    body = draw(
        st.one_of(
            _TEXT,
            st.just("---\ntier: fake\n---\n"),
            st.text(max_size=100).map(lambda t: t.replace("\r", "").replace("\x00", "")),
        )
    )
    text = "---\n" + block + "---\n" + body
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return (BOM if draw(st.booleans()) else b"") + text.encode("utf-8"), set(human)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    note=_notes(),
    updates=st.dictionaries(_OWNED, _OWNED_VALUE, max_size=5),
    removals=st.sets(_OWNED, max_size=3),
)
@pytest.mark.slow
def test_property_edit_preserves_everything_else(
    note: tuple[bytes, set[str]], updates: dict[str, Any], removals: set[str]
) -> None:
    raw, human_keys = note
    removals -= updates.keys()
    old = parse_note("n.md", raw)
    assume(old.has_frontmatter)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "n.md").write_bytes(raw)
        write_note(root, "n.md", expected_hash=old.file_hash, set_fields=updates, remove_fields=removals)
        new_raw = (root / "n.md").read_bytes()
        assert not leftovers(root)
    new = parse_note("n.md", new_raw)
    for key in human_keys:
        assert _same_value(new.meta[key], old.meta[key]), key
    for key, value in updates.items():
        assert _same_value(new.meta[key], _expected(value)), key
    for key in removals:
        assert key not in new.meta
    for key in OWNED_KEYS - updates.keys() - removals:
        assert _same_value(new.meta.get(key), old.meta.get(key)), key
    assert new.body == old.body
    body_bytes = old.body.replace("\n", old.newline).encode("utf-8")
    assert new_raw.endswith(body_bytes)
    for comment in re.findall(r"# (?:on|under) \w+(?:'s line|, indented)", raw.decode("utf-8")):
        assert comment in new_raw.decode("utf-8"), comment  # every comment a person wrote survives
    assert new_raw.startswith(BOM) == raw.startswith(BOM)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------- create


def test_create_writes_block_and_parents(vault: Path) -> None:
    new = write_note(
        vault,
        "Memory/2026/n.md",
        expected_hash=None,
        set_fields={"node_id": "n-1", "title": "yes", "my key: odd": 1, "created": date(2026, 11, 29)},
        body="Hello\n",
    )
    raw = (vault / "Memory/2026/n.md").read_bytes()
    assert raw == b"---\nnode_id: n-1\ntitle: 'yes'\n'my key: odd': 1\ncreated: 2026-11-29\n---\nHello\n"
    assert new.file_hash == sha(raw)
    assert new.meta == {"node_id": "n-1", "title": "yes", "my key: odd": 1, "created": date(2026, 11, 29)}
    assert new.path == "Memory/2026/n.md"
    assert not leftovers(vault)


def test_create_without_fields_or_body(vault: Path) -> None:
    write_note(vault, "n.md", expected_hash=None)
    assert (vault / "n.md").read_bytes() == b"---\n---\n"


def test_create_from_whole_text_writes_it_as_is(vault: Path) -> None:
    text = '---\ndate: "2026-11-29"\ntags:\n  - daily\n---\n# Sunday\n\n## Log\n- 09:00 up\n'
    note = write_note(vault, "d.md", expected_hash=None, whole=text)
    assert (vault / "d.md").read_text(encoding="utf-8") == text and note.meta["date"] == "2026-11-29"
    with pytest.raises(NoteParseError):  # never create a note that cannot be read back
        write_note(vault, "bad.md", expected_hash=None, whole="---\ndate: [oops\n---\nbody\n")
    assert not (vault / "bad.md").exists()
    with pytest.raises(ValueError):
        write_note(vault, "e.md", expected_hash=None, whole="x", set_fields={"node_id": "y"})


def test_create_never_overwrites(vault: Path) -> None:
    (vault / "n.md").write_bytes(b"human\n")
    with pytest.raises(NoteError, match="already exists"):
        write_note(vault, "n.md", expected_hash=None, set_fields={"node_id": "x"})
    assert (vault / "n.md").read_bytes() == b"human\n"
    assert not leftovers(vault)


# --------------------------------------------------------------------------- compare-and-swap, atomicity


def test_stale_hash_is_refused(vault: Path) -> None:
    old = put(vault, "n.md", b"---\ntitle: t\n---\nv1\n")
    (vault / "n.md").write_bytes(b"---\ntitle: t\n---\nhuman edit\n")
    with pytest.raises(ConcurrentEditError, match="re-read and retry"):
        write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"tier": "hot"})
    assert (vault / "n.md").read_bytes() == b"---\ntitle: t\n---\nhuman edit\n"
    assert not leftovers(vault)


def test_edit_racing_inside_write_window_is_refused(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = put(vault, "n.md", b"---\ntitle: t\n---\nv1\n")
    real_fsync = os.fsync

    def human_saves_meanwhile(fd: int) -> None:
        real_fsync(fd)
        (vault / "n.md").write_bytes(b"saved by the human\n")

    monkeypatch.setattr(os, "fsync", human_saves_meanwhile)
    with pytest.raises(ConcurrentEditError):
        write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"tier": "hot"})
    assert (vault / "n.md").read_bytes() == b"saved by the human\n"
    assert not leftovers(vault)


def test_failed_replace_leaves_original_and_no_temp(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = b"---\ntitle: t\n---\nv1\n"
    old = put(vault, "n.md", raw)

    def boom(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)  # where RENAME_EXCHANGE is not available
    with pytest.raises(NoteWriteError, match="No space left on device.*free some space"):  # names it, exit 8
        write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"tier": "hot"})
    assert (vault / "n.md").read_bytes() == raw
    assert not leftovers(vault)


def test_file_mode_preserved(vault: Path) -> None:
    old = put(vault, "n.md", b"x\n")
    (vault / "n.md").chmod(0o640)
    write_note(vault, "n.md", expected_hash=old.file_hash, set_fields={"tier": "hot"})
    assert stat.S_IMODE((vault / "n.md").stat().st_mode) == 0o640


def test_edit_missing_note(vault: Path) -> None:
    with pytest.raises(NoteNotFoundError):
        write_note(vault, "gone.md", expected_hash="0" * 64, set_fields={"tier": "hot"})


# --------------------------------------------------------------------------- safe_path


@pytest.mark.parametrize(
    "rel",
    [
        "../x.md",
        "/etc/passwd",
        "a/../../x",
        "a/../b.md",
        "..",
        "",
        ".",
        "x\x00.md",
        "C:\\x.md",
        "C:x.md",
        "a\\..\\..\\x.md",
        "\\\\server\\share\\x.md",
    ],
)
def test_safe_path_refuses(vault: Path, rel: str) -> None:
    with pytest.raises(UnsafePathError):
        safe_path(vault, rel)


def test_safe_path_accepts_and_normalises(vault: Path) -> None:
    assert safe_path(vault, "a/./b//c.md") == vault.resolve() / "a" / "b" / "c.md"
    assert safe_path(vault, "a\\c.md") == vault.resolve() / "a" / "c.md"
    assert safe_path(vault, "Reise nach Tokio 🗼.md").name == "Reise nach Tokio 🗼.md"


def test_symlinks_leading_outside_refused(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_bytes(b"secret\n")
    (vault / "link.md").symlink_to(outside / "secret.md")
    (vault / "dir").symlink_to(outside, target_is_directory=True)
    (vault / "dangling.md").symlink_to(outside / "missing.md")
    for rel in ["link.md", "dir/secret.md", "dir/new.md", "dangling.md"]:
        with pytest.raises(UnsafePathError, match="symlink"):
            safe_path(vault, rel)
    with pytest.raises(UnsafePathError):
        write_note(vault, "dir/new.md", expected_hash=None, set_fields={"node_id": "x"})
    with pytest.raises(UnsafePathError):
        read_note(vault, "link.md")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_symlink_inside_vault_allowed(vault: Path) -> None:
    (vault / "real.md").write_bytes(b"x\n")
    (vault / "alias.md").symlink_to(vault / "real.md")
    assert safe_path(vault, "alias.md") == (vault / "real.md").resolve()
    # Writing through the link edits the real file and keeps the link a link.
    note = read_note(vault, "alias.md")
    write_note(vault, "alias.md", expected_hash=note.file_hash, set_fields={"tier": "hot"})
    assert (vault / "alias.md").is_symlink()
    assert (vault / "real.md").read_bytes() == b"---\ntier: hot\n---\nx\n"
    # Moving the link would move its target: refused.
    with pytest.raises(NoteError, match="symlink"):
        move_note(vault, "alias.md", "moved.md", expected_hash=None)
    assert (vault / "real.md").exists()


# --------------------------------------------------------------------------- move_note


def test_move_creates_parents_and_returns_path(vault: Path) -> None:
    old = put(vault, "staging/n.md", b"---\nnode_id: a\n---\nx\n")
    final = move_note(vault, "staging/n.md", "Memory/Projects/n.md", expected_hash=old.file_hash)
    assert final == "Memory/Projects/n.md"
    assert (vault / final).read_bytes() == b"---\nnode_id: a\n---\nx\n"
    assert not (vault / "staging/n.md").exists()


def test_move_never_overwrites(vault: Path) -> None:
    put(vault, ".trash/n.md", b"first\n")
    put(vault, ".trash/n (2).md", b"second\n")
    put(vault, "n.md", b"third\n")
    final = move_note(vault, "n.md", ".trash/n.md", expected_hash=None)
    assert final == ".trash/n (3).md"
    assert (vault / ".trash/n.md").read_bytes() == b"first\n"
    assert (vault / ".trash/n (2).md").read_bytes() == b"second\n"
    assert (vault / ".trash/n (3).md").read_bytes() == b"third\n"
    assert not (vault / "n.md").exists()


def test_move_checks_hash(vault: Path) -> None:
    put(vault, "n.md", b"v1\n")
    with pytest.raises(ConcurrentEditError):
        move_note(vault, "n.md", "Memory/n.md", expected_hash=sha(b"v0\n"))
    assert (vault / "n.md").read_bytes() == b"v1\n"
    assert not (vault / "Memory").exists()


def test_move_refuses_unsafe_and_missing(vault: Path) -> None:
    put(vault, "n.md", b"v1\n")
    with pytest.raises(UnsafePathError):
        move_note(vault, "n.md", "../n.md", expected_hash=None)
    with pytest.raises(UnsafePathError):
        move_note(vault, "/etc/hosts", "n2.md", expected_hash=None)
    with pytest.raises(NoteNotFoundError):
        move_note(vault, "missing.md", "n2.md", expected_hash=None)
    assert (vault / "n.md").read_bytes() == b"v1\n"


def test_move_onto_itself_is_noop(vault: Path) -> None:
    put(vault, "n.md", b"v1\n")
    assert move_note(vault, "n.md", "./n.md", expected_hash=None) == "n.md"
    assert sorted(p.name for p in vault.iterdir()) == ["n.md"]


# --------------------------------------------------------------------------- sample vault


SAMPLE_EXPECTATIONS: dict[str, tuple[bool, str]] = {
    # file -> (has_frontmatter, newline)
    "ollama keep-alive.md": (False, "\n"),
    "GPU setup on the Windows box.md": (True, "\n"),
    "agent runbook.md": (True, "\r\n"),
    "Reise nach Tokio 🗼.md": (True, "\n"),
    "model eval 2025-10.md": (True, "\n"),
    "weekly review.md": (False, "\n"),
    "empty.md": (False, "\n"),
    "frontmatter only.md": (True, "\n"),
    "agent config decisions.md": (True, "\n"),
    "links and tags.md": (True, "\n"),
}


@pytest.mark.parametrize("name", sorted(SAMPLE_EXPECTATIONS))
def test_sample_vault_edge_cases_parse(name: str) -> None:
    note = read_note(SAMPLE_VAULT, f"Inbox/{name}")
    assert (note.has_frontmatter, note.newline) == SAMPLE_EXPECTATIONS[name]
    assert "node_id" not in note.meta
    assert "\r" not in note.body and "\ufeff" not in note.body


def test_sample_vault_specific_content() -> None:
    bom = (SAMPLE_VAULT / "Inbox/GPU setup on the Windows box.md").read_bytes()
    assert bom.startswith(BOM + b"---\n")
    meta = read_note(SAMPLE_VAULT, "Inbox/model eval 2025-10.md").meta
    assert (meta["date"], meta["reviewed"], meta["version"]) == (date(2025, 10, 24), True, 1.1)
    assert read_note(SAMPLE_VAULT, "Inbox/weekly review.md").body.startswith("---\n")
    assert read_note(SAMPLE_VAULT, "Inbox/empty.md").body == ""
    assert read_note(SAMPLE_VAULT, "Inbox/frontmatter only.md").body == ""
    links = read_note(SAMPLE_VAULT, "Inbox/links and tags.md").body
    assert "[[agent runbook]]" in links and "|the Tokyo trip]]" in links and "#agent/memory" in links


def test_sample_vault_latin1_export_is_skipped_with_clear_error() -> None:
    with pytest.raises(NoteParseError, match=r"not valid UTF-8 at byte \d+; re-save the file as UTF-8"):
        read_note(SAMPLE_VAULT, "Inbox/deliberately-not-utf8.md")


def test_sample_vault_notes_survive_owned_edits(tmp_path: Path) -> None:
    # Every parseable sample note takes an owned-field edit with human content intact.
    for name in SAMPLE_EXPECTATIONS:
        rel = f"Inbox/{name}"
        raw = (SAMPLE_VAULT / rel).read_bytes()
        old = put(tmp_path, rel, raw)
        new = write_note(tmp_path, rel, expected_hash=old.file_hash, set_fields=SET)
        assert new.body == old.body, name
        assert {k: v for k, v in new.meta.items() if k not in SET} == old.meta, name
        assert {k: new.meta[k] for k in SET} == SET_META, name
