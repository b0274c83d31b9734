"""Third-party benchmarks (SciFact, LoCoMo) turned into Markdown vaults.

The data is read in place from the shared bench-data folder and never copied into the repo;
generated vaults go under bench/.cache/ (gitignored) or a temporary folder.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..harness import iso, sync_vault

# All SciFact notes share one timestamp so recency can never change the order.
SCIFACT_CREATED = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def safe_name(raw: str, taken: set[str]) -> str:
    """A file-name-safe, unique stem for an external id."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", raw).strip("._") or "doc"
    candidate, n = stem, 1
    while candidate.lower() in taken:  # case-insensitive file systems
        n += 1
        candidate = f"{stem}_{n}"
    taken.add(candidate.lower())
    return candidate


# --------------------------------------------------------------------------- SciFact


@dataclass(frozen=True)
class SciFact:
    vault: Path
    queries: dict[str, str]  # query id -> text, only the evaluated (judged) ones
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: relevance}
    path_to_doc: dict[str, str]  # vault-relative note path -> doc id
    n_docs: int
    sync: dict[str, int]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_scifact_qrels(data: Path, split: str = "test") -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (data / "scifact" / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader)
        if header[0] != "query-id":  # tolerate a header-less file
            qrels[header[0]][header[1]] = int(header[2])
        for row in reader:
            if len(row) >= 3:
                qrels[row[0]][row[1]] = int(row[2])
    return dict(qrels)


def scifact_note(doc: dict[str, Any]) -> str:
    title = " ".join(str(doc.get("title", "")).split())
    text = str(doc.get("text", "")).strip()
    return f"---\ncreated: {iso(SCIFACT_CREATED)}\n---\n# {title}\n\n{text}\n"


def build_scifact(
    data: Path,
    vault: Path,
    quick: bool = False,
    quick_queries: int = 30,
    quick_extra_docs: int = 300,
) -> SciFact:
    """Write the SciFact corpus as a vault and load the test queries and qrels.

    Quick mode keeps the documents relevant to any of the 300 test queries plus the first
    `quick_extra_docs` other documents, and evaluates the first `quick_queries` judged queries.
    """
    corpus = read_jsonl(data / "scifact" / "corpus.jsonl")
    all_queries = {str(q["_id"]): str(q["text"]) for q in read_jsonl(data / "scifact" / "queries.jsonl")}
    qrels = load_scifact_qrels(data)
    judged = [qid for qid in qrels if qid in all_queries]
    if quick:
        relevant = {doc for rels in qrels.values() for doc in rels}
        extra = [d for d in corpus if str(d["_id"]) not in relevant][:quick_extra_docs]
        keep = relevant | {str(d["_id"]) for d in extra}
        corpus = [d for d in corpus if str(d["_id"]) in keep]
        judged = judged[:quick_queries]
    taken: set[str] = set()
    files: dict[str, str] = {}
    path_to_doc: dict[str, str] = {}
    for doc in corpus:
        doc_id = str(doc["_id"])
        rel = f"{safe_name(doc_id, taken)}.md"
        files[rel] = scifact_note(doc)
        path_to_doc[rel] = doc_id
    sync = sync_vault(vault, files)
    return SciFact(
        vault=vault,
        queries={qid: all_queries[qid] for qid in judged},
        qrels={qid: qrels[qid] for qid in judged},
        path_to_doc=path_to_doc,
        n_docs=len(files),
        sync=sync,
    )


# --------------------------------------------------------------------------- LoCoMo

_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
_LOCOMO_DT = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})",
    re.I,
)
TURN_ID = re.compile(r"^D\d+:\d+$")
TURN_MARKER = re.compile(r"(?<![\w:])D\d+:\d+(?![\w:])")
SESSION_KEY = re.compile(r"^session_(\d+)$")


def parse_locomo_datetime(text: str) -> dt.datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08T13:56:00+00:00."""
    m = _LOCOMO_DT.search(text)
    if not m:
        raise ValueError(f"unrecognised LoCoMo date {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "p" else 0)
    mon = _MONTHS.get(month.lower())
    if mon is None:
        raise ValueError(f"unrecognised month in {text!r}")
    return dt.datetime(int(year), mon, int(day), h, int(minute), tzinfo=dt.UTC)


def parse_evidence(items: Iterable[Any]) -> tuple[str, ...]:
    """Split evidence strings on `[;,\\s]+` and keep well-formed `D<n>:<i>` ids, in order, once."""
    out: list[str] = []
    for item in items:
        for part in re.split(r"[;,\s]+", str(item)):
            if TURN_ID.match(part) and part not in out:
                out.append(part)
    return tuple(out)


def turn_ids(text: str) -> list[str]:
    """The `D<n>:<i>` markers found in a retrieved text."""
    return TURN_MARKER.findall(text)


@dataclass(frozen=True)
class LocomoQuestion:
    conv: str
    index: int  # position in the conversation's qa list
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class LocomoConversation:
    sample_id: str
    vault: Path
    session_dates: dict[int, dt.datetime]
    questions: list[LocomoQuestion]
    turns: int

    @property
    def last_date(self) -> dt.datetime:
        return max(self.session_dates.values())


def _turn_line(turn: dict[str, Any]) -> str:
    text = " ".join(str(turn.get("text", "")).split())
    line = f"{turn['dia_id']} {turn.get('speaker', '?')}: {text}"
    caption = turn.get("blip_caption")
    if caption:
        line += f" [image: {' '.join(str(caption).split())}]"
    return line


def session_note(date: dt.datetime, turns: Sequence[dict[str, Any]]) -> str:
    body = "\n".join(_turn_line(t) for t in turns)
    # A transcript is an episodic record: recall keeps newer sessions from displacing older ones
    # that answer the question (vault_memory.search.decay.is_episodic; docs/ranking.md).
    return f"---\ndate: {iso(date)}\ntype: conversation\n---\n{body}\n"


def load_locomo(data: Path) -> list[dict[str, Any]]:
    with (data / "locomo" / "locomo10.json").open(encoding="utf-8") as fh:
        return list(json.load(fh))


def _questions(sample_id: str, qa: Sequence[dict[str, Any]]) -> list[LocomoQuestion]:
    return [
        LocomoQuestion(
            conv=sample_id,
            index=i,
            question=str(q["question"]),
            answer=str(q["answer"] if q.get("answer") is not None else q.get("adversarial_answer", "")),
            category=int(q["category"]),
            evidence=parse_evidence(q.get("evidence", [])),
        )
        for i, q in enumerate(qa)
    ]


def quick_pick(questions: Sequence[LocomoQuestion], n: int) -> list[LocomoQuestion]:
    """Round-robin over categories 1-4 (file order within each) so a small slice covers all four."""
    pools = {c: [q for q in questions if q.category == c and q.evidence] for c in (1, 2, 3, 4)}
    picked: list[LocomoQuestion] = []
    while len(picked) < n and any(pools.values()):
        for c in (1, 2, 3, 4):
            if pools[c] and len(picked) < n:
                picked.append(pools[c].pop(0))
    return sorted(picked, key=lambda q: q.index)


def build_locomo(data: Path, root: Path, quick: bool = False, quick_questions: int = 40) -> list[LocomoConversation]:
    """One vault per conversation under `root/<sample_id>/`, one note per session."""
    convs: list[LocomoConversation] = []
    raw = load_locomo(data)
    if quick:
        raw = raw[:1]
    for item in raw:
        sample_id = str(item["sample_id"])
        conv = item["conversation"]
        files: dict[str, str] = {}
        dates: dict[int, dt.datetime] = {}
        n_turns = 0
        for key, turns in conv.items():
            m = SESSION_KEY.match(key)
            if not m or not isinstance(turns, list) or not turns:
                continue  # some conversations list date_times for sessions that have no turns
            n = int(m.group(1))
            date = parse_locomo_datetime(str(conv[f"session_{n}_date_time"]))
            dates[n] = date
            files[f"session_{n}.md"] = session_note(date, turns)
            n_turns += len(turns)
        vault = root / safe_name(sample_id, set())
        sync_vault(vault, files)
        questions = _questions(sample_id, item.get("qa", []))
        if quick:
            questions = quick_pick(questions, quick_questions)
        convs.append(LocomoConversation(sample_id, vault, dates, questions, n_turns))
    return convs
