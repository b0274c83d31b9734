"""Shared plumbing for every runner and study: paths, vault syncing, run metadata and THE result writer.

Every entry point of `python -m bench` returns a `Result`; `Result.write()` is the only place
that writes bench/results/<name>.json and .md, so each file records the machine, date, git
commit, library version, load average (start and end) and parameters of its run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
CACHE = BENCH / ".cache"
DEFAULT_DATA = REPO.parent / "shared" / "bench-data"
DEFAULT_OUT = BENCH / "results"


@dataclass(frozen=True)
class RunOptions:
    """What every runner receives from the command line."""

    quick: bool = False
    data: Path = DEFAULT_DATA
    out: Path = DEFAULT_OUT
    cache: Path = CACHE
    embedder: str | None = None  # None -> "fake" in quick mode, "minilm" otherwise
    extra: Mapping[str, Any] = field(default_factory=dict)  # an entry's own options (add_arguments)

    @property
    def embedder_name(self) -> str:
        return self.embedder or ("fake" if self.quick else "minilm")

    @property
    def suffix(self) -> str:
        return "quick" if self.quick else "full"


# --------------------------------------------------------------------------- vault files


def sync_vault(root: Path, files: Mapping[str, str]) -> dict[str, int]:
    """Make `root` hold exactly `files` ({relative path: text}) among its .md files.

    Files whose bytes already match are left alone so their mtimes stay put and a cached
    index reconciles as a no-op. Other .md files under root are removed (dot-folders are
    never touched).
    """
    root.mkdir(parents=True, exist_ok=True)
    written = unchanged = removed = 0
    for rel, text in files.items():
        path = root / rel
        data = text.encode("utf-8")
        try:
            if path.read_bytes() == data:
                unchanged += 1
                continue
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        written += 1
    wanted = {(root / rel).resolve() for rel in files}
    for path in root.rglob("*.md"):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.resolve() not in wanted:
            path.unlink()
            removed += 1
    return {"written": written, "unchanged": unchanged, "removed": removed}


def iso(ts: dt.datetime) -> str:
    """ISO 8601 with an explicit offset (UTC when the value is naive)."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.UTC)
    return ts.isoformat()


# --------------------------------------------------------------------------- run metadata


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
    }
    try:
        import psutil

        info["ram_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:  # psutil is a bench nicety, not a requirement
        pass
    return info


def git_info() -> dict[str, Any]:
    """Commit and dirty flag, read-only git calls; None when not a repo or no commit yet."""

    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = run("rev-parse", "HEAD")
    # Result files are outputs, not code: a run after another run is still a clean checkout.
    status = run("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def library_info() -> dict[str, Any]:
    try:
        import vault_memory
    except Exception as exc:  # pragma: no cover - only when the core is broken
        return {"error": repr(exc)}
    chunker: str | None = None
    try:
        from vault_memory.vault.markdown import CHUNKER_VERSION

        chunker = CHUNKER_VERSION
    except ImportError:  # pragma: no cover - the constant moved
        pass
    return {"version": getattr(vault_memory, "__version__", None), "chunker_version": chunker}


def load_average() -> list[float] | None:
    """The 1/5/15-minute load averages: the machine is shared, so every result records them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return None


def peak_rss_mb() -> float | None:
    try:
        import resource

        # ru_maxrss is KiB on Linux.
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    except Exception:
        return None


# --------------------------------------------------------------------------- result files


@dataclass
class Result:
    """One runner's output: JSON for machines, a Markdown section for docs/benchmarks.md."""

    name: str
    opts: RunOptions
    params: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    markdown: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    load_at_start: list[float] | None = field(default_factory=load_average)

    def payload(self) -> dict[str, Any]:
        """What `write` records, paths made portable (`portable`): a result file says nothing about
        whose machine made it, and a rerun elsewhere diffs only where the numbers moved."""
        return portable(self._payload())

    def _payload(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "quick": self.opts.quick,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "seconds": round(time.time() - self.started, 1),
            "machine": machine_info(),
            "load_average": {"start": self.load_at_start, "end": load_average()},
            "git": git_info(),
            "library": library_info(),
            "peak_rss_mb": peak_rss_mb(),
            "params": {"embedder": self.opts.embedder_name, **self.params},
            "results": self.results,
        }

    def write(self) -> tuple[Path, Path]:
        out = self.opts.out
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{self.name}.quick" if self.opts.quick else self.name
        payload = self.payload()
        json_path = out / f"{stem}.json"
        md_path = out / f"{stem}.md"
        _atomic_write(
            json_path,
            json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n",
        )
        _atomic_write(md_path, self.render_markdown(payload))
        return json_path, md_path

    def render_markdown(self, payload: Mapping[str, Any]) -> str:
        m = payload["machine"]
        g = payload["git"]
        commit = (g.get("commit") or "uncommitted")[:10] + (" (dirty)" if g.get("dirty") else "")
        params = ", ".join(f"{k}={v}" for k, v in payload["params"].items())
        ones = [x[0] for x in payload["load_average"].values() if x]  # 1-minute load at start, at end
        loads = " · load " + " → ".join(f"{x:.1f}" for x in ones) if ones else ""
        head = [
            f"### {self.name}{' (quick)' if self.opts.quick else ''}",
            "",
            f"_{payload['date']} · commit {commit} · {m.get('cpu_count')} CPUs · {m.get('platform')} · "
            f"Python {m.get('python')} · {payload['seconds']} s{loads}_",
            "",
            f"Parameters: {params}",
            "",
        ]
        return "\n".join(head + [portable(line) for line in self.markdown]).rstrip() + "\n"


#: An absolute path inside a text: "/" then at least two components, after a delimiter.
_ABS_PATH = re.compile(r"""(?:^|(?<=[\s"'=(\[{,:]))/[A-Za-z0-9._-]+/[^\s"',;)\]}]*""", re.M)
#: Components of an outside path kept after "…/" (the folder it is in says what it was).
OUTSIDE_PARTS = 3


def portable_path(path: str, repo: Path = REPO, checkouts: Sequence[Path] = ()) -> str:
    """An absolute path as a result file records it: relative to the repository (`.` for the
    repository itself; `checkouts`: other trees that count as it, e.g. worktrees), `../x` for a
    folder beside it (the data folder, `../shared/bench-data/...`), else its last OUTSIDE_PARTS
    components after "…/". Never the machine's home or user name."""
    p = Path(os.path.normpath(path))
    for root in (repo, *checkouts):
        try:
            rel = p.relative_to(root)
        except ValueError:
            continue
        return rel.as_posix() or "."
    try:
        rel = p.relative_to(repo.parent)
    except ValueError:
        return "…/" + "/".join(p.parts[-OUTSIDE_PARTS:])
    return "../" + rel.as_posix()


def portable(value: Any, repo: Path = REPO, checkouts: Sequence[Path] = ()) -> Any:
    """`value` (a payload, a list, a string) with every absolute path in its strings made
    portable (`portable_path`); keys, numbers and the rest unchanged."""
    if isinstance(value, str):
        return _ABS_PATH.sub(lambda m: portable_path(m.group(0), repo, checkouts), value)
    if isinstance(value, Path):
        return portable(str(value), repo, checkouts)
    if isinstance(value, dict):
        return {k: portable(v, repo, checkouts) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v, repo, checkouts) for v in value]
    return value


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table; floats print with three decimals."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        return "" if v is None else str(v)

    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


# --------------------------------------------------------------------------- library access


# A cached index is reused across runs. Chunking changes need nothing from the harness: the library
# records its chunker identity (markdown.CHUNKER_VERSION and the embedder's max_tokens), re-chunks every
# note when it changes and embeds only text its vector cache (keyed by text hash) has not seen. An
# embedder change it refuses (EmbedderMismatchError), so that, and only that, wipes the index here.
MARKER_FILE = "bench-fingerprint.json"


def ensure_fresh_index(index_dir: Path, embedder: str) -> bool:
    """Wipe a cached index built with another embedder (or with no readable marker); True when wiped.

    "Another embedder" is another spec or another identity under the same spec (MiniLM's integer
    graph has its own identity, and a new recipe another)."""
    from vault_memory.index.embedders import make_embedder

    marker = index_dir / MARKER_FILE
    wiped = False
    identity = make_embedder(embedder).identity
    if index_dir.exists():
        try:
            recorded = json.loads(marker.read_text(encoding="utf-8"))
            have = recorded.get("embedder")
            if recorded.get("identity", identity) != identity:
                have = f"{have} ({recorded.get('identity')})"
        except (OSError, ValueError, AttributeError):
            have = None
        if have != embedder:
            log(f"  index {index_dir.name}: built with embedder {have!r}, not {embedder!r}; rebuilding from scratch")
            import shutil

            shutil.rmtree(index_dir)
            wiped = True
    index_dir.mkdir(parents=True, exist_ok=True)
    # Written whole, then renamed into place, and only when it changes: a second bench process
    # opening the same cache read a marker being rewritten as empty, and wiped a good index.
    text = json.dumps({"embedder": embedder, "identity": identity}) + "\n"
    if wiped or not marker.exists() or marker.read_text(encoding="utf-8") != text:
        tmp = marker.with_name(f".{MARKER_FILE}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, marker)
    return wiped


@contextmanager
def open_memory(
    vault: Path, index_dir: Path, embedder: str, settings: dict[str, Any] | None = None, **memory: Any
) -> Iterator[Any]:
    """Open a read-only Memory over a generated vault with its cached index (`settings`: more
    Config values; `memory`: more keywords for Memory, e.g. `rules=` a variant of the read path's rules)."""
    from vault_memory import Config, Memory

    ensure_fresh_index(index_dir, embedder)
    cfg = Config(vault=vault, index_dir=index_dir, embedder=embedder, read_only=True, **(settings or {}))
    with Memory(cfg, **memory) as mem:
        yield mem


def hit_keys(hits: Sequence[Any]) -> list[tuple[Any, ...]]:
    """What must not change between two `-k` of one question: each hit's note, chunk, `change` and
    the copies it folds (`also_in`)."""
    return [
        (h.path, getattr(h, "chunk_id", None), getattr(h, "change", ""), tuple(getattr(h, "also_in", ()))) for h in hits
    ]


def k_prefix_stable(deep: Sequence[Any], ask: Callable[[int], Sequence[Any]], ks: Iterable[int]) -> bool:
    """Whether `ask(k)` (the same recall with k hits) is the first k of `deep` for every k in `ks`:
    then the first n hits of any two of those k agree for every n (issue 21: k never changes the
    order). An older tree fails it where freshness reordered within the k asked for."""
    full = hit_keys(deep)
    return all(hit_keys(ask(k)) == full[:k] for k in ks)


def index_report(rep: Any) -> dict[str, Any]:
    """The scalar fields of an IndexReport (lists become counts), whatever its exact shape."""
    raw = (
        rep.to_dict()
        if hasattr(rep, "to_dict")
        else {n: getattr(rep, n) for n in dir(rep) if not n.startswith("_") and not callable(getattr(rep, n, None))}
    )
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if isinstance(value, float):
            out[name] = round(value, 3)
        elif isinstance(value, (int, str, bool)) or value is None:
            out[name] = value
        elif isinstance(value, dict) and all(isinstance(v, (int, float, str)) for v in value.values()):
            out[name] = dict(value)
        elif isinstance(value, (list, tuple, set, dict)):
            out[name] = len(value)
    return out


def chunk_sanity(vault: Path, report: Mapping[str, Any], max_words: int = 250) -> dict[str, Any]:
    """Words per indexed chunk; warns when chunks could not hold the vault's text (text was dropped)."""
    words = sum(len(p.read_text(encoding="utf-8").split()) for p in vault.rglob("*.md"))
    chunks = int(report.get("chunks") or report.get("chunks_written") or 0)
    per = round(words / chunks, 1) if chunks else None
    if per is not None and per > max_words:
        log(f"  WARNING: {vault.name}: {per} words per chunk (> {max_words}); the chunker may be dropping text")
    return {"vault_words": words, "words_per_chunk": per}


def compile_tree(tree: Path) -> None:
    """Byte-compile a tree's package before timing processes that start from it, as an installed
    package is (pip compiles at install). Without it, where PYTHONDONTWRITEBYTECODE is set (it is
    on these machines) every timed process compiled the ~65 modules it imports again."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "vault_memory")], check=True)


def cache_key(*parts: str) -> str:
    """A folder name from parts such as dataset, slice and embedder ("ollama:nomic" is made safe)."""
    import re

    return "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", p) for p in parts)


def progress_printer(label: str) -> Any:
    """A progress callback that prints to stderr at most every 5 s; tolerant of any signature."""
    last = [0.0]

    def cb(*args: Any, **kwargs: Any) -> None:
        now = time.time()
        if now - last[0] < 5:
            return
        last[0] = now
        if len(args) == 2 and all(isinstance(a, int) for a in args) and args[1]:
            shown = f"{args[0]:,}/{args[1]:,} ({100 * args[0] / args[1]:.0f}%)"
        else:
            shown = " ".join([*(str(a) for a in args), *(f"{k}={v}" for k, v in kwargs.items())])
        print(f"  [{label}] {shown}", file=sys.stderr, flush=True)

    return cb


def interleaved(
    runners: Mapping[str, Callable[[], Any]], repeats: int, *, say_load: bool = False
) -> dict[str, list[float]]:
    """Seconds of each runner per repeat, interleaved (A B C, A B C, ...) so that load from other
    processes on a shared machine falls on every variant alike. The caller does the warm-up."""
    runs: dict[str, list[float]] = {name: [] for name in runners}
    for r in range(repeats):
        for name, fn in runners.items():
            t0 = time.perf_counter()
            fn()
            runs[name].append(time.perf_counter() - t0)
        log(f"  repeat {r + 1}/{repeats} done" + (f" (load {load_average()})" if say_load else ""))
    return runs


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
