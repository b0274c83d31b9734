"""Editors that save in place, racing vault-memory's writes: are any human bytes lost?

    python -m bench save_race [--edits 600] [--recallers 2] [--no-quiet] [--portable] [--quick]

One editor process rewrites a note again and again the way Node's fs.writeFile, nano and
Obsidian do (open with truncate, write, close), sometimes slowly (half, a pause, the rest),
sometimes by temp file + rename, and checks before every save that its previous save is
still there (its marker line, the human frontmatter line, the whole body). Meanwhile
`recallers` processes recall the note over and over with `now` a day later each time, so
every recall wants to rehearse it (write `last_accessed` back), and optionally a
`vault-memory watch` process records the edits. Counts: saves, rehearsals written, saves
lost, human bytes changed. The guard that makes the answer 0 is described in
vault_memory/vault/atomic.py ("the in-place-save guard"). Three races: fast (mostly whole in-place
saves), slow (in place in two halves with a pause of 50-400 ms), rename (every save by temp
file + rename). `--portable` runs each race a second time with every call the guard can lean
on hidden (read lease, renameat2; as on a system without them: tests/portable), side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from vault_memory.vault import atomic

from ..harness import Result, RunOptions, log, table

# Dated: recall rehearses only notes that have an age (an undated note has none to restart).
HUMAN = (
    "---\ntitle: Groceries\ndate: 2026-11-01\nmykey: human value\n---\n# Groceries\n\nBuy coffee beans and oat milk.\n"
)
QUERY = "coffee beans and oat milk groceries"

_EDITOR = textwrap.dedent("""
    import os, random, sys, time, json
    path, edits, style, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    slow = style == "slow"
    HUMAN = sys.argv[5]
    rng = random.Random(seed)
    counts = {"saves": 0, "lost": 0, "human_changed": 0, "renames": 0, "slow_saves": 0, "examples": []}
    last = None
    for i in range(edits):
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
        if last is not None and last not in data:
            counts["lost"] += 1
            if len(counts["examples"]) < 3:
                counts["examples"].append(data[:300])
        if "mykey: human value" not in data or "Buy coffee beans and oat milk." not in data:
            counts["human_changed"] += 1
            # start again from a whole note, so one loss is not counted on every later save
            data = HUMAN
        lines = [ln for ln in data.split("\\n") if not ln.startswith("edit-marker ")]
        last = f"edit-marker {i} {rng.random():.6f}"
        new = ("\\n".join(lines).rstrip("\\n") + "\\n" + last + "\\n").encode("utf-8")
        style = rng.random()
        if style < 0.15 or sys.argv[3] == "rename":  # temp file + rename (most GUI editors)
            tmp = path + ".editor-tmp"
            with open(tmp, "wb") as f:
                f.write(new)
            os.replace(tmp, path)
            counts["renames"] += 1
        else:  # in place: truncate, then write (fs.writeFile, nano, Obsidian)
            with open(path, "wb") as f:
                if slow or style < 0.4:
                    half = len(new) // 2
                    f.write(new[:half]); f.flush()
                    time.sleep(rng.uniform(0.05, 0.4) if slow else rng.uniform(0.001, 0.01))
                    f.write(new[half:])
                    counts["slow_saves"] += 1
                else:
                    f.write(new)
        counts["saves"] += 1
        # mostly typing bursts, sometimes a pause long enough for a rehearsal to be written
        time.sleep(rng.uniform(1.05, 1.6) if rng.random() < 0.25 else rng.uniform(0.0, 0.05))
    with open(path, "rb") as f:
        final = f.read().decode("utf-8", "replace")
    if last not in final:
        counts["lost"] += 1
    print(json.dumps(counts))
""")

_RECALLER = textwrap.dedent("""
    import datetime as dt, sys, json
    from pathlib import Path
    from dataclasses import replace
    from vault_memory import Memory
    from vault_memory.vault import atomic
    from vault_memory.index.calibration import FAKE
    from vault_memory.config import Config
    vault, index, stop, seed = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    if sys.argv[6] == "1":  # --no-quiet: drop step 1's quiet period, to see what the other steps hold
        atomic.QUIET_SECONDS = 0.0
    if sys.argv[7] == "1":  # --portable: none of the system's calls (read lease, renameat2)
        atomic.use_portable()
    cfg = Config(vault=vault, index_dir=index, embedder="fake")
    now = dt.datetime(2031, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=seed * 100000)
    calls = written = 0
    # every recall a day later than the last (no coalescing) and every hit a clear answer: each
    # call wants to write a rehearsal
    with Memory(cfg, calibration=replace(FAKE, strong=0.0)) as mem:
        while not stop.exists():
            now += dt.timedelta(days=1)
            hits = mem.recall(sys.argv[5], k=3, now=now)
            calls += 1
            written += sum(1 for h in hits if h.rehearsed)
    print(json.dumps({"recalls": calls, "rehearsals_written": written}))
""")


def run_race(
    workdir: Path,
    *,
    edits: int = 600,
    recallers: int = 2,
    slow: bool = False,
    watch: bool = False,
    seed: int = 7,
    no_quiet: bool = False,
    style: str | None = None,
    portable: bool = False,
) -> dict[str, Any]:
    """Race one in-place editor against recall processes (and a watcher); return the counts."""
    vault, index = workdir / "vault", workdir / "index"
    vault.mkdir(parents=True, exist_ok=True)
    note = vault / "groceries.md"
    note.write_text(HUMAN, encoding="utf-8")
    (vault / "other.md").write_text("# Bike\n\nThe bike needs new tyres before spring.\n", encoding="utf-8")
    py = sys.executable
    exe = str(Path(py).parent / "vault-memory")
    base = [exe, "--vault", str(vault), "--index-dir", str(index), "--embedder", "fake"]
    subprocess.run([*base, "index"], check=True, capture_output=True, timeout=120)
    stop = workdir / "stop"
    style = style or ("slow" if slow else "fast")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if portable:  # the watcher too writes notes (rehearsed edits): it runs without the calls as well
        lane = str(Path(__file__).resolve().parents[2] / "tests" / "portable")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (lane, env.get("PYTHONPATH", "")) if p)
    procs = []
    watcher = None
    if watch:
        watcher = subprocess.Popen(
            [*base, "watch", "--quiet-seconds", "0.5", "--debounce", "0.05"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        time.sleep(2.0)
    for i in range(recallers):
        procs.append(
            subprocess.Popen(
                [
                    py,
                    "-c",
                    _RECALLER,
                    str(vault),
                    str(index),
                    str(stop),
                    str(i),
                    QUERY,
                    "1" if no_quiet else "0",
                    "1" if portable else "0",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    started = time.monotonic()
    editor = subprocess.run(
        [py, "-c", _EDITOR, str(note), str(edits), style, str(seed), HUMAN],
        capture_output=True,
        text=True,
        timeout=max(600, edits * 3),
        env=env,
    )
    stop.touch()
    out: dict[str, Any] = {
        "edits": edits,
        "style": style,
        "portable": portable,
        "slow": style == "slow",
        "watch": watch,
        "recallers": recallers,
        "no_quiet": no_quiet,
        "seconds": round(time.monotonic() - started, 1),
    }
    if editor.returncode != 0:
        raise RuntimeError(f"editor failed: {editor.stderr}")
    out.update(json.loads(editor.stdout))
    totals = {"recalls": 0, "rehearsals_written": 0}
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"recaller failed: {stderr[-2000:]}")
        for k, v in json.loads(stdout.strip().splitlines()[-1]).items():
            totals[k] += v
    out.update(totals)
    if watcher is not None:
        watcher.terminate()
        watcher.wait(timeout=30)
    final = note.read_text(encoding="utf-8")
    out["final_has_human_bytes"] = "mykey: human value" in final and "Buy coffee beans and oat milk." in final
    leftovers = [p.name for p in vault.iterdir() if p.name.startswith(".vm-tmp-")]
    out["temp_files_left"] = len(leftovers)
    out["conflict_copies"] = len([p for p in vault.iterdir() if "(conflict " in p.name])
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--edits", type=int, default=None, help="saves per race (600; quick: 30)")
    parser.add_argument("--recallers", type=int, default=2, help="recall processes racing the editor")
    parser.add_argument(
        "--no-quiet", action="store_true", help="also race with the quiet period off, to watch what it holds back"
    )
    parser.add_argument(
        "--portable",
        action="store_true",
        help="run every race a second time without the system's calls (read lease, renameat2), side by side",
    )


def run(opts: RunOptions) -> Result:
    """Six races: fast, slow and rename saves, each with and without `watch`; with --portable each again
    without the system's calls (and, with --no-quiet, one unguarded)."""
    res = Result("save_race", opts)
    edits = int(opts.extra.get("edits") or (30 if opts.quick else 600))
    recallers = int(opts.extra.get("recallers") or 2)
    paths = (False, True) if opts.extra.get("portable") else (False,)
    settings = [
        (style, watch, False, p) for style in ("fast", "slow", "rename") for watch in (False, True) for p in paths
    ]
    if opts.extra.get("no_quiet"):
        settings.append(("slow", False, True, False))
    rows = []
    kernel = atomic.KERNEL
    native = (
        ", ".join(n for n, on in (("read lease", kernel.lease), ("exchange", kernel.exchange is not None)) if on)
        or "none"
    )
    for style, watch, no_quiet, portable in settings:
        with tempfile.TemporaryDirectory(prefix="vm-race-") as tmp:
            out = run_race(
                Path(tmp),
                edits=edits,
                recallers=recallers,
                style=style,
                watch=watch,
                seed=random.randrange(1 << 30),
                no_quiet=no_quiet,
                portable=portable,
            )
        out.pop("examples", None)
        label = style + (" + watch" if watch else "")
        label += ", quiet period off" if no_quiet else ""
        label += ", portable" if portable else ""
        log(f"save_race {label}: {out['saves']} saves, {out['lost']} lost, {out['rehearsals_written']} rehearsals")
        res.results[label] = out
        rows.append(
            [
                label,
                "none (portable)" if portable else native,
                out["saves"],
                out["slow_saves"],
                out["renames"],
                out["recalls"],
                out["rehearsals_written"],
                out["lost"],
                out["human_changed"],
                out["conflict_copies"],
            ]
        )
    res.params.update(edits=edits, recallers=recallers, portable=bool(opts.extra.get("portable")))
    res.results["failed"] = sum(
        int(r["lost"]) + int(r["human_changed"]) + int(r["conflict_copies"]) + int(r["temp_files_left"])
        for label, r in res.results.items()
        if isinstance(r, dict) and "quiet period off" not in label
    )
    res.markdown += [
        f"One editor saving a note {edits} times (in place, in place in two halves with a pause, or by "
        f"rename) against {recallers} processes recalling it with `now` a day later each time, so each "
        "recall wants to write a rehearsal; `+ watch` adds `vault-memory watch`. `fast`: mostly whole "
        "in-place saves; `slow`: in place in two halves with a 50-400 ms pause; `rename`: every save by "
        "temp file + rename. `portable`: the same race with the read lease and renameat2 hidden from every "
        "process (as on a system without them; `system calls` says what the guard leaned on).",
        "",
        *table(
            [
                "race",
                "system calls",
                "saves",
                "split saves",
                "rename saves",
                "recalls",
                "rehearsals written",
                "saves lost",
                "human bytes changed",
                "conflict copies",
            ],
            rows,
        ),
    ]
    return res
