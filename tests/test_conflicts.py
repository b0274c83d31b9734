"""Conflicts and duplicates against every note, statement by statement (conflicts.py).

The pure rules run everywhere; the end-to-end cases run the real MiniLM embedder (`model`),
because the thresholds are calibrated on it (`python -m bench tools --part conflicts`, bench/studies/tools.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import NOW, MemoryFactory, snapshot, write_notes
from vault_memory.index.embedders import make_embedder
from vault_memory.internals import internals
from vault_memory.lifecycle.conflicts import negated, says_the_same, statements, words
from vault_memory.memory import Memory
from vault_memory.text import other_people


def test_statements_are_sentences_and_items_with_hard_wraps_joined() -> None:
    text = (
        "Coffee\nI drink a double espresso every morning, no sugar. Dark roast, made on the Lelit,\n"
        "18 g in, 36 g out.\n\n- A flat white after lunch,\n  at most.\n- [ ] Descale it.\n| a | b |\n## Beans\n"
    )
    assert statements(text, "Coffee") == [
        "I drink a double espresso every morning, no sugar.",
        "Dark roast, made on the Lelit, 18 g in, 36 g out.",
        "A flat white after lunch, at most.",
        "Descale it.",
        "a | b",
    ]


def test_a_fact_is_not_compared_with_to_dos() -> None:
    text = "Tasks\n- [x] Morning run\n- [ ] Reply to Maya Chen about the Atlas timeline\n- Maya prefers async updates."
    assert statements(text, "Tasks", tasks=False) == ["Maya prefers async updates."]
    assert "Reply to Maya Chen about the Atlas timeline" in statements(text, "Tasks")


@pytest.mark.model
def test_remember_does_not_flag_a_daily_task_line_copied_from_day_to_day(
    make_memory: MemoryFactory, tmp_path: Path, minilm: object
) -> None:
    """The person's vault: "Maya asked to move the Atlas cutover review to Thursday 10:00" was
    flagged as conflicting with five daily notes, each for its "- [ ] Reply to Maya Chen about the
    Atlas timeline" (cosine 0.60, over the conflict bar), and `conflicts_with` named all five."""
    day = "---\ndate: {d}\n---\n# {d}\n\n## Tasks\n- [ ] Reply to [[Maya Chen]] about the Atlas timeline\n"
    notes = {f"Daily Notes/2026-10-{n:02d}.md": day.format(d=f"2026-10-{n:02d}") for n in (9, 15, 23)}
    notes["People/Maya Chen.md"] = "# Maya Chen\n\nPrefers async updates in writing; hates surprise meetings.\n"
    mem = make_memory(minilm, vault=write_notes(tmp_path / "tv", notes))
    mem.index()
    done = mem.remember("Maya asked to move the Atlas cutover review to Thursday 10:00.", now=NOW)
    assert [c.path for c in done.conflicts if c.path.startswith("Daily Notes/")] == []
    task = mem.remember("- [ ] Reply to Maya about the Atlas timeline", now=NOW)  # a to-do meets to-dos
    assert any(c.path.startswith("Daily Notes/") for c in task.conflicts)
    changed = mem.remember("Maya now prefers a quick call over written updates.", now=NOW)
    assert changed.conflicts[0].path == "People/Maya Chen.md"  # a fact still meets the facts
    assert not any(c.path.startswith("Daily Notes/") for c in changed.conflicts)


@pytest.mark.parametrize(("memory", "statement", "context", "same"), [
    ("I drink a double espresso every morning, no sugar.", "I drink a double espresso every morning, no sugar.",
     "", True),
    ("The team standup is at 9:30 every weekday.", "The team standup is at 9:30 every weekday in room 4.", "", True),
    ("Jonas is vegetarian.", "Vegetarian.", "Jonas Weber", True),  # the heading names the subject
    ("Ines calls on Sunday evenings.", "Calls on Sunday evenings, usually around 20:00.", "Ines Okafor", True),
    # the same words are not the same claim:
    ("I drink a double espresso every morning with sugar.", "I drink a double espresso every morning, no sugar.",
     "", False),  # polarity
    ("Maya owes Karl 20 euros.", "Karl owes Maya 20 euros.", "", False),  # order
    ("Keep the pump at 2.5 bar.", "Keep the pump at 1.5 bar.", "", False),  # a number
    ("Jonas is best reached by email.", "Best reached on Slack; he reads email once a day.", "Jonas Weber", False),
    ("Tea.", "Tea is for when I'm ill.", "", False),  # one content word says too little
])  # fmt: skip
def test_the_duplicate_rule(memory: str, statement: str, context: str, same: bool) -> None:
    assert says_the_same(memory, statement, context) is same


def test_words_and_polarity() -> None:
    assert words("The drinks don't have sugar") == {"drink", "sugar"}
    assert negated("I don't take sugar") and negated("without milk") and not negated("with milk")


# -- end to end, with MiniLM --------------------------------------------------------------

HUMAN = {
    "Preferences/Coffee.md": (
        "---\ntags: [preferences]\n---\n# Coffee\n\n"
        "I drink a double espresso every morning, no sugar. Dark roast, made on the Lelit at "
        "home, 18 g in, 36 g out.\n\n- A flat white with oat milk after lunch, at most.\n"
        "- At the office the machine is terrible, so I bring a thermos.\n"
        "- Decaf is pointless. Tea is for when I'm ill.\n"
    ),
    "People/Jonas Weber.md": (
        "# Jonas Weber\n\nMy manager since 2023.\n\n- Based in Berlin, in the Leipzig office "
        "on Tuesdays and Wednesdays.\n- Vegetarian. Cycles to work all year.\n"
    ),
    "Notes/Garden.md": "# Garden\n\nThe rain barrel holds 300 litres. Karl checked the wiring.\n",
}


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    return make_embedder("minilm")


@pytest.fixture()
def hmem(make_memory: MemoryFactory, tmp_path: Path, minilm: object) -> Memory:
    vault = write_notes(tmp_path / "hv", HUMAN)
    mem = make_memory(minilm, vault=vault)
    mem.index()
    return mem


@pytest.mark.model
def test_stage_flags_a_human_note_that_states_it_differently(hmem: Memory) -> None:
    sm = hmem.stage("I drink a double espresso every morning with sugar now.", now=NOW)
    assert sm.needs_review and sm.conflicts[0].path == "Preferences/Coffee.md"
    c = sm.conflicts[0]
    assert c.kind == "conflict" and "no sugar" in c.statement and (c.similarity or 0) > 0.9
    # the whole chunk is only ~0.65 similar: what staging compared before, and missed
    other = hmem.stage("Jonas works in the Leipzig office on Mondays and Fridays.", now=NOW)
    assert [x.path for x in other.conflicts] == ["People/Jonas Weber.md"] and other.conflicts[0].kind == "conflict"
    unrelated = hmem.stage("The car's MOT is due in March.", now=NOW)
    assert not unrelated.needs_review and unrelated.conflicts == []


@pytest.mark.model
def test_remember_of_a_stated_fact_writes_nothing_and_names_the_note(hmem: Memory) -> None:
    before = snapshot(internals(hmem).vault)
    done = hmem.remember("Jonas is vegetarian.", now=NOW)
    assert done.existing and done.path == "People/Jonas Weber.md" and done.staged_path == ""
    assert done.conflicts[0].kind == "duplicate" and "Vegetarian" in done.conflicts[0].statement
    after = snapshot(internals(hmem).vault)
    assert set(after) == set(before)  # no new note; at most the rehearsal of the one that says it
    assert not (internals(hmem).vault / "Memory").exists() or not list((internals(hmem).vault / "Memory").rglob("*.md"))


@pytest.mark.model
def test_remember_of_a_changed_fact_commits_it_and_reports_the_note(hmem: Memory) -> None:
    done = hmem.remember("I drink a double espresso every morning with sugar now.", now=NOW)
    assert not done.existing and done.path.startswith("Memory/")
    assert [c.path for c in done.conflicts] == ["Preferences/Coffee.md"] and done.conflicts[0].kind == "conflict"
    # a paraphrase is a conflict, not a duplicate: only the same words can make `remember` write nothing
    again = hmem.remember("Each morning I have two shots of espresso without any sugar.", now=NOW)
    assert not again.existing and "Preferences/Coffee.md" in [c.path for c in again.conflicts]


@pytest.mark.model
def test_remember_supersedes_a_human_note(hmem: Memory) -> None:
    done = hmem.remember("The rain barrel holds 500 litres now.", supersedes="Garden", now=NOW)
    assert done.supersedes and not done.existing
    old = (internals(hmem).vault / "Notes/Garden.md").read_text(encoding="utf-8")
    stem = done.path.rsplit("/", 1)[-1].removesuffix(".md")  # relations are [[links]] by file name
    assert f"superseded_by: ['[[{stem}]]']" in old and old.endswith("Karl checked the wiring.\n")


@pytest.mark.parametrize(("a", "b", "other"), [
    ("The user's dad drove a Ford Focus home.", "The car in my partner Alex's driveway is a Ford Focus now.", True),
    ("The user signed up for a course to learn Korean.", "The user's sister Nora dropped the Korean classes.", True),
    ("I use Notion for meeting notes.", "My friend Priya moved her journal into OneNote.", True),
    ("My sister Nora moved to Porto.", "My brother Tom moved to Porto.", True),
    ("The user's dad upgraded the phone to a Motorola Edge.", "Which phone do I carry these days?", True),
    ("The user's dad upgraded the phone to a Motorola Edge.", "The user retired a Galaxy S23.", True),
    ("Where does my sister live now?", "I moved to Porto.", True),
    ("Tim said: Wow, I'm learning German now.", "Which language am I learning now?", True),  # Tim's "I"
    # the same people:
    ("The user's dad drove a Ford Focus home.", "The user's dad's car is a VW Golf now.", False),
    ("Maya's sister Ines works as an architect.", "Ines Okafor: Architect at a small studio in Alfama.", False),
    ("My sister Nora moved to Porto.", "Nora lives in Lisbon.", False),  # named by her name
    ("My sister is coming to Leipzig.", "[[Ines Okafor|Ines]] visits Leipzig.", False),  # "my sister" may be Ines
    ("My parents moved to Spain.", "My parent lives in Madrid.", False),  # a plural is its word
    ("Tim said: I'm learning German now.", "What is Tim learning these days?", False),
    ("Maya Chen said: I'm learning Korean.", "Did Maya tell me what she is learning?", False),  # named by a name
    ("The user said: I'm learning Korean.", "Which language am I learning now?", False),  # the owner speaks
    ("The standup is at 9:30.", "The team standup is at 10:00 on Mondays.", False),  # nobody named: the owner's
])  # fmt: skip
def test_statements_about_other_people(a: str, b: str, other: bool) -> None:
    assert other_people(a, b) is other and other_people(b, a) is other


@pytest.mark.model
def test_a_memory_about_someone_else_does_not_conflict(
    make_memory: MemoryFactory, tmp_path: Path, minilm: object
) -> None:
    """The simulated year: "The car in the user's partner Alex's driveway is a Ford Focus now" was
    saved with `conflicts_with` naming "The user's dad drove a Ford Focus home", and prefetch then
    kept the dad's faded car out of every block that asked for it, as replaced (bench lifetime). A
    statement about other people (text.other_people) is neither a conflict nor a duplicate."""
    mem = make_memory(minilm, vault=write_notes(tmp_path / "tv", {"Memory/start.md": "Nothing yet.\n"}))
    mem.index()
    dad = mem.remember("The user's dad drove a Ford Focus home from the car dealership yesterday.", now=NOW)
    alex = mem.remember("The car in the user's partner Alex's driveway is a Ford Focus now.", now=NOW)
    assert [c.path for c in alex.conflicts] == []
    changed = mem.remember("The user's dad traded the Ford Focus in for a VW Golf.", now=NOW)
    assert dad.path in [c.path for c in changed.conflicts]
