"""The numbers on an embedder's cosine scale, in one record per embedder.

Every threshold that compares a cosine lives here, not in the ranking code: each embedder
puts related texts at its own distance (MiniLM's paraphrases sit near 0.7, another model's
near 0.85), so a number tuned on one is wrong for another. A record holds three:

    weak       below it a hit says little about the query: marked `weak`, never in a prefetch
               block, and a turn with nothing above it gets no block. Also what refreshes a
               staged memory the turn is about, and, in "the same thing stated differently"
               (ranking.same_fact_groups), both how well each note must answer and how close
               their two answers must be (bench same_fact: a separate number, 0.4 or 0.45,
               ranked updates and updates_hard no better and the real vault no differently).
    strong     a clear answer: the hit recall rehearses (counts as used) and the cosine that
               brings a dormant note back.
    conflict   a new memory that states what a note says (needs_review, conflicts.py).
    asked      the weak bar of a question's first hit (rules.ReadRules.first_hit_asked): what
               recall finds first when asked, below `weak` (stop 64, docs/ranking.md).

(Whether two statements are one repeated is a matter of their words, not of a cosine:
repeats.is_repeat.)

MiniLM's record was measured (each number's study is in `MINILM.source` and docs/ranking.md).
Any other embedder gets, in this order: a record saved in its index folder by `vault-memory
calibrate` (which embeds the 42 question/answer pairs in `data/calibration_pairs.json` and
maps MiniLM's numbers onto the new scale: a threshold keeps its place between the mean cosine
of a question to another question's answer and to its own answer), else MiniLM's numbers,
marked as a fallback (`status` says so).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

log = logging.getLogger(__name__)

FILE_NAME = "calibration.json"


@dataclass(frozen=True)
class Calibration:
    """The cosine thresholds of one embedder (module docstring)."""

    embedder: str  # identity (or identity prefix, for the built-in records)
    weak: float
    strong: float
    conflict: float
    source: str  # where the numbers come from
    #: mean cosine of a built-in question to its own answer, and to the other questions' answers
    answer_mean: float | None = None
    other_mean: float | None = None
    #: the weak bar of a question's first hit (None in a record saved before stop 64: `weak`)
    asked: float | None = None

    @property
    def asked_bar(self) -> float:
        """The weak bar of a question's first hit: `asked`, never above `weak` (and `weak` in a record
        without one)."""
        return self.weak if self.asked is None else min(self.asked, self.weak)

    @property
    def fallback(self) -> bool:
        return self.source.startswith("fallback")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


MINILM = Calibration(
    embedder="minilm-l6-v2",
    weak=0.35,  # bench prefetch_threshold: 90 % of LoCoMo questions' evidence above it, 64 % of others' blocks at 0.30
    strong=0.5,  # bench rehearse_floor: 11 % of unanswerable questions reach it; LoCoMo reactivation cap
    conflict=0.52,  # bench tools --part conflicts: contradictions 0.87 flagged, related facts 0.00
    source="measured: bench prefetch_threshold, rehearse_floor, same_fact, tools conflicts (MiniLM)",
    answer_mean=0.4522,
    other_mean=0.0532,
    # stop 64 (docs/ranking.md): chosen leave one vault out among 0.25-0.35 over the question files
    # and the pool; the simulated year's needed fact 0.924 -> 0.946 with its block precision kept,
    # which a weak bar of 0.30 for every hit lost (0.377 -> 0.303)
    asked=0.275,
)
#: The fake embedder of the tests shares MiniLM's numbers: its hashed vectors are not meant to
#: be calibrated, and the tests were written against these values. Its hashed words put an unrelated
#: question ("How many legs does a spider have?") above MiniLM's `asked` bar, where MiniLM puts it
#: at 0.18: it has none (every hit judged by `weak`); a test of the `asked` bar sets one.
FAKE = replace(MINILM, embedder="fake", asked=None, source="tests: MiniLM's numbers for the fake embedder")
BUILT_IN = (MINILM, FAKE)


def built_in(identity: str) -> Calibration | None:
    """The built-in record for an embedder identity (by prefix), if there is one."""
    for rec in BUILT_IN:
        if identity.startswith(rec.embedder):
            return rec
    return None


def resolve(identity: str, index_dir: Path | None = None) -> Calibration:
    """The record an embedder ranks with: saved by `calibrate` in the index folder, built in, or
    MiniLM's as a fallback."""
    saved = load(index_dir, identity) if index_dir is not None else None
    if saved is not None:
        return saved
    known = built_in(identity)
    if known is not None:
        return known
    return replace(
        MINILM,
        embedder=identity,
        source="fallback: MiniLM's numbers (uncalibrated for this embedder; run `vault-memory calibrate`)",
        answer_mean=None,
        other_mean=None,
    )


def load(index_dir: Path, identity: str) -> Calibration | None:
    path = index_dir / FILE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rec = Calibration(**data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        log.warning("%s: unreadable calibration (%s); using the built-in one. Run `vault-memory calibrate`.", path, exc)
        return None
    return rec if rec.embedder == identity else None


def save(index_dir: Path, rec: Calibration) -> Path:
    index_dir.mkdir(parents=True, exist_ok=True)
    path = index_dir / FILE_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec.to_dict(), indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


class Embeds(Protocol):
    """What calibrating needs of an embedder (embedders.Embedder has it): named here so that this
    module, which ranking reads thresholds from, does not sit above the embedders."""

    @property
    def identity(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Any: ...


def pairs() -> list[tuple[str, str]]:
    """The built-in (question, answer) pairs (sample_vault's notes; bench/data/realvault.py)."""
    raw = resources.files("vault_memory").joinpath("data/calibration_pairs.json").read_text(encoding="utf-8")
    return [(p["question"], p["answer"]) for p in json.loads(raw)["pairs"]]


def scale(embedder: Embeds, data: Sequence[tuple[str, str]] | None = None) -> tuple[float, float]:
    """(mean cosine of a question to its answer, mean cosine to the other questions' answers)."""
    data = list(pairs() if data is None else data)
    q = np.asarray(embedder.embed([a for a, _ in data]), dtype=np.float64)
    a = np.asarray(embedder.embed([b for _, b in data]), dtype=np.float64)
    sims = q @ a.T
    own = float(np.mean(np.diag(sims)))
    others = float((sims.sum() - np.trace(sims)) / (sims.size - len(data)))
    return own, others


def calibrate(embedder: Embeds, reference: Calibration = MINILM) -> Calibration:
    """A record for `embedder`: each of the reference's thresholds moved to the same place between
    the two means on the new scale (an affine map; cosines stay below 1)."""
    assert reference.answer_mean is not None and reference.other_mean is not None
    own, others = scale(embedder)
    if own - others < 0.05:
        raise ValueError(
            f"{embedder.identity} does not tell a question's answer from other notes' "
            f"(mean cosine {own:.3f} against {others:.3f}); it cannot be calibrated"
        )  # a ValueError the CLI reports; the record stays as it was
    ref_own, ref_others = reference.answer_mean, reference.other_mean
    stretch = (own - others) / (ref_own - ref_others)

    def move(t: float) -> float:
        return round(min(0.999, others + (t - ref_others) * stretch), 4)

    return Calibration(
        embedder=embedder.identity,
        weak=move(reference.weak),
        strong=move(reference.strong),
        conflict=move(reference.conflict),
        asked=move(reference.asked_bar),
        source=f"calibrated on {len(pairs())} built-in pairs against MiniLM's record",
        answer_mean=round(own, 4),
        other_mean=round(others, 4),
    )


__all__ = ["BUILT_IN", "FAKE", "MINILM", "Calibration", "built_in", "calibrate", "load", "resolve", "save", "scale"]
