"""A simulated year of an agent's memory: what decay buys, per variant, in one run (issue 24).

The world (data/lifetime.py) is one user's year: about 360 memories written day by day
through `Memory.remember` (facts that change, some superseded explicitly; recurring needs;
facts asked once after months of silence; pinned facts; distractors on the same subjects),
and about 2,500 turns (recent talk, weekly needs, rare old questions, off-topic talk). Every
variant replays the same world on a vault and index of its own, through the public API only:

- each memory: `remember(text, now=, supersedes=)` at its time; `pin` for pinned ones;
- each turn: `prefetch(text, now=)` (the block an agent puts in its prompt), and for a turn
  that asks for something (not off-topic talk) `recall(text, k=5, now=)`, which rehearses
  what clearly answered (the library's rule, `rehearse*` settings);
- at the end of every 30-day month: every memory's strength and dormancy (`IndexFolder.decay` on
  the catalog's frontmatter), and every day the files the vault rewrote (what a daily git
  commit of the vault would show).

A variant is a name, a line saying what it changes, the `Config` settings it overrides, and
two flags for what the public API takes per call (`recall(decay=)`, `prefetch(touch=)`):
add one to VARIANTS and it is in the next run's table.

What is measured (per turn, then per month and over the year; `score_turn` is the checker):

- block precision: entries (and characters) that are the current statement of what the turn
  asks (on-topic turns with a block; a same-subject distractor or another fact is not);
- stale share: entries stating a value a newer memory had replaced when the turn came
  (all turns); how many of those carry prefetch's "older" label; turns whose block shows an
  old value of the asked fact without its current one;
- needed fact in block, recall@5 per turn kind; for `old` turns (asked once after months of
  silence, still true) that recall@5 is the reactivation test; newest statement first in
  recall (facts with a replaced statement);
- off-topic turns given a block;
- the active set (memories not dormant) and reinforcement runaway (non-pinned memories at
  strength >= 0.95) per month; rehearsal writes and files rewritten.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vault_memory.internals import internals

from ..data.lifetime import Sizes, Sources, World, generate_world, load_sources
from ..harness import Result, RunOptions, cache_key, log, table

K = 5
MONTH = 30  # days: months are 30 days, the year 12 of them
RUNAWAY = 0.95
FOREVER = 36_500.0  # the longest half-life the config allows (100 years): strength >= 0.993 after a year
ASKING = ("recent", "weekly", "old", "pinned")  # turn kinds that ask for a fact (recall is called)
TURN_KINDS = (*ASKING, "offtopic")


# --------------------------------------------------------------------------- variants


@dataclass(frozen=True)
class Variant:
    """One way of running the library: settings (`Config` fields) and per-call flags."""

    name: str
    what: str
    config: Mapping[str, Any] = field(default_factory=dict)
    recall_decay: bool = True  # recall(decay=...)
    prefetch_decay: bool = True  # prefetch(decay=...)
    pins: bool = True  # the agent pins what the world says it pins
    prefetch_touch: bool = False  # prefetch(touch=...): rehearse what the block shows
    #: thresholds of the embedder's calibration record to override (calibration.py)
    calibration: Mapping[str, float] = field(default_factory=dict)
    #: the read path's rules to change for this variant (search/rules.py: `{"head": 10}`): the
    #: Memory of its replay is opened with `DEFAULT_RULES.but(**rules)`
    rules: Mapping[str, Any] = field(default_factory=dict)


NO_CURVE = {"dormant_below": 0.0, "half_life_short_days": FOREVER, "half_life_long_days": FOREVER}
VARIANTS: tuple[Variant, ...] = (
    Variant(
        "off",
        "decay off: recall(decay=False) and prefetch(decay=False): relevance order, no dormancy, no "
        "dates (superseded notes still leave prefetch: a relation the vault states, not time); 100-year "
        "half-lives so the memory's state (active set, runaway) reads as no forgetting",
        NO_CURVE,
        recall_decay=False,
        prefetch_decay=False,
    ),
    Variant(
        "today",
        "the shipped defaults (half-lives 7 d for committed memories, 60 d for other notes, dormant below "
        "0.1; recall finds dormant notes; prefetch shows a dormant one only when the turn cues it (a clear "
        "match, all its words, or the first hit of a question), about the people the turn names, and no entry above "
        "names it in conflicts_with)",
    ),
    Variant(
        "replaced_come_back",
        "a cued dormant note enters a block even when an entry above names it in conflicts_with (the rule "
        "before issue 24)",
        rules={"keeps_replaced_out": None},
    ),
    Variant(
        "replaced_by_any",
        "a cued dormant note stays out of a block whenever a live note that answers the turn at all names it "
        "in conflicts_with, however much less it answers (the rule before issue 39's second round)",
        rules={"keeps_replaced_out": 0.0},
    ),
    Variant(
        "recall_hides",
        "recall leaves dormant notes out unless cued, as prefetch does (the rule before issue 24)",
        rules={"recall_hides_dormant": True},
    ),
    Variant(
        "prefetch_no_dormant",
        "a dormant note never enters a block, however closely the turn matches it (recall still finds it)",
        rules={"shows_cued_dormant": False},
    ),
    Variant(
        "unknown_names_heard",
        "a turn naming something no memory mentions is still answered by the closest memories",
        rules={"unknown_names_silence": False},
    ),
    Variant(
        "rehearse_always",
        "recall writes every clear use into the note, however strong it still is (the rule before issue 39)",
        rules={"rehearse_below": 1.01},
    ),
    Variant(
        "first_not_cued",
        "a question's first hit is cued like any other hit (a clear match, or all its words): the rule before a "
        "person's faded decision went missing from the block for a turn about it",
        rules={"first_hit_cue": False},
    ),
    Variant(
        "others_cued",
        'a dormant note comes back for a query about other people than it is about ("what phone does my '
        "partner Alex use\" cueing the user's own old phone): the rule before stop 65",
        rules={"cues_its_people": False},
    ),
    Variant(
        "first_hit_weak",
        "a question's first hit is weak below the weak bar like any other hit, not only below the lower `asked` "
        "bar (the rule before stop 64)",
        rules={"first_hit_asked": False},
    ),
    Variant(
        "no_curve",
        "no forgetting, recall's decay-on rules kept: like `off` for strength, but recall(decay=True) still "
        "orders statements of one question newest first and a successor above what it supersedes",
        NO_CURVE,
    ),
    Variant(
        "no_dormancy",
        "dormant_below=0: strength only weighs the prefetch score and breaks ties",
        {"dormant_below": 0.0},
    ),
    Variant("no_pinning", "the agent never pins: the facts it would pin decay like any other", pins=False),
    Variant("no_rehearsal", 'rehearse="none": recall writes nothing back', {"rehearse": "none"}),
    Variant("one_tier", "half_life_short_days=60: both tiers decay like long", {"half_life_short_days": 60.0}),
    Variant("slower", "half-lives 30 / 180 d", {"half_life_short_days": 30.0, "half_life_long_days": 180.0}),
    Variant("faster", "half-lives 3 / 30 d", {"half_life_short_days": 3.0, "half_life_long_days": 30.0}),
    Variant(
        "strong_035",
        "the clear-match cosine at 0.35 (the weak bar): any match at prefetch's admission bar wakes a dormant "
        "memory, and recall rehearses any hit that clears it",
        calibration={"strong": 0.35},
    ),
    Variant(
        "prefetch_touch",
        "prefetch(touch=True): what the block shows is rehearsed too (the runaway case)",
        prefetch_touch=True,
    ),
)
QUICK_VARIANTS = ("off", "today", "prefetch_touch")
SAMPLED = ("off", "today")  # variants whose turns are kept for reading by eye (samples in the JSON)

# Mechanisms the public API and config cannot switch, each with the switch it would need.
NEEDS_A_SWITCH: tuple[tuple[str, str], ...] = (
    (
        "strength as a bounded ranking multiplier in recall (mem0's 0.3-1.5x)",
        "a recall weight on strength; recall uses strength only for dormancy and a two-decimal tie-break",
    ),
    (
        "spacing: each day of use lengthens the half-life",
        "a per-note half-life from the days of use (the retired `rehearsal_days` counted them for promotion)",
    ),
    ("per-folder or per-type half-lives", "half-life settings keyed by folder or frontmatter `type`"),
)


# --------------------------------------------------------------------------- the checker (pure)


@dataclass(frozen=True)
class Entry:
    """A block entry as the checker sees it."""

    memory: str  # the world's memory id ("?" when the note is not one of ours)
    chars: int  # its line in the block
    labelled: bool = False  # prefetch marked it as one of several statements (`change`)
    strength: float = 1.0  # as prefetch reported it


@dataclass(frozen=True)
class TurnScore:
    entries: int
    chars: int
    relevant: int  # entries that are the turn's target (the current statement of what it asks)
    relevant_chars: int
    stale: int  # entries stating a replaced value (any fact)
    stale_chars: int
    stale_unlabelled: int
    has_target: bool
    stale_only: bool  # an old value of the asked fact shown, its current value not


def score_turn(
    entries: Sequence[Entry], target: str | None, stale: Iterable[str], replaced: Iterable[str]
) -> TurnScore:
    """Score one block: `target` the memory that answers the turn now (None: off-topic), `stale`
    every statement replaced by then, `replaced` those of the fact the turn asks for."""
    stale_set, replaced_set = set(stale), set(replaced)
    rel = [e for e in entries if target is not None and e.memory == target]
    old = [e for e in entries if e.memory in stale_set]
    has_target = bool(rel)
    return TurnScore(
        entries=len(entries),
        chars=sum(e.chars for e in entries),
        relevant=len(rel),
        relevant_chars=sum(e.chars for e in rel),
        stale=len(old),
        stale_chars=sum(e.chars for e in old),
        stale_unlabelled=sum(1 for e in old if not e.labelled),
        has_target=has_target,
        stale_only=not has_target and any(e.memory in replaced_set for e in entries),
    )


#: Why an asking turn's block lacked its needed fact, in the order they are checked (`miss_reason`).
MISSES = ("kept out, faded", "weak", "not in recall's top 5", "found, not shown")


def miss_reason(target_node: str | None, kept_out: Iterable[str], hits: Sequence[tuple[str, bool]]) -> str:
    """Why the block lacks the turn's answer (`target_node`): prefetch kept it out as dormant (not cued,
    or a live note answering nearly as well names it), recall (k=K, `hits`: (node_id, weak)) finds it
    only weak, does not find it, or finds it clearly and the block still does not show it (the budget,
    merged into an entry above, a part that says nothing)."""
    if target_node is not None and target_node in set(kept_out):
        return MISSES[0]
    weak = dict(hits).get(target_node) if target_node is not None else None
    if weak is None:
        return MISSES[2]
    return MISSES[1] if weak else MISSES[3]


def newest_first(hits: Sequence[str], target: str | None, replaced: Iterable[str]) -> bool:
    """The current statement is returned and ranked above every replaced one returned."""
    if target is None or target not in hits:
        return False
    at = hits.index(target)
    return all(hits.index(r) > at for r in replaced if r in hits)


def _ratio(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


def _median(xs: Sequence[float]) -> float | None:
    return round(float(np.median(xs)), 4) if xs else None


def summarise(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The year's (or a month's) numbers from per-turn records (`simulate`'s `turns`)."""
    on = [t for t in turns if t["kind"] in ASKING]
    off = [t for t in turns if t["kind"] == "offtopic"]
    blocks = [t for t in on if t["score"].entries]
    every = [t["score"] for t in turns]
    changed = [t for t in on if t["replaced"]]
    out: dict[str, Any] = {
        "turns": len(turns),
        "precision": _ratio(sum(t["score"].relevant for t in blocks), sum(t["score"].entries for t in blocks)),
        "precision_chars": _ratio(
            sum(t["score"].relevant_chars for t in blocks), sum(t["score"].chars for t in blocks)
        ),
        "stale_share": _ratio(sum(s.stale for s in every), sum(s.entries for s in every)),
        "stale_chars_share": _ratio(sum(s.stale_chars for s in every), sum(s.chars for s in every)),
        "stale_unlabelled_share": _ratio(sum(s.stale_unlabelled for s in every), sum(s.entries for s in every)),
        "stale_only": _ratio(sum(t["score"].stale_only for t in changed), len(changed)),
        "asked_stale_shown": _ratio(
            sum(any(e in t["replaced"] for e in t.get("entries", ())) for t in changed), len(changed)
        ),
        "changed_turns": len(changed),
        "block_hit": _ratio(sum(t["score"].has_target for t in on), len(on)),
        "recall_at_5": _ratio(sum(t["target"] in t["hits"] for t in on), len(on)),
        "newest_first": _ratio(sum(newest_first(t["hits"], t["target"], t["replaced"]) for t in changed), len(changed)),
        "offtopic_block": _ratio(sum(bool(t["score"].entries) for t in off), len(off)),
        "entries_per_block": _ratio(sum(s.entries for s in every), sum(bool(s.entries) for s in every)),
        "chars_per_block": _ratio(sum(t["block_chars"] for t in turns), sum(bool(t["block_chars"]) for t in turns)),
        "rehearsed": sum(t["rehearsed"] for t in turns),
        "stale_per_100_turns": _ratio(100 * sum(s.stale for s in every), len(every)),
    }
    detail = [d for t in turns for d in t.get("stale_detail", [])]
    out["stale_superseded"] = sum(d["superseded"] for d in detail)  # prefetch never shows these: expect 0
    out["stale_days_replaced_median"] = _median([d["days_replaced"] for d in detail])
    out["stale_within_7_days"] = _ratio(sum(d["days_replaced"] <= 7 for d in detail), len(detail))
    out["stale_strength_median"] = _median([d["strength"] for d in detail])
    for kind in ASKING:
        ts = [t for t in on if t["kind"] == kind]
        out[f"{kind}_turns"] = len(ts)
        out[f"{kind}_recall_at_5"] = _ratio(sum(t["target"] in t["hits"] for t in ts), len(ts))
        out[f"{kind}_block_hit"] = _ratio(sum(t["score"].has_target for t in ts), len(ts))
        shown = [t["score"] for t in ts if t["score"].entries]
        out[f"{kind}_precision"] = _ratio(sum(x.relevant for x in shown), sum(x.entries for x in shown))
        out[f"{kind}_dormant_at_ask"] = _ratio(sum(bool(t.get("target_dormant")) for t in ts), len(ts))
        out[f"{kind}_target_rehearsed"] = _ratio(sum(bool(t.get("target_rehearsed")) for t in ts), len(ts))
    for reason in MISSES:
        out[f"missed: {reason}"] = sum(t.get("miss") == reason for t in on)
    old = [t for t in on if t["kind"] == "old" and t["role"] == "old"]
    out["old_true_turns"] = len(old)
    out["old_true_recall_at_5"] = _ratio(sum(t["target"] in t["hits"] for t in old), len(old))
    out["old_true_block_hit"] = _ratio(sum(t["score"].has_target for t in old), len(old))
    out["old_true_dormant_at_ask"] = _ratio(sum(bool(t.get("target_dormant")) for t in old), len(old))
    return out


# --------------------------------------------------------------------------- embedding, once per text


class CachedEmbedder:
    """An Embedder that embeds each text once across every variant (and across runs: `path`).

    Every variant reads the same texts (memories, turns, their sentences); without this each
    variant's fresh index would embed them all again. The vectors are the inner embedder's."""

    def __init__(self, inner: Any, path: Path | None = None) -> None:
        self.inner = inner
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        self.tokens: dict[str, int] = {}
        self.new = 0
        self.embedded = 0
        if path is not None and path.is_file():
            with np.load(path, allow_pickle=False) as data:
                if str(data["identity"]) == inner.identity:
                    self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    @property
    def identity(self) -> str:
        return str(self.inner.identity)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    @property
    def max_tokens(self) -> int:
        return int(self.inner.max_tokens)

    def count_tokens(self, text: str) -> int:
        n = self.tokens.get(text)
        if n is None:
            n = self.tokens[text] = int(self.inner.count_tokens(text))
        return n

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}.items())
        if missing:
            fresh = self.inner.embed([t for _, t in missing])
            for (k, _), v in zip(missing, fresh, strict=True):
                self.vectors[k] = np.asarray(v, dtype=np.float32)
            self.new += len(missing)
            self.embedded += len(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self.vectors[k] for k in keys]).astype(np.float32, copy=False)

    def save(self) -> None:
        if self.path is None or not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.vectors)
        tmp = self.path.with_name(self.path.name + ".tmp.npz")
        np.savez(
            tmp,
            identity=np.array(self.identity),
            keys=np.array(keys),
            vectors=np.vstack([self.vectors[k] for k in keys]),
        )
        os.replace(tmp, self.path)
        self.new = 0


# --------------------------------------------------------------------------- one variant's year


def _vault_files(vault: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in vault.rglob("*.md"):
        rel = p.relative_to(vault)
        if not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = p.stat().st_mtime_ns
    return out


class FileTimes:
    """File times follow the simulated clock: a file the library writes at simulated time T gets T.

    The library never writes into a note saved less than a second ago by someone else (a person's
    editor may be mid-save: notefile.write_note's quiet period, judged on the wall clock against
    the file's mtime), and a rehearsal that meets that guard is dropped. A simulated year runs in
    a minute, so a recall "hours" after a `remember` comes milliseconds later on the wall clock:
    without this, which rehearsals land would depend on the machine's speed (it did: two runs of
    `today` disagreed), and every pin or supersession waited a second. With it, each file looks as
    old as the simulation says, as it would on a vault written over a year."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.known: dict[str, int] = {}  # path -> the mtime (ns) we set

    def settle(self, paths: Iterable[str | None], at: dt.datetime) -> None:
        ns = int(at.timestamp()) * 1_000_000_000
        for rel in paths:
            if not rel:
                continue
            try:
                st = os.stat(self.vault / rel)
            except OSError:
                continue
            if self.known.get(rel) != st.st_mtime_ns:  # written by the library since we last looked
                os.utime(self.vault / rel, ns=(ns, ns))
                self.known[rel] = ns


def _strengths(mem: Any, now: dt.datetime, memory_of: Mapping[str, str]) -> dict[str, Any]:
    """Strength and dormancy of every memory the agent wrote, at `now` (the variant's own model)."""
    rows = [r for r in internals(mem).catalog.notes() if r.node_id in memory_of]
    strengths, dormant, pinned = [], 0, 0
    for r in rows:
        st = internals(mem).decay.state(r.meta, r.path)
        s = internals(mem).decay.strength(st, now)
        if st.pinned:
            pinned += 1
        else:
            strengths.append(s)
        dormant += int(internals(mem).decay.dormant(st, now))
    return {
        "memories": len(rows),
        "active": len(rows) - dormant,
        "active_share": _ratio(len(rows) - dormant, len(rows)),
        "runaway": _ratio(sum(s >= RUNAWAY for s in strengths), len(strengths)),
        "median_strength": round(float(np.median(strengths)), 4) if strengths else None,
        "pinned": pinned,
    }


def simulate(
    world: World,
    variant: Variant,
    root: Path,
    embedder: Any,
    *,
    embedder_name: str = "fake",
    samples_per_month: int = 0,
) -> dict[str, Any]:
    """Replay `world` with `variant` in a fresh vault and index under `root`; per-turn records and monthly states."""
    from vault_memory import Config, Memory
    from vault_memory.search.rules import DEFAULT_RULES

    shutil.rmtree(root, ignore_errors=True)
    vault, index = root / "vault", root / "index"
    vault.mkdir(parents=True)
    cfg = Config(vault=vault, index_dir=index, embedder=embedder_name, review_note="", **dict(variant.config))
    cal = None
    if variant.calibration:
        from dataclasses import replace

        from vault_memory.index.calibration import resolve

        cal = replace(resolve(embedder.identity), **variant.calibration)
    node_of: dict[str, str] = {}
    memory_of: dict[str, str] = {}
    duplicates: list[str] = []
    turns: list[dict[str, Any]] = []
    months: list[dict[str, Any]] = []
    rewrites = [0] * world.days
    samples: list[dict[str, Any]] = []
    sampled: dict[tuple[int, str], int] = {}
    writes_by_day: dict[int, list[Any]] = {}
    for m in world.memories:
        writes_by_day.setdefault(m.day, []).append(m)
    turns_by_day: dict[int, list[Any]] = {}
    for t in world.turns:
        turns_by_day.setdefault(t.day, []).append(t)
    started = time.perf_counter()
    times = FileTimes(vault)
    path_of: dict[str, str] = {}
    with Memory(cfg, embedder=embedder, calibration=cal, rules=DEFAULT_RULES.but(**variant.rules)) as mem:
        seen = _vault_files(vault)
        for day in range(world.days):
            for m in writes_by_day.get(day, []):
                at = world.when(m.day, m.minute)
                sup = node_of.get(m.supersedes) if m.supersedes else None
                done = mem.remember(m.text, now=at, supersedes=sup)
                if done.existing:
                    duplicates.append(m.id)
                node_of[m.id] = done.node_id
                path_of[m.id] = done.path
                memory_of.setdefault(done.node_id, m.id)
                times.settle([done.path, path_of.get(m.supersedes or "")], at)
                if m.pin and variant.pins:
                    times.settle([mem.pin(done.node_id).path], at)
            for t in turns_by_day.get(day, []):
                at = world.when(t.day, t.minute)
                target = world.current(t.fact, at) if t.fact else None
                stale = world.stale(at)
                replaced = [s for s in world.facts[t.fact].statements if s in stale] if t.fact else []
                pre = mem.prefetch(
                    t.text, now=at, refresh_staged=False, touch=variant.prefetch_touch, decay=variant.prefetch_decay
                )
                if variant.prefetch_touch:
                    times.settle([e.path for e in pre.entries], at)
                # the entries' lines: between the markers, after the line that says the block is data
                lines = [ln for ln in pre.block.splitlines()[1:-1] if ln.startswith("- (")] if pre.block else []
                entries = [
                    Entry(memory_of.get(e.node_id, "?"), len(line) + 1, bool(e.change), e.strength)
                    for e, line in zip(pre.entries, lines, strict=True)
                ]
                stale_detail = [
                    {
                        "days_replaced": round((at - replaced_on).total_seconds() / 86400, 1),
                        "strength": round(e.strength, 4),
                        "labelled": e.labelled,
                        "superseded": world.superseded_explicitly(e.memory),
                    }
                    for e in entries
                    if e.memory in stale and (replaced_on := world.replaced_at(e.memory)) is not None
                ]
                hits: list[str] = []
                miss = None
                rehearsed = 0
                target_dormant = target_rehearsed = None
                if t.kind in ASKING:
                    row = internals(mem).catalog.note_by_id(node_of[target]) if target in node_of else None
                    if row is not None:
                        target_dormant = internals(mem).decay.dormant(
                            internals(mem).decay.state(row.meta, row.path), at
                        )
                    got = mem.recall(t.text, k=K, now=at + dt.timedelta(seconds=30), decay=variant.recall_decay)
                    hits = [memory_of.get(h.node_id, "?") for h in got]
                    rehearsed = sum(h.rehearsed for h in got)
                    times.settle([h.path for h in got if h.rehearsed], at)
                    target_rehearsed = any(h.rehearsed and memory_of.get(h.node_id) == target for h in got)
                    if not any(e.memory == target for e in entries):
                        kept = [k.node_id for k in pre.kept_out]
                        miss = miss_reason(node_of.get(target or ""), kept, [(h.node_id, h.weak) for h in got])
                rec = {
                    "day": t.day,
                    "kind": t.kind,
                    "fact": t.fact,
                    "role": world.facts[t.fact].role if t.fact else None,
                    "target": target,
                    "replaced": replaced,
                    "hits": hits,
                    "rehearsed": rehearsed,
                    "block_chars": len(pre.block),
                    "entries": [e.memory for e in entries],
                    "score": score_turn(entries, target, stale, replaced),
                    "target_dormant": target_dormant,
                    "target_rehearsed": target_rehearsed,
                    "miss": miss,
                    "stale_detail": stale_detail,
                }
                turns.append(rec)
                month_kind = (t.day // MONTH, t.kind)
                if samples_per_month and sampled.get(month_kind, 0) < samples_per_month and (pre.block or t.fact):
                    sampled[month_kind] = sampled.get(month_kind, 0) + 1
                    samples.append(
                        {
                            "day": t.day,
                            "kind": t.kind,
                            "turn": t.text,
                            "target": target,
                            "target_text": world.by_id[target].text if target else None,
                            "replaced": replaced,
                            "block": pre.block,
                            "entries": [e.memory for e in entries],
                            "recall": hits,
                        }
                    )
            times.settle(list(_vault_files(vault)), world.when(day, 23 * 60 + 59))  # anything else written today
            now_files = _vault_files(vault)
            rewrites[day] = sum(1 for p, ns in now_files.items() if p in seen and seen[p] != ns)
            seen = now_files
            if day % MONTH == MONTH - 1 or day == world.days - 1:
                end = world.when(day, 23 * 60 + 59)
                state = _strengths(mem, end, memory_of)
                state.update(
                    month=day // MONTH + 1, day=day + 1, rewrites=sum(rewrites[day // MONTH * MONTH : day + 1])
                )
                months.append(state)
    return {
        "turns": turns,
        "months": months,
        "duplicates": duplicates,
        "rewrites": sum(rewrites),
        "seconds": round(time.perf_counter() - started, 1),
        "samples": samples,
    }


# --------------------------------------------------------------------------- the run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    names = ", ".join(v.name for v in VARIANTS)
    parser.add_argument(
        "--variants", default=None, help=f"comma list (default: all; quick: {', '.join(QUICK_VARIANTS)}); of {names}"
    )
    parser.add_argument("--days", type=int, default=None, help="simulated days (default 360; quick 60)")
    parser.add_argument("--seed", type=int, default=None, help="the world's seed (default 24)")
    parser.add_argument(
        "--samples", type=int, default=None, help="turns kept per month and kind for reading by eye (default 3)"
    )


def _embedder(opts: RunOptions) -> Any:
    from vault_memory.index.embedders import make_embedder

    inner = make_embedder(opts.embedder_name)
    path = opts.cache / "lifetime" / f"{cache_key('vectors', opts.embedder_name)}.npz"
    return CachedEmbedder(inner, None if opts.embedder_name == "fake" else path)


def pick_variants(names: str | None, quick: bool) -> list[Variant]:
    by_name = {v.name: v for v in VARIANTS}
    wanted = [n.strip() for n in names.split(",") if n.strip()] if names else list(QUICK_VARIANTS if quick else by_name)
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[n] for n in wanted]


def evaluate(
    world: World, variants: Sequence[Variant], root: Path, embedder: Any, *, embedder_name: str, samples: int = 0
) -> dict[str, Any]:
    """Every variant over the same world: {variant: {"year", "months", "state", "samples", ...}}."""
    out: dict[str, Any] = {}
    for v in variants:
        log(f"lifetime: {v.name} ...")
        keep = samples if v.name in SAMPLED else 0
        sim = simulate(world, v, root / v.name, embedder, embedder_name=embedder_name, samples_per_month=keep)
        by_month: dict[int, list[dict[str, Any]]] = {}
        for t in sim["turns"]:
            by_month.setdefault(t["day"] // MONTH + 1, []).append(t)
        out[v.name] = {
            "what": v.what,
            "config": dict(v.config),
            "recall_decay": v.recall_decay,
            "prefetch_touch": v.prefetch_touch,
            "year": summarise(sim["turns"]),
            "months": [{"month": m, **summarise(ts)} for m, ts in sorted(by_month.items())],
            "state": sim["months"],
            "rewrites": sim["rewrites"],
            "duplicates": sim["duplicates"],
            "seconds": sim["seconds"],
            "samples": sim["samples"],
        }
        y = out[v.name]["year"]
        log(
            f"lifetime: {v.name}: {sim['seconds']} s; precision {y['precision']}, stale {y['stale_share']}, "
            f"block hit {y['block_hit']}, old R@5 {y['old_true_recall_at_5']}, runaway "
            f"{[s['runaway'] for s in sim['months']][-1:]}, rewrites {sim['rewrites']}"
        )
    return out


def _at_month(states: Sequence[Mapping[str, Any]], month: int, key: str) -> Any:
    for s in states:
        if s["month"] == month:
            return s[key]
    return states[-1][key] if states else None


def run(opts: RunOptions) -> Result:
    res = Result("lifetime", opts)
    extra = opts.extra
    sizes = Sizes.quick() if opts.quick else Sizes()
    if extra.get("days"):
        sizes = Sizes(**{**{k: getattr(sizes, k) for k in sizes.__dataclass_fields__}, "days": int(extra["days"])})
    seed = int(extra.get("seed") or 24)
    samples = int(extra.get("samples", 3) or 0)
    variants = pick_variants(extra.get("variants"), opts.quick)
    sources: Sources = load_sources(opts.data)
    world = generate_world(sources, sizes, seed=seed)
    embedder = _embedder(opts)
    root = opts.cache / "lifetime" / cache_key(opts.suffix, opts.embedder_name)
    try:
        got = evaluate(world, variants, root, embedder, embedder_name=opts.embedder_name, samples=samples)
    finally:
        embedder.save()
    n_kinds = {k: sum(1 for t in world.turns if t.kind == k) for k in TURN_KINDS}
    n_mem: dict[str, int] = {}
    for m in world.memories:
        n_mem[f"{m.kind}/{m.source}"] = n_mem.get(f"{m.kind}/{m.source}", 0) + 1
    roles: dict[str, int] = {}
    for f in world.facts.values():
        roles[f"{f.role}/{f.source}"] = roles.get(f"{f.role}/{f.source}", 0) + 1
    res.params.update(
        days=world.days,
        months=len(next(iter(got.values()))["state"]) if got else 0,
        memories=len(world.memories),
        turns=len(world.turns),
        turn_kinds=n_kinds,
        memory_kinds=n_mem,
        fact_roles=roles,
        superseded_explicitly=sum(1 for m in world.memories if m.supersedes),
        changes=sum(len(f.statements) - 1 for f in world.facts.values()),
        world=world.params,
        k=K,
        prefetch_budget="default",
        variants=[v.name for v in variants],
        embedded_texts=embedder.embedded,
    )
    res.results = {"variants": got, "needs_a_switch": [{"mechanism": a, "switch": b} for a, b in NEEDS_A_SWITCH]}
    res.markdown += render(got, world, res.params)
    if opts.quick:
        res.markdown += ["", "_Quick: a short span, few memories, fake embedder; the numbers say nothing about decay._"]
    return res


def issue_bar(got: Mapping[str, Any], last: int) -> list[list[Any]]:
    """Each variant against `off` on issue 24's "done means" numbers."""
    base = got["off"]["year"]
    rows = []
    for name, v in got.items():
        if name == "off":
            continue
        y = v["year"]
        stale = _ratio(y["stale_share"] or 0.0, base["stale_share"] or 0.0)
        prec = (
            None
            if y["precision"] is None or base["precision"] is None
            else round(y["precision"] - base["precision"], 4)
        )
        old = (
            None
            if y["old_true_recall_at_5"] is None or base["old_true_recall_at_5"] is None
            else round(y["old_true_recall_at_5"] - base["old_true_recall_at_5"], 4)
        )
        runaway = _at_month(v["state"], last, "runaway")
        checks = [stale is not None and stale <= 0.5, prec is not None and prec > 0, old is not None and old >= -0.02]
        checks.append(runaway is not None and runaway <= 0.30)
        rows.append([name, stale, prec, old, runaway, f"{sum(checks)}/4"])
    return rows


def render(got: Mapping[str, Any], world: World, params: Mapping[str, Any]) -> list[str]:
    half = max(1, (world.days // MONTH) // 2)
    last = max(1, -(-world.days // MONTH))
    rows_block = []
    rows_recall = []
    for name, v in got.items():
        y, st = v["year"], v["state"]
        rows_block.append(
            [
                name,
                y["precision"],
                y["precision_chars"],
                y["stale_share"],
                y["stale_per_100_turns"],
                y["stale_unlabelled_share"],
                y["asked_stale_shown"],
                y["stale_only"],
                y["block_hit"],
                y["offtopic_block"],
                y["entries_per_block"],
                y["chars_per_block"],
            ]
        )
        rows_recall.append(
            [
                name,
                y["recent_recall_at_5"],
                y["weekly_recall_at_5"],
                y["old_true_recall_at_5"],
                y["old_true_block_hit"],
                y["old_true_dormant_at_ask"],
                y["newest_first"],
                _at_month(st, half, "active_share"),
                _at_month(st, last, "active_share"),
                _at_month(st, half, "runaway"),
                _at_month(st, last, "runaway"),
                y["rehearsed"],
                v["rewrites"],
                v["seconds"],
            ]
        )
    kinds = params["turn_kinds"]
    out = [
        f"{params['memories']} memories written over {world.days} days through `remember` ({params['changes']} "
        f"changes of a fact, {params['superseded_explicitly']} of them with `supersedes`), {params['turns']} turns "
        f"({', '.join(f'{n} {k}' for k, n in kinds.items())}); `prefetch` every turn, `recall(k={K})` on every "
        "turn that asks for something. Same world for every variant, each on its own vault and index.",
        "",
        "The block (prefetch, default budget). Precision: entries (characters) that are the current statement of "
        "what the turn asks, over asking turns with a block. Stale: entries stating a value a newer memory had "
        "replaced (all turns); unlabelled: of those, without prefetch's `older` mark. Stale only: turns about a "
        "changed fact whose block shows an old value and not the current one.",
        "",
        *table(
            ["variant", "precision", "precision (chars)", "stale share", "stale per 100 turns", "stale, unlabelled",
             "old value of the asked fact shown", "stale only",
             "needed fact in block", "off-topic turns with a block", "entries per block", "chars per block"],
            rows_block,
        ),
        "",
        f"Recall (k={K}) and the memory's state. Old: facts asked once after months of silence and still true "
        f"(reactivation); dormant at ask: the answer was dormant when asked. Newest first: the current statement "
        f"returned above every replaced one (turns about a changed fact). Active: memories not dormant; runaway: "
        f"non-pinned memories at strength >= {RUNAWAY}; at month {half} and {last}. Rehearsed: recall hits written "
        "back; rewrites: vault files modified (a daily git diff, supersession links and pins included).",
        "",
        *table(
            ["variant", "R@5 recent", "R@5 weekly", "R@5 old (reactivation)", "old: in block", "old: dormant at ask",
             "newest first", f"active m{half}", f"active m{last}", f"runaway m{half}", f"runaway m{last}",
             "rehearsed", "rewrites", "s"],
            rows_recall,
        ),
        "",
        "Why an asking turn's block lacked the needed fact (turns): prefetch kept the answer out as faded (the turn "
        "does not cue it, or a live note answering nearly as well names it in conflicts_with); recall finds it only "
        f"`weak`; recall's top {K} lacks it; or recall finds it clearly and the block does not show it.",
        "",
        *table(["variant", *MISSES], [[n, *[v["year"].get(f"missed: {r}") for r in MISSES]] for n, v in got.items()]),
        "",
        "Per month (30 days): stale share of block entries, and the active set (share of memories not dormant).",
        "",
    ]  # fmt: skip
    months = sorted({m["month"] for v in got.values() for m in v["months"]})
    out += table(
        ["variant", *[f"m{m}" for m in months]],
        [
            [n, *[next((x["stale_share"] for x in v["months"] if x["month"] == m), None) for m in months]]
            for n, v in got.items()
        ],
    )
    out += [""]
    out += table(
        ["variant", *[f"m{m}" for m in months]],
        [
            [n, *[next((x["active_share"] for x in v["state"] if x["month"] == m), None) for m in months]]
            for n, v in got.items()
        ],
    )
    if "off" in got:
        out += [
            "",
            "Issue 24's bar against `off` on this run: stale share at most half of off's; block precision higher; "
            f"old-fact recall@5 within 0.02; runaway at month {last} at most 0.30.",
            "",
            *table(["variant", "stale / off", "precision - off", "old R@5 - off", f"runaway m{last}", "passes"],
                   issue_bar(got, last)),
        ]  # fmt: skip
    out += ["", "Variants:", ""]
    out += [f"- `{n}`: {v['what']}" for n, v in got.items()]
    out += ["", "Not expressible through the public API and settings (each needs a library switch):", ""]
    out += [f"- {a}: {b}" for a, b in NEEDS_A_SWITCH]
    return out


__all__ = [
    "K",
    "MISSES",
    "NEEDS_A_SWITCH",
    "VARIANTS",
    "CachedEmbedder",
    "Entry",
    "TurnScore",
    "Variant",
    "evaluate",
    "miss_reason",
    "newest_first",
    "run",
    "score_turn",
    "simulate",
    "summarise",
]
