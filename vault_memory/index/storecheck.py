"""Checking an embedded Chroma store without risking this process.

A damaged HNSW file can crash hnswlib in native code (SIGSEGV: nothing to catch), so the store
is opened and read in a child process: `check_store` (what `doctor` runs) and `probe_store`
(what an opener runs first when vectorstore.py's signs say the store may not be sound: a
marker left by a process that died with it open, or files changed while nobody had it open).
A crash there costs the child; the caller sets the store aside and rebuilds it from the
catalog's vectors.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexNotWritableError, IndexStateError
from .vectorstore import FINGERPRINT, MARKER_PREFIX, STORE_FOLDER, VectorStore, fingerprint, record_fingerprint

log = logging.getLogger(__name__)

CHECK_TIMEOUT = 180.0  # seconds the child process checking a store may take (import + load + sample)
Sample = list[tuple[str, list[float]]]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process there
        return _alive_windows(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists, belongs to someone else (or cannot be asked: assume alive)
    return True


def _alive_windows(pid: int) -> bool:  # pragma: no cover - Windows only
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined,unused-ignore]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return bool(kernel32.GetLastError() == 5)  # access denied: it exists
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def stale_markers(index_dir: Path) -> list[Path]:
    """Markers left by processes that died with the embedded store open."""
    out = []
    for marker in index_dir.glob(f"{MARKER_PREFIX}*"):
        pid = marker.name[len(MARKER_PREFIX) :]
        if not pid.isdigit() or not _alive(int(pid)):
            out.append(marker)
    return out


def changed_behind_our_back(index_dir: Path, *, open_here_counts: bool = False) -> bool:
    """Whether the store's files differ from what the last process that had it open left (stat
    only), while no other process has it open now: someone else wrote them (a copy, a restore,
    damage). `open_here_counts`: this process having it open counts too (its writes are recorded
    only when it closes the store)."""
    try:
        recorded = json.loads((index_dir / FINGERPRINT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # never recorded (an index from before): nothing to compare with
    mine = f"{MARKER_PREFIX}{os.getpid()}"
    holders = [m for m in index_dir.glob(f"{MARKER_PREFIX}*") if open_here_counts or m.name != mine]
    return not holders and recorded != fingerprint(index_dir / STORE_FOLDER)


def probe_store(index_dir: Path, sample: Callable[[], tuple[str, Sample]]) -> str | None:
    """Check the embedded store in a child process first if it should not be trusted (see the
    module docstring); returns what is wrong with it, or None (trusted, or the check passed)."""
    folder = index_dir / STORE_FOLDER
    stale = stale_markers(index_dir)
    why = (
        "a process died with it open"
        if stale
        else "its files changed while no process had it open"
        if changed_behind_our_back(index_dir)
        else None
    )
    if why is None:
        return None
    problem = None
    if folder.exists():
        log.info("checking the vector store %s in a separate process first: %s", folder, why)
        name, rows = sample()
        result = check_store(folder, name, rows, [r[0] for r in rows])
        problem = result.get("problem")
    for marker in stale:
        marker.unlink(missing_ok=True)
    if problem is None and folder.exists():
        record_fingerprint(folder)
    return problem if isinstance(problem, str) else None


def check_store(
    folder: Path, collection: str, sample: Sample, want_ids: list[str] | None, timeout: float = CHECK_TIMEOUT
) -> dict[str, Any]:
    """Open the embedded store in a child process and check it: that it opens, its count, that a
    sample of the catalog's (chunk id, vector) pairs reads back with the same vectors, that a query
    finds them, and (given `want_ids`, the catalog's chunk ids) which ids are missing or extra.

    Returns {"problem": str | None, "count": int, "missing": int, "orphaned": int}. A damaged HNSW
    file can crash hnswlib in native code; that kills only the child and is reported as a problem."""
    import subprocess  # here: importing it at start-up breaks a stand-in msvcrt (tests/test_lock.py)

    job = json.dumps({"folder": str(folder), "collection": collection, "sample": sample, "want": want_ids})
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "from vault_memory.index.storecheck import check_main; check_main()"],
            input=job,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"problem": f"checking the vector store {folder} took more than {timeout:g} s; it may be damaged"}
    except OSError as exc:
        return {"problem": None, "error": f"could not start a process to check the vector store: {exc}"}
    if proc.returncode < 0:
        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = str(-proc.returncode)
        return {"problem": f"the vector store {folder} crashed the process reading it ({sig}): its files are damaged"}
    try:
        out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return out
    except (ValueError, IndexError):
        tail = " ".join(proc.stderr.strip().splitlines()[-1:])[:300]
        return {"problem": f"the vector store {folder} could not be checked (exit {proc.returncode}: {tail})"}


def _check_here(job: dict[str, Any]) -> dict[str, Any]:
    """The child's side of `check_store`."""
    folder, name = Path(job["folder"]), str(job["collection"])
    sample: Sample = job.get("sample") or []
    out: dict[str, Any] = {"problem": None, "count": 0, "missing": 0, "orphaned": 0}
    meta = folder / "chroma.sqlite3"
    if meta.exists():  # Chroma's own SQLite file: its pages, before Chroma reads them
        import sqlite3

        try:
            db = sqlite3.connect(f"{meta.resolve().as_uri()}?mode=ro", uri=True)
            try:
                rows = [str(r[0]) for r in db.execute("PRAGMA quick_check(5)")]
            finally:
                db.close()
        except sqlite3.Error as exc:
            rows = [str(exc)]
        if rows != ["ok"]:
            out["problem"] = f"the vector store {folder} is damaged ({meta.name}: {'; '.join(rows)})"
            return out
    try:
        store = VectorStore(path=folder, url=None, name=name)
        store._marker, marker = None, store._marker  # the parent's check is not a user of the store
        if marker is not None:
            marker.unlink(missing_ok=True)
        out["count"] = store.count()
        if sample:
            ids = [cid for cid, _ in sample]
            got = store._call(store.collection.get, ids=ids, include=["embeddings"])
            have = dict(zip(got["ids"], got["embeddings"] if got["embeddings"] is not None else [], strict=False))
            present = [(cid, vec) for cid, vec in sample if cid in have]  # a missing id is drift, found below
            bad = [
                cid
                for cid, vec in present
                if float(np.dot(np.asarray(have[cid], dtype=np.float32), np.asarray(vec, dtype=np.float32))) < 0.99
            ]
            if bad:
                out["problem"] = (
                    f"the vector store {folder} returns wrong vectors for {len(bad)} of "
                    f"{len(present)} sampled chunks (e.g. {bad[0]})"
                )
                return out
            lost = [cid for cid, vec in present if not _finds_itself(store, cid, vec)]
            if len(lost) > len(present) / 2:  # a sound graph can miss one: see _finds_itself
                out["problem"] = (
                    f"the vector store {folder} does not find {len(lost)} of {len(present)} sampled "
                    f"stored vectors by themselves (e.g. {lost[0]})"
                )
                return out
        if job.get("want") is not None:
            want, have_ids = set(job["want"]), store.ids()
            out["missing"], out["orphaned"] = len(want - have_ids), len(have_ids - want)
        record_fingerprint(folder)  # reading may have compacted it: what it is now is sound
    except (IndexStateError, IndexNotWritableError) as exc:
        out["problem"] = str(exc).split("; `vault-memory doctor --fix`")[0]
    return out


def _finds_itself(store: VectorStore, cid: str, vec: list[float]) -> bool:
    """Whether a query with a stored vector returns it (or its exact twin: a template's text in
    many notes). HNSW is approximate, so a miss is asked again wider. Even so a sound graph can
    leave a vector nothing links to, which no query returns: 0 to 5 of 150 short look-alike notes
    over 30 insertion orders, measured at stop 67 (tests/test_storecheck.py builds such a graph),
    though none of the 18,125 MiniLM chunk vectors of the four foreign benchmark sets. Damage misses
    most of a sample, or crashes the reader."""
    query = np.asarray(vec, dtype=np.float32)
    for k in (3, 50):
        hits = store.query(query, k)
        if cid in {hit for hit, _ in hits} or (hits and hits[0][1] >= 0.999):
            return True
    return False


def check_main() -> None:
    """The child process of `check_store`: a job on stdin, one JSON line on stdout."""
    logging.disable(logging.CRITICAL)
    print(json.dumps(_check_here(json.loads(sys.stdin.read()))))
