"""Peers: vault-memory beside basic-memory (and qmd) on the same vault, in the same run.

For each tool, on its own byte-identical copy of one generated vault (basic-memory rewrites
the notes it indexes: it adds permalinks and reformats frontmatter, so the tools cannot share
one folder) and with its home, config and index in a fresh folder of its own:

- first index: the tool's own CLI, fresh process, fresh index (wall and CPU time; what each does at
  index time is recorded: we embed with MiniLM, basic-memory 0.24 and qmd's `search` are
  keyword-only offline, so vault-memory is also indexed with the `fake` embedder: pipeline
  cost without the model);
- cold query: the tool's CLI in a fresh process, the same questions, tools interleaved, median
  (wall and CPU time);
- warm query: a long-lived process, p50/p95 over every question, tools interleaved question by
  question so machine load hits them alike. Ours through the Python API (`Memory.recall`) and,
  for a like-for-like row, through our MCP server; the peers through their MCP servers (stdio);
- quality on the same questions, from the warm calls: note-level hit@5 and recall@5 on LoCoMo
  (see peers_vault.py), and the `updates` runner's facts-that-change check (all statements of a
  fact in the top 5, newest first).

Peers live outside git under `<cache>/peers/` and are installed only when asked
(`python -m bench.runners.peers --install`, never in CI). A peer that is absent or fails is recorded
as "skipped: why" and the run goes on. Quick mode (CI) runs vault-memory alone on one
conversation with the fake embedder; installed peers join it only with BENCH_PEERS_QUICK=1
(each basic-memory CLI call costs ~20 s of start-up).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .. import metrics
from ..data.datasets import load_locomo
from ..data.peers_vault import (
    PathResolver,
    PeerQuestion,
    note_scores,
    parse_basic_memory,
    parse_qmd,
    parse_vault_memory,
    pooled_locomo,
    ratio,
    summarise,
    update_scores,
    updates_vault,
)
from ..harness import REPO, Result, RunOptions, log, sync_vault, table

K = 5
FETCH = 10  # results asked of each peer: some return several items per note (basic-memory observations)
BASIC_MEMORY_SPEC = "basic-memory==0.24.1"
# qmd >= 1.0 needs node >= 22 (npm's own `node` package brings it; better-sqlite3 ships prebuilt binaries). Without
# it, npm quietly resolves @tobilu/qmd to 0.9.0, the last release that ran on bun.
QMD_SPECS = ("@tobilu/qmd@2.8.3", "node@22.23.3")
CALL_TIMEOUT = 120.0
INDEX_TIMEOUT = 3600.0


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --------------------------------------------------------------------------- the tools


@dataclass
class Tool:
    """How to drive one tool through its CLI and its long-lived server."""

    key: str
    label: str
    at_index: str  # what it does at index time
    warm_via: str

    def missing(self) -> str | None:
        """None when the tool can run here, else why not."""
        return None

    def version(self) -> str:
        return "?"

    def env(self, home: Path) -> dict[str, str]:
        return dict(os.environ)

    def index_cmd(self, inst: Instance) -> list[str]:
        raise NotImplementedError

    def cold_cmd(self, inst: Instance, q: str, now: str | None) -> list[str]:
        raise NotImplementedError

    def parse_cold(self, stdout: str) -> list[str]:
        raise NotImplementedError

    def mcp_cmd(self, inst: Instance) -> list[str]:
        raise NotImplementedError

    def mcp_call(self, inst: Instance, q: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def parse_mcp(self, payload: Any) -> list[str]:
        raise NotImplementedError


@dataclass
class Instance:
    """One tool over one vault: its copy of the vault, its home and its project/collection name."""

    tool: Tool
    vault: Path
    home: Path
    name: str

    @property
    def env(self) -> dict[str, str]:
        return self.tool.env(self.home)


def _vm_exe() -> list[str]:
    exe = Path(sys.executable).with_name("vault-memory")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from vault_memory_cli.main import run; run()"]


@dataclass
class VaultMemory(Tool):
    embedder: str = "minilm"

    def version(self) -> str:
        import vault_memory

        return str(getattr(vault_memory, "__version__", "?"))

    def env(self, home: Path) -> dict[str, str]:
        # Only this run's settings: no developer config or VAULT_MEMORY_* leaks in.
        env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_MEMORY_")}
        return env | {"VAULT_MEMORY_CONFIG": str(home / "no-config.toml"), "PYTHONPATH": str(REPO)}

    def _base(self, inst: Instance) -> list[str]:
        return [
            *_vm_exe(),
            "--vault",
            str(inst.vault),
            "--index-dir",
            str(inst.home / "index"),
            "--embedder",
            self.embedder,
            "--read-only",
        ]

    def index_cmd(self, inst: Instance) -> list[str]:
        return [*self._base(inst), "index", "--json"]

    def cold_cmd(self, inst: Instance, q: str, now: str | None) -> list[str]:
        return [*self._base(inst), "recall", q, "-k", str(K), "--json", "--no-touch", *(["--now", now] if now else [])]

    def parse_cold(self, stdout: str) -> list[str]:
        return parse_vault_memory(stdout)

    def mcp_cmd(self, inst: Instance) -> list[str]:
        return [*self._base(inst), "mcp"]

    def mcp_call(self, inst: Instance, q: str) -> tuple[str, dict[str, Any]]:
        return "recall", {"query": q, "k": K}

    def parse_mcp(self, payload: Any) -> list[str]:
        return parse_vault_memory(json.dumps(payload))


@dataclass
class BasicMemory(Tool):
    root: Path = Path()

    @property
    def exe(self) -> Path:
        return self.root / "bin" / "basic-memory"

    def missing(self) -> str | None:
        if not self.exe.exists():
            return f"not installed ({self.exe} absent; `python -m bench.runners.peers --install` installs it)"
        return None

    def version(self) -> str:
        proc = subprocess.run(
            [
                str(self.root / "bin" / "python"),
                "-c",
                "import importlib.metadata as m; print(m.version('basic-memory'))",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return proc.stdout.strip() or "?"

    def env(self, home: Path) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("BASIC_MEMORY_", "VIRTUAL_ENV"))}
        return base | {
            "HOME": str(home / "home"),
            "BASIC_MEMORY_CONFIG_DIR": str(home / "config"),  # config.json, memory.db, logs
            "BASIC_MEMORY_HOME": str(home / "home" / "basic-memory"),  # its default project
            "BASIC_MEMORY_NO_PROMOS": "1",  # also turns analytics off: no outbound calls
            "BASIC_MEMORY_AUTO_UPDATE": "false",
            "XDG_CACHE_HOME": str(home / "cache"),
            "XDG_CONFIG_HOME": str(home / "xdg-config"),
            "NO_COLOR": "1",
        }

    def index_cmd(self, inst: Instance) -> list[str]:
        # "A local project is indexed before this command returns" (bm project add --help).
        return [str(self.exe), "project", "add", inst.name, str(inst.vault)]

    def cold_cmd(self, inst: Instance, q: str, now: str | None) -> list[str]:
        return [str(self.exe), "tool", "search-notes", q, "--json", "--page-size", str(FETCH), "--project", inst.name]

    def parse_cold(self, stdout: str) -> list[str]:
        return parse_basic_memory(stdout)

    def mcp_cmd(self, inst: Instance) -> list[str]:
        return [str(self.exe), "mcp", "--project", inst.name]

    def mcp_call(self, inst: Instance, q: str) -> tuple[str, dict[str, Any]]:
        return "search_notes", {"query": q, "page_size": FETCH, "output_format": "json", "project": inst.name}

    def parse_mcp(self, payload: Any) -> list[str]:
        return parse_basic_memory(payload)


@dataclass
class Qmd(Tool):
    root: Path = Path()

    @property
    def bin(self) -> Path:
        return self.root / "node_modules" / ".bin"

    def missing(self) -> str | None:
        for name in ("qmd", "node"):
            if not (self.bin / name).exists():
                return (
                    f"not installed ({self.bin / name} absent; `python -m bench.runners.peers --install` installs it)"
                )
        return None

    def version(self) -> str:
        def pkg(name: str) -> str:
            try:
                meta = json.loads((self.root / "node_modules" / name / "package.json").read_text(encoding="utf-8"))
                return str(meta.get("version", "?"))
            except (OSError, ValueError):
                return "?"

        return f"{pkg('@tobilu/qmd')} (node {pkg('node')})"

    def env(self, home: Path) -> dict[str, str]:
        return dict(os.environ) | {
            "HOME": str(home / "home"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "XDG_CONFIG_HOME": str(home / "xdg-config"),
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "NO_COLOR": "1",
        }

    def index_cmd(self, inst: Instance) -> list[str]:
        return [str(self.bin / "qmd"), "collection", "add", str(inst.vault), "--name", inst.name]

    def cold_cmd(self, inst: Instance, q: str, now: str | None) -> list[str]:
        return [str(self.bin / "qmd"), "search", q, "-n", str(FETCH), "--json"]

    def parse_cold(self, stdout: str) -> list[str]:
        # qmd prints "No results" text instead of an empty JSON list
        return parse_qmd(stdout) if stdout.lstrip().startswith(("[", "{")) else []

    def mcp_cmd(self, inst: Instance) -> list[str]:
        return [str(self.bin / "qmd"), "mcp"]

    def mcp_call(self, inst: Instance, q: str) -> tuple[str, dict[str, Any]]:
        # A plain `query` is expanded and reranked by local LLMs (model downloads); a `lex` sub-query is its BM25.
        return "query", {"searches": [{"type": "lex", "query": q}], "limit": FETCH, "rerank": False}

    def parse_mcp(self, payload: Any) -> list[str]:
        return parse_qmd(payload)


def tools(peers_dir: Path, embedder: str) -> tuple[VaultMemory, VaultMemory, list[Tool]]:
    """(ours, ours with the fake embedder, the peers)."""
    ours = VaultMemory(
        "vault-memory",
        f"vault-memory ({embedder})",
        f"parses, chunks, embeds every chunk with {embedder}, FTS5 + vectors",
        "Python API (Memory.recall)",
        embedder=embedder,
    )
    fake = VaultMemory(
        "vault-memory-fake",
        "vault-memory (fake embedder)",
        "the same pipeline with the hashing `fake` embedder: no model cost",
        "-",
        embedder="fake",
    )
    peers: list[Tool] = [
        BasicMemory(
            "basic-memory",
            "basic-memory",
            "parses notes into entities/observations/relations, SQLite FTS5; keyword-only here (its "
            "semantic side needs sqlite-vec, which this Python's sqlite3 cannot load, and a model download)",
            "MCP server (stdio), search_notes",
            root=peers_dir / "basic-memory",
        ),
        Qmd(
            "qmd",
            "qmd",
            "SQLite FTS5 (BM25) over documents; `qmd embed` (vectors) and `qmd query`'s LLM expansion "
            "and reranking need GGUF model downloads: not run. Its keyword search requires every query term (AND)",
            "MCP server (stdio), query with one `lex` sub-query, rerank off",
            root=peers_dir / "qmd",
        ),
    ]
    return ours, fake, peers


# --------------------------------------------------------------------------- a minimal MCP stdio client


class McpClient:
    """JSON-RPC over a child's stdin/stdout, one JSON message per line (the MCP stdio transport)."""

    def __init__(self, cmd: Sequence[str], env: dict[str, str], stderr: Path, cwd: Path) -> None:
        self._err: IO[bytes] = stderr.open("wb")
        self.proc = subprocess.Popen(
            list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, env=env, cwd=cwd
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._next = 0
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any], timeout: float = CALL_TIMEOUT) -> Any:
        self._next += 1
        rid = self._next
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no answer to {method} within {timeout:.0f} s") from None
            if line is None:
                raise RuntimeError(f"server exited ({self.proc.poll()}) before answering {method}")
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not protocol: a stray print
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")
            if "method" in msg and "id" in msg:  # a request from the server (ping, roots/list): answer it
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})

    def start(self, timeout: float = 300.0) -> None:
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "vault-memory-bench", "version": "1"},
            },
            timeout,
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, name: str, args: dict[str, Any]) -> Any:
        result = self.request("tools/call", {"name": name, "arguments": args})
        if result.get("isError"):
            raise RuntimeError(f"{name}: {tool_payload(result)}")
        return tool_payload(result)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._err.close()


def tool_payload(result: dict[str, Any]) -> Any:
    """A tool result's data: structured content when given (unwrapped from {"result": ...}), else its text."""
    sc = result.get("structuredContent")
    if isinstance(sc, dict) and set(sc) == {"result"}:
        sc = sc["result"]
    if sc is not None:
        return sc
    text = "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
    try:
        return json.loads(text)
    except ValueError:
        return text


# --------------------------------------------------------------------------- phases


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(cmd: Sequence[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and its children, stdout). CPU time is what machine load cannot inflate."""
    cpu = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.run(list(cmd), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t
    cpu = _children_cpu() - cpu
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-1500:]
        raise RuntimeError(f"`{' '.join(cmd[:4])} ...` exited {proc.returncode}: {tail}")
    return seconds, cpu, proc.stdout


def make_instance(tool: Tool, work: Path, vault_name: str, files: dict[str, str]) -> Instance:
    """A fresh home and a fresh copy of the vault for one tool."""
    home = work / tool.key / vault_name
    shutil.rmtree(home, ignore_errors=True)
    (home / "home").mkdir(parents=True)
    vault = home / "vault"
    sync_vault(vault, files)
    return Instance(tool, vault, home, name=f"bench-{vault_name}")


@dataclass
class Warm:
    """A long-lived searcher and its latencies."""

    label: str
    search: Callable[[str, PeerQuestion | None], list[str]]
    close: Callable[[], None]
    start_seconds: float
    cpu: Callable[[], float | None]  # CPU seconds the serving process has used so far
    latencies_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    errors: int = 0  # calls the tool refused or failed (counted as no results)


def process_cpu(pid: int) -> Callable[[], float | None]:
    """User + system CPU seconds of a process and its descendants (psutil), None when it cannot be read."""

    def read() -> float | None:
        try:
            import psutil

            proc = psutil.Process(pid)
            total = 0.0
            for p in [proc, *proc.children(recursive=True)]:
                times = p.cpu_times()
                total += times.user + times.system
            return total
        except Exception:  # psutil missing, or the process is gone
            return None

    return read


def open_mcp(inst: Instance) -> Warm:
    t = time.perf_counter()
    client = McpClient(inst.tool.mcp_cmd(inst), inst.env, inst.home / "mcp.stderr.log", inst.home)
    try:
        client.start()
        name, args = inst.tool.mcp_call(inst, "warm up")
        client.call(name, args)  # the first call may finish the server's start-up (initial sync)
    except Exception:
        client.close()
        raise

    def search(q: str, _: PeerQuestion | None) -> list[str]:
        name, args = inst.tool.mcp_call(inst, q)
        return inst.tool.parse_mcp(client.call(name, args))

    return Warm(
        f"{inst.tool.label} via MCP", search, client.close, time.perf_counter() - t, process_cpu(client.proc.pid)
    )


@contextlib.contextmanager
def open_api(inst: Instance, embedder: str) -> Iterator[tuple[Any, float]]:
    from vault_memory import Config, Memory

    t = time.perf_counter()
    cfg = Config(vault=inst.vault, index_dir=inst.home / "index", embedder=embedder, read_only=True)
    with Memory(cfg) as mem:
        mem.recall("warm up", k=K, touch=False)
        yield mem, time.perf_counter() - t


API_SETTINGS = {  # label suffix -> recall() keywords; the first is what `recall` does by default
    "hybrid, decay on (default)": {"mode": "hybrid", "decay": True},
    "hybrid, decay off": {"mode": "hybrid", "decay": False},
    "bm25 only": {"mode": "bm25", "decay": False},
}


# --------------------------------------------------------------------------- the run


@dataclass
class VaultSpec:
    name: str
    files: dict[str, str]
    questions: list[tuple[str, Any, Any]]  # (query, the question or case, its "now" or None)


def run(opts: RunOptions) -> Result:
    res = Result("peers", opts)
    peers_dir = Path(os.environ.get("BENCH_PEERS_DIR") or opts.cache / "peers")
    work = opts.cache / "peers-run" / opts.suffix
    ours, fake, peers = tools(peers_dir, opts.embedder_name)
    variants: list[Tool] = [ours] if ours.embedder == "fake" else [ours, fake]

    quick_peers = os.environ.get("BENCH_PEERS_QUICK") == "1"
    status: dict[str, str] = {}
    active: list[Tool] = []
    for peer in peers:
        why = peer.missing()
        if why is None and opts.quick and not quick_peers:
            why = "quick mode runs vault-memory only (set BENCH_PEERS_QUICK=1, or run `python -m bench peers`)"
        if why:
            status[peer.key] = f"skipped: {why}"
            log(f"peers: {peer.key} {status[peer.key]}")
        else:
            active.append(peer)
            status[peer.key] = "ran"
    versions = {t.key: t.version() for t in (ours, *active)}

    raw = load_locomo(opts.data)
    pooled = pooled_locomo(raw, conversations=1 if opts.quick else None, questions_per_conv=20 if opts.quick else None)
    upd_files, upd_cases, upd_now = updates_vault(opts.quick)
    vaults = [
        VaultSpec("locomo", pooled.files, [(q.question, q, q.now) for q in pooled.questions]),
        VaultSpec("updates", upd_files, [(c.query, c, upd_now) for c in upd_cases]),
    ]
    cold_n = 1 if opts.quick else int(opts.extra.get("repeats") or 5)
    res.params.update(
        k=K,
        peer_fetch=FETCH,
        notes=len(pooled.files),
        conversations=pooled.conversations,
        questions=len(pooled.questions),
        skipped_questions=pooled.skipped,
        updates_subjects=len(upd_cases),
        updates_notes=len(upd_files),
        cold_queries=cold_n,
        versions=versions,
        peers_dir=str(peers_dir),
        load_at_start=load(),
        how={t.label: {"at_index": t.at_index, "warm": t.warm_via} for t in (*variants, *active)},
    )
    results: dict[str, Any] = {"status": status}

    # ---- first index, each tool on its own fresh copy, one after the other
    instances: dict[tuple[str, str], Instance] = {}
    index_s: dict[str, dict[str, Any]] = {}
    for spec in vaults:
        for tool in (*variants, *active):
            if tool is fake and spec.name != "locomo":
                continue
            if status.get(tool.key, "ran") != "ran":
                continue
            inst = make_instance(tool, work, spec.name, spec.files)
            before = load()
            try:
                seconds, cpu, _ = _run(tool.index_cmd(inst), inst.env, inst.home, INDEX_TIMEOUT)
            except Exception as exc:
                if tool is ours or tool is fake:
                    raise
                status[tool.key] = f"skipped: first index failed: {exc}"
                log(f"peers: {tool.key} {status[tool.key]}")
                continue
            instances[(tool.key, spec.name)] = inst
            index_s.setdefault(spec.name, {})[tool.key] = {
                "seconds": round(seconds, 2),
                "cpu_seconds": round(cpu, 2),
                "load_before": before,
                "load_after": load(),
            }
            log(f"peers: first index {spec.name} {tool.key}: {seconds:.1f}s, CPU {cpu:.1f}s (load {before})")
    results["first_index"] = index_s
    running = [t for t in active if status[t.key] == "ran"]

    # ---- cold CLI query: fresh process per call, tools interleaved, one untimed warm-up each
    locomo = vaults[0]
    cold_qs = [locomo.questions[i * max(1, len(locomo.questions) // cold_n)] for i in range(cold_n)]
    cold: dict[str, list[float]] = {t.key: [] for t in (ours, *running)}
    cold_cpu: dict[str, list[float]] = {t.key: [] for t in (ours, *running)}
    cold_hits: dict[str, list[int]] = {t.key: [] for t in (ours, *running)}
    for i, (query, _q, now) in enumerate([(cold_qs[0][0], None, cold_qs[0][2]), *cold_qs]):
        for tool in (ours, *running):
            if status.get(tool.key, "ran") != "ran":
                continue
            inst = instances[(tool.key, "locomo")]
            try:
                seconds, cpu, out = _run(
                    tool.cold_cmd(inst, query, now.isoformat() if now else None), inst.env, inst.home, CALL_TIMEOUT
                )
            except Exception as exc:
                if tool is ours:
                    raise
                status[tool.key] = f"skipped: cold query failed: {exc}"
                log(f"peers: {tool.key} {status[tool.key]}")
                continue
            if i > 0:  # i == 0 is the warm-up (page cache; a first-call cost is not a query's)
                cold[tool.key].append(round(seconds, 3))
                cold_cpu[tool.key].append(round(cpu, 3))
                cold_hits[tool.key].append(len(tool.parse_cold(out)))
        shown = ", ".join(f"{k} {v[-1]:.2f}s" for k, v in cold.items() if v)
        log(f"peers: cold query {i or 'warm-up'}/{cold_n}: {shown}")
    results["cold_query"] = {
        k: {
            "seconds": v,
            "median": round(metrics.median(v), 3) if v else None,
            "cpu_seconds": cold_cpu[k],
            "cpu_median": round(metrics.median(cold_cpu[k]), 3) if v else None,
            "hits": cold_hits[k],
        }
        for k, v in cold.items()
    }
    running = [t for t in running if status[t.key] == "ran"]

    # ---- warm queries and quality: every question, tools interleaved question by question
    results["warm"] = {}
    results["quality"] = {}
    for spec in vaults:
        resolver = PathResolver(spec.files)
        warms: list[tuple[str, Warm]] = []
        api_stack = contextlib.ExitStack()
        with api_stack:
            mem, api_start = api_stack.enter_context(open_api(instances[(ours.key, spec.name)], ours.embedder))
            for setting, kw in API_SETTINGS.items():

                def api_search(q: str, pq: Any, kw: dict[str, Any] = kw, mem: Any = mem) -> list[str]:
                    hits = mem.recall(q, k=K, touch=False, now=getattr(pq, "now", None) or upd_now, **kw)
                    return [h.path for h in hits]

                # this process's CPU clock: nothing else in it runs during a call (the MCP readers wait on pipes)
                warms.append(
                    (
                        f"{ours.key}: {setting}",
                        Warm(f"{ours.label} API, {setting}", api_search, lambda: None, api_start, time.process_time),
                    )
                )
            for tool in (ours, *running):
                if status.get(tool.key, "ran") != "ran":
                    continue
                try:
                    w = open_mcp(instances[(tool.key, spec.name)])
                except Exception as exc:
                    if tool is ours:
                        raise
                    status[tool.key] = f"skipped: MCP server failed: {exc}"
                    log(f"peers: {tool.key} {status[tool.key]}")
                    continue
                api_stack.callback(w.close)
                warms.append((f"{tool.key}: MCP", w))
                log(f"peers: {spec.name} {tool.key} MCP server answering after {w.start_seconds:.1f}s")
            rows: dict[str, list[tuple[int, dict[str, float]]]] = {label: [] for label, _ in warms}
            unresolved: dict[str, int] = dict.fromkeys(rows, 0)
            for n, (query, item, _now) in enumerate(spec.questions):
                for label, w in warms:
                    cpu_before = w.cpu()
                    t = time.perf_counter()
                    try:
                        refs = w.search(query, item if isinstance(item, PeerQuestion) else None)
                    except Exception as exc:
                        if label.startswith(ours.key):
                            raise
                        refs = []
                        w.errors += 1
                        log(f"peers: {label}: {exc}")
                    w.latencies_ms.append((time.perf_counter() - t) * 1000)
                    cpu_after = w.cpu()
                    if cpu_before is not None and cpu_after is not None:
                        w.cpu_ms.append((cpu_after - cpu_before) * 1000)
                    ranked, bad = resolver.ranked(refs, K)
                    unresolved[label] += bad
                    if isinstance(item, PeerQuestion):
                        rows[label].append((item.category, note_scores(ranked, item.gold, K)))
                    else:
                        rows[label].append((0, update_scores(ranked, item.statements, K)))
                if n % 200 == 199:
                    log(f"peers: {spec.name} {n + 1}/{len(spec.questions)} questions")
        results["warm"][spec.name] = {
            label: {
                "p50_ms": round(metrics.median(w.latencies_ms), 2),
                "p95_ms": round(metrics.p95(w.latencies_ms), 2),
                # a mean: a server's CPU clock ticks in 10 ms steps, too coarse for one query
                "cpu_ms_mean": round(metrics.mean(w.cpu_ms), 2) if w.cpu_ms else None,
                "n": len(w.latencies_ms),
                "errors": w.errors,
                "start_seconds": round(w.start_seconds, 2),
            }
            for label, w in warms
        }
        # Our MCP tool evaluates decay at the wall clock, years after these conversations: latency only.
        results["quality"][spec.name] = {
            label: {**summarise(r), "unresolved_refs": unresolved[label]}
            for label, r in rows.items()
            if label != f"{ours.key}: MCP"
        }
    results["load_at_end"] = load()
    results["status"] = status
    res.results.update(results)
    res.markdown += render(res.params, results, ours, fake, peers, opts)
    return res


# --------------------------------------------------------------------------- the report


def summary_rows(results: dict[str, Any], ours_key: str, fake_key: str) -> dict[str, dict[str, Any]]:
    """measure -> {tool key: value}: the numbers the docs/benchmarks.md table shows."""
    idx = results.get("first_index", {}).get("locomo", {})
    cold = results.get("cold_query", {})
    warm = results.get("warm", {}).get("locomo", {})
    qual = results.get("quality", {}).get("locomo", {})
    upd = results.get("quality", {}).get("updates", {})
    default_api = f"{ours_key}: {next(iter(API_SETTINGS))}"
    lexical_api = f"{ours_key}: bm25 only"

    def per_tool(getter: Callable[[str], Any]) -> dict[str, Any]:
        keys = {k.split(": ")[0] for k in warm} | set(idx) | set(cold)
        return {k: getter(k) for k in sorted(keys)}

    def warm_label(k: str) -> str:
        return default_api if k == ours_key else f"{k}: MCP"

    rows: dict[str, dict[str, Any]] = {
        "first index, s": {k: v["seconds"] for k, v in idx.items()},
        "first index, CPU s": {k: v.get("cpu_seconds") for k, v in idx.items()},
        "cold CLI query, median s": {k: v["median"] for k, v in cold.items()},
        "cold CLI query, median CPU s": {k: v.get("cpu_median") for k, v in cold.items()},
        "warm query p50, ms": per_tool(lambda k: warm.get(warm_label(k), {}).get("p50_ms")),
        "warm query p95, ms": per_tool(lambda k: warm.get(warm_label(k), {}).get("p95_ms")),
        "warm query, mean CPU ms": per_tool(lambda k: warm.get(warm_label(k), {}).get("cpu_ms_mean")),
        "warm query p50 via MCP, ms": per_tool(lambda k: warm.get(f"{k}: MCP", {}).get("p50_ms")),
        "warm query via MCP, mean CPU ms": per_tool(lambda k: warm.get(f"{k}: MCP", {}).get("cpu_ms_mean")),
        f"LoCoMo note recall@{K}": per_tool(lambda k: qual.get(warm_label(k), {}).get("pooled", {}).get(f"recall@{K}")),
        f"LoCoMo note hit@{K}": per_tool(lambda k: qual.get(warm_label(k), {}).get("pooled", {}).get(f"hit@{K}")),
        f"updates: all statements in top {K}": per_tool(
            lambda k: upd.get(warm_label(k), {}).get("pooled", {}).get(f"all_in_top{K}")
        ),
        "updates: all in top 5 and newest first": per_tool(
            lambda k: upd.get(warm_label(k), {}).get("pooled", {}).get("both")
        ),
    }
    lexical = qual.get(lexical_api, {}).get("pooled", {})
    if lexical:
        rows[f"LoCoMo note recall@{K}"][f"{ours_key} (bm25 only)"] = lexical.get(f"recall@{K}")
        rows[f"LoCoMo note hit@{K}"][f"{ours_key} (bm25 only)"] = lexical.get(f"hit@{K}")
    for row in rows.values():
        for k in [k for k, v in row.items() if v is None]:
            del row[k]
    for measure in ("first index, s", "first index, CPU s"):
        if fake_key in rows[measure]:
            rows[measure][f"{ours_key} (fake embedder)"] = rows[measure].pop(fake_key)
    return rows


def fmt_ratio(r: float | None) -> str:
    """Two significant digits and a times sign: 20×, 7.8×, 0.74×."""
    return "" if r is None else f"{r:.2g}×"


def render(
    params: dict[str, Any], results: dict[str, Any], ours: Tool, fake: Tool, peers: Sequence[Tool], opts: RunOptions
) -> list[str]:
    status = results["status"]
    rows = summary_rows(results, ours.key, fake.key)
    cols = [ours.key, *(p.key for p in peers if status.get(p.key) == "ran")]
    vs = [p.key for p in peers if status.get(p.key) == "ran"]

    def fmt(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.3f}" if v < 10 else f"{v:.1f}"
        return str(v)

    body = []
    for measure, row in rows.items():
        ours_v = row.get(ours.key)
        extra = "; ".join(
            f"{k.removeprefix(ours.key).strip()}: {fmt(v)}" for k, v in row.items() if k.startswith(ours.key + " ")
        )
        cells = [measure, *(fmt(row.get(c)) for c in cols)]
        cells += [fmt_ratio(ratio(row.get(p), ours_v)) for p in vs]
        cells.append(extra)
        body.append(cells)
    v = params["versions"]
    header = [
        "measure",
        *(f"{c} {v.get(c, '')}".strip() for c in cols),
        *(f"{p} ÷ vault-memory" for p in vs),
        "vault-memory, other settings",
    ]
    lines = [
        f"One run, same vault: {params['notes']} LoCoMo session notes from {params['conversations']} "
        f"conversation(s) pooled into one vault (one copy per tool), {params['questions']} questions "
        f"(categories 1-4); then the generated `updates` vault ({params['updates_notes']} notes, "
        f"{params['updates_subjects']} facts that change). Load average {params['load_at_start']} at start, "
        f"{results['load_at_end']} at end (2 shared cores).",
        "",
        *table(header, body),
        "",
        f"- First index: each tool's CLI on a fresh copy and a fresh home (`vault-memory index`, "
        f"`bm project add`, `qmd collection add`), one after the other. CPU s = user + system time of the command "
        f"and its children, which load from other jobs on the shared cores does not inflate. "
        f"Cold query: the CLI in a fresh process "
        f"(`vault-memory recall --json --no-touch`, `bm tool search-notes --json`, `qmd search --json`), median of "
        f"{params['cold_queries']} questions after one untimed warm-up, tools interleaved. Warm: every question, tools "
        f"interleaved; vault-memory through its Python API, the peers through their MCP servers (stdio).",
        f"- Quality: the first {K} distinct notes each tool returns (peers are asked for {FETCH} results, since "
        f"some return several items per note); hit@{K} = a gold session among them, recall@{K} = share of the "
        f"question's gold sessions. vault-memory is evaluated as `recall` runs by default (hybrid, decay on), at "
        f"an hour after the question's conversation ended; other settings in the last column and the JSON.",
        "",
        "What each tool does at index time and how it was queried warm:",
        "",
        *table(
            ["tool", "at index time", "warm queries"],
            [[label, h["at_index"], h["warm"]] for label, h in params["how"].items()],
        ),
        "",
        "Peers: " + "; ".join(f"{k} {s}" for k, s in status.items()) + ".",
    ]
    qual = results.get("quality", {}).get("locomo", {})
    if qual:
        cats = sorted({c for q in qual.values() for c in q["by_category"]})
        lines += [
            "",
            f"LoCoMo note recall@{K} by category (n per category in the JSON):",
            "",
            *table(
                ["setting", *(f"cat {c}" for c in cats), "pooled"],
                [
                    [
                        label,
                        *(q["by_category"].get(c, {}).get(f"recall@{K}") for c in cats),
                        q["pooled"].get(f"recall@{K}"),
                    ]
                    for label, q in qual.items()
                ],
            ),
        ]
    return lines


# --------------------------------------------------------------------------- installing the peers


def find_python312() -> str | None:
    """A Python >= 3.12 for basic-memory: BENCH_PEERS_PYTHON, python3.12/3.13 on PATH, or pyenv's (oldest first)."""
    candidates = [os.environ.get("BENCH_PEERS_PYTHON"), shutil.which("python3.12"), shutil.which("python3.13")]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates += [str(p / "bin" / "python") for p in sorted(pyenv.glob("3.1[2-9]*"))]
    for cand in candidates:
        if not cand or not Path(cand).exists():
            continue
        proc = subprocess.run(
            [cand, "-c", "import sys; print(sys.version_info >= (3, 12))"], capture_output=True, text=True
        )
        if proc.stdout.strip() == "True":
            return cand
    return None


def install(peers_dir: Path, which: Sequence[str]) -> int:
    """Install the peers from their registries into `peers_dir` (outside git). Never run by CI."""
    peers_dir.mkdir(parents=True, exist_ok=True)
    failed = 0
    if "basic-memory" in which:
        venv = peers_dir / "basic-memory"
        # An existing venv is reused as it is: `venv` over it with another Python would mix two versions.
        py = str(venv / "bin" / "python") if (venv / "bin" / "python").exists() else find_python312()
        if py is None:
            log("basic-memory: needs Python >= 3.12; none found (set BENCH_PEERS_PYTHON)")
            failed += 1
        else:
            steps = [[str(venv / "bin" / "pip"), "install", "-q", BASIC_MEMORY_SPEC]]
            if not (venv / "bin" / "python").exists():
                steps.insert(0, [py, "-m", "venv", str(venv)])
            for step in steps:
                log(f"$ {' '.join(step)}")
                if subprocess.run(step).returncode != 0:
                    failed += 1
                    break
    if "qmd" in which:
        npm = shutil.which("npm")
        if npm is None:
            log("qmd: npm not found")
            failed += 1
        else:
            root = peers_dir / "qmd"
            root.mkdir(exist_ok=True)
            if not (root / "package.json").exists():
                (root / "package.json").write_text('{"private": true}\n', encoding="utf-8")
            step = [npm, "install", "--no-audit", "--no-fund", *QMD_SPECS]
            log(f"$ (cd {root}) {' '.join(step)}")
            if subprocess.run(step, cwd=root).returncode != 0:
                failed += 1
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from ..harness import CACHE

    parser = argparse.ArgumentParser(
        prog="python -m bench.runners.peers", description="Install the peers the `peers` runner compares against."
    )
    parser.add_argument(
        "--install",
        nargs="*",
        choices=["basic-memory", "qmd"],
        metavar="PEER",
        help="install these peers (default: all) under <cache>/peers/",
    )
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    if args.install is None:
        parser.print_help()
        return 2
    peers_dir = Path(os.environ.get("BENCH_PEERS_DIR") or args.cache / "peers")
    return install(peers_dir, args.install or ["basic-memory", "qmd"])


if __name__ == "__main__":
    sys.exit(main())
