"""A note as a whole: the query's cosine to the mean of a note's chunk vectors.

Relevance judges a note by its best part: the chunk, or the sentence, most like the query
(search.score). That finds a fact stated once in a long day's log, but it cannot tell a note about
what the query asks from one that touches it once among other things: a how-to on the command the
turn names and a how-to that uses it in passing, a person's page and a day that mentions him, reach
the same best part. The note's whole says which: the mean of its chunks' vectors is near the query
when the note is about it throughout. So the dense side of a candidate's relevance is its best
part's cosine for `1 - share` and its note's whole for `share` (`rules.ReadRules.whole_note`): a
note of one chunk is judged as before, up to the sentence that answers in it, and within one note
the parts keep their order (they share the whole's term).

It is the classic mix of passage and document evidence in retrieval, on the vectors the index
already holds: nothing more is embedded, and the means are taken at query time over the candidates'
notes only (their rows of the exact vectors in memory: a few hundred to a few thousand rows
summed, a few milliseconds; every note's mean kept instead cost a cold process a second and a half
at 26k chunks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from ..index.catalog import Catalog, ChunkRow, chunk_owner


class Pool(Protocol):
    """What of search.Pool this reads: the candidate chunks and the query's vector."""

    @property
    def ids(self) -> Sequence[str]: ...
    @property
    def chunks(self) -> Mapping[str, ChunkRow]: ...
    @property
    def qvec(self) -> np.ndarray | None: ...


def whole_cosines(
    catalog: Catalog,
    pool: Pool,
    exact: Callable[[], tuple[list[str], np.ndarray]] | None = None,
    owners: Callable[[Sequence[str]], tuple[np.ndarray, dict[str, int]]] | None = None,
) -> dict[str, float]:
    """The pool's candidate notes: node id -> the query's cosine to the mean of the note's chunk
    vectors (a note with no vector yet has no entry). In exact mode (`exact`, `owners`:
    search.Searcher's) the candidates' rows are taken from the vectors in memory; else their chunk
    vectors are read from the catalog (a Chroma index). Both give the same values, but for the
    rounding of sums taken in another order (tests/test_wholes.py)."""
    assert pool.qvec is not None
    notes = sorted({pool.chunks[c].node_id for c in pool.ids})
    if exact is not None and owners is not None:
        ids, mat = exact()
        codes, index = owners(ids)
        held = {index[n]: n for n in notes if n in index}
        rows = np.isin(codes, np.fromiter(held, dtype=codes.dtype, count=len(held))).nonzero()[0]
        rows = rows[np.argsort(codes[rows], kind="stable")]  # each note's rows together, in row order
        return {held[int(c)]: x for c, x in mean_cosines(codes[rows], mat[rows], pool.qvec).items()}
    hashes = catalog.chunk_hashes_of_notes(notes)
    by_hash = catalog.get_vectors(sorted(set(hashes.values())))
    found = sorted((c, h) for c, h in hashes.items() if h in by_hash)  # a fixed order: chunk ids
    at = {n: i for i, n in enumerate(notes)}
    codes = np.fromiter((at[chunk_owner(c)] for c, _ in found), dtype=np.int64, count=len(found))
    vecs = np.vstack([by_hash[h] for _, h in found]) if found else np.zeros((0, len(pool.qvec)), np.float32)
    return {notes[int(c)]: x for c, x in mean_cosines(codes, vecs, pool.qvec).items()}


def mean_cosines(codes: np.ndarray, vecs: np.ndarray, qvec: np.ndarray) -> dict[int, float]:
    """For each code (a note), the cosine of `qvec` to the mean of its rows of `vecs` (`codes`: each
    row's note); a note whose mean is zero has none. Rows are summed in their order within a note."""
    if not len(codes):
        return {}
    if np.any(codes[1:] < codes[:-1]):  # each note's rows together (whole_cosines gathers them so)
        order = np.argsort(codes, kind="stable")
        codes, vecs = codes[order], vecs[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = [*starts[1:], len(codes)]  # a note's rows summed as one slice (np.add.reduceat: 3-5 times as long)
    sums = np.vstack([vecs[a:b].sum(axis=0, dtype=np.float64) for a, b in zip(starts, ends, strict=True)])
    size = np.linalg.norm(sums, axis=1)
    cos = (sums @ qvec.astype(np.float64)) / np.where(size > 0.0, size, 1.0)
    return {int(c): float(x) for c, x, n in zip(codes[starts], cos, size, strict=True) if n > 0.0}


def dense_side(
    cosines: Sequence[float], owners: Sequence[str], whole: Mapping[str, float], share: float
) -> list[float]:
    """Each candidate's dense evidence: its best part's cosine (`cosines`, aligned with `owners`,
    the candidates' notes) mixed with its note's whole (`whole`) at `share`; as it was when the
    note has no whole or `share` is 0."""
    if not whole or share <= 0.0:
        return list(cosines)
    return [(1.0 - share) * c + share * whole.get(n, c) for c, n in zip(cosines, owners, strict=True)]


__all__ = ["dense_side", "mean_cosines", "whole_cosines"]
