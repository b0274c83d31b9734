"""Inputs validated at the edge (issue 12 item 7): config ranges, long queries, booleans from
YAML strings, terminal escapes in what the CLI prints, NUL and line separators in memories."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from tests.conftest import MemoryFactory
from tests.faults import cli, no_traceback
from vault_memory.cli import execute
from vault_memory.cli.output import clean
from vault_memory.config import RANGES, Config, check_setting, resolve_config
from vault_memory.errors import ConfigError
from vault_memory.index.embedders import FakeEmbedder, embed_query, query_windows
from vault_memory.internals import internals

# -- config numbers with ranges -------------------------------------------------------------------

BAD = [
    ("half_life_short_days", "-7"),
    ("half_life_long_days", "nan"),
    ("half_life_long_days", "inf"),
    ("dormant_below", "2"),
    ("debounce_seconds", "-0.5"),
    ("quiet_seconds", "-1"),
    ("rehearse", "often"),
    ("review_window_days", "-1"),
    ("prefetch_budget", "-1"),
    ("prefetch_entry_cap", "0"),
    ("prefetch_entry_cap", "2.5"),
    ("staged_ttl_days", "0"),
    ("embed_timeout", "0"),
    ("exact_search_limit", "-5"),
]


@pytest.mark.parametrize(("key", "value"), BAD)
def test_a_bad_number_from_the_environment_names_key_value_and_variable(vault: Path, key: str, value: str) -> None:
    var = f"VAULT_MEMORY_{key.upper()}"
    with pytest.raises(ConfigError) as err:
        resolve_config({"vault": vault}, env={var: value})
    assert key in str(err.value) and (var in str(err.value) or value in str(err.value))


@pytest.mark.parametrize(
    ("key", "value"),
    [("half_life_short_days", "-7"), ("dormant_below", "2"), ("debounce_seconds", "-1"), ("rehearse", '"sometimes"')],
)
def test_a_bad_number_in_the_vault_file_names_the_file(vault: Path, key: str, value: str) -> None:
    (vault / ".vault-memory.toml").write_text(f"{key} = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        resolve_config({"vault": vault}, env={})
    assert key in str(err.value) and ".vault-memory.toml" in str(err.value)


def test_config_built_in_code_is_checked_too(vault: Path) -> None:
    with pytest.raises(ConfigError, match="half_life_long_days"):
        Config(vault=vault, half_life_long_days=math.nan)
    with pytest.raises(ConfigError, match="prefetch_entry_cap"):
        Config(vault=vault, prefetch_entry_cap=True)  # a bool is not a number


def test_every_range_accepts_its_bounds_and_the_defaults(vault: Path) -> None:
    for name, (low, high, low_in) in RANGES.items():
        kind = type(Config.__dataclass_fields__[name].default)
        assert check_setting(name, kind(high)) is None, name
        assert (check_setting(name, kind(low)) is None) is low_in, name
        assert check_setting(name, kind(high) + 1) is not None, name
    Config(vault=vault)  # the defaults are in range
    assert check_setting("rehearse", "memories") is None and check_setting("rehearse", "x") is not None


def test_cli_exit_2_for_a_bad_setting(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VAULT_MEMORY_DORMANT_BELOW", "2")
    code = execute(["--vault", str(vault), "--index-dir", str(tmp_path / "i"), "--embedder", "fake", "status"])
    err = capsys.readouterr().err
    assert code == 2 and "dormant_below = 2.0 from env (VAULT_MEMORY_DORMANT_BELOW)" in err
    monkeypatch.delenv("VAULT_MEMORY_DORMANT_BELOW")
    code = execute(
        ["--vault", str(vault), "--index-dir", str(tmp_path / "i"), "--embedder", "fake", "watch", "--debounce", "inf"]
    )
    assert code == 2 and "--debounce inf" in capsys.readouterr().err


# -- long queries ------------------------------------------------------------------------------


def test_query_windows_cover_the_text_and_each_fits() -> None:
    emb = FakeEmbedder(max_tokens=16)
    text = " ".join(f"word{i}" for i in range(200)) + " " + "x" * 300
    windows = query_windows(text, emb)
    assert all(emb.count_tokens(w) <= emb.max_tokens for w in windows)
    assert " ".join(windows).replace(" ", "") == text.replace(" ", "")  # nothing dropped, in order
    vec = embed_query(emb, text)
    assert abs(float(vec @ vec) - 1.0) < 1e-5
    assert query_windows("short text", emb) == ["short text"]


def test_a_long_query_is_answered_with_one_warning(
    make_memory: MemoryFactory, caplog: pytest.LogCaptureFixture
) -> None:
    mem = make_memory(FakeEmbedder(max_tokens=32))
    mem.index()
    query = ("coffee espresso beans morning " * 80).strip()  # 2,400 characters: more than MCP's 2,000
    with caplog.at_level(logging.WARNING):
        hits = mem.recall(query, k=3, touch=False)
        block = mem.prefetch(query).block
    assert hits and hits[0].path == "Preferences/Coffee.md" and isinstance(block, str)
    warned = [r for r in caplog.records if "windows" in r.getMessage()]
    assert len(warned) == 2  # one per call: recall's and prefetch's
    staged = mem.stage(query)  # the conflict check embeds it the same way
    assert staged.path.startswith("Memory/Staged/")


@pytest.mark.slow
def test_cli_recall_of_a_2000_character_query(vault: Path, tmp_path: Path) -> None:
    query = ("which hot drink does she like in the morning, and which beans " * 40)[:2000]
    out = cli("--vault", str(vault), "--index-dir", str(tmp_path / "i"), "recall", query, "--no-touch", "-k", "2")
    no_traceback(out)
    assert out.returncode == 0 and out.stdout.startswith("1. ")


# -- booleans from YAML strings ---------------------------------------------------------------------

FLAGS = {
    "yes": True,
    '"yes"': True,
    "'true'": True,
    '"on"': True,
    "True": True,
    "1": True,
    "no": False,
    "'false'": False,
    '"no"': False,
    '"off"': False,
    "false": False,
    "0": False,
}


def test_pinned_and_private_read_the_same_whatever_the_spelling(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    for i, (raw, _) in enumerate(FLAGS.items()):
        (vault / f"p{i}.md").write_text(
            f"---\npinned: {raw}\n---\n# Pin {i}\n\nlighthouse keeper {i}\n", encoding="utf-8"
        )
        (vault / f"s{i}.md").write_text(
            f"---\nprivate: {raw}\n---\n# Secret {i}\n\nsubmarine captain {i}\n", encoding="utf-8"
        )
    mem = make_memory(vault=vault)
    mem.index()
    hits = {h.path: h for h in mem.recall("lighthouse keeper", k=50, touch=False)}
    for i, want in enumerate(FLAGS.values()):
        assert hits[f"p{i}.md"].pinned is want, list(FLAGS)[i]
    indexed = {r.path for r in internals(mem).catalog.notes()}
    for i, private in enumerate(FLAGS.values()):
        assert (f"s{i}.md" in indexed) is not private, list(FLAGS)[i]


def test_unpin_and_pin_respect_quoted_booleans(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("---\npinned: 'false'\n---\n# A\n\ntext\n", encoding="utf-8")
    (vault / "b.md").write_text('---\npinned: "yes"\n---\n# B\n\ntext\n', encoding="utf-8")
    mem = make_memory(vault=vault)
    mem.index()
    assert mem.pin("a.md").changed and "pinned: true" in (vault / "a.md").read_text(encoding="utf-8")
    assert mem.pin("b.md").pinned  # already pinned, spelled its own way: that line is left alone
    assert (vault / "b.md").read_text(encoding="utf-8").startswith('---\npinned: "yes"')
    mem.unpin("b.md")
    assert "pinned" not in (vault / "b.md").read_text(encoding="utf-8")


def test_needs_review_no_in_a_staged_memory_is_committed_by_all(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    staged = vault / "Memory" / "Staged"
    staged.mkdir(parents=True)
    (staged / "x.md").write_text('---\nneeds_review: "no"\n---\n# X\n\nA reviewed fact.\n', encoding="utf-8")
    (staged / "y.md").write_text("---\nneeds_review: 'yes'\n---\n# Y\n\nA fact to review.\n", encoding="utf-8")
    report = mem.commit_all()
    assert [c.title for c in report.committed] == ["X"]
    assert [x.title for x in report.left] == ["Y"] and report.left[0].code == "needs_review"


# -- terminal output ------------------------------------------------------------------------------

EVIL = "\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x1b\\\x1b[31m\x9b2J\x07\x00\x7f"
YAML_EVIL = "\\e]0;pwned\\a\\e]52;c;ZXZpbA==\\a"  # the same escapes, as YAML writes them in a quoted title


def test_clean_removes_escape_sequences_and_controls_but_keeps_text() -> None:
    assert clean(f"Title{EVIL} end") == "Title end"
    assert clean("line one\n\tindented 東京 🍜") == "line one\n\tindented 東京 🍜"
    assert clean("unterminated \x1b]0;title") == "unterminated "
    assert clean("cr\rover") == "crover"


@pytest.mark.slow
def test_recall_prints_note_text_without_escapes_and_json_stays_exact(vault: Path, tmp_path: Path) -> None:
    body = EVIL.replace("\x00", "")  # a NUL makes the file binary: skipped, not shown
    (vault / f"evil{EVIL[:12]}.md").write_text(
        f'---\ntitle: "Gift{YAML_EVIL}"\n---\n# Gift\n\nzanzibar treasure {body} map\n', encoding="utf-8"
    )
    base = ["--vault", str(vault), "--index-dir", str(tmp_path / "i")]
    for args in (
        ["recall", "zanzibar treasure", "-k", "1"],
        ["prefetch", "zanzibar treasure map"],
        ["status"],
        ["doctor"],
        ["staged"],
    ):
        out = cli(*base, *args)
        no_traceback(out)
        for stream in (out.stdout, out.stderr):
            assert not set(stream) & {"\x1b", "\x07", "\x9b", "\x00", "\x7f"}, (args, stream[-500:])
    out = cli(*base, "recall", "zanzibar treasure", "-k", "1", "--json", "--no-touch")
    assert not set(out.stdout) & {"\x1b", "\x07", "\x9b", "\x7f"}
    hit = json.loads(out.stdout)["hits"][0]
    assert hit["title"] == "Gift\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07" and "\x1b]0;pwned\x07" in hit["path"]


# -- NUL and line separators in a memory ------------------------------------------------------------


def test_nul_is_refused_by_name_and_line_separators_become_newlines(
    make_memory: MemoryFactory, vault: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mem = make_memory()
    with pytest.raises(ConfigError, match=r"NUL character \(U\+0000\) at position 8"):
        mem.stage("a fact \x00 with a NUL")
    with pytest.raises(ConfigError, match="title contains a NUL"):
        mem.remember("fine", title="bad\x00title")
    with pytest.raises(ConfigError, match="not valid text"):
        mem.log("bytes \udcff that were not UTF-8")
    sm = mem.stage("first line\u2028second line\u2029third\x85fourth")
    text = (vault / sm.path).read_text(encoding="utf-8")
    assert "first line\nsecond line\nthird\nfourth" in text and "\u2028" not in text
    code = execute(
        ["--vault", str(vault), "--index-dir", str(tmp_path / "i2"), "--embedder", "fake", "remember", "a\x00b"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "NUL character" in err and "edit it by hand" not in err
