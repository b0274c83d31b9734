"""The lifetime benchmark (issue 24): its checker can fail, its world is well-formed, a short year runs."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

from bench.data import lifetime as lw
from bench.runners import lifetime as lt

# --------------------------------------------------------------------------- the checker


def test_a_stale_block_is_seen_as_stale() -> None:
    old, new, other = "m1", "m2", "m3"
    # The block shows the old value and the current one, and something unrelated.
    s = lt.score_turn([lt.Entry(old, 50, labelled=True), lt.Entry(new, 40), lt.Entry(other, 10)], new, {old}, {old})
    assert (s.entries, s.relevant, s.stale, s.stale_unlabelled) == (3, 1, 1, 0)
    assert (s.chars, s.relevant_chars, s.stale_chars) == (100, 40, 50)
    assert s.has_target and not s.stale_only
    # Only the old value: stale, and the current value missing.
    s = lt.score_turn([lt.Entry(old, 50)], new, {old}, {old})
    assert s.stale == s.stale_unlabelled == 1 and not s.has_target and s.stale_only
    # A replaced statement of another fact is stale too, but not "stale only" for this turn.
    s = lt.score_turn([lt.Entry("m9", 20)], new, {"m9"}, {old})
    assert s.stale == 1 and not s.stale_only
    # Off-topic: nothing is relevant.
    s = lt.score_turn([lt.Entry(new, 20)], None, set(), set())
    assert s.relevant == 0 and not s.has_target


def test_newest_first() -> None:
    assert lt.newest_first(["m2", "m1"], "m2", ["m1"])
    assert not lt.newest_first(["m1", "m2"], "m2", ["m1"])
    assert lt.newest_first(["m2", "m7"], "m2", ["m1"])  # the old one not returned at all
    assert not lt.newest_first(["m1"], "m2", ["m1"])
    assert not lt.newest_first([], None, [])


def test_a_missing_answer_is_put_down_to_the_first_reason_that_holds() -> None:
    hits = [("n1", False), ("n2", True)]
    assert lt.miss_reason("n2", ["n2"], hits) == "kept out, faded"  # kept out before it could be weak
    assert lt.miss_reason("n2", [], hits) == "weak"
    assert lt.miss_reason("n3", ["n9"], hits) == "not in recall's top 5"
    assert lt.miss_reason("n1", [], hits) == "found, not shown"
    assert lt.miss_reason(None, [], hits) == "not in recall's top 5"  # the answer never reached the vault


def _turn(
    kind: str,
    entries: list[lt.Entry],
    target: str | None,
    stale: set[str],
    replaced: list[str] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    replaced = replaced or []
    return {
        "day": kw.pop("day", 0),
        "kind": kind,
        "role": kw.pop("role", "changing"),
        "target": target,
        "replaced": replaced,
        "hits": kw.pop("hits", []),
        "rehearsed": 0,
        "block_chars": sum(e.chars for e in entries),
        "score": lt.score_turn(entries, target, stale, replaced),
        "miss": kw.pop("miss", None),
    }


def test_summarise_counts_what_it_says() -> None:
    turns = [
        # asked for m2 (replacing m1): block shows both, recall finds m2 first
        _turn("recent", [lt.Entry("m2", 30), lt.Entry("m1", 30)], "m2", {"m1"}, replaced=["m1"], hits=["m2", "m1"]),
        # asked for m5: block shows a distractor only, recall misses it
        _turn("weekly", [lt.Entry("m6", 40)], "m5", {"m1"}, hits=["m6"], miss="not in recall's top 5"),
        # old fact, no block, recall finds it
        _turn("old", [], "m8", {"m1"}, role="old", hits=["m9", "m8"], miss="kept out, faded"),
        # off-topic with a block holding the stale m1
        _turn("offtopic", [lt.Entry("m1", 10)], None, {"m1"}),
        _turn("offtopic", [], None, {"m1"}),
    ]
    y = lt.summarise(turns)
    assert y["precision"] == pytest.approx(1 / 3, abs=1e-4)  # asking turns' entries: m2 right, m1 stale, m6 wrong
    assert y["precision_chars"] == pytest.approx(30 / 100, abs=1e-4)
    assert y["stale_share"] == pytest.approx(2 / 4, abs=1e-4)  # m1 twice among 4 entries of all turns
    assert y["block_hit"] == pytest.approx(1 / 3, abs=1e-4)
    assert y["recall_at_5"] == pytest.approx(2 / 3, abs=1e-4)
    assert y["newest_first"] == 1.0 and y["changed_turns"] == 1
    assert y["offtopic_block"] == 0.5
    assert y["old_true_recall_at_5"] == 1.0 and y["old_true_block_hit"] == 0.0
    assert [y[f"missed: {r}"] for r in lt.MISSES] == [1, 0, 1, 0]


# --------------------------------------------------------------------------- the world


def _sources() -> lw.Sources:
    said = tuple(
        lw.SaidFact(
            f"c/{i}", "Ada", f"What does Ada collect in room {i}?", f"stamps {i}", f"I collect stamps {i} in room {i}."
        )
        for i in range(12)
    )
    findings = tuple(
        lw.Finding(str(i), f"Protein {i} binds receptor {i}.", f"Study {i}", f"We show protein {i} binds receptor {i}.")
        for i in range(6)
    )
    return lw.Sources(
        said=said,
        said_noise=tuple(("Ada", f"Ada baked bread number {i} this weekend.") for i in range(6)),
        findings=findings,
        finding_noise=tuple((f"Other {i}", f"An unrelated result {i}.") for i in range(3)),
        offtopic=tuple(f"The sunset over the bay was lovely on evening {i}." for i in range(20)),
    )


SMALL = lw.Sizes(
    days=24, changing=2, weekly_changing=1, old_changing=0, weekly=1, pinned=0, old=1, oneoff=1,
    said_old=1, said_oneoff=2, said_noise=2, finding_weekly=0, finding_old=1, finding_oneoff=1, finding_noise=1,
    recent_per_day=1, offtopic_per_day=1, supersede_share=1.0,
)  # fmt: skip


def test_world_is_deterministic_and_well_formed() -> None:
    world = lw.generate_world(_sources(), lw.Sizes(), seed=5)
    again = lw.generate_world(_sources(), lw.Sizes(), seed=5)
    assert world.memories == again.memories and world.turns == again.turns
    assert world.memories != lw.generate_world(_sources(), lw.Sizes(), seed=6).memories
    by_id = world.by_id
    assert [m.id for m in world.memories] == sorted(m.id for m in world.memories)
    assert [(m.day, m.minute) for m in world.memories] == sorted((m.day, m.minute) for m in world.memories)
    for f in world.facts.values():
        days = [by_id[m].day for m in f.statements]
        assert days == sorted(days) and len(set(days)) == len(days)
        values = [by_id[m].value for m in f.statements]
        assert len(set(values)) == len(values)
        if f.role in ("changing", "old_changing", "weekly_changing"):
            assert len(f.statements) >= 2
        for prev, m in zip(f.statements, f.statements[1:], strict=False):
            assert by_id[m].supersedes in (None, prev)  # a change names the statement it replaces, or nothing
    assert any(m.supersedes for m in world.memories) and any(
        by_id[m].supersedes is None for f in world.facts.values() for m in f.statements[1:]
    )
    for t in world.turns:
        assert lw.DAY_MINUTES[0] <= t.minute < lw.DAY_MINUTES[1]
        assert (t.kind == "offtopic") == (t.fact is None)
        assert "{" not in t.text and not re.search(r"\bI's\b|\bam me\b", t.text)
        if t.fact:
            assert world.current(t.fact, lw.World.when(t.day, t.minute)) is not None  # asked after it was said
    # An old fact is asked once after months of silence.
    for f in world.facts.values():
        if f.role == "old":
            asks = [t.day for t in world.turns if t.fact == f.id]
            stated = by_id[f.statements[-1]].day
            assert asks and max(asks) - stated >= world.days / 3
            assert all(t.kind != "weekly" for t in world.turns if t.fact == f.id)
    # Memories are written in the third person, questions asked in the first.
    slot_questions = [t.text for t in world.turns if t.fact and t.fact.startswith("slot:user/")]
    assert slot_questions and all(re.search(r"\b(I|me|my)\b", q) for q in slot_questions)
    assert all(not m.text.startswith(("I ", "My ")) for m in world.memories if m.source == "slot")


def test_stale_and_current_follow_the_statements() -> None:
    world = lw.generate_world(_sources(), SMALL, seed=3)
    fact = next(f for f in world.facts.values() if len(f.statements) >= 2)
    first, second = fact.statements[:2]
    before = world.written_at(second) - dt.timedelta(minutes=1)
    after = world.written_at(second)
    assert world.current(fact.id, before) == first and first not in world.stale(before)
    assert world.current(fact.id, after) == second and first in world.stale(after)


# --------------------------------------------------------------------------- a short year, fake embedder


def test_a_short_year_runs_and_decay_shows(tmp_path: Path) -> None:
    from vault_memory.index.embedders import make_embedder

    world = lw.generate_world(_sources(), SMALL, seed=3)
    variants = [v for v in lt.VARIANTS if v.name in ("off", "today")]
    emb = lt.CachedEmbedder(make_embedder("fake"))
    got = lt.evaluate(world, variants, tmp_path, emb, embedder_name="fake", samples=1)
    off, today = got["off"], got["today"]
    assert off["year"]["turns"] == today["year"]["turns"] == len(world.turns)
    assert [s["month"] for s in today["state"]] == [1]
    # "off" keeps every memory awake at strength ~1; today's curve lets some fade.
    assert off["state"][-1]["active_share"] == 1.0 and off["state"][-1]["runaway"] == 1.0
    assert today["state"][-1]["runaway"] < 1.0 and today["state"][-1]["active_share"] < 1.0
    assert today["samples"] and "block" in today["samples"][0]
    # The agent's `supersedes` reached the vault: the old statement names its successor.
    vault = tmp_path / "today" / "vault"
    old = [m for m in world.memories if any(x.supersedes == m.id for x in world.memories)]
    assert old and any("superseded_by" in p.read_text() for p in vault.rglob("*.md"))
    assert emb.embedded > 0 and not today["duplicates"]
    lines = lt.render(
        got, world, {"memories": 1, "changes": 1, "superseded_explicitly": 1, "turns": 1, "turn_kinds": {}}
    )
    assert any(line.startswith("| today |") for line in lines)
    # every asking turn without its answer in the block is put down to one reason
    for v in (off, today):
        y = v["year"]
        asking = sum(y[f"{k}_turns"] for k in lt.ASKING)
        missed = round(asking * (1 - y["block_hit"]))
        assert sum(y[f"missed: {r}"] for r in lt.MISSES) == missed


def test_every_variants_rules_are_rules_of_the_read_path() -> None:
    # a variant changes the read path's rules record (search/rules.py) by field name, never a module
    # global; a renamed field would fail a 25-minute run at its second variant, so each is applied here
    from vault_memory.search.rules import DEFAULT_RULES

    changed = [v for v in lt.VARIANTS if v.rules]
    assert changed
    for v in changed:
        rules = DEFAULT_RULES.but(**v.rules)
        assert all(getattr(rules, k) == val for k, val in v.rules.items()), v.name
    with pytest.raises(TypeError):
        DEFAULT_RULES.but(no_such_rule=True)
