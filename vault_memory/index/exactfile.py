"""The exact vectors in one file beside the catalog, so a cold process loads them in milliseconds.

Dense search runs exactly over every chunk vector up to `exact_search_limit` chunks
(indexfolder.IndexFolder.exact_search). Reading them from the catalog row by row costs a new process
~150 ms at 26k chunks (most of a cold CLI recall once imports are paid); one file read costs
~10 ms. The file is a cache like the rest of the index folder: written by whichever process
had to read the catalog, replaced whole (temporary file, then rename), keyed by the catalog's
identity and vectors generation, so a stale or foreign file is simply not used.

    read(path, key)                 -> (chunk ids, matrix) or None
    write(path, key, ids, matrix)   best effort: an error only logs

Layout: MAGIC, the header's length (8 bytes, little-endian), a JSON header (key, rows, dim,
length of the ids), the chunk ids joined by NUL, padding to 16 bytes, then the float32 rows.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

FILE_NAME = "exact-vectors.bin"
MAGIC = b"VMEXACT1"
#: Below this many rows the catalog's own read is about as fast as the file: not written.
MIN_ROWS = 2_000
_ALIGN = 16


def read(path: Path, key: str) -> tuple[list[str], np.ndarray] | None:
    """The ids and vectors written under `key`, or None (no file, another key, any damage)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    try:
        if data[: len(MAGIC)] != MAGIC:
            return None
        (head_len,) = struct.unpack_from("<Q", data, len(MAGIC))
        start = len(MAGIC) + 8
        head = json.loads(data[start : start + head_len])
        if head.get("key") != key:
            return None
        rows, dim, ids_len = int(head["rows"]), int(head["dim"]), int(head["ids_len"])
        at = start + head_len
        ids = data[at : at + ids_len].decode("utf-8").split("\0") if rows else []
        at = _aligned(at + ids_len)
        if len(ids) != rows or len(data) != at + rows * dim * 4:
            return None
        mat = np.frombuffer(data, dtype=np.float32, count=rows * dim, offset=at).reshape(rows, dim)
        return ids, mat
    except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        log.debug("exact vectors file %s unusable (%s): reading the catalog", path, exc)
        return None


def write(path: Path, key: str, ids: list[str], mat: np.ndarray) -> None:
    """Replace the file with these vectors under `key` (not for fewer than MIN_ROWS rows)."""
    if len(ids) < MIN_ROWS or any("\0" in c for c in ids):
        return
    blob = "\0".join(ids).encode("utf-8")
    rows, dim = mat.shape
    head = json.dumps({"key": key, "rows": rows, "dim": dim, "ids_len": len(blob)}).encode()
    prefix = MAGIC + struct.pack("<Q", len(head)) + head + blob
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(prefix)
            fh.write(b"\0" * (_aligned(len(prefix)) - len(prefix)))
            fh.write(np.ascontiguousarray(mat, dtype=np.float32).tobytes())
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("exact vectors file %s not written (%s)", path, exc)
        try:
            tmp.unlink()
        except OSError:
            pass


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


__all__ = ["FILE_NAME", "MIN_ROWS", "read", "write"]
