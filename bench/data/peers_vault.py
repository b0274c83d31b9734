"""The peers benchmark's vault and questions, and the pure helpers that score any tool's answers.

Vault: every LoCoMo conversation pooled into one vault, one folder per conversation and one
note per session (`<conv>/session_<n>.md`, its date in the frontmatter, one line per turn; the
same note text as the `locomo` runner writes). Questions: categories 1-4 whose evidence turns
(`D<n>:<i>`) lie in known sessions, so each question has a set of gold *notes*.

Why note level: the tools return different units (our chunks, basic-memory's entities and
observations, qmd's documents), but all of them name a file, so "which notes came back" is the
one unit every tool answers in. Metrics per question, top k = 5 distinct notes:
hit@5 (at least one gold note) and recall@5 (share of its gold notes). Pooling the ten
conversations means a tool must also keep one conversation's sessions from crowding another's.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import metrics
from .datasets import (
    SESSION_KEY,
    LocomoQuestion,
    parse_evidence,
    parse_locomo_datetime,
    quick_pick,
    safe_name,
    session_note,
)
from .updates import UpdateCase, generate_updates

CATEGORIES = (1, 2, 3, 4)
NOW_AFTER_LAST = dt.timedelta(hours=1)  # a question is asked just after its conversation's last session


@dataclass(frozen=True)
class PeerQuestion:
    conv: str
    index: int  # position in the conversation's qa list
    question: str
    category: int
    gold: tuple[str, ...]  # vault-relative paths of the sessions holding the evidence
    now: dt.datetime  # just after this conversation's last session


@dataclass(frozen=True)
class PooledLocomo:
    files: dict[str, str]  # vault-relative path -> note text
    questions: list[PeerQuestion]
    conversations: int
    skipped: dict[str, int]


def pooled_locomo(
    raw: Sequence[Mapping[str, Any]], *, conversations: int | None = None, questions_per_conv: int | None = None
) -> PooledLocomo:
    """One vault for all conversations (or the first `conversations`) and their answerable questions."""
    files: dict[str, str] = {}
    questions: list[PeerQuestion] = []
    skipped = {"category_5": 0, "no_evidence": 0}
    taken: set[str] = set()
    items = list(raw)[:conversations] if conversations else list(raw)
    for item in items:
        sample_id = str(item["sample_id"])
        folder = safe_name(sample_id, taken)
        conv = item["conversation"]
        dates: dict[int, dt.datetime] = {}
        for key, turns in conv.items():
            m = SESSION_KEY.match(key)
            if not m or not isinstance(turns, list) or not turns:
                continue
            n = int(m.group(1))
            dates[n] = parse_locomo_datetime(str(conv[f"session_{n}_date_time"]))
            files[f"{folder}/session_{n}.md"] = session_note(dates[n], turns)
        now = max(dates.values()) + NOW_AFTER_LAST
        picked: list[LocomoQuestion] = []
        for i, q in enumerate(item.get("qa", [])):
            lq = LocomoQuestion(
                conv=sample_id,
                index=i,
                question=str(q["question"]),
                answer="",
                category=int(q["category"]),
                evidence=parse_evidence(q.get("evidence", [])),
            )
            if lq.category not in CATEGORIES:
                skipped["category_5"] += 1
            elif not gold_notes(lq.evidence, folder, dates):
                skipped["no_evidence"] += 1
            else:
                picked.append(lq)
        if questions_per_conv:
            picked = quick_pick(picked, questions_per_conv)
        questions += [
            PeerQuestion(q.conv, q.index, q.question, q.category, gold_notes(q.evidence, folder, dates), now)
            for q in picked
        ]
    return PooledLocomo(files, questions, len(items), skipped)


def gold_notes(evidence: Iterable[str], folder: str, sessions: Mapping[int, Any]) -> tuple[str, ...]:
    """The session notes that hold these `D<n>:<i>` turns (sessions that exist only), sorted."""
    found = {int(turn[1:].split(":")[0]) for turn in evidence}
    return tuple(f"{folder}/session_{n}.md" for n in sorted(found) if n in sessions)


def updates_vault(quick: bool) -> tuple[dict[str, str], list[UpdateCase], dt.datetime]:
    """The `updates` runner's generated facts-that-change vault, its cases and its "now"."""
    files, cases = generate_updates(subjects=12 if quick else 40, seed=7, filler_notes=10 if quick else 30)
    now = max(d for c in cases for d in c.dates) + dt.timedelta(days=1)
    return files, cases, now


# --------------------------------------------------------------------------- naming the notes a tool returned


def note_key(ref: str) -> str:
    """A comparable form of a note reference: basic-memory's permalinks and qmd's paths are slugged."""
    ref = re.sub(r"^[a-z]+://", "", ref.strip().lower())
    ref = re.sub(r"\.md$", "", ref)
    return re.sub(r"[^a-z0-9]+", "-", ref).strip("-")


class PathResolver:
    """Maps whatever a tool returns (a path, a permalink with a project prefix, a qmd:// URL) to a vault path."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_key: dict[str, str] = {}
        for path in paths:
            key = note_key(path)
            if key in self._by_key:
                raise ValueError(f"{path!r} and {self._by_key[key]!r} would be indistinguishable to a peer")
            self._by_key[key] = path

    def resolve(self, ref: str) -> str | None:
        # Try the whole reference, then drop leading segments (a project or collection name).
        parts = [p for p in re.sub(r"^[a-z]+://", "", ref.strip(), flags=re.I).split("/") if p]
        for i in range(len(parts)):
            found = self._by_key.get(note_key("/".join(parts[i:])))
            if found is not None:
                return found
        return None

    def ranked(self, refs: Iterable[str], k: int) -> tuple[list[str], int]:
        """The first k distinct vault paths among `refs`, and how many refs named no note."""
        out: list[str] = []
        unresolved = 0
        for ref in refs:
            path = self.resolve(ref)
            if path is None:
                unresolved += 1
            elif path not in out:
                out.append(path)
        return out[:k], unresolved


# --------------------------------------------------------------------------- each tool's output


def parse_vault_memory(text: str) -> list[str]:
    """Paths from `vault-memory recall --json`: a bare array of hits, or an object {"hits": [...]}."""
    data = json.loads(text)
    hits = data if isinstance(data, list) else data.get("hits", [])
    return [str(h["path"]) for h in hits]


def parse_basic_memory(data: Any) -> list[str]:
    """Paths from basic-memory's search_notes JSON (CLI `--json` or the MCP tool's `output_format=json`)."""
    if isinstance(data, str):
        data = json.loads(data)
    results = data.get("results", []) if isinstance(data, dict) else data
    return [str(r.get("file_path") or r.get("permalink") or "") for r in results]


def parse_qmd(data: Any) -> list[str]:
    """References from qmd's `search --json` (a list) or its MCP `search` tool ({"results": [...]})."""
    if isinstance(data, str):
        data = json.loads(data)
    results = data.get("results", []) if isinstance(data, dict) else data
    return [str(r.get("file") or r.get("path") or "") for r in results]


# --------------------------------------------------------------------------- scores


def note_scores(ranked: Sequence[str], gold: Iterable[str], k: int = 5) -> dict[str, float]:
    """hit@k (any gold note in the top k) and recall@k (share of the gold notes in the top k)."""
    gold_set = set(gold)
    top = set(ranked[:k])
    return {f"hit@{k}": float(bool(gold_set & top)), f"recall@{k}": metrics.recall_at_k(ranked, gold_set, k)}


def summarise(rows: Sequence[tuple[int, Mapping[str, float]]]) -> dict[str, Any]:
    """Mean of each score per category and pooled; rows are (category, scores)."""
    by_cat: dict[int, list[Mapping[str, float]]] = defaultdict(list)
    for cat, scores in rows:
        by_cat[cat].append(scores)

    def mean_of(items: Sequence[Mapping[str, float]]) -> dict[str, Any]:
        keys = list(items[0]) if items else []
        return {"n": len(items), **{key: round(metrics.mean(s[key] for s in items), 4) for key in keys}}

    return {
        "pooled": mean_of([s for _, s in rows]),
        "by_category": {str(c): mean_of(by_cat[c]) for c in sorted(by_cat)},
    }


def update_scores(ranked: Sequence[str], statements: Sequence[str], k: int = 5) -> dict[str, float]:
    """The `updates` runner's checks at top k: every statement retrieved, newest first, and both."""
    all_in = metrics.all_in_top_k(ranked, statements, k)
    newer = metrics.newer_first(list(ranked[:k]), statements)
    return {
        f"all_in_top{k}": float(all_in),
        "newer_first": float(newer),
        "both": float(all_in and newer),
        f"newest_in_top{k}": float(statements[-1] in ranked[:k]),
    }


def ratio(peer: float | None, ours: float | None) -> float | None:
    """peer / ours (how many times the peer's figure is ours), None when either is missing or zero."""
    if peer is None or ours is None or ours == 0:
        return None
    return peer / ours
