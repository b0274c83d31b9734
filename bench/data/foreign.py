"""Text nobody here wrote: three people's vaults (`../shared/real-vaults/`) and the LongMemEval pool.

Each becomes a `Dataset`: a vault to copy into the cache (its files as they are), the questions
asked of it, each with the `now` it is asked at (and, for the pool, the day before which a note
must be stated to exist yet), and the agent turns whose block must hold a given text.

- The real vaults: `<vault>.questions.json` beside each (schema in that folder's README). `now` is
  the README's sensible "now" per vault. A hit is right when its path is an answer's or its note
  contains an answer's text; a `latest` question (and a `decision` one with `stale` paths) wants
  its first answer's note above every stale one.
- The LongMemEval pool (`bench-data/longmemeval-pool/`): one note per session, `<id>.md` with
  `created:` in its frontmatter; each dev question asked at its own `now` over the sessions that
  existed by the end of that day (`before` = the next day, as the data README says). A
  knowledge-update question wants its newest answer session above the older ones; an abstention
  question (no answer) wants every hit weak and an empty block; every question is also a turn whose
  block should hold an answer session's entry.

Read in place, never copied into the repository; the vault copies live in the bench cache.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REAL_VAULTS = ("dexter", "flancian", "jbranchaud-til")
#: A sensible "now" per vault (../shared/real-vaults/README.md): the last note, or the commit date.
NOW = {
    "dexter": dt.datetime(2022, 8, 1, 20, 0, tzinfo=dt.UTC),
    "flancian": dt.datetime(2020, 12, 25, 20, 0, tzinfo=dt.UTC),
    "jbranchaud-til": dt.datetime(2021, 12, 26, 20, 0, tzinfo=dt.UTC),
}
LME = "longmemeval"
#: Question kinds that have no answer in the vault: every hit should be weak, the block empty.
NO_ANSWER = frozenset({"noanswer", "abstention"})


@dataclass(frozen=True)
class Question:
    """One question, asked at `now` (over notes stated before `before`, when given)."""

    id: str
    kind: str
    text: str
    answers: tuple[str, ...]  # answer note paths (vault-relative), the newest first where it matters
    answer_texts: tuple[str, ...] = ()  # a note holding one of these answers too (real vaults)
    newest: str | None = None  # the note that must rank above every `stale` one, when there are stale
    stale: tuple[str, ...] = ()
    now: dt.datetime = field(default=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    before: dt.date | None = None

    @property
    def answerable(self) -> bool:
        return self.kind not in NO_ANSWER


@dataclass(frozen=True)
class Turn:
    """An agent turn whose block must hold every `must` text and one of `any_of` (when given), or
    (the pool) an entry from one of the `answers` notes."""

    id: str
    text: str
    must: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()
    now: dt.datetime = field(default=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    before: dt.date | None = None


@dataclass(frozen=True)
class Dataset:
    name: str
    source: Path | None  # a folder copied as it is (the real vaults) ...
    files: Mapping[str, str] | None  # ... or generated notes {path: text} (the pool)
    questions: tuple[Question, ...]
    turns: tuple[Turn, ...]


def _now_of(name: str, spec: Mapping[str, object]) -> dt.datetime:
    """The vault's "now": the questions file's own `now` (a date, or a time with its offset) when it
    gives one, else the shared vault's (NOW). A vault from elsewhere has no row in NOW."""
    given = spec.get("now")
    if isinstance(given, str) and given:
        when = dt.datetime.fromisoformat(given if "T" in given else f"{given}T20:00:00")
        return when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    if name not in NOW:
        known = ", ".join(NOW)
        raise ValueError(f'{name}.questions.json gives no "now" and {name} is none of {known}: add "now": "YYYY-MM-DD"')
    return NOW[name]


def real_vault(root: Path, name: str) -> Dataset:
    """One of the real vaults under `root` (`../shared/real-vaults`) with its questions file. A
    question or turn may give its own `now` ("what did I do two weeks ago" is asked on a day)."""
    spec = json.loads((root / f"{name}.questions.json").read_text(encoding="utf-8"))
    vault_now = _now_of(name, spec)
    questions = []
    for q in spec["questions"]:
        now = _now_of(name, q) if q.get("now") else vault_now
        answers = tuple(dict.fromkeys(a["path"] for a in q["answers"]))
        stale = tuple(dict.fromkeys(s["path"] for s in q.get("stale") or [] if s["path"] not in answers))
        questions.append(
            Question(
                id=q["id"],
                kind=q["kind"],
                text=q["q"],
                answers=answers,
                answer_texts=tuple(a["text"] for a in q["answers"] if a.get("text")),
                newest=answers[0] if stale and answers else None,
                stale=stale,
                now=now,
            )
        )
    turns = tuple(
        Turn(
            p["id"],
            p["turn"],
            tuple(p.get("must_contain") or ()),
            tuple(p.get("any_of") or ()),
            now=_now_of(name, p) if p.get("now") else vault_now,
        )
        for p in spec["prefetch"]
    )
    return Dataset(name, root / name, None, tuple(questions), turns)


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def longmemeval(root: Path, *, limit: int | None = None) -> Dataset:
    """The LongMemEval pool under `root` (`bench-data/longmemeval-pool`) and its dev questions;
    `limit`: the first so many questions (and only the sessions they need, with a sample of the rest:
    a quick run)."""
    sessions = _read_jsonl(root / "sessions.jsonl")
    created = {str(s["id"]): str(s["created"]) for s in sessions}
    raw = _read_jsonl(root / "dev-questions.jsonl")
    if limit is not None:
        raw = raw[:limit]
        keep = {str(a) for q in raw for a in [*q["answers"], *q["near_miss"]]}  # type: ignore[union-attr]
        keep |= {str(s["id"]) for s in sessions[: limit * 4]}
        sessions = [s for s in sessions if str(s["id"]) in keep]
    files = {f"{s['id']}.md": f"---\ncreated: {s['created']}\n---\n{s['text']}\n" for s in sessions}
    questions = []
    for q in raw:
        now = dt.datetime.fromisoformat(str(q["now"]))
        before = now.date() + dt.timedelta(days=1)
        answers = tuple(f"{a}.md" for a in sorted(q["answers"], key=lambda a: created[a], reverse=True))  # type: ignore[arg-type]
        kind = str(q["type"])
        ku = kind == "knowledge-update" and len(answers) > 1
        questions.append(
            Question(
                id=str(q["qid"]),
                kind=kind,
                text=str(q["question"]),
                answers=answers,
                newest=answers[0] if ku else None,
                stale=answers[1:] if ku else (),
                now=now,
                before=before,
            )
        )
    # each question is its own turn: its block is scored with it (foreign.evaluate)
    return Dataset(LME, None, files, tuple(questions), ())


def copy_tree(src: Path, dst: Path) -> dict[str, int]:
    """Make `dst` hold exactly the files of `src` (every file, the config folder's too), writing
    only those whose bytes differ, so a cached index reconciles as a no-op. File times are the copy's,
    as after a clone: they say nothing about when a note was written (nor may the library read them so)."""
    written = unchanged = removed = 0
    wanted: set[Path] = set()
    for path in sorted(src.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(src)
        target = dst / rel
        wanted.add(target)
        data = path.read_bytes()
        try:
            if target.read_bytes() == data:
                unchanged += 1
                continue
        except FileNotFoundError:
            pass
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.copy-tmp")
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)  # the shared copies are read-only; ours is a vault a person could edit
        os.replace(tmp, target)
        written += 1
    for path in sorted(dst.rglob("*"), reverse=True):
        if path.is_file() and path not in wanted:
            path.unlink()
            removed += 1
        elif path.is_dir() and not any(path.iterdir()):
            shutil.rmtree(path)
    return {"written": written, "unchanged": unchanged, "removed": removed}


__all__ = [
    "LME",
    "NOW",
    "NO_ANSWER",
    "REAL_VAULTS",
    "Dataset",
    "Question",
    "Turn",
    "copy_tree",
    "longmemeval",
    "real_vault",
]
