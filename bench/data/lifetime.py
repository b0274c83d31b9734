"""A year of an agent's memory, day by day: what it writes, what it is asked, and when (issue 24).

The world is generated once, pure and deterministic for a seed, and every variant of the
library replays the same world (`bench.runners.lifetime`). Three kinds of real text:

- **Facts of a user's life that change** (the `updates_hard` kinds: where someone lives, works,
  what they drive, which editor they use...), one *slot* per (kind, person). The agent writes
  them in the third person ("The user's sister Nora moved to Lisbon last month"), worded
  differently each time from the kind's templates; a later statement sometimes names the old
  value ("...traded in a Honda Civic for a VW Golf"), and in `supersede_share` of the changes
  the agent says the new memory supersedes the old one (`remember(..., supersedes=old)`), in
  the others it does not (it did not look). Same-subject distractor memories ("The user's
  sister Nora spent all evening complaining about rent") sit beside them, and the user asks
  in the first person with the kind's paraphrased questions ("Which city does my sister Nora
  live in now?"), never the memory's own words.
- **Things people said** (LoCoMo single-hop questions whose one evidence turn states the
  answer): the memory is the turn ("Caroline said: Researching adoption agencies — it's been a
  dream..."), the question LoCoMo's own ("What did Caroline research?"). More turns of the same
  people are remembered and never asked (noise on the same subjects).
- **Findings** (SciFact claims with one relevant abstract): the memory is the abstract's title
  and its sentence closest to the claim; the question asks about the claim.

Roles (what happens to a fact over the year):

- `changing`: a slot stated 2-3 times months apart; asked in daily talk while recent.
- `weekly` / `weekly_changing`: a recurring need, asked once a week for some weeks (or to the
  end); the `_changing` ones change value while in use.
- `old` / `old_changing`: stated early, asked once (maybe once more in the first days), then
  silent for months, then asked once: the reactivation test.
- `pinned`: stated early, pinned, asked monthly.
- `oneoff`: stated once, asked in daily talk while recent, then never.
- noise: distractors and unasked turns and abstracts, never asked.

Turns: `recent` (daily talk about things of the last weeks, mostly the last days), `weekly`,
`old`, `pinned`, and `offtopic` (turns of LoCoMo conversations no memory comes from, with no
fact's key word: these should get no block). Memories are written at 08:00 of their day, turns
fall between 09:00 and 22:00.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .datasets import load_locomo, load_scifact_qrels, parse_evidence, read_jsonl
from .updates_hard import CHANGE_SHARE, KINDS, PEOPLE, Kind, clean_turn, value_words

START = dt.datetime(2025, 1, 6, tzinfo=dt.UTC)  # a Monday
DAY_MINUTES = (9 * 60, 22 * 60)  # turns fall in this window
WRITE_MINUTE = 8 * 60  # memories are written from 08:00
RECENT_WINDOW = 21  # days: "recent" talk is about what was written in the last three weeks ...
RECENT_SCALE = 5.0  # ... mostly the last days (weight exp(-age / RECENT_SCALE))
FACT_CONVERSATIONS = 7  # LoCoMo conversations 0..6 give memories; the rest give off-topic talk

# --------------------------------------------------------------------------- sources (real text)


@dataclass(frozen=True)
class SaidFact:
    """A LoCoMo question whose single evidence turn states its answer."""

    id: str  # "<sample_id>/<qa index>"
    speaker: str
    question: str
    answer: str
    turn: str  # the evidence turn's text


@dataclass(frozen=True)
class Finding:
    """A SciFact claim and the abstract it is judged against."""

    id: str  # corpus id
    claim: str
    title: str
    sentence: str  # the abstract's sentence that shares most words with the claim


@dataclass(frozen=True)
class Sources:
    """The real text a world is made of; tests pass their own."""

    said: tuple[SaidFact, ...] = ()
    said_noise: tuple[tuple[str, str], ...] = ()  # (speaker, turn) remembered, never asked
    findings: tuple[Finding, ...] = ()
    finding_noise: tuple[tuple[str, str], ...] = ()  # (title, sentence) remembered, never asked
    offtopic: tuple[str, ...] = ()  # turns of other conversations


_STOP = frozenset(
    "the a an and or of to in on for with at by is are was were be been it its his her their my your i you he she "
    "they we what which who whom when where how why did does do has have had that this these those as from".split()
)
_WORD = re.compile(r"[a-z0-9]+")
_DATEISH = re.compile(
    r"\d|\b(?:january|february|march|april|may|june|july|august|september|october|november|december)\b", re.I
)
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def load_said(data: Path, avoid: set[str]) -> tuple[list[SaidFact], list[tuple[str, str]], list[str]]:
    """LoCoMo as (facts, noise turns, off-topic turns), read in place.

    Facts: single-hop questions (category 4) of the first FACT_CONVERSATIONS conversations
    with one evidence turn of 8-60 words that holds most of the answer's words and a word of
    the question besides the answer and the names (so the turn is about what is asked), and no
    date in the question (the simulation has its own calendar). Noise: other turns of the
    same people. Off-topic: turns of the other conversations without any fact's key word,
    value word (`avoid`) or the name of a remembered person.
    """
    raw = load_locomo(data)
    facts: list[SaidFact] = []
    noise: list[tuple[str, str]] = []
    names: set[str] = set()
    for item in raw[:FACT_CONVERSATIONS]:
        conv = item["conversation"]
        names |= {str(conv["speaker_a"]).lower(), str(conv["speaker_b"]).lower()}
    offtopic: list[str] = []
    for ci, item in enumerate(raw):
        conv = item["conversation"]
        turns = {
            str(t["dia_id"]): t
            for key, value in conv.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
            for t in value
        }
        if ci >= FACT_CONVERSATIONS:
            for t in turns.values():
                text = " ".join(str(t.get("text", "")).split())
                if 6 <= len(text.split()) and clean_turn(text, avoid) and not (_content(text) & names):
                    offtopic.append(text)
            continue
        used: set[str] = set()
        for i, q in enumerate(item.get("qa", [])):
            if q.get("category") != 4 or q.get("answer") is None:
                continue
            ev = parse_evidence(q.get("evidence", []))
            if len(ev) != 1 or ev[0] not in turns or _DATEISH.search(str(q["question"])):
                continue
            turn = turns[ev[0]]
            text = " ".join(str(turn.get("text", "")).split())
            answer = _content(str(q["answer"]))
            words = _content(text)
            asked = _content(str(q["question"])) - answer - names
            if not answer or len(answer & words) < 0.6 * len(answer) or not (asked & words):
                continue
            if not 8 <= len(text.split()) <= 60:
                continue
            facts.append(
                SaidFact(f"{item['sample_id']}/{i}", str(turn["speaker"]), str(q["question"]), str(q["answer"]), text)
            )
            used.add(ev[0])
        for dia, t in sorted(turns.items()):
            text = " ".join(str(t.get("text", "")).split())
            if dia not in used and 12 <= len(text.split()) <= 45:
                noise.append((str(t["speaker"]), text))
    return facts, noise, offtopic


def load_findings(data: Path) -> tuple[list[Finding], list[tuple[str, str]]]:
    """SciFact test claims with exactly one relevant abstract, and abstracts no claim asks about."""
    corpus = {str(d["_id"]): d for d in read_jsonl(data / "scifact" / "corpus.jsonl")}
    queries = {str(q["_id"]): str(q["text"]) for q in read_jsonl(data / "scifact" / "queries.jsonl")}
    qrels = load_scifact_qrels(data)
    out: list[Finding] = []
    seen: set[str] = set()
    for qid in sorted(qrels, key=lambda x: int(x) if x.isdigit() else 0):
        docs = list(qrels[qid])
        if qid not in queries or len(docs) != 1 or docs[0] not in corpus or docs[0] in seen:
            continue
        doc = corpus[docs[0]]
        title = " ".join(str(doc.get("title", "")).split()).rstrip(".")
        sentences = [s for s in _SENT.split(" ".join(str(doc.get("text", "")).split())) if 6 <= len(s.split()) <= 60]
        if not title or not sentences:
            continue
        claim = queries[qid].strip()
        best = max(sentences, key=lambda s: (len(_content(s) & _content(claim)), -len(s)))
        out.append(Finding(docs[0], claim, title, best))
        seen.add(docs[0])
    judged = {d for rels in qrels.values() for d in rels}
    noise: list[tuple[str, str]] = []
    for did in sorted(corpus)[:2000]:
        if did in judged:
            continue
        doc = corpus[did]
        title = " ".join(str(doc.get("title", "")).split()).rstrip(".")
        sentences = [s for s in _SENT.split(" ".join(str(doc.get("text", "")).split())) if 6 <= len(s.split()) <= 50]
        if title and sentences:
            noise.append((title, sentences[0]))
    return out, noise


def load_sources(data: Path) -> Sources:
    """Every source the project has (read in place); SciFact is optional."""
    avoid = set(value_words())
    said, said_noise, offtopic = load_said(data, avoid)
    findings: list[Finding] = []
    finding_noise: list[tuple[str, str]] = []
    if (data / "scifact" / "corpus.jsonl").is_file():
        findings, finding_noise = load_findings(data)
    return Sources(tuple(said), tuple(said_noise), tuple(findings), tuple(finding_noise), tuple(offtopic))


# --------------------------------------------------------------------------- the world


@dataclass(frozen=True)
class Sizes:
    """How much of everything; `days` is the simulated span (full: a year of 30-day months)."""

    days: int = 360
    changing: int = 30
    weekly_changing: int = 4
    old_changing: int = 6
    weekly: int = 6
    pinned: int = 5
    old: int = 14
    oneoff: int = 12
    distractor_share: float = 0.8  # slots with a same-subject distractor memory
    said_old: int = 35
    said_oneoff: int = 45
    said_noise: int = 30
    finding_weekly: int = 4
    finding_old: int = 16
    finding_oneoff: int = 10
    finding_noise: int = 10
    recent_per_day: int = 2
    offtopic_per_day: int = 3
    supersede_share: float = 0.35  # changes the agent writes as superseding the old memory
    early_ask_share: float = 0.5  # old facts asked once in their first days, before the silence

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            days=60, changing=5, weekly_changing=1, old_changing=1, weekly=2, pinned=1, old=3, oneoff=3,
            said_old=4, said_oneoff=6, said_noise=4, finding_weekly=1, finding_old=2, finding_oneoff=2,
            finding_noise=2, recent_per_day=2, offtopic_per_day=2,
        )  # fmt: skip


@dataclass(frozen=True)
class MemorySpec:
    """One memory the agent writes."""

    id: str  # "m0001", in the order written
    day: int
    minute: int
    text: str
    kind: str  # "statement" (states a fact's value), "distractor" or "noise"
    source: str  # "slot", "said", "finding"
    fact: str | None = None  # the fact it states (statements only)
    value: str | None = None
    supersedes: str | None = None  # the memory the agent says it replaces
    pin: bool = False


@dataclass(frozen=True)
class TurnSpec:
    """One turn of the user's."""

    day: int
    minute: int
    text: str
    kind: str  # "recent", "weekly", "old", "pinned", "offtopic"
    fact: str | None = None


@dataclass(frozen=True)
class FactSpec:
    id: str  # "slot:user/city", "said:conv-26/12", "finding:123"
    source: str
    role: str
    statements: tuple[str, ...]  # memory ids, oldest first


@dataclass
class World:
    days: int
    memories: list[MemorySpec]
    turns: list[TurnSpec]
    facts: dict[str, FactSpec]
    params: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {m.id: m for m in self.memories}
        self.successor = {
            a: b for f in self.facts.values() for a, b in zip(f.statements, f.statements[1:], strict=False)
        }

    @staticmethod
    def when(day: int, minute: int) -> dt.datetime:
        return START + dt.timedelta(days=day, minutes=minute)

    def written_at(self, memory_id: str) -> dt.datetime:
        m = self.by_id[memory_id]
        return self.when(m.day, m.minute)

    def current(self, fact_id: str, at: dt.datetime) -> str | None:
        """The fact's newest statement written by `at` (what a question asks for)."""
        out = None
        for mid in self.facts[fact_id].statements:
            if self.written_at(mid) <= at:
                out = mid
        return out

    def replaced_at(self, memory_id: str) -> dt.datetime | None:
        """When a newer statement of its fact replaced this one (None: never)."""
        nxt = self.successor.get(memory_id)
        return self.written_at(nxt) if nxt else None

    def superseded_explicitly(self, memory_id: str) -> bool:
        """The agent wrote the statement that replaced this one with `supersedes` naming it."""
        nxt = self.successor.get(memory_id)
        return nxt is not None and self.by_id[nxt].supersedes == memory_id

    def stale(self, at: dt.datetime) -> set[str]:
        """Statements whose value a newer statement of the same fact had replaced by `at`."""
        out: set[str] = set()
        for f in self.facts.values():
            written = [m for m in f.statements if self.written_at(m) <= at]
            out.update(written[:-1])
        return out


def _forms(person: str) -> dict[str, str]:
    """The person as the agent writes about them (third person)."""
    obj = PEOPLE[person][3]  # "the user", "the user's sister Nora"
    return {"S": obj, "O": obj, "P": obj + "'s"}


def state(template: str, person: str, **values: str) -> str:
    text = template.format(**_forms(person), **values)
    return text[0].upper() + text[1:]


_FIRST_PERSON = (
    ("the manager of {Q}", "my manager"),
    ("the takeaway {Q} likes", "the takeaway I like"),
    ("{Q}'s", "my"),
    ("does {Q}", "do I"),
    ("is {Q}", "am I"),
    ("keeps {Q}", "keeps me"),
)


def ask(template: str, person: str) -> str:
    """A question as the user asks it: about "my sister Nora", or about themselves ("do I")."""
    if person != "user":
        text = template.format(Q=PEOPLE[person][1])
    else:
        for a, b in _FIRST_PERSON:
            template = template.replace(a, b)
        text = template.format(Q="me")
    return text[0].upper() + text[1:]


_LEADS = ("", "", "", "Quick question: ", "Remind me, ", "Before I forget, ", "Hey, ")


def _lead(rng: random.Random, question: str) -> str:
    lead = rng.choice(_LEADS)
    return lead + (question[0].lower() + question[1:] if lead and not question.startswith("I ") else question)


def _finding_question(rng: random.Random, claim: str) -> str:
    c = claim.rstrip(". ")
    c = c[0].lower() + c[1:] if c[:2] != c[:2].upper() else c
    return rng.choice((f"Is it true that {c}?", f"What did that paper say, {c}?", f"I read that {c}. Is that right?"))


class _Builder:
    def __init__(self, sizes: Sizes, seed: int) -> None:
        self.sizes = sizes
        self.rng = random.Random(seed)
        self.mems: list[MemorySpec] = []  # ids are keys ("k0001") until the world is put in order
        self.turns: list[tuple[int, str, str, str | None]] = []  # (day, text, kind, fact)
        self.facts: dict[str, FactSpec] = {}  # statements as keys, appended to as they are written
        self.questions: dict[str, list[str]] = {}

    def day_in(self, lo: float, hi: float) -> int:
        return self.rng.randrange(max(0, int(lo)), max(int(lo) + 1, int(hi)))

    def memory(
        self,
        day: int,
        text: str,
        kind: str,
        source: str,
        fact: str | None = None,
        value: str | None = None,
        supersedes: str | None = None,
        pin: bool = False,
    ) -> str:
        key = f"k{len(self.mems):04d}"
        self.mems.append(MemorySpec(key, day, 0, text, kind, source, fact, value, supersedes, pin))
        return key

    def fact(self, fid: str, source: str, role: str, questions: list[str]) -> None:
        self.facts[fid] = FactSpec(fid, source, role, ())
        self.questions[fid] = questions

    def state(self, fid: str, day: int, text: str, source: str, value: str | None = None, **extra: Any) -> str:
        key = self.memory(day, text, "statement", source, fact=fid, value=value, **extra)
        self.facts[fid] = replace(self.facts[fid], statements=(*self.facts[fid].statements, key))
        return key

    def question(self, fid: str) -> str:
        return _lead(self.rng, self.rng.choice(self.questions[fid]))

    def turn(self, day: int, kind: str, fid: str | None = None, text: str | None = None) -> None:
        if 0 <= day < self.sizes.days:
            self.turns.append((day, text if text is not None else self.question(fid or ""), kind, fid))


def _slot_days(b: _Builder, role: str) -> list[int]:
    """The days a slot's statements are written, by role."""
    d = b.sizes.days
    if role in ("changing", "old_changing", "weekly_changing"):
        first = {
            "changing": (0, 0.4 * d),
            "old_changing": (0, 0.2 * d),
            "weekly_changing": (0, d / 6),
        }[role]
        gap = (d / 6, d / 3 if role != "changing" else 0.42 * d)
        days = [b.day_in(*first)]
        while True:
            nxt = days[-1] + b.day_in(*gap)
            limit = 0.55 * d if role == "old_changing" else d - 2
            if nxt > limit or len(days) == 3:
                break
            days.append(nxt)
        if len(days) < 2:
            days.append(min(int(limit), days[0] + int(gap[0])))
        return days
    if role in ("old", "pinned"):
        return [b.day_in(0, d / 4 if role == "old" else d / 6)]
    if role == "weekly":
        return [b.day_in(0, d / 3)]
    return [b.day_in(0, d - 1)]  # oneoff


def _weekly_asks(b: _Builder, fid: str, start: int, to_end: bool) -> None:
    weeks = 10_000 if to_end else b.rng.randint(8, 20)
    for w in range(1, weeks + 1):
        if start + 7 * w >= b.sizes.days:
            break
        b.turn(start + 7 * w, "weekly", fid)


def _old_ask(b: _Builder, fid: str, last: int) -> None:
    """Once early (maybe), then silence, then once, months later."""
    d = b.sizes.days
    if b.rng.random() < b.sizes.early_ask_share:
        b.turn(last + b.rng.randint(1, 5), "recent", fid)
    lo = max(last + d / 3, 0.45 * d)
    b.turn(b.day_in(lo, d), "old", fid)


def _slots(b: _Builder) -> None:
    s = b.sizes
    pairs = [(kind, person) for kind in KINDS for person in kind.people]
    b.rng.shuffle(pairs)
    roles = (
        ["changing"] * s.changing
        + ["weekly_changing"] * s.weekly_changing
        + ["old_changing"] * s.old_changing
        + ["weekly"] * s.weekly
        + ["pinned"] * s.pinned
        + ["old"] * s.old
        + ["oneoff"] * s.oneoff
    )
    if len(roles) > len(pairs):
        raise ValueError(f"{len(roles)} slots asked for, {len(pairs)} (kind, person) pairs exist")
    for role, (kind, person) in zip(roles, pairs, strict=False):
        _slot(b, role, kind, person)


def _slot(b: _Builder, role: str, kind: Kind, person: str) -> None:
    fid = f"slot:{person}/{kind.name}"
    b.fact(fid, "slot", role, [ask(q, person) for q in kind.questions])
    days = _slot_days(b, role)
    values = b.rng.sample(kind.values, len(days))
    templates = b.rng.sample(kind.statements, len(days)) if len(days) <= len(kind.statements) else kind.statements
    prev: str | None = None
    for j, (day, value) in enumerate(zip(days, values, strict=True)):
        if j > 0 and b.rng.random() < CHANGE_SHARE:
            text = state(b.rng.choice(kind.changes), person, v=value, old=values[j - 1])
        else:
            text = state(templates[j % len(templates)], person, v=value)
        supersedes = prev if prev is not None and b.rng.random() < b.sizes.supersede_share else None
        prev = b.state(fid, day, text, "slot", value=value, supersedes=supersedes, pin=role == "pinned")
    if b.rng.random() < b.sizes.distractor_share:
        b.memory(b.day_in(0, b.sizes.days - 1), state(b.rng.choice(kind.distractors), person), "distractor", "slot")
    if role == "pinned":
        for m in range(1, 100):
            b.turn(days[0] + 30 * m, "pinned", fid)
    elif role == "weekly":
        _weekly_asks(b, fid, days[0], to_end=b.rng.random() < 0.5)
    elif role == "weekly_changing":
        _weekly_asks(b, fid, days[0], to_end=True)
    elif role == "old":
        _old_ask(b, fid, days[0])
    elif role == "old_changing":
        for day in days[:-1]:
            if b.rng.random() < b.sizes.early_ask_share:
                b.turn(day + b.rng.randint(1, 5), "recent", fid)
        _old_ask(b, fid, days[-1])


def _said(b: _Builder, sources: Sources) -> None:
    s = b.sizes
    pool = list(sources.said)
    b.rng.shuffle(pool)
    roles = ["old"] * s.said_old + ["oneoff"] * s.said_oneoff
    for role, f in zip(roles, pool, strict=False):
        fid = f"said:{f.id}"
        b.fact(fid, "said", role, [f.question])
        day = b.day_in(0, s.days / 4) if role == "old" else b.day_in(0, s.days - 1)
        b.state(fid, day, f"{f.speaker} said: {f.turn}", "said")
        if role == "old":
            _old_ask(b, fid, day)
    noise = list(sources.said_noise)
    b.rng.shuffle(noise)
    for speaker, text in noise[: s.said_noise]:
        b.memory(b.day_in(0, s.days - 1), f"{speaker} said: {text}", "noise", "said")


def _findings(b: _Builder, sources: Sources) -> None:
    s = b.sizes
    pool = list(sources.findings)
    b.rng.shuffle(pool)
    roles = ["weekly"] * s.finding_weekly + ["old"] * s.finding_old + ["oneoff"] * s.finding_oneoff
    for role, f in zip(roles, pool, strict=False):
        fid = f"finding:{f.id}"
        b.fact(fid, "finding", role, [_finding_question(random.Random(f.id + str(i)), f.claim) for i in range(3)])
        day = {"weekly": b.day_in(0, s.days / 3), "old": b.day_in(0, s.days / 4)}.get(role) or b.day_in(0, s.days - 1)
        b.state(fid, day, f"Paper note, {f.title}: {f.sentence}", "finding")
        if role == "weekly":
            _weekly_asks(b, fid, day, to_end=b.rng.random() < 0.5)
        elif role == "old":
            _old_ask(b, fid, day)
    noise = list(sources.finding_noise)
    b.rng.shuffle(noise)
    for title, sentence in noise[: s.finding_noise]:
        b.memory(b.day_in(0, s.days - 1), f"Paper note, {title}: {sentence}", "noise", "finding")


def _daily_talk(b: _Builder, sources: Sources, written: dict[str, int]) -> None:
    """Recent talk (about facts written in the last weeks) and off-topic talk, every day."""
    s = b.sizes
    talkable = [
        (fid, day)
        for fid, f in b.facts.items()
        if f.role in ("changing", "oneoff")
        for day in [written[k] for k in f.statements]
    ]
    offtopic = list(sources.offtopic)
    b.rng.shuffle(offtopic)
    used = 0
    for day in range(s.days):
        cands = [(fid, day - d) for fid, d in talkable if 0 <= day - d < RECENT_WINDOW]
        for _ in range(s.recent_per_day if cands else 0):
            weights = [math.exp(-age / RECENT_SCALE) for _, age in cands]
            fid, _age = b.rng.choices(cands, weights=weights)[0]
            b.turn(day, "recent", fid)
        for _ in range(s.offtopic_per_day if offtopic else 0):
            b.turn(day, "offtopic", None, offtopic[used % len(offtopic)])
            used += 1


def generate_world(sources: Sources, sizes: Sizes | None = None, seed: int = 24) -> World:
    """The memories and turns of `sizes.days` days, deterministic for (sources, sizes, seed)."""
    sizes = sizes or Sizes()
    b = _Builder(sizes, seed)
    _slots(b)
    _said(b, sources)
    _findings(b, sources)
    written = {m.id: m.day for m in b.mems}
    _daily_talk(b, sources, written)
    # Ids in the order written; a memory's minute is its place among that day's writes.
    order = sorted(b.mems, key=lambda m: (m.day, m.id))
    ids = {m.id: f"m{i:04d}" for i, m in enumerate(order, 1)}
    per_day: dict[int, int] = {}
    memories: list[MemorySpec] = []
    for m in order:
        n = per_day.get(m.day, 0)
        per_day[m.day] = n + 1
        sup = ids[m.supersedes] if m.supersedes else None
        memories.append(replace(m, id=ids[m.id], minute=WRITE_MINUTE + 3 * n, supersedes=sup))
    facts = {fid: replace(f, statements=tuple(ids[k] for k in f.statements)) for fid, f in b.facts.items()}
    turns = _timed(b.rng, b.turns)
    params: dict[str, object] = {"seed": seed, **{k: getattr(sizes, k) for k in sizes.__dataclass_fields__}}
    return World(sizes.days, memories, turns, facts, params)


def _timed(rng: random.Random, turns: Sequence[tuple[int, str, str, str | None]]) -> list[TurnSpec]:
    """Each day's turns in a random order, spread over the day."""
    by_day: dict[int, list[tuple[str, str, str | None]]] = {}
    for day, text, kind, fid in turns:
        by_day.setdefault(day, []).append((text, kind, fid))
    out: list[TurnSpec] = []
    lo, hi = DAY_MINUTES
    for day in sorted(by_day):
        items = by_day[day]
        rng.shuffle(items)
        step = (hi - lo) // max(1, len(items))
        out += [TurnSpec(day, lo + i * step, text, kind, fid) for i, (text, kind, fid) in enumerate(items)]
    return out


__all__ = [
    "START",
    "FactSpec",
    "Finding",
    "MemorySpec",
    "SaidFact",
    "Sizes",
    "Sources",
    "TurnSpec",
    "World",
    "ask",
    "generate_world",
    "load_sources",
    "state",
]
