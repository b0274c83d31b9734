"""The reliability soak (issue 12): faults injected for minutes, every run judged by a clean rebuild.

    python -m bench soak [--minutes 15] [--seed N] [--notes 600] [--embedder fake] [--quick]

One vault (the sample vault plus ~600 generated notes: enough chunks for Chroma to write its
HNSW segment files) and one index are put through scenarios picked at random until time is up:

- `edit_race`: an editor saving in place (fast and slow) and by rename against two recall
  processes, sometimes with `watch` (bench/studies/save_race.py, run_race): saves lost, human bytes changed;
- `kill_index`, `kill_recall`, `kill_watch`: SIGKILL at a random moment of an `index` (sometimes
  `--rebuild`), a `recall` that reconciles a batch of edits, a `watch` applying edits;
- `corrupt_catalog`, `corrupt_chroma`: random bytes at a random place of `catalog.sqlite` or of
  a random Chroma file, or a removed segment folder; then `recall` (on Chroma's HNSW half the time);
- `full_disk` (root with `mount` only): vault and index on a tmpfs filled to the last byte;
- `read_only_vault`, `read_only_index`: a read-only bind mount (root) or chmod (others);
- `index_deleted_under_watch`: `rm -rf` of the index folder under a running `watch`, then a new note;
- issue 22's cases: `failed_calls` (an unknown `--supersedes`: exit 3, nothing written; titles that
  look like paths or hidden names), `big_file` (an 8 GB sparse `.md` beside every command),
  `owner_and_links` (rehearsals of a note owned by uid 1000 with mode 600 and an xattr, a
  hard-linked and a read-only note), `sync_conflict_copy` (an older conflict copy carrying the
  note's id), `vault_moved_under_watch`, `busy_and_unreadable` (a note held open for writing:
  `pin` exits 9; one that may not be read: `read` exits 8). Counted: orphan files, ownership
  or xattr changes, identities lost;
- issue 41's cases: `agent_loop` (the agent loop over MCP, through the official SDK's client on
  `vault-memory mcp`: status, then recalls that rehearse, each followed at once by `remember` or a
  long `log`; afterwards every chunk must have its vector) and `api_rehearsal` (a person's edits the
  index has not seen, then recalls through a long-lived `Memory` that rehearse those notes, then
  `index`: the edits must be indexed, which the comparison with a clean rebuild checks).
  Counted: chunks without a vector, after each scenario and at the end.

After every scenario: `index` (and `doctor --fix` when `doctor` objects), then the index must
equal a clean rebuild of the vault in a fresh folder, and `doctor` must exit 0; otherwise the run
"did not converge". Every command's stderr is searched for tracebacks, every exit code checked
against what docs/reliability.md documents for that fault, and every human byte of the vault (the body
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
        from vault_memory.vault.notefile import OWNED_KEYS, parse_note

        out: dict[str, str] = {}
        for path in sorted(self.vault.rglob("*.md")):
            rel = path.relative_to(self.vault).as_posix()
            if rel.startswith(".") or "/." in rel or path.stat().st_size > 16 * 1024 * 1024:
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
    def watcher_indexes(self, proc: subprocess.Popen[str], rel: str, *, seconds: float) -> bool:
        """Whether the running watcher `proc` puts `rel` in the index within `seconds` (polled)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            with contextlib.suppress(Exception):
                if rel in index_state(self.index)["notes"]:
                    return True
        return False

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
        found = self.watcher_indexes(proc, f"Generated/late{i}.md", seconds=120)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.note(args, proc.returncode, err, {0})
        if not found:
            self.tick("not_converged")
            self.incident("the watcher did not rebuild its deleted index", args, proc.returncode or 0, err)
        self.converge()

    # -- issue 22: nothing half-done ---------------------------------------------------------
    def orphans(self) -> list[str]:
        """Files we wrote that no scan accounts for: hidden Markdown files and drafts of failed calls in
        the staging folder, leftover temp files and second names anywhere."""
        out = []
        for path in self.vault.rglob("*"):
            rel = path.relative_to(self.vault).as_posix()
            if rel.startswith((".git", ".obsidian", ".trash")):
                continue
            if path.name.startswith(".vm-tmp-") and time.time() - path.lstat().st_mtime > 60:
                out.append(rel)
            elif rel.startswith("Memory/") and path.name.startswith(".") and path.suffix == ".md":
                out.append(rel)
            elif (
                rel.startswith("Memory/Staged/")
                and path.suffix == ".md"
                and "staged_by:" in path.read_text(encoding="utf-8", errors="replace")
            ):
                out.append(rel)
        return sorted(out)

    def failed_calls(self) -> None:
        """Calls that must write nothing (an unknown --supersedes), and titles that look like paths."""
        before = self.human()
        i = self.rng.randrange(100_000, 999_999)
        self.run(["remember", f"The spare key {i} is under the blue pot.", "--supersedes", f"No Such Note {i}"], {3})
        self.tick("faults")
        title = self.rng.choice(["../../etc/hosts", ". . .profile", "\u2024\u2024/passwd", "\uff0e\uff0e\uff0fetc"])
        self.run(["remember", f"{title} maps names {i}"], {0})
        self.run(["stage", f"{title} staged {i}"], {0})
        self.tick("faults", 2)
        self.run(["commit", "--all"], {0, 1})
        orphans = self.orphans()
        self.tick("orphan_files", len(orphans))
        if orphans:
            self.incident("files no scan accounts for", ["failed_calls"], 0, ", ".join(orphans)[:1500])
        after = self.human()
        for rel in before:  # only new memories may appear; nothing a person owns changes
            if after.get(rel) != before[rel]:
                self.tick("human_bytes_lost", 1)
                self.incident(f"human bytes changed in {rel}", ["failed_calls"], 0, "")
        self.converge()

    def big_file(self) -> None:
        """An 8 GB sparse `.md` (an export): skipped by a stat in every command, never read."""
        big = self.vault / "Generated" / f"export{self.rng.randrange(1000)}.md"
        with open(big, "wb") as f:
            f.truncate(8 * 1024**3)
        self.tick("faults")
        try:
            for args in (["index"], ["recall", "tea coffee", "-k", "3"], ["status"], ["doctor"]):
                started = time.monotonic()
                out = self.run(args, {0, 1} if args == ["doctor"] else {0})
                if time.monotonic() - started > 60:
                    self.incident("a command took over a minute beside an 8 GB note", args, out.returncode, "")
        finally:
            big.unlink()
        self.converge()

    def owner_and_links(self) -> None:
        """Notes owned by another user with mode 600 and xattrs, a hard-linked note, a read-only note:
        recalls rehearse them; owner, group, mode and xattrs stay, the linked and read-only ones unchanged."""
        gen = sorted((self.vault / "Generated").glob("n*.md"))
        if len(gen) < 3:
            return
        owned, linked, frozen = self.rng.sample(gen, 3)
        with contextlib.suppress(OSError):
            os.chown(owned, 1000, 1000)
        os.chmod(owned, 0o600)
        with contextlib.suppress(OSError):
            os.setxattr(owned, "user.soak", b"tag")
        link = self.work / f"link-{linked.name}"
        link.unlink(missing_ok=True)
        os.link(linked, link)
        os.chmod(frozen, 0o444)
        self.tick("faults", 3)
        want = {p: (p.stat().st_uid, p.stat().st_gid, p.stat().st_mode) for p in (owned, linked, frozen)}
        bytes_before = {p: p.read_bytes() for p in (linked, frozen)}
        xattr_before = self._xattrs(owned)
        for p in (owned, linked, frozen):
            words = " ".join(p.read_text(encoding="utf-8").split()[8:14])
            self.run(["recall", words, "-k", "3", "--now", "2099-01-01T00:00:00+00:00"], {0},
                     VAULT_MEMORY_REHEARSE_MIN_SIMILARITY="-1")  # fmt: skip
        for p, w in want.items():
            st = p.stat()
            if (st.st_uid, st.st_gid, st.st_mode) != w:
                self.tick("ownership_changes")
                self.incident(f"owner/mode of {p.name} changed", ["recall"], 0, f"{w} -> {st.st_mode}")
        if self._xattrs(owned) != xattr_before:
            self.tick("xattr_changes")
            self.incident(f"xattrs of {owned.name} changed", ["recall"], 0, "")
        for p, raw in bytes_before.items():
            if p.read_bytes() != raw or (p is linked and link.read_bytes() != raw):
                self.tick("ownership_changes")
                self.incident(f"{p.name} (linked or read-only) was rewritten", ["recall"], 0, "")
        link.unlink()
        os.chmod(frozen, 0o644)
        os.chmod(owned, 0o644)
        if os.geteuid() == 0:
            os.chown(owned, 0, 0)
        self.converge()

    @staticmethod
    def _xattrs(path: Path) -> dict[str, bytes]:
        try:
            return {n: os.getxattr(path, n) for n in os.listxattr(path)}
        except (OSError, AttributeError):
            return {}

    def sync_conflict_copy(self) -> None:
        """A sync client's conflict copy with the older mtime: the live note keeps its node_id."""
        from vault_memory.vault.notefile import file_node_id, read_note

        gen = sorted((self.vault / "Generated").glob("n*.md"))
        live = self.rng.choice(gen)
        rel = live.relative_to(self.vault).as_posix()
        if file_node_id(read_note(self.vault, rel)) is None:
            # the live note must carry an id for its copy to claim (`pin` writes none since it needs none)
            text = live.read_text(encoding="utf-8")
            live.write_text(text.replace("---\n", f"---\nnode_id: soak{self.rng.randrange(10**12):012d}\n", 1))
        self.run(["pin", rel], {0})
        nid = file_node_id(read_note(self.vault, rel))
        name = self.rng.choice(
            [
                f"{live.stem}.sync-conflict-20261201-101500-ABCDEF1.md",
                f"{live.stem} (conflicted copy 2026-12-01).md",
                f"{live.stem} (conflict 2026-12-01 101500).md",
                f"{live.stem}_REMOTE_4242.md",
            ]
        )
        copy = live.with_name(name)
        shutil.copy2(live, copy)
        old = time.time() - 86400
        os.utime(copy, (old, old))
        self.tick("faults")
        doctor = self.run(["doctor"], {1})
        if "conflict copy" not in doctor.stdout + doctor.stderr:
            self.incident("doctor did not report a conflict copy", ["doctor"], doctor.returncode, doctor.stdout[-800:])
            self.tick("identity_lost")
        self.run(["doctor", "--fix"], {0})
        self.run(["unpin", rel], {0})
        live_note = read_note(self.vault, rel)
        if nid is None or file_node_id(live_note) != nid or live_note.meta.get("pinned"):
            self.tick("identity_lost")
            self.incident(f"the conflict copy took {live.name}'s identity", ["doctor --fix"], 0, "")
        copy.unlink()
        self.converge()

    def vault_moved_under_watch(self) -> None:
        """The vault folder moved away and back (and edited meanwhile) under `watch`: picked up, no restart."""
        args = ["watch", "--debounce", "0.05"]
        proc = self.spawn(args)
        lock = self.index / "writer.lock"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError):
                if lock.read_text().strip() == str(proc.pid):
                    break
            time.sleep(0.2)
        time.sleep(self.rng.uniform(1.0, 3.0))
        away = self.vault.with_name("vault.away")
        self.vault.rename(away)
        self.tick("faults")
        time.sleep(self.rng.uniform(0.5, 2.5))
        i = self.rng.randrange(100_000, 999_999)
        (away / "Generated" / f"away{i}.md").write_text(self.note_text(i), encoding="utf-8")
        away.rename(self.vault)
        found = self.watcher_indexes(proc, f"Generated/away{i}.md", seconds=60)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.note(args, proc.returncode, err, {0})
        if not found:
            self.tick("not_converged")
            self.incident("watch did not pick up a note written while its vault was away", args, 0, err[-1500:])
        self.converge()

    def busy_and_unreadable(self) -> None:
        """A note held open for writing (`pin` waits, then exits 9) and one nobody else may read (8)."""
        gen = sorted((self.vault / "Generated").glob("n*.md"))
        held, secret = self.rng.sample(gen, 2)
        holder = subprocess.Popen(
            [sys.executable, "-c", "import sys,time; f=open(sys.argv[1],'r+b'); print(1, flush=True); time.sleep(30)"]
            + [str(held)],
            stdout=subprocess.PIPE,
        )
        try:
            assert holder.stdout is not None
            holder.stdout.readline()
            self.tick("faults")
            self.run(["pin", held.relative_to(self.vault).as_posix()], {9})
        finally:
            holder.kill()
            holder.wait()
        setpriv = shutil.which("setpriv")
        if setpriv and os.geteuid() == 0:
            os.chown(secret, 1000, 1000)
            os.chmod(secret, 0o000)
            self.tick("faults")
            drop = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all"]
            rel = secret.relative_to(self.vault).as_posix()
            out = subprocess.run(
                [*drop, *self.base(), "read", rel], capture_output=True, text=True, timeout=120, env=self.env()
            )
            self.note(["read (no permission)", rel], out.returncode, out.stderr, {8})
            os.chmod(secret, 0o644)
            os.chown(secret, 0, 0)
        self.converge()

    # -- issue 41: the index cannot drift silently ------------------------------------------------
    def unvectored(self) -> int:
        """Chunks of the index whose text has no vector: recall by meaning never finds them."""
        with contextlib.suppress(sqlite3.Error):
            db = sqlite3.connect(f"{(self.index / 'catalog.sqlite').resolve().as_uri()}?mode=ro", uri=True)
            try:
                return int(
                    db.execute(
                        "SELECT count(*) FROM chunks c WHERE NOT EXISTS "
                        "(SELECT 1 FROM vectors v WHERE v.text_hash = c.text_hash)"
                    ).fetchone()[0]
                )
            finally:
                db.close()
        return 0

    def agent_loop(self) -> None:
        """Finding 1: over MCP, a recall that rehearses (a note's first node_id) followed at once by
        `remember` or a long `log` left the rehearsed note's chunk without a vector, and nothing said so."""
        import anyio
        from mcp import Client, StdioServerParameters

        gen = sorted((self.vault / "Generated").glob("n*.md"))
        picks = self.rng.sample(gen, min(len(gen), self.rng.randrange(3, 7)))
        queries = [self.body_words(p) for p in picks]
        # the memories `remember` writes and the episode `log` extends are ours; every other byte is a person's
        before = {rel: text for rel, text in self.human().items() if not rel.startswith("Memory/")}
        params = StdioServerParameters(command=EXE, args=[*self.base()[1:], "mcp"], env=self.env(), cwd=str(self.work))
        calls: list[str] = []
        errors: list[str] = []

        async def session() -> None:
            async with Client(params, read_timeout_seconds=120) as client:
                calls.append("status")
                await client.call_tool("status", {})
                await anyio.sleep(self.rng.uniform(1.5, 2.5))
                for query in queries:
                    found = await client.call_tool("recall", {"query": query, "k": 3})
                    calls.append("recall")
                    if self.rng.random() < 0.6:
                        fact = f"The soak fact {self.rng.randrange(10**9)} is about {query}."
                        done = await client.call_tool("remember", {"text": fact})
                    else:
                        done = await client.call_tool("log", {"text": f"talked about {query} " * 30})
                    calls.append("write")
                    for result in (found, done):
                        if result.is_error:
                            errors.append(" ".join(getattr(c, "text", "") for c in result.content)[:300])
                    await anyio.sleep(self.rng.uniform(0.5, 1.2))
                await anyio.sleep(3.0)  # the server's watcher applies what it saw

        try:
            anyio.run(session)
        except Exception as exc:  # noqa: BLE001 - a dead server or a protocol error is an incident
            self.incident(f"mcp session failed: {exc.__class__.__name__}: {exc}", ["mcp"], 0, "")
            self.tick("crashes")
        self.tick("operations", len(calls))
        self.tick("mcp_calls", len(calls))
        for err in errors:
            self.tick("unexpected_exit_codes")
            self.incident("a tool call failed", ["mcp"], 0, err)
        lost = self.unvectored()
        self.tick("chunks_without_vector", lost)
        if lost:
            self.incident(f"{lost} chunk(s) without a vector after the agent loop", ["mcp"], 0, "")
        self.check_human(before)
        self.converge()

    def api_rehearsal(self) -> None:
        """Finding 2: a person's edit the index had not seen, then a rehearsal through the Python API (no
        `watch`) recorded the rewritten file's hash over the old chunks: `index` said "unchanged" for good."""
        import datetime as dt

        from vault_memory import Memory

        self.run(["index"], {0})
        gen = sorted((self.vault / "Generated").glob("n*.md"))
        picks = self.rng.sample(gen, min(len(gen), self.rng.randrange(2, 6)))
        added: dict[str, str] = {}
        for path in picks:
            added[path.relative_to(self.vault).as_posix()] = line = f"A person added line {self.rng.randrange(10**9)}."
            with open(path, "a", encoding="utf-8") as f:
                f.write(f"\n{line}\n")
        time.sleep(1.2)  # past the write path's quiet period: the rehearsal may write
        before = self.human()
        when = dt.datetime(2031, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=self.rng.randrange(1000))
        written = 0
        with Memory(vault=self.vault, index_dir=self.index, embedder=self.embedder) as mem:
            for path in picks:
                hits = mem.recall(self.body_words(path), k=1, now=when)
                written += sum(1 for h in hits if h.rehearsed)
                self.tick("operations")
        self.tick("api_rehearsals", written)
        self.check_human(before)
        self.run(["index"], {0})  # it must find the edits, before doctor (which reads every note) is asked
        missing = [rel for rel, line in added.items() if not self.indexed_text(rel, line)]
        self.tick("edits_not_indexed", len(missing))
        if missing:
            self.incident(f"edits recorded as indexed but not in the index: {', '.join(missing)}", ["index"], 0, "")
        self.converge()

    @staticmethod
    def body_words(path: Path) -> str:
        """A query of a generated note's own words (its first part): recall's first hit, clearly."""
        return " ".join(path.read_text(encoding="utf-8").split("## Part 0", 1)[-1].split()[:24])

    def indexed_text(self, rel: str, text: str) -> bool:
        """Whether the catalog holds `text` in a chunk of the note at `rel`."""
        db = sqlite3.connect(f"{(self.index / 'catalog.sqlite').resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute(
                "SELECT count(*) FROM chunks c JOIN notes n ON n.node_id = c.node_id "
                "WHERE n.path = ? AND instr(c.text, ?)",
                (rel, text),
            ).fetchone()
            return bool(row and row[0])
        finally:
            db.close()


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
    "failed_calls": 2,
    "big_file": 1,
    "owner_and_links": 2,
    "sync_conflict_copy": 1,
    "vault_moved_under_watch": 1,
    "busy_and_unreadable": 1,
    "agent_loop": 3,
    "api_rehearsal": 3,
}


def soak(minutes: float, seed: int, embedder: str, notes: int) -> tuple[Soak, dict[str, int], int]:
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
        return s, dict(ran), s.unvectored()


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
    s, ran, final_unvectored = soak(minutes, seed, embedder, notes)
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
        "orphan_files",
        "ownership_changes",
        "xattr_changes",
        "identity_lost",
        "mcp_calls",
        "api_rehearsals",
        "chunks_without_vector",
        "edits_not_indexed",
    ]
    totals = {k: int(s.counts.get(k, 0)) for k in keys}
    totals["chunks_without_vector_at_end"] = final_unvectored
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
        f"Issue 41: {totals['mcp_calls']} MCP calls in agent loops (recall, then remember or log at once) and "
        f"{totals['api_rehearsals']} rehearsals through the Python API after unindexed edits; "
        f"{totals['chunks_without_vector']} chunks left without a vector after an agent loop, "
        f"{totals['edits_not_indexed']} edits not indexed by `index`, "
        f"{totals['chunks_without_vector_at_end']} chunks without a vector at the end.",
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
                "orphan files",
                "ownership or xattr changes",
                "identities lost",
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
                    totals["orphan_files"],
                    totals["ownership_changes"] + totals["xattr_changes"],
                    totals["identity_lost"],
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
        + totals["orphan_files"]
        + totals["ownership_changes"]
        + totals["xattr_changes"]
        + totals["identity_lost"]
        + totals["chunks_without_vector"]
        + totals["edits_not_indexed"]
        + totals["chunks_without_vector_at_end"]
    )
    res.results["failed"] = bad
    return res
