"""`vault-memory mcp`: the vault as a Model Context Protocol server over stdio.

A thin layer over `Memory` (official `mcp` SDK 2.x, `MCPServer`). Tools:

    recall(query, k)      prefetch(text, budget)   remember(text)   stage(text)
    staged_list()         commit(ids)              commit_all()     pin(target)
    log(text)             status()

The index is kept current by the watcher (watch.py) on a background thread, with its own
`Memory` (own SQLite connection), holding the writer lock. Tool calls use a second
`Memory` that only reads the index; writes go to the vault through the one write path and
the watcher indexes them; a write tool waits (briefly) until the index shows what it
wrote, so `remember` then `recall` finds the memory. If another process holds the writer
lock, the server serves reads (and still writes notes, which the lock holder indexes) and
tries again to become the writer every LOCK_RETRY_SECONDS.

Models are untrusted callers: inputs are validated and bounded, paths go through
`safe_path` (no `..`, absolute paths or symlinks out of the vault), no tool deletes a
note, and every failure returns as a tool error saying what to do; the server never dies
of a bad call. stdout is the protocol: logs go to stderr, and the SDK points fd 1 at
stderr while serving, so stray prints cannot corrupt the stream.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from . import __version__
from .config import Config
from .embedders import Embedder, make_embedder
from .errors import IndexNotWritableError, LockHeldError, NoteNotFoundError, UnsafePathError, VaultMemoryError
from .hashing import sha256_hex
from .memory import Memory

log = logging.getLogger(__name__)

K_MAX = 50
BUDGET_MIN, BUDGET_MAX = 100, 20_000
QUERY_MAX = 2_000  # characters of a recall query
TURN_MAX = 100_000  # characters of a turn handed to prefetch (it is cut to what the embedder takes)
TEXT_MAX = 20_000  # characters of a memory or a log line
IDS_MAX = 100
ID_MAX = 500
INDEX_WAIT_SECONDS = 5.0  # how long a write tool waits for the index to show its write
LOCK_RETRY_SECONDS = 30.0
STARTUP_WAIT_SECONDS = 15.0  # a tool call right after start waits this long for the first reconcile, at most

INSTRUCTIONS = """\
Long-term memory kept as Markdown notes in the user's vault.
- Before answering a user message, call prefetch(text=<the message>) and read `block`: what you learned before.
- To look something up, call recall(query=<plain words>).
- To keep a durable fact, call remember(text=<one self-contained fact>). Use stage + commit only when the
  user should confirm first.
- Notes are never deleted by these tools."""

T = TypeVar("T")


class Service:
    """What the server holds: a read Memory for tools, and a watcher keeping the index current."""

    def __init__(self, config: Config, *, embedder: Embedder | None = None,
                 lock_retry: float = LOCK_RETRY_SECONDS, index_wait: float = INDEX_WAIT_SECONDS,
                 startup_wait: float = STARTUP_WAIT_SECONDS) -> None:
        self.config = config
        # One embedder for both Memory objects: the model is loaded once (it loads lazily).
        self.embedder = embedder or make_embedder(config.embedder, ollama_host=config.ollama_host,
                                                  timeout=config.embed_timeout)
        self.mem = Memory(config, embedder=self.embedder)
        self.guard = threading.Lock()  # the tools' Memory is used by one tool call at a time
        self.lock_retry = lock_retry
        self.index_wait = index_wait
        self.startup_wait = startup_wait
        self.writer = False  # this process holds the writer lock and runs the watcher
        self.indexed_once = threading.Event()  # the start-up reconcile finished (or someone else indexes)
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch_mem: Memory | None = None
        self._watcher: Any = None

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> None:
        """Start the background thread: reconcile, then follow the vault (if we get the lock)."""
        if self.config.read_only:
            self.indexed_once.set()  # read-only: never write the index; serve what is there
            return
        self._thread = threading.Thread(target=self._keep_current, name="vault-memory-watch", daemon=True)
        self._thread.start()

    def _keep_current(self) -> None:
        from .watch import Watcher

        try:
            # Open the tools' vector store first: Chroma's per-folder client cache is not safe
            # against two threads creating the same client at once; the watcher's then reuses it.
            with self.guard:
                _ = self.mem.store
        except VaultMemoryError as exc:
            log.warning("vector store: %s", exc)
        while not self._stop.is_set():
            mem = Memory(self.config, embedder=self.embedder)
            watcher = Watcher(mem)
            try:
                report = watcher.start(wait=0.0)
            except (LockHeldError, IndexNotWritableError) as exc:  # another writer, or a read-only index folder
                watcher.close()
                mem.close()
                if not self.indexed_once.is_set():
                    log.warning("serving reads: %s", exc)
                self.indexed_once.set()
                self._stop.wait(self.lock_retry)
                continue
            except Exception as exc:  # noqa: BLE001 - keep serving reads whatever went wrong
                watcher.close()
                mem.close()
                self.last_error = f"could not index the vault: {exc}"
                log.exception("could not index the vault; serving what the index has")
                self.indexed_once.set()
                self._stop.wait(self.lock_retry)
                continue
            self._watch_mem, self._watcher, self.writer = mem, watcher, True
            self.last_error = None
            log.info("indexed %s notes; watching %s", report.notes, self.config.vault)
            self.indexed_once.set()
            try:
                watcher.run(self._stop)
            except Exception:  # noqa: BLE001
                log.exception("the watcher stopped; restarting it")
                self._stop.wait(min(self.lock_retry, 5.0))  # do not spin on a persistent failure
            finally:
                watcher.close()
                mem.close()
                self.writer, self._watch_mem, self._watcher = False, None, None

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self.guard:
            self.mem.close()

    # -- helpers for tools -----------------------------------------------------------
    def call(self, fn: Callable[[Memory], T], *, wait_ready: bool = True) -> T:
        if wait_ready:  # right after start-up, give the first reconcile a moment (a warm index takes ~1 s)
            self.indexed_once.wait(self.startup_wait)
        with self.guard:
            return fn(self.mem)

    def await_indexed(self, paths: Iterable[str]) -> bool:
        """Wait until the index has these notes as they are on disk now; False on timeout."""
        todo = sorted({p for p in paths if p})
        deadline = time.monotonic() + self.index_wait
        while True:
            pending = []
            for rel in todo:
                try:
                    raw = (self.mem.vault / rel).read_bytes()
                except OSError:
                    continue  # moved or gone: nothing to wait for
                with self.guard:
                    row = self.mem.catalog.note_by_path(rel)
                if row is None or row.file_hash != sha256_hex(raw):
                    pending.append(rel)
            if not pending:
                return True
            if time.monotonic() >= deadline or self.config.read_only:
                return False
            time.sleep(0.05)


class ToolInputError(ValueError):
    """A bad argument from the model; the message says how to call the tool instead."""


def _text(value: str, name: str, limit: int, example: str = "The user prefers tea.") -> str:
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"`{name}` is empty; pass it as a string, e.g. {name}={example!r}")
    if len(value) > limit:
        raise ToolInputError(f"`{name}` is {len(value)} characters; the limit is {limit}. Shorten it "
                             "(one fact per memory) and call again")
    return value


def _int(value: int, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ToolInputError(f"`{name}` must be a whole number from {lo} to {hi} (got {value!r})")
    return value


def _ids(value: list[str] | str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ToolInputError("`ids` is empty; pass a list of node_ids from stage or staged_list, "
                             "e.g. ids=[\"3f2a9c1b7d4e5f60\"], or call commit_all")
    if len(items) > IDS_MAX:
        raise ToolInputError(f"`ids` has {len(items)} entries; at most {IDS_MAX} per call")
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip() or len(item) > ID_MAX or "\x00" in item:
            raise ToolInputError(f"`ids` must be non-empty node_id strings (got {item!r:.80})")
        out.append(item.strip())
    return out


def _hit(h: Any) -> dict[str, Any]:
    return {"path": h.path, "node_id": h.node_id, "title": h.title, "heading": h.heading, "snippet": h.snippet,
            "date": h.date[:10] if h.date else None, "score": h.score, "pinned": h.pinned,
            "reactivated": h.reactivated, "superseded_by": h.superseded_by}


@dataclass
class _Guarded:
    """Runs a tool body and turns every failure into a ToolError the model can act on."""

    name: str

    def __call__(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except ToolInputError as exc:
            raise ToolError(str(exc)) from None
        except UnsafePathError as exc:
            raise ToolError(f"refused: {exc}. Only notes inside the vault can be used; give a vault-relative "
                            "path like 'Memory/coffee.md' or a node_id") from None
        except NoteNotFoundError as exc:
            raise ToolError(f"{exc}. Check the id with staged_list or recall") from None
        except LockHeldError as exc:
            raise ToolError(f"{exc}. Try again in a few seconds") from None
        except VaultMemoryError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
            log.exception("tool %s failed", self.name)
            raise ToolError(f"internal error in {self.name} ({type(exc).__name__}: {exc}); the server is still "
                            "running: try again, and report it if it repeats") from None


def build_server(service: Service) -> MCPServer[Any]:
    """The MCPServer with the ten tools bound to `service` (started by the server's lifespan)."""

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        service.start()  # after the SDK took over stdout, so nothing printed can corrupt the stream
        try:
            yield
        finally:
            service.close()

    srv: MCPServer[None] = MCPServer("vault-memory", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan)
    reads = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=False)

    @srv.tool(annotations=reads, description=(
        "Search long-term memory for notes relevant to `query` (plain words; meaning and keywords both count). "
        "Returns up to k notes, best first: path, title, snippet, date. Use it when you need something you may "
        "have saved before."))
    def recall(query: Annotated[str, Field(description="What to look up, in plain words")],
               k: Annotated[int, Field(description="How many notes (1-50)", json_schema_extra={
                   "minimum": 1, "maximum": K_MAX})] = 5) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            q, n = _text(query, "query", QUERY_MAX, "what editor does the user use"), _int(k, "k", 1, K_MAX)
            hits = service.call(lambda m: m.recall(q, k=n))
            return {"hits": [_hit(h) for h in hits], "count": len(hits)}
        return _Guarded("recall")(run)

    @srv.tool(annotations=reads, description=(
        "Get what memory holds about the user's message, to read before you answer. Pass the message as `text`. "
        "Returns `block` (at most `budget` characters; empty when nothing is relevant) and its entries. Also keeps "
        "staged memories the message is about from expiring."))
    def prefetch(text: Annotated[str, Field(description="The user's message")],
                 budget: Annotated[int, Field(description=f"Max characters of the block ({BUDGET_MIN}-{BUDGET_MAX})",
                                              json_schema_extra={"minimum": BUDGET_MIN, "maximum": BUDGET_MAX})
                                   ] = 1200) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            t, b = _text(text, "text", TURN_MAX), _int(budget, "budget", BUDGET_MIN, BUDGET_MAX)
            result = service.call(lambda m: m.prefetch(t, budget=b))
            return {"block": result.block,
                    "entries": [{"path": e.path, "node_id": e.node_id, "date": e.date, "text": e.text,
                                 "score": e.score} for e in result.entries],
                    "refreshed_staged": result.refreshed}
        return _Guarded("prefetch")(run)

    @srv.tool(annotations=writes, description=(
        "Save one fact to long-term memory in one step. `text`: a short self-contained statement, e.g. "
        "'The user's dog is called Biscuit.' Returns its node_id and path. If a similar memory exists, it is "
        "still saved and `conflicts_with` lists the other one."))
    def remember(text: Annotated[str, Field(description="The fact to keep")]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            t = _text(text, "text", TEXT_MAX)
            done = service.call(lambda m: m.remember(t))
            return done.to_dict() | {"indexed": service.await_indexed([done.path])}
        return _Guarded("remember")(run)

    @srv.tool(annotations=writes, description=(
        "Save a fact as a draft (staged) memory that expires after a week unless committed. Prefer remember; "
        "use stage when the user should confirm first. Returns its node_id (use it with commit)."))
    def stage(text: Annotated[str, Field(description="The fact to keep as a draft")]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            t = _text(text, "text", TEXT_MAX)
            sm = service.call(lambda m: m.stage(t))
            return sm.to_dict() | {"indexed": service.await_indexed([sm.path])}
        return _Guarded("stage")(run)

    @srv.tool(annotations=writes, description=(
        "List the staged (draft) memories: node_id, title, text, expires, needs_review. Expired ones are moved "
        "to the vault's .trash folder first (never deleted)."))
    def staged_list() -> dict[str, Any]:
        def run() -> dict[str, Any]:
            items = service.call(lambda m: m.staged())
            return {"staged": [sm.to_dict() for sm in items], "count": len(items)}
        return _Guarded("staged_list")(run)

    @srv.tool(annotations=writes, description=(
        "Commit staged memories so they are kept for good. `ids`: list of node_ids from stage or staged_list. "
        "Returns `committed` and `left` (with the reason for each)."))
    def commit(ids: Annotated[list[str] | str, Field(description="node_ids of staged memories")]
               ) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            chosen = _ids(ids)
            report = service.call(lambda m: m.commit(chosen))
            return report.to_dict() | {"indexed": service.await_indexed(c.path for c in report.committed)}
        return _Guarded("commit")(run)

    @srv.tool(annotations=writes, description=(
        "Commit every staged memory except those flagged needs_review. Returns exactly what was committed and "
        "what was left, with reasons; nothing is skipped silently."))
    def commit_all() -> dict[str, Any]:
        def run() -> dict[str, Any]:
            report = service.call(lambda m: m.commit_all())
            return report.to_dict() | {"indexed": service.await_indexed(c.path for c in report.committed)}
        return _Guarded("commit_all")(run)

    @srv.tool(annotations=writes, description=(
        "Pin a note so it never fades from memory. `target`: its node_id, or its path inside the vault "
        "(e.g. 'Memory/coffee.md')."))
    def pin(target: Annotated[str, Field(description="node_id or vault-relative path of the note")]
            ) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            t = _text(target, "target", ID_MAX, "Memory/coffee.md").strip()
            result = service.call(lambda m: m.pin(t))
            return result.to_dict() | {"indexed": service.await_indexed([result.path])}
        return _Guarded("pin")(run)

    @srv.tool(annotations=writes, description=(
        "Append one timestamped line to today's episode log (a cheap record of what happened; no need to decide "
        "whether it matters). Returns the log note's path."))
    def log(text: Annotated[str, Field(description="What happened, in a sentence")]) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            t = _text(text, "text", TEXT_MAX)
            path = service.call(lambda m: m.log(t))
            return {"path": path, "indexed": service.await_indexed([path])}
        return _Guarded("log")(run)

    @srv.tool(annotations=reads, description=(
        "Show the vault, how many notes and chunks are indexed, what is waiting to be indexed, and whether this "
        "server is keeping the index current."))
    def status() -> dict[str, Any]:
        def run() -> dict[str, Any]:
            info = service.call(lambda m: m.status(), wait_ready=False)
            info["server"] = {"keeps_index_current": service.writer, "startup_indexed": service.indexed_once.is_set(),
                              "read_only": service.config.read_only, "error": service.last_error}
            return info
        return _Guarded("status")(run)

    return srv


def serve(config: Config, *, embedder: Embedder | None = None) -> None:
    """Run the server on stdin/stdout until the client disconnects."""
    service = Service(config, embedder=embedder)
    build_server(service).run("stdio")


__all__ = ["Service", "build_server", "serve"]
