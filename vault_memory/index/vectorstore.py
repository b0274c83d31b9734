"""The vector store: the only module that imports chromadb.

Chroma holds one row per chunk (id = chunk id, vector we computed, no documents or
metadata: the catalog has those). It is an accelerator of the catalog: every vector
it holds is also in the catalog's cache, so it can always be rebuilt without
embedding anything.

Embedded (`PersistentClient`, a folder inside the index folder) or server mode
(`HttpClient`, `--chroma-url`). In server mode the collection belongs to one index
folder, like the embedded folder does: its name carries the vault and embedder (for
people reading the server's collection list) and a random key kept in the index
folder, so several vaults, and several index folders of one vault (other machines,
other users), share a server without touching each other's rows. Credentials come
from the environment only, never from the command line or the vault.

A damaged embedded folder (random bytes in a segment file, a segment folder removed) makes
Chroma raise, panic in its Rust core (a BaseException, caught here too), or crash the whole
process inside hnswlib (SIGSEGV: nothing to catch). So before a process opens the folder it
decides whether to trust it, and checks it in a child process first (storecheck.py, also what
`doctor` runs) when it should not: a crash there costs the child, and the store is set aside
and rebuilt from the catalog's vectors. Two cheap signs say "check first", left here:
- a marker `chroma.open-<pid>` whose process is gone: every embedded open leaves one until it
  closes, so that process died with the store open, maybe of it;
- the folder's files (names, sizes, mtimes) differ from `chroma.fingerprint`, written by the
  last process to close the store: something changed them while nobody had them open.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from ..errors import (
    ConfigError,
    IndexNotWritableError,
    IndexStateError,
    VectorStoreCorruptError,
    VectorStoreUnavailableError,
)

log = logging.getLogger(__name__)

# Measured (docs/benchmarks.md, "ANN vs exact"): with these settings HNSW returns what exact search
# returns; Chroma's defaults (M=16, ef=100) lose a share of the true top-10.
HNSW = {"space": "cosine", "ef_construction": 200, "ef_search": 200, "max_neighbors": 32}
_BATCH = 1000

# Server mode: seconds to wait for a connection / for an answer (Chroma's own client waits forever).
# VAULT_MEMORY_CHROMA_TIMEOUT overrides the second.
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 60.0
TOKEN_ENV = ("VAULT_MEMORY_CHROMA_TOKEN", "CHROMA_TOKEN")
HEADERS_ENV = "VAULT_MEMORY_CHROMA_HEADERS"
TIMEOUT_ENV = "VAULT_MEMORY_CHROMA_TIMEOUT"
KEY_FILE = "chroma-collection.key"
STORE_FOLDER = "chroma"  # the embedded store's folder inside the index folder
MARKER_PREFIX = "chroma.open-"  # + pid: this process has the embedded store open (see the module docstring)
FINGERPRINT = "chroma.fingerprint"  # the store's files as the last process to close it left them
_UNWRITABLE_WORDS = ("readonly", "read-only", "disk is full", "no space left", "disk quota")

_CHECK = (
    "Check that the server is running and reachable (`curl {url}/api/v2/heartbeat`; start one with "
    "`chroma run --path DIR --host HOST --port PORT`), that --chroma-url / VAULT_MEMORY_CHROMA_URL is right, "
    "and that VAULT_MEMORY_CHROMA_TOKEN / VAULT_MEMORY_CHROMA_HEADERS match the server's auth; or pass "
    "--lexical-fallback to recall with BM25 only meanwhile. The vault is not affected, and the index "
    "catches up on the next run once the server is back."
)


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:limit].strip("-")


def collection_name(vault: Path, embedder_identity: str, key: str | None = None) -> str:
    """Unique per vault and embedder (and, on a server, per index folder via `key`)."""
    digest = hashlib.sha1(str(vault.expanduser().resolve()).encode()).hexdigest()[:10]
    model = _slug(embedder_identity, 40) or "model"
    if key is None:
        return f"vm-{digest}-{model}"
    name = _slug(vault.expanduser().resolve().name, 24) or "vault"
    return f"vm-{name}-{digest}-{key}-{model}"


def collection_key(index_dir: Path) -> str:
    """The random key that ties a server collection to this index folder (created on first use)."""
    path = index_dir / KEY_FILE
    try:
        key = path.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{8,32}", key):
            return key
        log.warning("%s is not a collection key; making a new one", path)
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexStateError(f"cannot read {path} ({exc}); fix its permissions or delete it") from exc
    index_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(4)
    tmp = path.with_name(f"{KEY_FILE}.{os.getpid()}.tmp")
    tmp.write_text(key + "\n", encoding="ascii")
    try:
        os.link(tmp, path)  # first writer wins; a concurrent one reads the winner's key
    except FileExistsError:
        return collection_key(index_dir)
    except OSError:
        os.replace(tmp, path)  # no hard links on this filesystem
    finally:
        tmp.unlink(missing_ok=True)
    return key


def server_headers(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """HTTP headers for the Chroma server, from the environment only.

    `VAULT_MEMORY_CHROMA_TOKEN` (or `CHROMA_TOKEN`) becomes `Authorization: Bearer ...`;
    `VAULT_MEMORY_CHROMA_HEADERS` is a JSON object of extra headers (e.g.
    `{"X-Chroma-Token": "..."}`), which win over the token. Values never appear in messages.
    """
    env = os.environ if env is None else env
    headers: dict[str, str] = {}
    token = next((env[k].strip() for k in TOKEN_ENV if env.get(k, "").strip()), None)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    raw = env.get(HEADERS_ENV, "").strip()
    if raw:
        try:
            extra = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{HEADERS_ENV} is not valid JSON ({exc.msg} at char {exc.pos}); "
                'use an object such as {"X-Chroma-Token": "..."}'
            ) from None
        if not isinstance(extra, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in extra.items()):
            raise ConfigError(f"{HEADERS_ENV} must be a JSON object of string header names to string values")
        for k, v in extra.items():
            for old in [h for h in headers if h.lower() == k.lower()]:
                del headers[old]
            headers[k] = v
    return headers


def parse_url(url: str) -> tuple[str, int, bool]:
    """(host, port, ssl) of a Chroma server URL, or a ConfigError saying what is wrong with it."""
    parts = urlparse(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--chroma-url {url!r} is not an http(s) URL; use e.g. http://127.0.0.1:8000")
    if parts.path not in ("", "/") or parts.query or parts.username or parts.password:
        raise ConfigError(
            f"--chroma-url {url!r}: give only scheme, host and port (e.g. http://127.0.0.1:8000); "
            "put credentials in VAULT_MEMORY_CHROMA_TOKEN or VAULT_MEMORY_CHROMA_HEADERS"
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"--chroma-url {url!r}: bad port ({exc})") from None
    ssl = parts.scheme == "https"
    return parts.hostname, port or (443 if ssl else 8000), ssl


def _request_timeout(env: Mapping[str, str]) -> float:
    raw = env.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return REQUEST_TIMEOUT
    try:
        value = float(raw)
        if value <= 0:
            raise ValueError("must be positive")
    except ValueError as exc:
        raise ConfigError(f"{TIMEOUT_ENV}={raw!r}: expected a number of seconds ({exc})") from None
    return value


class VectorStore:
    """A Chroma collection of chunk vectors, embedded on disk or on a server."""

    def __init__(
        self,
        *,
        path: Path | None,
        url: str | None,
        name: str,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.name = name
        self.url = url.strip().rstrip("/") if url else None
        self.path = path
        self.timeout = REQUEST_TIMEOUT if timeout is None else timeout
        self.client: Any = None
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as exc:  # pragma: no cover - chromadb is a hard dependency
            raise IndexStateError("chromadb is not installed; pip install chromadb") from exc
        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        self._marker: Path | None = None
        if path is not None and url is None:
            self._marker = path.parent / f"{MARKER_PREFIX}{os.getpid()}"
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._marker.touch()
            except OSError:
                self._marker = None
        try:
            if self.url:
                host, port, ssl = parse_url(self.url)
                self._preflight(headers or {})
                self.client = chromadb.HttpClient(
                    host=host, port=port, ssl=ssl, headers=dict(headers or {}), settings=settings
                )
                self._set_timeouts()
            else:
                assert path is not None
                path.mkdir(parents=True, exist_ok=True)
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
            self.collection: Any = self.client.get_or_create_collection(
                name=name, embedding_function=None, configuration={"hnsw": dict(HNSW)}
            )
        except (ConfigError, VectorStoreUnavailableError):
            self.close()
            raise
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # pyo3's PanicException (a damaged folder) is a BaseException
            self.close()
            raise self._translate(exc) from exc

    # -- server mode plumbing --------------------------------------------------
    def _preflight(self, headers: dict[str, str]) -> None:
        """One heartbeat with a short timeout, so a dead or wrong server fails fast and clearly."""
        import urllib.error  # server mode only: http.client and email are 45 ms of every CLI start
        import urllib.request

        req = urllib.request.Request(f"{self.url}/api/v2/heartbeat", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=CONNECT_TIMEOUT) as resp:
                body = resp.read()
            json.loads(body)["nanosecond heartbeat"]
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise self._unavailable(f"rejected the credentials (HTTP {exc.code})") from None
            raise self._unavailable(f"answered HTTP {exc.code} to a heartbeat; is it a Chroma >= 1.0 server?") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            kind = "did not answer" if isinstance(reason, TimeoutError) else "is not reachable"
            raise self._unavailable(f"{kind} ({reason})") from None
        except (ValueError, KeyError, TypeError):
            raise self._unavailable("answered a heartbeat with something else; is it a Chroma >= 1.0 server?") from None

    def _set_timeouts(self) -> None:
        try:
            import httpx

            self.client._server._session.timeout = httpx.Timeout(self.timeout, connect=CONNECT_TIMEOUT)
        except Exception as exc:  # pragma: no cover - chromadb internals moved
            log.debug("cannot set Chroma client timeouts: %s", exc)

    def _unavailable(self, problem: str) -> VectorStoreUnavailableError:
        return VectorStoreUnavailableError(f"Chroma server at {self.url} {problem}. " + _CHECK.format(url=self.url))

    def _translate(self, exc: BaseException) -> Exception:
        if self.url:
            name = exc.__class__.__name__
            text = str(exc).strip()
            if "Timeout" in name:
                problem = f"did not answer within {self.timeout:g}s ({name})"
            elif "Connect" in name or "Could not connect" in text or isinstance(exc, ConnectionError):
                problem = f"is not reachable ({name}: {text})"
            elif "Auth" in name or "Forbidden" in text or "Unauthorized" in text:
                problem = f"rejected the credentials ({name}: {text})"
            else:
                problem = f"failed ({name}: {text})"
            return self._unavailable(problem)
        text = f"{exc.__class__.__name__}: {exc}"
        if any(w in text.lower() for w in _UNWRITABLE_WORDS):
            return IndexNotWritableError(
                f"cannot write the vector store {self.path} ({text}): free some space or make "
                "the folder writable, or pass --index-dir to a writable folder"
            )
        return VectorStoreCorruptError(
            f"the vector store {self.path} cannot be read ({text}); `vault-memory doctor --fix` rebuilds it from "
            "the catalog's vectors (nothing is embedded again, nothing in the vault is lost)"
        )

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # see __init__
            raise self._translate(exc) from exc

    # -- rows ----------------------------------------------------------------
    def upsert(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        for start in range(0, len(ids), _BATCH):
            self._call(
                self.collection.upsert,
                ids=list(ids[start : start + _BATCH]),
                embeddings=np.asarray(vectors[start : start + _BATCH], dtype=np.float32),
            )

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
        """Nearest chunks as (chunk id, cosine similarity), best first.

        Chroma returns fewer rows when the collection is smaller than n (or empty), so no
        count() first: on a server that saves a round trip per recall.
        """
        if n <= 0:
            return []
        res = self._call(
            self.collection.query,
            query_embeddings=[np.asarray(vector, dtype=np.float32)],
            n_results=n,
            include=["distances"],
        )
        return [(cid, 1.0 - float(d)) for cid, d in zip(res["ids"][0], res["distances"][0], strict=True)]

    def drop(self) -> None:
        """Delete the collection (a rebuild starts from nothing)."""
        try:
            self.client.delete_collection(self.name)
        except Exception as exc:
            if exc.__class__.__name__ != "NotFoundError":  # an absent collection is fine; anything else is not
                raise self._translate(exc) from exc
            log.debug("delete_collection: %s", exc)
        self.collection = self._call(
            self.client.get_or_create_collection,
            name=self.name,
            embedding_function=None,
            configuration={"hnsw": dict(HNSW)},
        )

    def close(self) -> None:
        """Release a server client's connections (embedded clients are shared per folder and kept)."""
        marker = getattr(self, "_marker", None)
        if marker is not None:
            if self.path is not None and self.client is not None:
                record_fingerprint(self.path)
            marker.unlink(missing_ok=True)
            self._marker = None
        if self.url and self.client is not None:
            try:
                self.client.close()
            except Exception as exc:  # pragma: no cover - best effort
                log.debug("closing Chroma client: %s", exc)
            self.client = None

    @staticmethod
    def forget(path: Path) -> None:
        """Drop Chroma's cached clients (it keeps one per folder for the process's life), so the next
        open reads `path` afresh: after the folder was set aside, deleted or replaced."""
        if "chromadb" not in sys.modules:
            return
        try:
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        except Exception as exc:  # pragma: no cover - internal API moved
            log.debug("clear_system_cache: %s", exc)

    @staticmethod
    def destroy(path: Path) -> None:
        """Remove an embedded store's folder; Chroma caches open clients per path, so forget them first."""
        import shutil

        VectorStore.forget(path)
        shutil.rmtree(path, ignore_errors=True)

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "chroma-http" if self.url else "chroma-embedded",
            "url": self.url,
            "path": str(self.path) if self.path else None,
            "collection": self.name,
            "hnsw": HNSW,
        }


def open_store(
    *, vault: Path, index_dir: Path, embedder_identity: str, url: str | None, env: Mapping[str, str] | None = None
) -> VectorStore:
    """The store for this vault and index folder: embedded under `index_dir`, or the server at `url`."""
    env = os.environ if env is None else env
    if url:
        parse_url(url)  # a malformed URL is a config error, not an outage
    target = describe_target(vault=vault, index_dir=index_dir, embedder_identity=embedder_identity, url=url)
    if not url:
        return VectorStore(path=index_dir / STORE_FOLDER, url=None, name=target["collection"])
    return VectorStore(
        path=None, url=url, name=target["collection"], headers=server_headers(env), timeout=_request_timeout(env)
    )


def fingerprint(folder: Path) -> list[list[Any]]:
    """The store's files: [relative path, size, mtime_ns], sorted. Cheap (stat calls only)."""
    out: list[list[Any]] = []
    for dirpath, _, files in os.walk(folder):
        for name in files:
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except OSError:
                continue
            out.append([os.path.relpath(full, folder), st.st_size, st.st_mtime_ns])
    return sorted(out)


def record_fingerprint(folder: Path) -> None:
    """Write the store's fingerprint beside it (best effort: a read-only or full disk skips it)."""
    target = folder.parent / FINGERPRINT
    tmp = target.with_name(f"{FINGERPRINT}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(fingerprint(folder)), encoding="utf-8")
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def describe_target(*, vault: Path, index_dir: Path, embedder_identity: str, url: str | None) -> dict[str, Any]:
    """Where this index's vectors live (backend, server URL, folder, collection), without connecting."""
    if not url:
        return {
            "backend": "chroma-embedded",
            "url": None,
            "path": str(index_dir / STORE_FOLDER),
            "collection": collection_name(vault, embedder_identity),
        }
    return {
        "backend": "chroma-http",
        "url": url.strip().rstrip("/"),
        "path": None,
        "collection": collection_name(vault, embedder_identity, collection_key(index_dir)),
    }
