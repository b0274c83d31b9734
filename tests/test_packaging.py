"""Installable as a tool (issue 40): the wheel holds the model's data and the demo vault, and the
installed `vault-memory` runs the quick start from any folder. Offline: the wheel is built without
build isolation (setuptools and wheel come with the `test` extra), and the fresh environment takes
its dependencies from this one's site-packages through a .pth line, not from the package index."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_first_hour import QUICK_START_QUERY
from vault_memory.demo import copy_demo, demo_vault

DEMO_NOTES = sorted(
    p.relative_to(REPO / "vault_memory").as_posix() for p in (REPO / "vault_memory/data/demo_vault").rglob("*.md")
)


def test_the_demo_vault_is_copied_into_a_new_folder_and_never_over_one(tmp_path: Path) -> None:
    from vault_memory.errors import ConfigError

    dest = copy_demo(tmp_path / "demo")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*.md")) == sorted(
        n.removeprefix("data/demo_vault/") for n in DEMO_NOTES
    )
    assert (dest / "Preferences/Coffee.md").read_bytes() == demo_vault().joinpath(
        "Preferences", "Coffee.md"
    ).read_bytes()
    with pytest.raises(ConfigError, match="not an empty folder"):
        copy_demo(dest)


def test_the_demo_vault_has_no_deliberate_edge_case() -> None:
    """What a new user sees first: no warning (every note UTF-8), and the quick start's answer in it."""
    for name in DEMO_NOTES:
        (REPO / "vault_memory" / name).read_bytes().decode("utf-8")
    assert "data/demo_vault/Preferences/Coffee.md" in DEMO_NOTES


@pytest.mark.slow
@pytest.mark.model
def test_the_wheel_installs_into_a_fresh_environment_and_runs_the_quick_start_anywhere(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", minversion="68")
    pytest.importorskip("wheel")
    src = tmp_path / "src"  # a copy, so the build leaves nothing in the repository
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "vault_memory", src / "vault_memory", ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [whl] = dist.glob("vault_memory-*.whl")
    names = set(zipfile.ZipFile(whl).namelist())
    for needed in (
        "vault_memory/py.typed",
        "vault_memory/data/minilm/tokenizer.json",
        "vault_memory/data/minilm/NOTICE",
    ):
        assert needed in names, needed
    assert {f"vault_memory/{n}" for n in DEMO_NOTES} <= names

    env_dir = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=120)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # the dependencies, from this environment (a path line only: its editable vault_memory is not seen)
    (Path(site) / "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(whl)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert pip.returncode == 0, pip.stderr
    anywhere = tmp_path / "somewhere else"
    anywhere.mkdir()
    exe = str(bindir / "vault-memory")
    where = subprocess.run(
        [str(python), "-c", "import vault_memory; print(vault_memory.__file__)"],
        capture_output=True,
        text=True,
        cwd=anywhere,
        check=True,
    ).stdout
    assert where.startswith(site), where  # the installed wheel, not this repository
    demo = subprocess.run([exe, "demo", "my demo"], capture_output=True, text=True, cwd=anywhere, timeout=120)
    assert demo.returncode == 0, demo.stderr
    recall = subprocess.run(
        [exe, "--vault", "my demo", "recall", QUICK_START_QUERY],
        capture_output=True,
        text=True,
        cwd=anywhere,
        timeout=300,
    )
    assert recall.returncode == 0, recall.stderr
    assert recall.stdout.startswith("1. Coffee  (Preferences/Coffee.md"), recall.stdout
    assert "Dark roast espresso" in recall.stdout.splitlines()[1]
    assert "WARNING" not in recall.stderr, recall.stderr
