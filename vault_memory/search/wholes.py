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
notes only (one read of their chunks' vectors, from memory in exact mode).
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
    wholes: Callable[[Sequence[str], np.ndarray], np.ndarray] | None = None,
) -> dict[str, float]:
    """The pool's candidate notes: node id -> the query's cosine to the mean of the note's chunk
    vectors (a note with no vector yet has no entry). In exact mode (`exact`, `owners`, `wholes`:
    search.Searcher's) every note's mean direction is held in memory with the exact vectors
    (`note_directions`, once a generation); else the candidates' chunk vectors are read from the
    catalog (a Chroma server's index)."""
    assert pool.qvec is not None
    notes = {pool.chunks[c].node_id for c in pool.ids}
    if exact is not None and owners is not None and wholes is not None:
        ids, mat = exact()
        _, index = owners(ids)
        rows = [(n, index[n]) for n in sorted(notes) if n in index]
        if not rows:
            return {}
        cos = wholes(ids, mat)[[r for _, r in rows]] @ pool.qvec
        return {n: float(c) for (n, _), c in zip(rows, cos, strict=True)}
    hashes = catalog.chunk_hashes_of_notes(sorted(notes))
    by_hash = catalog.get_vectors(sorted(set(hashes.values())))
    found = sorted((chunk_owner(c), h) for c, h in hashes.items() if h in by_hash)
    if not found:
        return {}
    names = sorted({n for n, _ in found})
    at = {n: i for i, n in enumerate(names)}
    codes = np.fromiter((at[n] for n, _ in found), dtype=np.int64, count=len(found))
    directions = note_directions(codes, np.vstack([by_hash[h] for _, h in found]), len(names))
    cos = directions @ pool.qvec
    return {n: float(c) for n, c in zip(names, cos, strict=True)}


def note_directions(codes: np.ndarray, mat: np.ndarray, n: int) -> np.ndarray:
    """Each note's mean chunk vector, normalised (rows 0..n-1; `codes`: each row of `mat`'s note):
    its cosine to a query is the note's whole (a zero mean stays zero)."""
    sums = np.zeros((n, mat.shape[1]), dtype=np.float64)
    np.add.at(sums, codes, mat)
    size = np.linalg.norm(sums, axis=1, keepdims=True)
    return (sums / np.where(size > 0.0, size, 1.0)).astype(np.float32)


def dense_side(
    cosines: Sequence[float], owners: Sequence[str], whole: Mapping[str, float], share: float
) -> list[float]:
    """Each candidate's dense evidence: its best part's cosine (`cosines`, aligned with `owners`,
    the candidates' notes) mixed with its note's whole (`whole`) at `share`; as it was when the
    note has no whole or `share` is 0."""
    if not whole or share <= 0.0:
        return list(cosines)
    return [(1.0 - share) * c + share * whole.get(n, c) for c, n in zip(cosines, owners, strict=True)]


__all__ = ["dense_side", "note_directions", "whole_cosines"]
