"""Invariants of the hard update benchmark's generator (bench/data/updates_hard.py)."""

from __future__ import annotations

import datetime as dt
import random
import re
from itertools import combinations
from pathlib import Path

import pytest
import yaml

from bench.data import updates_hard as uh
from bench.harness import DEFAULT_DATA

NEUTRAL = (
    "that sounds lovely",
    "we should catch up soon",
    "the weather was great on saturday",
    "my cousin painted a mural",
    "thanks for asking",
    "the kids loved the park",
    "i baked cookies",
    "what a beautiful sunset",
    "i went hiking with friends",
    "the puppy chewed my shoe",
)


def _sessions(n: int = 12) -> list[uh.Session]:
    """Filler sessions without the shared LoCoMo data (the generator takes them as values)."""
    rng = random.Random(3)
    out = []
    for i in range(n):
        friend = f"Friend{i % 4}"
        turns = tuple(
            uh.Turn("me" if j % 2 == 0 else friend, " ".join(rng.sample(NEUTRAL, 3)).capitalize() + ".")
            for j in range(12)
        )
        out.append(uh.Session(f"synthetic/session_{i}", friend, turns))
    return out


@pytest.fixture(scope="module")
def gens() -> list[uh.Generated]:
    return uh.generate_updates_hard(_sessions(), vaults=3, seed=11)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _masked(text: str, fact: uh.Fact, kind: uh.Kind) -> list[str]:
    """Words of a statement or question with the fact's key words, values and person removed
    (each becomes a gap, so no phrase runs across it)."""
    keep = set()
    for phrase in (*fact.values, *uh.PEOPLE[fact.person]):
        keep |= set(_tokens(phrase))
    out = []
    for w in _tokens(text):
        gap = w in keep or any(w.startswith(k.split()[0]) for k in kind.keywords) or w in ("i", "me", "my")
        out.append("|" if gap else w)
    return out


def _trigrams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2) if "|" not in words[i : i + 3]}


def test_deterministic_for_a_seed(gens: list[uh.Generated]) -> None:
    again = uh.generate_updates_hard(_sessions(), vaults=3, seed=11)
    for style in uh.STYLES:
        assert [uh.render(g, style) for g in gens] == [uh.render(g, style) for g in again]
    other = uh.generate_updates_hard(_sessions(), vaults=3, seed=12)
    assert [uh.render(g, "frontmatter") for g in gens] != [uh.render(g, "frontmatter") for g in other]


def test_every_fact_is_stated_at_least_twice_months_apart(gens: list[uh.Generated]) -> None:
    facts = [f for g in gens for f in g.facts]
    assert 70 <= len(facts) <= 100
    assert len({f.id for f in facts}) == len(facts)
    for g in gens:
        for f in g.facts:
            assert len(f.values) == len(f.sentences) == len(f.dates) == len(f.notes) >= 2
            assert len(set(f.values)) == len(f.values)
            assert all((b - a) >= dt.timedelta(days=60) for a, b in zip(f.dates, f.dates[1:], strict=False))
            assert max(f.dates) < g.now
            for note_i, sentence, value, when in zip(f.notes, f.sentences, f.values, f.dates, strict=True):
                note = g.notes[note_i]
                assert value.lower() in sentence.lower()
                assert f"me: {sentence}" in note.body()
                assert note.when == when and note.role == "statement"
    assert max(d for f in facts for d in f.dates) + dt.timedelta(days=1) == gens[0].now


def test_statements_and_questions_are_paraphrased(gens: list[uh.Generated]) -> None:
    kinds = {k.name: k for k in uh.KINDS}
    f0 = gens[0].facts[0]
    copied = _masked(f0.sentences[0].replace(f0.values[0], f0.values[1]), f0, kinds[f0.kind])
    assert _trigrams(copied) & _trigrams(_masked(f0.sentences[0], f0, kinds[f0.kind]))  # the check can fail
    for f in (f for g in gens for f in g.facts):
        kind = kinds[f.kind]
        assert kind.keywords[0] in f.question.lower(), f.question  # the subject is named...
        masked = [_masked(s, f, kind) for s in f.sentences]
        for a, b in combinations(masked, 2):  # ... but no three words in a row are shared
            assert not (_trigrams(a) & _trigrams(b)), (f.id, f.sentences)
        q = _trigrams(_masked(f.question, f, kind))
        assert all(not (q & _trigrams(s)) for s in masked), (f.question, f.sentences)


def test_one_fact_per_kind_per_vault_and_one_note_per_day(gens: list[uh.Generated]) -> None:
    for g in gens:
        assert len({f.kind for f in g.facts}) == len(g.facts)
        assert len({n.when.date() for n in g.notes}) == len(g.notes)
        paths = uh.note_paths(g, "journal")
        assert len(set(paths)) == len(paths)


def test_distractors_talk_about_the_subject_without_the_fact(gens: list[uh.Generated]) -> None:
    kinds = {k.name: k for k in uh.KINDS}
    for g in gens:
        for f in g.facts:
            assert f.distractor_notes and not set(f.distractor_notes) & set(f.notes)
            for i in f.distractor_notes:
                note = g.notes[i]
                assert note.role == "distractor"
                mine = [
                    line
                    for block in note.blocks
                    for line in block
                    if line.startswith("me: ")
                    and any(re.search(rf"\b{re.escape(k)}", line.lower()) for k in kinds[f.kind].keywords)
                ]
                assert mine, (f.id, note.body())
                assert not any(re.search(rf"\b{re.escape(v)}\b", note.body(), re.I) for v in kinds[f.kind].values)
        # Filler never states a rival value or talks about any fact's subject.
        avoid = uh.value_words()
        filler = [n for n in g.notes if n.role == "filler"]
        assert filler
        for note in filler:
            for line in (line for block in note.blocks for line in block):
                assert uh.clean_turn(line.split(": ", 1)[1], avoid), line


def test_render_styles(gens: list[uh.Generated]) -> None:
    g = gens[0]
    fm = uh.render(g, "frontmatter")
    assert all(not re.search(r"\d{4}-\d{2}-\d{2}", p) for p in fm)  # the name does not date the note
    for text, note in zip(fm.values(), g.notes, strict=True):
        meta = yaml.safe_load(text.split("\n---\n", 1)[0][4:])
        assert meta["created"] == note.when
        assert text.endswith(note.body())
    journal = uh.render(g, "journal")
    for (path, text), note in zip(journal.items(), g.notes, strict=True):
        assert path == f"journal/{note.when:%Y-%m-%d}.md"
        assert text == note.body() and not text.startswith("---")


def test_build_writes_vaults_and_dates_journal_files(tmp_path: Path) -> None:
    bench = uh.build_updates_hard(tmp_path / "data", tmp_path / "j", style="journal", quick=True, sessions=_sessions())
    assert len(bench.vaults) == 1 and len(bench.questions) == 12
    for q in bench.questions:
        for path, when in zip(q.statements, q.fact.dates, strict=True):
            assert (q.vault / path).stat().st_mtime == pytest.approx(when.timestamp())
        assert all((q.vault / p).is_file() for p in q.distractors)
    again = uh.build_updates_hard(tmp_path / "data", tmp_path / "j", style="journal", quick=True, sessions=_sessions())
    assert again.questions == bench.questions


@pytest.mark.skipif(not (DEFAULT_DATA / "locomo").is_dir(), reason="bench data not found next to the repo")
def test_real_filler_is_locomo_talk() -> None:
    sessions = uh.load_sessions(DEFAULT_DATA)
    assert len(sessions) > 200 and {t.speaker for s in sessions for t in s.turns[:2]} >= {"me"}
    (g,) = uh.generate_updates_hard(sessions, vaults=1, kinds=5, seed=11)
    assert len(g.facts) == 5
    assert all(len(n.blocks) >= 3 for n in g.notes if n.role == "statement")  # the fact among other talk
