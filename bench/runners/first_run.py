"""First run on a new vault: how soon a one-shot `recall` answers while the first index embeds.

`python -m bench first_run [--notes 2000] [--baseline COMMIT] [--max-wait S]`. On a fresh
synthetic vault of N notes (MiniLM by default), it starts `vault-memory index` in one process
and, from that moment, runs one-shot `vault-memory --read-only recall "..." --json --no-touch`
processes back to back: the first that answers with hits gives the time to a first answer
(from the start of the index), whether it said `lexical_only` and how many chunks had vectors;
a thread samples the catalog for when every note was catalogued and how the vectors fill in.
Then the other first-run path: a `recall` on a fresh index with no writer running, which
catalogues the vault itself, answers by keyword and leaves the embedding to `index`.

With `--baseline COMMIT` the same is run for that commit's tree (a `git archive` of it, in the
cache) in the same run, each wait capped at `--max-wait` seconds (default 300). Quick mode: 200
notes, the fake embedder (a smoke run: with no model the first index is over in seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..data.synth import build_synth, sample_queries
from ..harness import REPO, Result, RunOptions, cache_key, compile_tree, log, table

PY = sys.executable
CLI = "from vault_memory.cli.main import run; run()"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline", default=None, metavar="COMMIT", help="also run a baseline commit's tree, in the same run"
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=300.0,
        metavar="S",
        help="give up waiting for an answer or an index after this long (default 300)",
    )


def baseline_tree(commit: str, cache: Path) -> Path:
    """A commit's files (git archive) under the cache, made once."""
    sha = subprocess.run(
        ["git", "rev-parse", commit], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    tree = cache / "baseline" / sha[:12]
    if not (tree / "vault_memory").is_dir():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def _counts(index_dir: Path) -> tuple[int, int, int]:
    """(notes, chunks, chunks with a vector) as the catalog has them now; zeros before it exists."""
    path = index_dir / "catalog.sqlite"
    if not path.exists():
        return 0, 0, 0
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            notes = db.execute("SELECT count(*) FROM notes").fetchone()[0]
            chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            embedded = db.execute(
                "SELECT count(*) FROM chunks c JOIN vectors v ON v.text_hash = c.text_hash"
            ).fetchone()[0]
            return int(notes), int(chunks), int(embedded)
        finally:
            db.close()
    except sqlite3.Error:
        return 0, 0, 0


class Sampler(threading.Thread):
    """Samples the catalog every `every` seconds: (t, notes, chunks, embedded)."""

    def __init__(self, index_dir: Path, t0: float, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.index_dir, self.t0, self.every = index_dir, t0, every
        self.samples: list[tuple[float, int, int, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((round(time.monotonic() - self.t0, 2), *_counts(self.index_dir)))
            self.stop.wait(self.every)

    def first(self, notes: int) -> float | None:
        """When the catalog first held every note."""
        return next((t for t, n, _, _ in self.samples if n >= notes), None)


def _recall(tree: Path, base: list[str], query: str, timeout: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    t = time.monotonic()
    try:
        proc = subprocess.run(
            [PY, "-c", CLI, *base, "--read-only", "recall", query, "--json", "--no-touch"],
            cwd=tree,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"seconds": round(time.monotonic() - t, 2), "timeout": True, "count": 0}
    out: dict[str, Any] = {"seconds": round(time.monotonic() - t, 2), "code": proc.returncode}
    try:
        got = json.loads(proc.stdout)
        out.update(
            count=got.get("count", 0),
            lexical_only=got.get("lexical_only"),
            vectors=got.get("vectors"),
            top=got["hits"][0]["path"] if got.get("hits") else None,
        )
    except (ValueError, KeyError, TypeError):
        out.update(count=0, error=proc.stderr[-500:])
    out["said"] = next((ln for ln in proc.stderr.splitlines() if "no vector yet" in ln), None)
    return out


def while_indexing(
    tree: Path,
    vault: Path,
    index_dir: Path,
    embedder: str,
    query: str,
    notes: int,
    max_wait: float,
    after_first: int = 4,
) -> dict[str, Any]:
    """`index` in one process; one-shot recalls back to back from its start."""
    shutil.rmtree(index_dir, ignore_errors=True)
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", embedder]
    env = dict(os.environ, PYTHONPATH=str(tree))
    t0 = time.monotonic()
    writer = subprocess.Popen(
        [PY, "-c", CLI, *base, "index"], cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    sampler = Sampler(index_dir, t0)
    sampler.start()
    recalls: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    try:
        # The writer must hold the lock first, or the first recall would be the one to index.
        while not (index_dir / "catalog.sqlite").exists() and writer.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        while writer.poll() is None and time.monotonic() - t0 < max_wait:
            start = round(time.monotonic() - t0, 2)
            r = _recall(tree, base, query, max(5.0, max_wait - (time.monotonic() - t0)))
            r["started"], r["answered"] = start, round(time.monotonic() - t0, 2)
            recalls.append(r)
            if first is None and r.get("count"):
                first = r
            if first is not None and len(recalls) >= recalls.index(first) + 1 + after_first:
                break
        finished = None
        try:
            writer.wait(timeout=max(1.0, max_wait - (time.monotonic() - t0)))
            finished = round(time.monotonic() - t0, 2)
        except subprocess.TimeoutExpired:
            pass
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        sampler.stop.set()
        sampler.join()
    return {
        "first_answer": first,
        "recalls": recalls,
        "catalogued_seconds": sampler.first(notes),
        "index_seconds": finished,
        "index_exit": writer.returncode,
        "samples": sampler.samples[:: max(1, len(sampler.samples) // 60)],
    }


def recall_alone(
    tree: Path, vault: Path, index_dir: Path, embedder: str, query: str, max_wait: float
) -> dict[str, Any]:
    """The first command on a never-indexed vault is a `recall` (no writer running)."""
    shutil.rmtree(index_dir, ignore_errors=True)
    base = ["--vault", str(vault), "--index-dir", str(index_dir), "--embedder", embedder]
    r = _recall(tree, base, query, max_wait)
    r["after"] = dict(zip(("notes", "chunks", "embedded"), _counts(index_dir), strict=True))
    return r


def run(opts: RunOptions) -> Result:
    res = Result("first_run", opts)
    embedder = opts.embedder_name
    n = int(opts.extra.get("notes") or (200 if opts.quick else 2000))
    max_wait = float(opts.extra.get("max_wait") or 300.0)
    vault = opts.cache / "vaults" / cache_key("synth", str(n))
    build_synth(vault, n)
    query = sample_queries(1)[0]
    trees = {"this tree": REPO}
    if opts.extra.get("baseline"):
        trees = {f"baseline {opts.extra['baseline']}": baseline_tree(str(opts.extra["baseline"]), opts.cache), **trees}
    for tree in trees.values():
        compile_tree(tree)
    res.params.update(
        bytecode="compiled first (harness.compile_tree), as an installed package has it",
        notes=n,
        query=query,
        max_wait=max_wait,
        trees={k: str(v) for k, v in trees.items()},
        load_at_start=[round(x, 2) for x in os.getloadavg()],
    )
    out: dict[str, Any] = {}
    for name, tree in trees.items():
        scratch = opts.cache / "first_run" / cache_key(name, embedder, str(n))
        log(f"first_run: {name}: index + recalls ({n} notes, {embedder})")
        during = while_indexing(tree, vault, scratch / "index", embedder, query, n, max_wait)
        log(f"first_run: {name}: first answer {json.dumps(during['first_answer'])}")
        alone = recall_alone(tree, vault, scratch / "alone", embedder, query, max_wait)
        log(f"first_run: {name}: recall alone {json.dumps(alone)}")
        out[name] = {"while_indexing": during, "recall_alone": alone}
        shutil.rmtree(scratch, ignore_errors=True)
    res.results.update(runs=out, load_at_end=[round(x, 2) for x in os.getloadavg()])

    def cell(r: dict[str, Any] | None, cap: float) -> str:
        if not r or not r.get("count"):
            return f"none within {cap:.0f} s"
        vec = r.get("vectors") or {}
        how = (
            "keyword-only, said so"
            if r.get("lexical_only") and r.get("said")
            else "keyword-only"
            if r.get("lexical_only")
            else "hybrid"
        )
        have = f"; {vec.get('embedded', '?')}/{vec.get('chunks', '?')} chunks embedded" if vec else ""
        return f"{r.get('answered', r['seconds'])} s ({how}{have})"

    rows = []
    for name, r in out.items():
        d, a = r["while_indexing"], r["recall_alone"]
        rows.append(
            [
                name,
                cell(d["first_answer"], max_wait),
                d["catalogued_seconds"] or "-",
                d["index_seconds"] or f"> {max_wait:.0f}",
                cell(a, max_wait),
            ]
        )
    res.markdown += [
        f'Fresh synthetic vault of {n} notes, embedder `{embedder}`, query "{query}". Times from the start of '
        "`vault-memory index` (one process); one-shot `recall` processes run back to back from that moment. "
        f"Machine: 2 cores shared with other jobs (load {res.params['load_at_start']} at start, "
        f"{res.results['load_at_end']} at end).",
        "",
        *table(
            [
                "code",
                "first recall with hits (s after index start)",
                "every note catalogued (s)",
                "index finished (s)",
                "`recall` as the first command (wall s)",
            ],
            rows,
        ),
    ]
    return res
