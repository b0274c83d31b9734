"""The vector store: the only module that imports chromadb.

Chroma holds one row per chunk (id = chunk id, vector we computed, no documents or
metadata: the catalog has those). It is an accelerator of the catalog: every vector
it holds is also in the catalog's cache, so it can always be rebuilt without
embedding anything.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import IndexStateError, VectorStoreUnavailableError

log = logging.getLogger(__name__)

# Measured (see README, "ANN vs exact"): with these settings HNSW returns what exact search
# returns; Chroma's defaults (M=16, ef=100) lose a share of the true top-10.
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 200, "max_neighbors": 32}
_BATCH = 1000


def collection_name(vault: Path, embedder_identity: str) -> str:
    """Unique per vault and embedder, so several vaults can share one server."""
    digest = hashlib.sha1(str(vault.expanduser().resolve()).encode()).hexdigest()[:10]
    model = re.sub(r"[^A-Za-z0-9]+", "-", embedder_identity).strip("-")[:40]
    return f"vm-{digest}-{model}"


class VectorStore:
    """A Chroma collection of chunk vectors, embedded on disk or on a server."""

    def __init__(self, *, path: Path | None, url: str | None, name: str, headers: dict[str, str] | None = None) -> None:
        self.name = name
        self.url = url
        self.path = path
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as exc:  # pragma: no cover - chromadb is a hard dependency
            raise IndexStateError("chromadb is not installed; pip install chromadb") from exc
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        try:
            if url:
                from urllib.parse import urlparse

                parts = urlparse(url)
                self.client: Any = chromadb.HttpClient(
                    host=parts.hostname or "127.0.0.1", port=parts.port or (443 if parts.scheme == "https" else 8000),
                    ssl=parts.scheme == "https", headers=headers or {}, settings=settings,
                )
            else:
                assert path is not None
                path.mkdir(parents=True, exist_ok=True)
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
            self.collection: Any = self.client.get_or_create_collection(
                name=name, embedding_function=None, configuration={"hnsw": dict(HNSW)}  # type: ignore[arg-type]
            )
        except Exception as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: Exception) -> Exception:
        if self.url:
            return VectorStoreUnavailableError(
                f"Chroma server at {self.url} failed: {exc.__class__.__name__}: {exc}. Check that `chroma run` is up "
                "and the URL/token are right, or use --lexical-fallback to serve BM25-only recall"
            )
        return IndexStateError(
            f"vector index at {self.path} is unreadable ({exc.__class__.__name__}: {exc}); "
            "run `vault-memory index --rebuild` (nothing in the vault is lost)"
        )

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise self._translate(exc) from exc

    def upsert(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        for start in range(0, len(ids), _BATCH):
            self._call(self.collection.upsert, ids=list(ids[start : start + _BATCH]),
                       embeddings=np.asarray(vectors[start : start + _BATCH], dtype=np.float32))

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _BATCH):
            self._call(self.collection.delete, ids=list(ids[start : start + _BATCH]))

    def ids(self) -> set[str]:
        out: set[str] = set()
        total = self.count()
        for offset in range(0, total, 5000):
            got = self._call(self.collection.get, include=[], limit=5000, offset=offset)
            out.update(got["ids"])
        return out

    def count(self) -> int:
        return int(self._call(self.collection.count))

    def query(self, vector: np.ndarray, n: int) -> list[tuple[str, float]]:
        """Nearest chunks as (chunk id, cosine similarity), best first."""
        total = self.count()
        if total == 0 or n <= 0:
            return []
        res = self._call(self.collection.query, query_embeddings=[np.asarray(vector, dtype=np.float32)],
                         n_results=min(n, total), include=["distances"])
        return [(cid, 1.0 - float(d)) for cid, d in zip(res["ids"][0], res["distances"][0], strict=True)]

    def drop(self) -> None:
        """Delete the collection (a rebuild starts from nothing)."""
        try:
            self.client.delete_collection(self.name)
        except Exception as exc:  # absent collection is fine
            log.debug("delete_collection: %s", exc)
        self.collection = self._call(self.client.get_or_create_collection, name=self.name, embedding_function=None,
                                     configuration={"hnsw": dict(HNSW)})

    @staticmethod
    def destroy(path: Path) -> None:
        """Remove an embedded store's folder; Chroma caches open clients per path, so forget them first."""
        import shutil

        try:
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        except Exception as exc:  # pragma: no cover - internal API moved
            log.debug("clear_system_cache: %s", exc)
        shutil.rmtree(path, ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        return {"backend": "chroma-http" if self.url else "chroma-embedded", "url": self.url,
                "path": str(self.path) if self.path else None, "collection": self.name, "hnsw": HNSW}
