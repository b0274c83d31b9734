"""Cold CLI: wall time of `vault-memory ... recall "query" --no-touch` in a fresh process, and where it goes.

Full mode uses a MiniLM-built index (nothing is embedded here except the query): the 10k-note
synthetic vault's if `bench/.cache/index/synth-10000-minilm-scale` exists, else the SciFact vault
(5,183 notes) and its index from the scifact runner. The index folder is copied first so other
benchmarks holding its writer lock cannot change what the CLI does (a held lock would skip the
reconcile). One untimed warm-up run precedes the timed ones, so the OS page cache is warm: this is
a fresh *process*, not a cold disk.

Each repeat runs, back to back in fresh interpreters (so machine load hits them alike):
`python -c pass`, `python -c "import vault_memory.cli.main"`, `python -c "import chromadb"`,
the full CLI command, and a phase worker that walks the CLI's path with timers (import CLI,
open the catalog, load the model with the first embed, no-op reconcile, recall) and records
whether chromadb got imported on the way (it should not: below `exact_search_limit` chunks an
unchanged vault is served from the catalog's vectors).
Medians over repeats. `python -X importtime` is summarised once. Quick mode (CI): a small
synthetic vault with the fake embedder, one repeat.

The index folder keeps the vectors of queries asked before (`query-vectors.sqlite`), so the
same question asked again loads no model. Both are timed: the CLI with the query's vector
cached (a repeated question) and with the cache file removed before each run (a new
question: the model loads, on a thread while the vault is checked). The phase worker times
the model load with the bare embedder (`IndexFolder.model`), which the cache does not wrap.
`--baseline COMMIT` also times the CLI of that commit's tree (`git archive`, as first_run)
on the same index copy, in the same repeats: a before/after from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from vault_memory.internals import internals

from .. import metrics
from ..harness import REPO, Result, RunOptions, compile_tree, log, table
from .first_run import baseline_tree

QUERY = "does vitamin D supplementation reduce the risk of fractures"
PY = sys.executable
MINILM_IDENTITY = "minilm-l6-v2-int8/384"  # what a MiniLM-built catalog records as its embedder
QUERY_CACHE = "query-vectors.sqlite"  # vault_memory.index.queryvectors.FILE_NAME, in the index folder
NEW_QUERY = "CLI recall, new query (vector not cached: model loads)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fake-vectors",
        action="store_true",
        help="time the 10k-note index `scale` builds with fake vectors (relabelled as MiniLM's, "
        "so the CLI loads and runs the real model): timing only, when no MiniLM 10k index exists",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="COMMIT",
        help="also time that commit's CLI on the same index, in the same repeats",
    )


def _cli() -> list[str]:
    exe = Path(PY).with_name("vault-memory")
    return [str(exe)] if exe.exists() else [PY, "-c", "from vault_memory.cli.main import run; run()"]


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    return time.perf_counter() - t, proc


def _phase_worker(vault: str, index_dir: str, embedder: str, query: str, now: str | None = None) -> dict[str, float]:
    """Runs in a fresh interpreter: the CLI's recall path with a timer around each step."""
    out: dict[str, float] = {}
    t = time.perf_counter()
    import vault_memory.cli.main  # noqa: F401  (typer, config, errors)

    out["import_cli"] = time.perf_counter() - t
    out["chromadb_imported_by_cli"] = float("chromadb" in sys.modules)
    from vault_memory.config import resolve_config
    from vault_memory.memory import Memory

    t = time.perf_counter()
    cfg = resolve_config({"vault": Path(vault), "index_dir": Path(index_dir), "embedder": embedder, "read_only": True})
    mem = Memory(cfg)
    _ = internals(mem).catalog
    out["import_core_open_catalog"] = time.perf_counter() - t
    model = getattr(mem, "model", None) or internals(mem).embedder  # the bare embedder: no query-vector cache
    t = time.perf_counter()
    model.embed([query])
    out["model_load_and_first_embed"] = time.perf_counter() - t
    t = time.perf_counter()
    model.embed([query + " again"])
    out["second_embed"] = time.perf_counter() - t
    t = time.perf_counter()
    rep = internals(mem).ensure_current(None)
    out["reconcile_noop"] = time.perf_counter() - t
    out["reconcile_texts_embedded"] = float(getattr(rep, "texts_embedded", -1) if rep else -1)
    t = time.perf_counter()
    import datetime as dt

    hits = mem.recall(query, k=5, touch=False, now=dt.datetime.fromisoformat(now) if now else None)
    out["recall"] = time.perf_counter() - t
    out["hits"] = float(len(hits))
    out["exact_search"] = float(internals(mem).exact_search())
    out["chromadb_imported_by_recall"] = float("chromadb" in sys.modules)
    t = time.perf_counter()
    mem.close()
    out["close"] = time.perf_counter() - t
    return out


def importtime_summary(env: dict[str, str] | None = None, top: int = 12) -> list[dict[str, Any]]:
    """Import self-time per top-level package for `import vault_memory.cli.main`, largest first."""
    proc = subprocess.run(
        [PY, "-X", "importtime", "-c", "import vault_memory.cli.main"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    per_pkg: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)", line)
        if m:  # self time summed per top-level package: exclusive, so the rows add up to the total
            pkg = m.group(3).split(".")[0]
            per_pkg[pkg] = per_pkg.get(pkg, 0.0) + int(m.group(1)) / 1e6
    rows = sorted(per_pkg.items(), key=lambda kv: -kv[1])
    total = sum(per_pkg.values())
    total_row = {"package": "TOTAL", "seconds": round(total, 3)}
    return [{"package": k, "seconds": round(v, 3)} for k, v in rows[:top]] + [total_row]


def _target(opts: RunOptions) -> tuple[Path, Path, str, str, str | None]:
    """(vault, index_dir, embedder, description, --now or None)."""
    cold = opts.cache / "cold"
    if opts.quick:
        from ..data.synth import build_synth

        vault, index = cold / "vault-100", cold / "index-100-fake"
        build_synth(vault, 100)  # the CLI's own reconcile indexes it on the first (only) run
        what = "synthetic 100 notes, fake embedder (CI smoke test; the CLI run also indexes)"
        return vault, index, "fake", what, None
    if opts.extra.get("fake_vectors"):
        index = opts.cache / "index" / "synth-10000-fake_384-scale"
        copy = cold / "synth-10000-fake-as-minilm"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(index, copy, ignore=shutil.ignore_patterns("writer.lock"))
        db = sqlite3.connect(copy / "catalog.sqlite")
        try:  # the CLI then loads MiniLM and embeds the query with it; the notes' vectors stay fake
            db.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (MINILM_IDENTITY,))
            db.commit()
        finally:
            db.close()
        what = (
            "synthetic 10,000 notes, index built with FAKE vectors (`scale`'s) relabelled as MiniLM's: the "
            "real model loads and embeds the query, so every step is timed, but rankings mean nothing"
        )
        return opts.cache / "vaults" / "synth-10000", copy, "minilm", what, None
    candidates = [
        (
            opts.cache / "vaults" / "synth-10000",
            opts.cache / "index" / "synth-10000-minilm-scale",
            "synthetic 10,000 notes",
            None,
        ),
        # Every SciFact note is stamped created 2024-01-01; at today's date all are dormant and recall
        # prints "no matching notes", so evaluate at the day after (as the scifact runner does).
        (
            opts.cache / "vaults" / "scifact-full",
            opts.cache / "index" / "scifact-full-minilm",
            "SciFact, 5,183 notes",
            "2024-01-02T00:00:00+00:00",
        ),
    ]
    for vault, index, what, now in candidates:
        if (index / "catalog.sqlite").is_file() and vault.is_dir():
            copy = cold / f"{index.name}-copy"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(index, copy, ignore=shutil.ignore_patterns("writer.lock"))
            return vault, copy, "minilm", f"{what}, MiniLM index (copied from {index.name})", now
    raise RuntimeError("no MiniLM-built index found; run `python -m bench scifact` first")


def run(opts: RunOptions) -> Result:
    res = Result("cold", opts)
    repeats = 1 if opts.quick else int(opts.extra.get("repeats") or 5)
    vault, index_dir, embedder, what, now = _target(opts)
    compile_tree(REPO)
    res.params.update(
        bytecode="compiled first (harness.compile_tree), as an installed package has it",
        target=what,
        vault=str(vault),
        index_dir=str(index_dir),
        repeats=repeats,
        query=QUERY,
        now=now,
        embedder=embedder,
        load_at_start=[round(x, 2) for x in os.getloadavg()],
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli = [
        *_cli(),
        "--vault",
        str(vault),
        "--index-dir",
        str(index_dir),
        "--embedder",
        embedder,
        "--read-only",
        "recall",
        QUERY,
        "--no-touch",
        *(["--now", now] if now else []),
    ]
    worker = [
        PY,
        "-c",
        "import json,sys; from bench.runners.cold import _phase_worker as w; "
        f"print(json.dumps(w({str(vault)!r}, {str(index_dir)!r}, {embedder!r}, {QUERY!r}, {now!r})))",
    ]
    cmds = (
        {"CLI recall (full command)": cli}
        if opts.quick
        else {
            "python -c pass": [PY, "-c", "pass"],
            "import vault_memory.cli.main": [PY, "-c", "import vault_memory.cli.main"],
            "import chromadb": [PY, "-c", "import chromadb"],
            "import onnxruntime, tokenizers": [PY, "-c", "import onnxruntime, tokenizers"],
            "CLI recall (full command)": cli,
            # the same command on the ANN path (what every recall paid before exact search): ratio in one run
            "CLI recall, Chroma path (VAULT_MEMORY_EXACT_SEARCH_LIMIT=0)": [
                "env",
                "VAULT_MEMORY_EXACT_SEARCH_LIMIT=0",
                *cli,
            ],
            NEW_QUERY: cli,
        }
    )
    if opts.extra.get("baseline") and not opts.quick:
        tree = baseline_tree(str(opts.extra["baseline"]), opts.cache)
        compile_tree(tree)
        # -P: the working directory (this repo) is not put before PYTHONPATH on sys.path
        base_cli = [
            "env",
            f"PYTHONPATH={tree}",
            PY,
            "-P",
            "-c",
            "from vault_memory.cli.main import run; run()",
            *cli[len(_cli()) :],
        ]
        cmds[f"baseline {opts.extra['baseline']}: CLI recall (full command)"] = base_cli
        res.params["baseline_tree"] = str(tree)
    if not opts.quick:
        warm_s, proc = _timed(cli, env)  # warm-up: page cache, and a reconcile if the copy lagged
        if proc.returncode != 0:
            raise RuntimeError(f"CLI failed ({proc.returncode}): {proc.stderr[-2000:]}")
        log(f"cold: warm-up CLI run {warm_s:.2f}s; {proc.stdout.splitlines()[0] if proc.stdout else 'no output'}")
        res.results["cli_hits"] = sum(1 for line in proc.stdout.splitlines() if re.match(r"\d+\. ", line))
    walls: dict[str, list[float]] = {k: [] for k in cmds}
    phases: list[dict[str, float]] = []
    for i in range(repeats):
        for name, cmd in cmds.items():
            if name == NEW_QUERY:
                (index_dir / QUERY_CACHE).unlink(missing_ok=True)
            s, p = _timed(cmd, env)
            if p.returncode != 0:
                raise RuntimeError(f"{name} failed: {p.stderr[-2000:]}")
            walls[name].append(s)
        s, p = _timed(worker, env)
        if p.returncode != 0:
            raise RuntimeError(f"phase worker failed: {p.stderr[-2000:]}")
        ph = json.loads(p.stdout.strip().splitlines()[-1])
        ph["worker_wall"] = s
        phases.append(ph)
        log(f"cold: repeat {i + 1}/{repeats}: CLI {walls['CLI recall (full command)'][-1]:.2f}s")
    med = {k: round(metrics.median(v), 3) for k, v in walls.items()}
    ph_med = {k: round(metrics.median([p[k] for p in phases]), 3) for k in phases[0]}
    imports = [] if opts.quick else importtime_summary(env)
    res.results.update(
        wall_seconds=walls,
        wall_median=med,
        phases=phases,
        phase_median=ph_med,
        importtime_top=imports,
        load_at_end=[round(x, 2) for x in os.getloadavg()],
    )

    cli_s = med["CLI recall (full command)"]
    steps = [
        ("interpreter start (python -c pass)", med.get("python -c pass", 0.0)),
        (
            f"import CLI (typer, config; chromadb imported: {'yes' if ph_med['chromadb_imported_by_cli'] else 'no'})",
            ph_med["import_cli"],
        ),
        ("import core + open catalog", ph_med["import_core_open_catalog"]),
        ("model load + first embed (onnxruntime, tokenizer, session)", ph_med["model_load_and_first_embed"]),
        ("no-op reconcile (Chroma not opened)", ph_med["reconcile_noop"]),
        (
            "recall (hybrid, k=5; loads the catalog's vectors, exact dense; chromadb imported: "
            f"{'yes' if ph_med['chromadb_imported_by_recall'] else 'no'})",
            ph_med["recall"],
        ),
        ("close", ph_med["close"]),
    ]
    accounted = round(sum(s for _, s in steps), 3)
    rows = [[name, s, f"{100 * s / cli_s:.0f}%"] for name, s in steps]
    rows.append(["sum of the steps", accounted, f"{100 * accounted / cli_s:.0f}%"])
    rows.append(["**CLI wall (full command)**", cli_s, "100%"])
    res.markdown += [
        f'Target: {what}. `vault-memory --vault V --index-dir I --embedder {embedder} --read-only recall "…" '
        f"--no-touch` in a fresh process; median of {repeats} (page cache warm; one untimed warm-up). "
        f"Machine: 2 cores shared with other benchmarks (load {res.params['load_at_start']} at start, "
        f"{res.results['load_at_end']} at end); every command ran once per repeat, back to back.",
        "",
        "`CLI recall (full command)` asks the warm-up's question again, so its vector comes from the "
        "index folder's query-vector cache and no model is loaded; `" + NEW_QUERY + "` removes that "
        "cache before each run, as a question never asked before.",
        "",
        *table(["fresh-process command", "median s"], [[k, v] for k, v in med.items()]),
        "",
        "Breakdown (a phase worker walking the CLI's path with timers; medians):",
        "",
        *table(["step", "seconds", "share of CLI wall"], rows),
        "",
    ]
    if imports:
        res.markdown += [
            "",
            '`python -X importtime -c "import vault_memory.cli.main"` (self time summed per top-level package, '
            "one run; the profiler's own overhead inflates it):",
            "",
            *table(["package", "seconds"], [[r["package"], r["seconds"]] for r in imports]),
        ]
    return res
