"""The benchmark generators (not the runners): deterministic, well-formed, quick."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml

from bench.data import datasets, synth, updates
from bench.harness import DEFAULT_DATA, sync_vault


def _frontmatter(text: str) -> dict:
    assert text.startswith("---\n")
    block = text.split("\n---\n", 1)[0][4:]
    return yaml.safe_load(block) or {}


# --------------------------------------------------------------------------- pure helpers


def test_parse_locomo_datetime():
    assert datasets.parse_locomo_datetime("1:56 pm on 8 May, 2023") == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    assert datasets.parse_locomo_datetime("12:09 am on 13 September, 2023").hour == 0
    assert datasets.parse_locomo_datetime("12:30 pm on 1 January, 2024").hour == 12
    assert datasets.parse_locomo_datetime("10:37 am on 27 June, 2023").isoformat() == "2023-06-27T10:37:00+00:00"
    with pytest.raises(ValueError):
        datasets.parse_locomo_datetime("yesterday")


def test_parse_evidence():
    assert datasets.parse_evidence(["D8:6; D9:17", "D1:3", "D", "D:11:26", "D9:1 D4:4,D4:6", "D1:3"]) == (
        "D8:6",
        "D9:17",
        "D1:3",
        "D9:1",
        "D4:4",
        "D4:6",
    )


def test_turn_ids_whole_markers_only():
    text = "D1:1 Ann: hi\nD1:12 Bob: see D1:3 later [image: a D2:4x]\nxD5:5 no"
    assert datasets.turn_ids(text) == ["D1:1", "D1:12", "D1:3"]


def test_safe_name_unique():
    taken: set[str] = set()
    assert datasets.safe_name("a/b c", taken) == "a_b_c"
    assert datasets.safe_name("a/b c", taken) == "a_b_c_2"
    assert datasets.safe_name("..", taken) == "doc"


def test_sync_vault_keeps_unchanged_files(tmp_path: Path):
    first = sync_vault(tmp_path, {"a.md": "x\n", "sub/b.md": "y\n"})
    assert first == {"written": 2, "unchanged": 0, "removed": 0}
    mtime = (tmp_path / "a.md").stat().st_mtime_ns
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "keep.md").write_text("z")
    second = sync_vault(tmp_path, {"a.md": "x\n"})
    assert second == {"written": 0, "unchanged": 1, "removed": 1}
    assert (tmp_path / "a.md").stat().st_mtime_ns == mtime
    assert (tmp_path / ".hidden" / "keep.md").exists()


# --------------------------------------------------------------------------- generated benchmarks


def test_updates_generator(tmp_path: Path):
    files, cases = updates.generate_updates(subjects=40, seed=7)
    again, _ = updates.generate_updates(subjects=40, seed=7)
    assert files == again
    assert len(cases) == 40
    assert len({c.subject for c in cases}) == 40
    for case in cases:
        assert 2 <= len(case.statements) <= 4
        assert len(set(case.values)) == len(case.values)
        assert list(case.dates) == sorted(case.dates)
        gaps = [(b.date() - a.date()).days for a, b in zip(case.dates, case.dates[1:], strict=False)]
        assert all(g >= 60 for g in gaps)
        for path, value, when in zip(case.statements, case.values, case.dates, strict=True):
            text = files[path]
            assert value in text
            assert _frontmatter(text)["created"] == when
        assert case.answer == case.values[-1]
    assert len(files) > sum(len(c.statements) for c in cases)  # distractors and journal notes
    newest = max(d for c in cases for d in c.dates)
    assert all(_frontmatter(t)["created"] <= newest for t in files.values())

    bench = updates.build_updates(tmp_path / "v", quick=True)
    assert bench.now == max(d for c in bench.cases for d in c.dates) + dt.timedelta(days=1)
    assert all((bench.vault / p).is_file() for c in bench.cases for p in c.statements)


def test_synth_generator(tmp_path: Path):
    files, titles = synth.generate_synth(300, seed=5)
    assert files == synth.generate_synth(300, seed=5)[0]
    assert len(files) == len(titles) == 300
    words = sorted(len(t.split()) for t in files.values())
    assert 150 < words[len(words) // 2] < 400
    with_fm = [t for t in files.values() if t.startswith("---\n")]
    assert 0 < len(with_fm) < len(files)
    fms = [_frontmatter(t) for t in with_fm]
    assert any("node_id" in f for f in fms) and any("node_id" not in f for f in fms)
    body = "\n".join(files.values())
    assert "[[" in body and "\n## " in body and re.search(r" #[a-z]+", body)
    links = re.findall(r"\[\[([^\]|#]+)", body)
    assert links and set(links) <= set(titles)

    vault = synth.build_synth(tmp_path / "s", 100, seed=5)
    before = {p: (vault.root / p).read_text() for p in vault.paths}
    edited = synth.edit_notes(vault.root, 0.05, seed=2)
    assert len(edited) == 5
    after = {p: (vault.root / p).read_text() for p in vault.paths}
    assert {p for p in vault.paths if before[p] != after[p]} == set(edited)
    for p in edited:  # frontmatter survives the edit
        if before[p].startswith("---\n"):
            assert after[p].split("\n---\n", 1)[0] == before[p].split("\n---\n", 1)[0]


# --------------------------------------------------------------------------- third-party data (skipped without it)

needs_data = pytest.mark.skipif(
    not (DEFAULT_DATA / "scifact").is_dir() or not (DEFAULT_DATA / "locomo").is_dir(),
    reason="bench data not found next to the repo",
)


@needs_data
def test_scifact_quick_slice(tmp_path: Path):
    ds = datasets.build_scifact(DEFAULT_DATA, tmp_path / "sf", quick=True)
    assert len(ds.queries) == 30
    assert set(ds.qrels) == set(ds.queries)
    docs = set(ds.path_to_doc.values())
    assert all(doc in docs for rels in ds.qrels.values() for doc in rels)
    assert 550 <= ds.n_docs <= 700
    stamps = set()
    for rel in list(ds.path_to_doc)[:50]:
        text = (ds.vault / rel).read_text()
        stamps.add(_frontmatter(text)["created"])
        assert "\n# " in text
    assert len(stamps) == 1


@needs_data
def test_locomo_quick_slice(tmp_path: Path):
    (conv,) = datasets.build_locomo(DEFAULT_DATA, tmp_path / "lc", quick=True)
    assert len(conv.questions) == 40
    assert {q.category for q in conv.questions} == {1, 2, 3, 4}
    notes = sorted(conv.vault.glob("session_*.md"))
    assert len(notes) == len(conv.session_dates)
    text = (conv.vault / "session_1.md").read_text()
    fm = _frontmatter(text)
    assert fm["date"] == conv.session_dates[1]
    lines = text.split("\n---\n", 1)[1].strip().split("\n")
    assert all(re.match(r"^D1:\d+ \w+: ", line) for line in lines)
    assert "[image: " in (conv.vault / "session_1.md").read_text()
    all_ids = {m for n in notes for m in datasets.turn_ids(n.read_text())}
    assert len(all_ids) == conv.turns
    assert all(e in all_ids for q in conv.questions for e in q.evidence)


@pytest.mark.slow
def test_every_benchmark_runs_in_quick_mode(tmp_path: Path) -> None:
    """`python -m bench all --quick` (fake embedder, small slices): the harness cannot rot."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "all",
            "--quick",
            "--out",
            str(tmp_path / "results"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    written = sorted(p.name for p in (tmp_path / "results").glob("*.quick.json"))
    assert {"updates.quick.json", "scale.quick.json", "pipeline.quick.json", "cold.quick.json"} <= set(written)
    if (DEFAULT_DATA / "locomo").is_dir():
        assert {"locomo.quick.json", "updates_hard.quick.json"} <= set(written)


# --------------------------------------------------------------------------- the bench package itself


def test_help_lists_every_runner_and_study() -> None:
    import subprocess
    import sys

    from bench.__main__ import RUNNERS, STUDIES, build_parser

    repo = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-m", "bench", "--help"], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    for name in (*RUNNERS, *STUDIES, "all"):
        assert re.search(rf"^  {name} ", out.stdout, re.M), f"{name} missing from `python -m bench --help`"
    readme = (repo / "bench" / "README.md").read_text(encoding="utf-8")
    for name in (*RUNNERS, *STUDIES):
        assert f"`{name}`" in readme, f"{name} missing from bench/README.md"
    parser = build_parser()
    for name in (*RUNNERS, *STUDIES):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args([name, "--help"])
        assert exit_.value.code == 0


def test_bench_uses_only_public_names() -> None:
    """No bench module reaches into a private name of the library (or of another module)."""
    import ast

    bench = Path(__file__).resolve().parent.parent / "bench"
    found = []
    for path in sorted(bench.rglob("*.py")):
        if any(part.startswith(".") for part in path.relative_to(bench).parts):
            continue  # caches (bench/.cache*: generated vaults, a baseline commit's tree), not bench code
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{path.relative_to(bench)}:{node.lineno} {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom):
                found += [
                    f"{path.relative_to(bench)}:{node.lineno} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not found, found
