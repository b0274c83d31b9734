"""A rewrite keeps what the file system knew, or does not happen (issue 22 item 4).

Owner, group, mode and extended attributes survive every write of ours; a note with a second
hard link, or that its owner may not write, is never replaced (the bookkeeping write is skipped,
and said once); a note whose owner this process cannot give a new file is left alone too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import NOW, MemoryFactory
from vault_memory.errors import NoteProtectedError
from vault_memory.index.calibration import FAKE
from vault_memory.vault import atomic
from vault_memory.vault.notefile import read_note, write_note

#: every hit counts as used (rehearsed), whatever its cosine
EVERY_HIT_USED = replace(FAKE, strong=-1.0)

EXE = str(Path(sys.executable).parent / "vault-memory")
HUMAN = "---\ntitle: Router\ndate: 2026-09-01\nmykey: human value\n---\nThe wifi router is in the hallway cupboard.\n"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _xattrs_work(where: Path) -> bool:
    probe = where / ".xattr-probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.vm-probe", b"1")
        return True
    except (OSError, AttributeError):
        return False
    finally:
        probe.unlink()


def note(tmp_path: Path) -> Path:
    path = tmp_path / "router.md"
    path.write_text(HUMAN, encoding="utf-8")
    past = time.time() - 60
    os.utime(path, (past, past))
    return path


def bump(tmp_path: Path) -> None:
    write_note(
        tmp_path, "router.md", expected_hash=read_note(tmp_path, "router.md").file_hash, set_fields={"access_count": 3}
    )


@pytest.mark.skipif(not ROOT, reason="giving a file another owner needs root")
def test_a_rewrite_as_root_keeps_the_owner_group_and_mode(tmp_path: Path) -> None:
    path = note(tmp_path)
    os.chown(path, 1000, 1000)
    os.chmod(path, 0o600)
    bump(tmp_path)
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1000, 1000, 0o600)
    assert "access_count: 3" in path.read_text(encoding="utf-8")


def test_a_rewrite_keeps_extended_attributes(tmp_path: Path) -> None:
    if not _xattrs_work(tmp_path):
        pytest.skip("this file system has no user.* extended attributes")
    path = note(tmp_path)
    os.setxattr(path, "user.xdg.tags", b"home,network")
    os.setxattr(path, "user.obsidian.color", b"\x00\x01binary")
    bump(tmp_path)
    assert os.getxattr(path, "user.xdg.tags") == b"home,network"
    assert os.getxattr(path, "user.obsidian.color") == b"\x00\x01binary"


def test_a_hard_linked_note_is_never_split(tmp_path: Path) -> None:
    path = note(tmp_path)
    other = tmp_path / "elsewhere.md"
    os.link(path, other)
    before = path.read_bytes()
    with pytest.raises(NoteProtectedError, match="2 hard links"):
        bump(tmp_path)
    assert path.read_bytes() == before and os.stat(path).st_ino == os.stat(other).st_ino


def test_a_read_only_note_is_never_rewritten(tmp_path: Path) -> None:
    path = note(tmp_path)
    os.chmod(path, 0o444)
    before = path.read_bytes()
    with pytest.raises(NoteProtectedError, match="read-only") as info:
        bump(tmp_path)
    assert info.value.exit_code == 8
    assert path.read_bytes() == before and os.stat(path).st_mode & 0o777 == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == ["router.md"]  # no temp file left


@pytest.mark.skipif(not ROOT, reason="runs a writer as another user (needs root to switch)")
@pytest.mark.slow
def test_a_writer_that_cannot_keep_the_owner_leaves_the_note(tmp_path: Path) -> None:
    """uid 1000 may write the folder but not give a new file root's ownership: the note stays root's."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="vm-shared-"))  # under /tmp: pytest's own folders are root-only
    request_cleanup = shutil.rmtree
    os.chmod(folder, 0o777)
    path = note(folder)
    os.chmod(path, 0o666)
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from vault_memory.vault.notefile import read_note, write_note\n"
        "from vault_memory.errors import NoteProtectedError\n"
        "os.setgid(1000); os.setuid(1000)\n"
        "v = Path(sys.argv[1])\n"
        "try:\n"
        "    h = read_note(v, 'router.md').file_hash\n"
        "    write_note(v, 'router.md', expected_hash=h, set_fields={'pinned': True})\n"
        "except NoteProtectedError as e:\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=60)
    assert "refused:" in out.stdout and "owned by uid 0" in out.stdout, out.stdout + out.stderr
    try:
        assert os.stat(path).st_uid == 0 and path.read_text(encoding="utf-8") == HUMAN
    finally:
        request_cleanup(folder)


@pytest.mark.skipif(not ROOT, reason="giving a file another owner needs root")
def test_recall_as_root_keeps_a_persons_note_theirs(make_memory: MemoryFactory, vault: Path) -> None:
    """The issue's case: `recall` run as root on a note owned by uid 1000 with mode 600 rehearses it and
    leaves it owned by root; now it stays theirs."""
    path = vault / "router.md"
    path.write_text(HUMAN, encoding="utf-8")
    os.chown(path, 1000, 1000)
    os.chmod(path, 0o600)
    mem = make_memory(calibration=EVERY_HIT_USED)
    mem.index()
    hits = mem.recall("where is the wifi router", k=3, now=NOW)
    assert any(h.path == "router.md" and h.rehearsed for h in hits)
    st = os.stat(path)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (1000, 1000, 0o600)


def test_recall_skips_a_hard_linked_note_and_says_so_once(
    make_memory: MemoryFactory, vault: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = vault / "router.md"
    path.write_text(HUMAN, encoding="utf-8")
    os.link(path, vault.parent / "router-link.md")
    before = path.read_bytes()
    mem = make_memory(calibration=EVERY_HIT_USED)
    mem.index()
    for day in range(3):
        hits = mem.recall("where is the wifi router", k=3, now=NOW.replace(day=1 + day))
        assert any(h.path == "router.md" and not h.rehearsed for h in hits)
    assert path.read_bytes() == before
    said = [r.getMessage() for r in caplog.records if "hard links" in r.getMessage()]
    assert len(said) == 1, said


@pytest.mark.slow
def test_pin_of_a_read_only_note_exits_8_through_the_console_script(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    path = note(vault)
    os.chmod(path, 0o444)
    base = [EXE, "--vault", str(vault), "--index-dir", str(tmp_path / "index"), "--embedder", "fake"]
    assert subprocess.run([*base, "index"], capture_output=True, timeout=120).returncode == 0
    res = subprocess.run([*base, "pin", "router.md"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 8, res.stderr
    assert "router.md" in res.stderr and "read-only" in res.stderr and "Traceback" not in res.stderr
    assert path.read_text(encoding="utf-8") == HUMAN


def test_the_guard_protects_before_any_temp_file(tmp_path: Path) -> None:
    path = note(tmp_path)
    st = os.stat(path)
    assert atomic.protected(st) is None
    os.chmod(path, 0o400)
    assert "read-only" in (atomic.protected(os.stat(path)) or "")
