"""The reliability soak (issue 12): faults injected for minutes, every run judged by a clean rebuild.

    python -m bench soak [--minutes 15] [--seed N] [--notes 600] [--embedder fake] [--quick]

One vault (the sample vault plus ~600 generated notes: enough chunks for Chroma to write its
HNSW segment files) and one index are put through scenarios picked at random until time is up:

- `edit_race`: an editor saving in place (fast and slow) and by rename against two recall
  processes, sometimes with `watch` (bench/studies/save_race.run_race): saves lost, human bytes changed;
- `kill_index`, `kill_recall`, `kill_watch`: SIGKILL at a random moment of an `index` (sometimes
  `--rebuild`), a `recall` that reconciles a batch of edits, a `watch` applying edits;
- `corrupt_catalog`, `corrupt_chroma`: random bytes at a random place of `catalog.sqlite` or of
  a random Chroma file, or a removed segment folder; then `recall` (on Chroma's HNSW half the time);
- `full_disk` (root with `mount` only): vault and index on a tmpfs filled to the last byte;
- `read_only_vault`, `read_only_index`: a read-only bind mount (root) or chmod (others);
- `index_deleted_under_watch`: `rm -rf` of the index folder under a running `watch`, then a new note.

After every scenario: `index` (and `doctor --fix` when `doctor` objects), then the index must
equal a clean rebuild of the vault in a fresh folder, and `doctor` must exit 0; otherwise the run
"did not converge". Every command's stderr is searched for tracebacks, every exit code checked
against what the README documents for that fault, and every human byte of the vault (the body
and the keys we do not own) compared with what the scenario left there.

Results: bench/results/soak.{json,md} (soak.quick.* with --quick) through harness.Result.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..harness import REPO, Result, RunOptions, log, table
from .save_race import HUMAN, run_race

EXE = str(Path(sys.executable).parent / "vault-memory")
SAMPLE = REPO / "sample_vault"
WORDS = (
    "alpha beta gamma delta tea coffee river mountain code review garden train ticket music piano book "
    "chapter cloud server deploy kernel lamp window door cat dog bird harbour lighthouse"
).split()


class Soak:
    def __init__(self, work: Path, rng: random.Random, embedder: str) -> None:
        self.work, self.rng, self.embedder = work, rng, embedder
        self.vault, self.index = work / "vault", work / "index"
        self.counts: Counter[str] = Counter()
        self.by_scenario: dict[str, Counter[str]] = {}
        self.incidents: list[dict[str, Any]] = []
        self.scenario = ""
        self.mountable = _can_mount(work)

    # -- running commands ----------------------------------------------------------------
    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "VAULT_MEMORY_EMBEDDER": self.embedder, "PYTHONUNBUFFERED": "1", **extra}

    def base(self, vault: Path | None = None, index: Path | None = None) -> list[str]:
        return [EXE, "--vault", str(vault or self.vault), "--index-dir", str(index or self.index)]

    def run(
        self,
        args: list[str],
        expect: set[int],
        *,
        vault: Path | None = None,
        index: Path | None = None,
        timeout: float = 600,
        **env: str,
    ) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(
            [*self.base(vault, index), *args], capture_output=True, text=True, timeout=timeout, env=self.env(**env)
        )
        self.note(args, out.returncode, out.stderr, expect)
        return out

    def note(self, args: list[str], code: int, stderr: str, expect: set[int]) -> None:
        self.tick("operations")
        self.tick("commands")  # vault-memory processes (operations also counts the races' saves and recalls)
        if "Traceback (most recent call last)" in stderr:
            self.tick("tracebacks")
            self.incident("traceback", args, code, stderr)
        elif code < 0:
            self.tick("crashes")
            self.incident(f"killed by signal {-code}", args, code, stderr)
        elif code not in expect:
            self.tick("unexpected_exit_codes")
            self.incident(f"exit {code}, expected {sorted(expect)}", args, code, stderr)

    def spawn(self, args: list[str], **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.base(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.env(**env)
        )

    def kill(self, proc: subprocess.Popen[str], args: list[str], after: float) -> None:
        """SIGKILL `proc` after `after` seconds (if it is still running): the fault."""
        deadline = time.monotonic() + after
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            self.tick("faults")
            self.tick("sigkills")
        _, err = proc.communicate(timeout=120)
        if proc.returncode != -signal.SIGKILL:
            self.note(args, proc.returncode, err, {0})
        else:
            self.tick("operations")
            self.tick("commands")

    def tick(self, what: str, n: int = 1) -> None:
        self.counts[what] += n
        self.by_scenario.setdefault(self.scenario, Counter())[what] += n

    def incident(self, kind: str, args: list[str], code: int, stderr: str) -> None:
        self.incidents.append(
            {
                "scenario": self.scenario,
                "kind": kind,
                "command": " ".join(args)[:200],
                "exit": code,
                "stderr": stderr[-1500:],
            }
        )
        log(f"  ! {self.scenario}: {kind}: {' '.join(args)[:80]}")

    # -- the vault -----------------------------------------------------------------------
    def make_vault(self, notes: int) -> None:
        shutil.copytree(SAMPLE, self.vault)
        gen = self.vault / "Generated"
        gen.mkdir()
        for i in range(notes):
            (gen / f"n{i:04d}.md").write_text(self.note_text(i), encoding="utf-8")

    def note_text(self, i: int) -> str:
        sections = "\n\n".join(
            f"## Part {j}\n\n" + " ".join(self.rng.choice(WORDS) for _ in range(35)) for j in range(2)
        )
        # dated, so recalls rehearse them (an undated note has no age to restart, and is not written)
        return f"---\nmykey: human {i}\ndate: 2026-0{1 + i % 9}-1{i % 10}\n---\n# Note {i}\n\n{sections}\n"

    def human(self) -> dict[str, str]:
        """What the vault's people own: per note, the body and the frontmatter keys we do not own."""
        from vault_memory.errors import NoteError
        from vault_memory.notefile import OWNED_KEYS, parse_note

        out: dict[str, str] = {}
        for path in sorted(self.vault.rglob("*.md")):
            rel = path.relative_to(self.vault).as_posix()
            if rel.startswith(".") or "/." in rel:
                continue
            raw = path.read_bytes()
            try:
                note = parse_note(rel, raw)
            except (NoteError, ValueError):
                out[rel] = raw.decode("utf-8", "replace")
                continue
            mine = {k: str(v) for k, v in note.meta.items() if k not in OWNED_KEYS}
            out[rel] = json.dumps(mine, sort_keys=True) + "\n" + note.body
        return out

    def check_human(self, before: dict[str, str]) -> None:
        after = self.human()
        for rel, text in before.items():
            if after.get(rel) != text:
                lost = (
                    len(text.encode())
                    if rel not in after
                    else sum(1 for a, b in zip(text, after[rel], strict=False) if a != b)
                    + abs(len(text) - len(after[rel]))
                )
                self.tick("human_bytes_lost", lost)
                self.incident(f"human bytes changed in {rel}", [], 0, "")

    def edit_some(self, n: int) -> None:
        """A batch of human edits: edits, new notes, deletions, a move."""
        gen = sorted((self.vault / "Generated").glob("*.md"))
        for path in self.rng.sample(gen, min(n, len(gen))):
            kind = self.rng.random()
            if kind < 0.7:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(f"\nedited {self.rng.random():.6f} {self.rng.choice(WORDS)}\n")
            elif kind < 0.85:
                path.unlink()
            else:
                dest = path.with_name(f"moved-{path.name}")
                if not dest.exists():
                    path.rename(dest)
        for _ in range(max(1, n // 5)):
            i = self.rng.randrange(10_000, 99_999)
            (self.vault / "Generated" / f"new{i}.md").write_text(self.note_text(i), encoding="utf-8")

    # -- convergence ---------------------------------------------------------------------
    def converge(self) -> None:
        """The next run must bring the index to what a clean rebuild gives."""
        self.run(["index"], {0})
        doctor = self.run(["doctor"], {0, 1})
        if doctor.returncode == 1:
            self.run(["doctor", "--fix"], {0})
        oracle = self.work / "oracle"
        shutil.rmtree(oracle, ignore_errors=True)
        out = subprocess.run(
            [EXE, "--vault", str(self.vault), "--index-dir", str(oracle), "--read-only", "index"],
            capture_output=True,
            text=True,
            timeout=900,
            env=self.env(),
        )
        self.note(["oracle index"], out.returncode, out.stderr, {0})
        ok = index_state(self.index) == index_state(oracle)
        final = self.run(["doctor"], {0})
        self.tick("runs")
        if not ok or final.returncode != 0:
            self.tick("not_converged")
            self.incident(
                "did not converge to a clean rebuild",
                ["doctor"],
                final.returncode,
                final.stdout[-1500:] + final.stderr[-500:],
            )

    # -- scenarios -----------------------------------------------------------------------
    def edit_race(self) -> None:
        race_dir = self.work / "race"
        shutil.rmtree(race_dir, ignore_errors=True)
        result = run_race(
            race_dir,
            edits=self.rng.choice([40, 60, 80]),
            recallers=2,
            slow=self.rng.random() < 0.4,
            watch=self.rng.random() < 0.5,
            seed=self.rng.randrange(1 << 30),
        )
        self.tick("operations", int(result["saves"]) + int(result["recalls"]))
        self.tick("faults", int(result["saves"]))  # every save is a race against the recallers
        self.tick("race_saves", int(result["saves"]))
        self.tick("race_rehearsals_written", int(result["rehearsals_written"]))
        self.tick("edits_lost", int(result["lost"]))
        self.tick("human_bytes_lost", int(result["human_changed"]) * len(HUMAN.encode()))
        if result["lost"] or result["human_changed"] or not result["final_has_human_bytes"]:
            self.incident("edit race lost a save", ["save_race"], 0, json.dumps(result)[:1500])
        shutil.rmtree(race_dir, ignore_errors=True)

    def kill_index(self) -> None:
        self.edit_some(self.rng.randrange(5, 40))
        before = self.human()
        args = ["index", "--rebuild"] if self.rng.random() < 0.3 else ["index"]
        self.kill(self.spawn(args), args, self.rng.uniform(0.0, 6.0))
        self.check_human(before)
        self.converge()

    def kill_recall(self) -> None:
        self.edit_some(self.rng.randrange(5, 40))
        before = self.human()
        args = ["recall", " ".join(self.rng.sample(WORDS, 3)), "-k", "3"]
        self.kill(self.spawn(args, VAULT_MEMORY_REHEARSE_MIN_SIMILARITY="0"), args, self.rng.uniform(0.0, 4.0))
        self.check_human(before)
        self.converge()

    def kill_watch(self) -> None:
        args = ["watch", "--debounce", "0.05", "--quiet-seconds", "0.3"]
        proc = self.spawn(args)
        time.sleep(self.rng.uniform(0.5, 4.0))
        self.edit_some(self.rng.randrange(3, 20))
        before = self.human()
        time.sleep(self.rng.uniform(0.0, 0.8))
        self.kill(proc, args, 0.0)
        after_kill = self.human()
        # the watcher may record human edits as rehearsals: only owned keys may differ
        for rel in set(before) & set(after_kill):
            if before[rel] != after_kill[rel]:
                self.tick("human_bytes_lost", abs(len(before[rel]) - len(after_kill[rel])) or 1)
                self.incident(f"human bytes changed in {rel}", args, 0, "")
        self.converge()

    def corrupt_catalog(self) -> None:
        catalog = self.index / "catalog.sqlite"
        if not catalog.exists():
            self.run(["index"], {0})
        size = self.rng.choice([512, 4096, 16384, 65536])
        scribble(catalog, self.rng.random(), size, self.rng.randrange(1 << 30))
        self.tick("faults")
        before = self.human()
        self.run(["recall", " ".join(self.rng.sample(WORDS, 3)), "-k", "3", "--no-touch"], {0})
        self.check_human(before)
        self.converge()

    def corrupt_chroma(self) -> None:
        store = self.index / "chroma"
        segments = [p for p in store.iterdir() if p.is_dir()] if store.exists() else []
        files = [p for seg in segments for p in seg.iterdir() if p.is_file()] + [store / "chroma.sqlite3"]
        files = [p for p in files if p.exists()]
        if segments and self.rng.random() < 0.2:
            shutil.rmtree(self.rng.choice(segments))
        elif files:
            target = self.rng.choice(files)
            scribble(target, self.rng.random(), self.rng.choice([64, 1024, 4096, 16384]), self.rng.randrange(1 << 30))
        else:
            return
        self.tick("faults")
        ann = {"VAULT_MEMORY_EXACT_SEARCH_LIMIT": "0"} if self.rng.random() < 0.5 else {}
        self.run(["recall", " ".join(self.rng.sample(WORDS, 3)), "-k", "3", "--no-touch"], {0}, **ann)
        if self.rng.random() < 0.5:
            self.edit_some(3)
            self.run(["index"], {0}, **ann)
        self.converge()

    def full_disk(self) -> None:
        if not self.mountable:
            return
        disk = self.work / "disk"
        disk.mkdir(exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(disk)], check=True, timeout=60)
        try:
            vault, index = disk / "vault", disk / "index"
            shutil.copytree(self.vault, vault)
            self.run(["index"], {0}, vault=vault, index=index)
            self.edit_some(5)  # edits in the main vault; mirror a few in the small one
            for path in list((vault / "Generated").glob("*.md"))[:5]:
                with open(path, "a", encoding="utf-8") as f:
                    f.write("\nan edit before the disk filled up\n")
            filler = fill(disk)
            self.tick("faults")
            self.run(["recall", "coffee tea river", "-k", "3"], {0}, vault=vault, index=index)
            self.run(["remember", f"A fact {self.rng.random()}"], {8}, vault=vault, index=index)
            self.run(["log", "an entry"], {8}, vault=vault, index=index)
            self.run(["index"], {8}, vault=vault, index=index)
            self.run(["status"], {0}, vault=vault, index=index)
            filler.unlink()
            self.run(["remember", f"A fact {self.rng.random()}"], {0}, vault=vault, index=index)
            self.run(["index"], {0}, vault=vault, index=index)
            doctor = self.run(["doctor"], {0}, vault=vault, index=index)
            self.tick("runs")
            if doctor.returncode != 0:
                self.tick("not_converged")
        finally:
            _umount(disk)
        self.converge()

    def read_only_vault(self) -> None:
        before = self.human()
        with read_only(self.vault, self.mountable):
            self.tick("faults")
            self.run(["recall", "coffee tea river", "-k", "3"], {0})
            for args in (["remember", "A fact."], ["log", "an entry"], ["stage", "Staged fact."]):
                self.run(args, {8})
        self.check_human(before)
        self.converge()

    def read_only_index(self) -> None:
        self.edit_some(3)
        with read_only(self.index, self.mountable):
            self.tick("faults")
            for args in (["status"], ["recall", "coffee tea", "--no-touch"], ["recall", "tea"]):
                self.run(args, {0})
            self.run(["doctor"], {0, 1})
            self.run(["index"], {8})
        self.converge()

    def index_deleted_under_watch(self) -> None:
        args = ["watch", "--debounce", "0.05"]
        proc = self.spawn(args)
        deadline = time.monotonic() + 120
        lock = self.index / "writer.lock"
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError):
                if lock.read_text().strip() == str(proc.pid):
                    break  # it holds the lock (and reconciles, then watches)
            time.sleep(0.2)
        time.sleep(self.rng.uniform(0.5, 3.0))
        shutil.rmtree(self.index, ignore_errors=True)
        self.tick("faults")
        i = self.rng.randrange(100_000, 999_999)
        (self.vault / "Generated" / f"late{i}.md").write_text(self.note_text(i), encoding="utf-8")
        found = False
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            with contextlib.suppress(Exception):
                if f"Generated/late{i}.md" in index_state(self.index)["notes"]:
                    found = True
                    break
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.note(args, proc.returncode, err, {0})
        if not found:
            self.tick("not_converged")
            self.incident("the watcher did not rebuild its deleted index", args, proc.returncode or 0, err)
        self.converge()


# -- fault helpers (tests/faults.py has their test-side twins) ---------------------------------


def scribble(path: Path, at: float, size: int, seed: int) -> None:
    length = path.stat().st_size
    if not length:
        return
    offset = min(length - 1, int(length * at))
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(random.Random(seed).randbytes(min(size, length - offset)))


def fill(folder: Path) -> Path:
    filler = folder / ".filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 16, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def _can_mount(work: Path) -> bool:
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    probe = work / "mount-probe"
    probe.mkdir(exist_ok=True)
    ok = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True, timeout=30
        ).returncode
        == 0
    )
    if ok:
        _umount(probe)
    return ok


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True, timeout=60).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


@contextlib.contextmanager
def read_only(path: Path, mountable: bool) -> Iterator[None]:
    if mountable:
        subprocess.run(["mount", "--bind", str(path), str(path)], check=True, capture_output=True, timeout=60)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True, capture_output=True, timeout=60)
            yield
        finally:
            _umount(path)
        return
    modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")]}
    for p, mode in modes.items():
        p.chmod(mode & ~0o222)
    try:
        yield
    finally:
        for p, mode in sorted(modes.items(), key=lambda kv: len(kv[0].parts)):
            p.chmod(mode)


def set_aside(index: Path) -> set[Path]:
    """Damaged index files renamed aside (`catalog.sqlite.corrupt-*`, `chroma.corrupt-*`; not their -wal/-shm)."""
    return {p for p in index.glob("*.corrupt-*") if not p.name.endswith(("-wal", "-shm"))}


def index_state(index: Path) -> dict[str, Any]:
    db = sqlite3.connect(f"{(index / 'catalog.sqlite').resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {
            "notes": {p: (n, h) for n, p, h in db.execute("SELECT node_id, path, file_hash FROM notes")},
            "chunks": dict(db.execute("SELECT chunk_id, text_hash FROM chunks")),
        }
    finally:
        db.close()


# -- the run --------------------------------------------------------------------------------------

WEIGHTS = {
    "edit_race": 2,
    "kill_index": 3,
    "kill_recall": 3,
    "kill_watch": 3,
    "corrupt_catalog": 3,
    "corrupt_chroma": 3,
    "full_disk": 1,
    "read_only_vault": 1,
    "read_only_index": 1,
    "index_deleted_under_watch": 1,
}


def soak(minutes: float, seed: int, embedder: str, notes: int) -> tuple[Soak, dict[str, int]]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="vm-soak-") as tmp:
        s = Soak(Path(tmp), rng, embedder)
        s.make_vault(notes)
        s.scenario = "setup"
        s.run(["index"], {0})
        ran: Counter[str] = Counter()
        deadline = time.monotonic() + minutes * 60
        names = list(WEIGHTS)
        order = names[:]  # every scenario once first, then at random by weight
        rng.shuffle(order)
        while time.monotonic() < deadline:
            name = order.pop() if order else rng.choices(names, [WEIGHTS[n] for n in names])[0]
            s.scenario = name
            started = time.monotonic()
            step: Callable[[], None] = getattr(s, name)
            aside = set_aside(s.index)
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - a harness failure is an incident, not the end of the soak
                s.tick("harness_errors")
                s.incident(f"harness error {exc.__class__.__name__}: {exc}", [name], 0, "")
            ran[name] += 1
            s.tick("set_aside", len(set_aside(s.index) - aside))  # damaged files found and rebuilt
            log(f"{name} in {time.monotonic() - started:.0f} s; totals {dict(s.counts)}")
        return s, dict(ran)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--minutes", type=float, default=None, help="how long to inject faults (15; quick: 2)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--notes", type=int, default=600, help="generated notes besides the sample vault")


def run(opts: RunOptions) -> Result:
    """Faults for minutes; the faults do not depend on the embedder, so `fake` unless --embedder says otherwise."""
    minutes = float(opts.extra.get("minutes") or (2.0 if opts.quick else 15.0))
    seed = opts.extra.get("seed")
    seed = int(seed) if seed is not None else random.randrange(1 << 30)
    notes = int(opts.extra.get("notes") or 600)
    embedder = opts.embedder or "fake"
    opts = dataclasses.replace(opts, embedder=embedder)
    res = Result("soak", opts, params={"minutes": minutes, "seed": seed, "notes": notes})
    s, ran = soak(minutes, seed, embedder, notes)
    keys = [
        "operations",
        "commands",
        "faults",
        "sigkills",
        "runs",
        "not_converged",
        "human_bytes_lost",
        "edits_lost",
        "tracebacks",
        "crashes",
        "unexpected_exit_codes",
        "harness_errors",
        "race_saves",
        "set_aside",
    ]
    totals = {k: int(s.counts.get(k, 0)) for k in keys}
    res.results = {
        "totals": totals,
        "scenarios": ran,
        "by_scenario": {k: dict(v) for k, v in sorted(s.by_scenario.items())},
        "incidents": s.incidents,
        "mount": s.mountable,
    }
    res.markdown = [
        f"{sum(ran.values())} scenarios in {minutes:g} minutes: {totals['operations']} operations "
        f"({totals['commands']} vault-memory commands, the rest the edit races' saves and recalls), "
        f"{totals['faults']} faults injected ({totals['sigkills']} SIGKILLs, {totals['race_saves']} racing saves), "
        f"{totals['runs']} convergence checks; {totals['set_aside']} damaged index files found, set aside and rebuilt.",
        "",
        *table(
            [
                "operations",
                "faults",
                "runs",
                "not converged",
                "human bytes lost",
                "edits lost",
                "tracebacks",
                "crashes",
                "unexpected exit codes",
            ],
            [
                [
                    totals["operations"],
                    totals["faults"],
                    totals["runs"],
                    totals["not_converged"],
                    totals["human_bytes_lost"],
                    totals["edits_lost"],
                    totals["tracebacks"],
                    totals["crashes"],
                    totals["unexpected_exit_codes"],
                ]
            ],
        ),
        "",
        *table(
            ["scenario", "runs", "faults", "operations", "not converged", "incidents"],
            [
                [
                    name,
                    ran.get(name, 0),
                    s.by_scenario.get(name, Counter())["faults"],
                    s.by_scenario.get(name, Counter())["operations"],
                    s.by_scenario.get(name, Counter())["not_converged"],
                    sum(1 for i in s.incidents if i["scenario"] == name),
                ]
                for name in WEIGHTS
            ],
        ),
    ]
    if not s.mountable:
        res.markdown += ["", "No `mount` here (not root): full_disk was skipped, read-only folders used chmod."]
    bad = (
        totals["not_converged"]
        + totals["human_bytes_lost"]
        + totals["edits_lost"]
        + totals["tracebacks"]
        + totals["crashes"]
        + totals["unexpected_exit_codes"]
    )
    res.results["failed"] = bad
    return res
