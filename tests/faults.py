"""Fault injection for the reliability tests: folders that cannot be written, a full disk,
damaged index files, and the oracle they are judged by (a clean rebuild of the index).

Read-only folders are real where possible: a read-only bind mount when running as root with
`mount` (root ignores permission bits, so chmod proves nothing for it), `chmod a-w` for anyone
else. A full disk needs a tiny tmpfs, so root; the tests that need one are skipped elsewhere
and an ENOSPC raised by a stand-in covers the same code path everywhere.
"""

from __future__ import annotations

import functools
import os
import random
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

EXE = str(Path(sys.executable).parent / "vault-memory")


@functools.cache
def can_mount() -> bool:
    """Whether this process may mount (root with CAP_SYS_ADMIN and a `mount` binary)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    probe = Path(tempfile.mkdtemp(prefix="vm-mount-probe-"))
    try:
        ok = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True, timeout=30
            ).returncode
            == 0
        )
        if ok:
            subprocess.run(["umount", str(probe)], capture_output=True, timeout=30)
        return ok
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        probe.rmdir()


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True, timeout=60).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


@contextmanager
def read_only(path: Path) -> Iterator[str]:
    """`path` (a folder) cannot be written inside the block; yields how ("mount" or "chmod")."""
    if can_mount():
        subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True, timeout=60)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True, capture_output=True, timeout=60)
            yield "mount"
        finally:
            _umount(path)
        return
    if os.name != "posix" or os.geteuid() == 0:
        pytest.skip("needs root with mount, or a non-root user, to make a folder read-only")
    modes: dict[Path, int] = {}
    for p in [path, *path.rglob("*")]:
        modes[p] = p.stat().st_mode
        p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
    try:
        yield "chmod"
    finally:
        for p, mode in sorted(modes.items(), key=lambda kv: len(kv[0].parts)):
            p.chmod(stat.S_IMODE(mode))


@contextmanager
def tmpfs(path: Path, size: str = "4m") -> Iterator[Path]:
    """A small tmpfs mounted at `path` for the block (root only; the test is skipped otherwise)."""
    if not can_mount():
        pytest.skip("needs root with mount to make a small file system")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True, capture_output=True, timeout=60
    )
    try:
        yield path
    finally:
        _umount(path)


def fill(folder: Path) -> Path:
    """Fill the file system holding `folder` up to the last byte; returns the filler file."""
    filler = folder / ".filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 16, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def scribble(path: Path, at: float = 0.5, size: int = 8192, seed: int = 1) -> int:
    """Write `size` random bytes into `path` at fraction `at` of its length (the file keeps its
    length); returns the offset."""
    length = path.stat().st_size
    offset = max(0, min(length - 1, int(length * at)))
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(random.Random(seed).randbytes(min(size, max(1, length - offset))))
    return offset


def cli(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as users meet it (`env`: variables to add)."""
    env = {**os.environ, "VAULT_MEMORY_EMBEDDER": "fake", **(env or {})}
    return subprocess.run([EXE, *args], capture_output=True, text=True, env=env, timeout=timeout)


def index_state(index_dir: Path) -> dict[str, Any]:
    """What an index says about the vault: notes (path -> node_id, file hash) and chunks (id -> text hash)."""
    db = sqlite3.connect(f"{(index_dir / 'catalog.sqlite').resolve().as_uri()}?mode=ro", uri=True)
    try:
        notes = {p: (n, h) for n, p, h in db.execute("SELECT node_id, path, file_hash FROM notes")}
        chunks = dict(db.execute("SELECT chunk_id, text_hash FROM chunks"))
        failures = {p for (p,) in db.execute("SELECT path FROM failures")}
    finally:
        db.close()
    return {"notes": notes, "chunks": chunks, "failures": failures}


def clean_rebuild_state(vault: Path, scratch: Path) -> dict[str, Any]:
    """The oracle: the index a fresh `index` builds for this vault, in a folder of its own."""
    out = cli("--vault", str(vault), "--index-dir", str(scratch), "--read-only", "index")
    assert out.returncode == 0, out.stderr
    return index_state(scratch)


def assert_converged(vault: Path, index_dir: Path, scratch: Path) -> None:
    """The index equals a clean rebuild, and doctor says so."""
    assert index_state(index_dir) == clean_rebuild_state(vault, scratch)
    out = cli("--vault", str(vault), "--index-dir", str(index_dir), "doctor")
    assert out.returncode == 0, out.stdout + out.stderr


def no_traceback(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr[-3000:]
