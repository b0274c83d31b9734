"""A query that names a day finds the notes stated that day (search/days.py): recall puts them
first, prefetch shows them (the whole day's note) however far the turn's words are from theirs,
and a faded one comes back for it."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import MemoryFactory, write_notes
from vault_memory.index.calibration import FAKE
from vault_memory.search.days import named_days, spans
from vault_memory.vault.fields import heading_day

NOW = dt.datetime(2026, 12, 1, 12, tzinfo=dt.UTC)


D = dt.date
TODAY = D(2026, 12, 1)


@pytest.mark.parametrize(
    ("query", "days"),
    [
        ("what did I do on the weekend of October 17", (D(2026, 10, 17),)),
        ("What painting did Melanie show to Caroline on October 13, 2023?", (D(2023, 10, 13),)),
        ("What did Gina find for her store on 1 February, 2023?", (D(2023, 2, 1),)),
        ("on the 3rd of June, 2023", (D(2023, 6, 3),)),
        ("Oct 17th and 2026-10-17 and 17 Oct", (D(2026, 10, 17),)),  # each once
        ("2025-10-17 or Oct 17", (D(2025, 10, 17), D(2026, 10, 17))),  # in the order named
        ("the 2023-05-08T13:56 session", (D(2023, 5, 8),)),
        ("Sept 3", (D(2026, 9, 3),)),
        ("let's meet on 5 December", (D(2026, 12, 5),)),  # four days on, not a December of years ago
        ("June 14", (D(2026, 6, 14),)),  # 170 days back is nearer than 195 ahead
        ("February 29", ()),  # none within a year of today
        ("what happened on Feb 30", ()),  # in none
        ("in 2026-13-01", ()),
        ("may I ask about March", ()),  # a month is not a day
        ("I went hiking yesterday, what should I eat?", ()),  # narration in a chat (the module docstring)
        ("what did I do yesterday", (D(2026, 11, 30),)),  # asked: the day before today
        ("standup on Mondays", ()),
        ("version 10.17 of the driver", ()),
    ],
)
def test_named_days(query: str, days: tuple[dt.date, ...]) -> None:
    assert named_days(query, TODAY) == days


@pytest.mark.parametrize(
    ("query", "days"),
    [
        # TODAY, 1 December 2026, is a Tuesday
        ("Who did I go with to the music event last Saturday?", (D(2026, 11, 28),)),
        ("what did I cook last Tuesday", (D(2026, 11, 24),)),  # the latest before today, not today
        ("What was the social media activity I joined 5 days ago?", (D(2026, 11, 26),)),
        ("Remind me, what did I bake the day before yesterday?", (D(2026, 11, 29),)),
        # weeks and months are said loosely: their day and the days either side
        ("What gardening did I do two weeks ago?", (D(2026, 11, 16), D(2026, 11, 17), D(2026, 11, 18))),
        ("Which charity event was I at a month ago?", (D(2026, 10, 31), D(2026, 11, 1), D(2026, 11, 2))),
        ("what did I read 3 months ago", (D(2026, 8, 31), D(2026, 9, 1), D(2026, 9, 2))),
        # a day named by its date is the day meant; "last Friday" only says which weekday it was
        ("What did Joanna finish last Friday, 23 January 2026?", (D(2026, 1, 23),)),
        # not a day asked about: a span asked for, a clause that tells, a request, spans, vague times
        ("How many days ago did I buy a smoker?", ()),
        ("I mentioned a museum two months ago. Did I go with a friend?", ()),
        ("I've lost track of the branch I was on yesterday. List my local branches.", ()),
        ("Write the git commands to diff develop from a week ago against two weeks ago.", ()),
        # a request that asks to have a question answered: what follows its question word
        ("Summarise what I did on the thesis three days ago for my hours log.", (D(2026, 11, 28),)),
        ("I'm talking with Taylor; remind me what we found out the day before yesterday.", (D(2026, 11, 29),)),
        ("Help me write a message about the news we got yesterday.", ()),  # no question in it
        ("How many hours of yoga did I do last week?", ()),
        ("How do I delete a line in Vim without losing the text I yanked a moment ago?", ()),
        ("What road trip did the founder take years ago?", ()),
        ("Does the spec compare a saved time to 2.weeks.ago?", ()),
        # a chat's narration without its subject opens with an auxiliary: a question only with its "?"
        ("Had some bumps though - last Friday at the park my pup pulled the leash.", ()),
        ("It's great to see progress, was just at the gym yesterday.", ()),
        ("Did I make it to the gym yesterday?", (D(2026, 11, 30),)),
    ],
)
def test_days_a_question_names_by_their_distance_from_today(query: str, days: tuple[dt.date, ...]) -> None:
    assert named_days(query, TODAY) == days


def test_a_month_back_from_a_longer_month_is_the_shorter_months_last_day() -> None:
    assert named_days("what did I plant a month ago?", D(2027, 3, 31)) == (
        D(2027, 2, 27),
        D(2027, 2, 28),
        D(2027, 3, 1),
    )
    assert named_days("what did I plant a month ago?", D(2027, 1, 15))[1] == D(2026, 12, 15)  # the year before


def test_a_day_without_a_year_is_its_nearest_occurrence() -> None:
    assert named_days("December 28", D(2027, 1, 5)) == (D(2026, 12, 28),)  # the year before
    assert named_days("January 2", D(2026, 12, 30)) == (D(2027, 1, 2),)  # the year after
    assert named_days("February 29", D(2028, 1, 10)) == (D(2028, 2, 29),)
    (lo, hi), *_ = spans((D(2026, 10, 17),))
    assert lo <= dt.datetime(2026, 10, 17, 23, 30, tzinfo=dt.UTC).timestamp() < hi  # a day wider: offsets
    assert lo <= dt.datetime(2026, 10, 16, 23, 30, tzinfo=dt.UTC).timestamp()  # +02:00's 01:30 on the 17th


def _days_vault(root: Path) -> Path:
    """Daily notes named by their day and saying nothing of it in words (as sample_vault/'s do),
    beside notes that share the turn's words."""
    notes = {
        "Daily/2026-10-03.md": "Allotment in the morning. Karl turned his compost; four pumpkins in.\n",
        "Daily/2026-10-08.md": "Swapped the disk into hearth and started the resilver.\n",
        "Daily/2026-10-09.md": "---\ntier: short\n---\nCalled Grandma about the slides.\n",
        "Notes/What I do.md": "What I do on weekends: cycle to the lake, and what I did last October was rest.\n",
        "Notes/October.md": "October plans: do the shed roof, do the taxes, do the garden.\n",
    }
    return write_notes(root, notes)


def test_recall_puts_the_notes_of_the_day_the_query_names_first(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = make_memory(vault=_days_vault(tmp_path / "v"))
    mem.index()
    query = "what did I do on October 3"
    plain = [h.path for h in mem.recall("what did I do in October", k=5, now=NOW, touch=False)]
    assert plain[0] != "Daily/2026-10-03.md"  # the words alone find the notes that share them ...
    hits = mem.recall(query, k=5, now=NOW, touch=False, explain=True)
    assert hits[0].path == "Daily/2026-10-03.md", [h.path for h in hits]  # ... the day finds its note
    assert hits[0].explain is not None and hits[0].explain["on_day"] is True
    assert hits[0].weak is False  # relevant by its day, whatever its cosine
    assert all(h.explain is not None and not h.explain["on_day"] for h in hits[1:])
    for k in (1, 2, 3):  # k never changes the order
        assert [h.path for h in mem.recall(query, k=k, now=NOW, touch=False)] == [h.path for h in hits[:k]]
    iso = mem.recall("notes from 2026-10-08", k=3, now=NOW, touch=False)
    assert iso[0].path == "Daily/2026-10-08.md"
    assert mem.recall("what did I do on October 3, 2025", k=1, now=NOW, touch=False)[0].path != "Daily/2026-10-03.md"
    years_on = NOW + dt.timedelta(days=3 * 365)  # "October 3" is now 2029's: the 2026 note is not first
    assert mem.recall(query, k=1, now=years_on, touch=False)[0].path != "Daily/2026-10-03.md"


def test_a_question_asking_two_weeks_back_finds_that_days_note(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """LongMemEval's "What gardening-related activity did I do two weeks ago?": the day is what the
    question names, and no word of it is in the note."""
    mem = make_memory(vault=_days_vault(tmp_path / "v"))
    mem.index()
    asked = dt.datetime(2026, 10, 17, 9, tzinfo=dt.UTC)  # two weeks after the 3rd
    assert mem.recall("What did I do?", k=1, now=asked, touch=False)[0].path != "Daily/2026-10-03.md"
    hits = mem.recall("What did I do two weeks ago?", k=3, now=asked, touch=False, explain=True)
    assert hits[0].path == "Daily/2026-10-03.md" and hits[0].explain is not None and hits[0].explain["on_day"]
    told = mem.recall("I did a lot two weeks ago.", k=3, now=asked, touch=False, explain=True)
    assert not any(h.explain is not None and h.explain["on_day"] for h in told)  # a clause that tells: no day


@pytest.mark.parametrize(
    ("heading", "day"),
    [
        ("2022-10-03 (2h)", D(2022, 10, 3)),  # a thesis diary's day and its hours
        ("Journal > Import From [[Roam]] > [[September 7th, 2021, Tuesday]]", D(2021, 9, 7)),  # the innermost
        ("Dan Whaley > [[2020-12-11]] > Agenda", D(2020, 12, 11)),  # a meeting's day, over its agenda
        ("Monday, March 4, 2024: standup", D(2024, 3, 4)),
        ("Tue 2024/03/05 notes", D(2024, 3, 5)),
        ("4 March 2024", D(2024, 3, 4)),
        ("📅 2024-03-05", D(2024, 3, 5)),
        ("[[daily/2024-03-05|Tuesday]]", D(2024, 3, 5)),  # a link's target when its text is no date
        ("June 23rd, 2022, Thursday > [[Daily Pages]] > [[Evening Review]]", D(2022, 6, 23)),
        ("Plans for 2024-03-05", None),  # mentions a day, is not one
        ("Summary of September 2020 (20h)", None),  # a month
        ("Week of April 18th, 2022 (17)", None),  # a week
        ("[[Journal]] [[May 12th, 2022, Thursday]] [[May 11th, 2022, Wednesday]]", None),
        ("10 things to do in 2024", None),
        ("2024-13-01", None),
        ("Feb 30, 2024", None),
        ("", None),
    ],
)
def test_the_day_a_heading_states(heading: str, day: dt.date | None) -> None:
    assert heading_day(heading) == day


_DIARY = """Started this diary late, when I kept forgetting what I had done.

## 2022-10-03 (2h)

Reading about the adjoint state method, still hazy.

## 2022-10-14 (3h)

Tried Papis for bibliography management. Concluded it wasn't as good as Zotero.

## 2022-10-14 (evening)

Back to the adjoint state method.

## 2022-10-20 (2h)

Wrote an answer to the exercise on the Hodge star.
"""


def test_a_diary_kept_in_one_note_is_read_by_its_days(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """A diary or log kept in one note under dated headings (m0lentum's thesis diary): a day the
    question names finds its part, recall and the block date each part by its heading, and the
    block shows the day's parts, not the diary read on from its first line."""
    notes = {
        "Coursework/Thesis diary.md": _DIARY,
        "Notes/Bibliography.md": "Zotero keeps the thesis bibliography; Papis was tried once.\n",
    }
    mem = make_memory(vault=write_notes(tmp_path / "v", notes), calibration=replace(FAKE, weak=0.0))
    mem.index()
    hits = mem.recall("what did I do for the thesis on October 14, 2022?", k=3, now=NOW, touch=False, explain=True)
    assert hits[0].path == "Coursework/Thesis diary.md" and hits[0].heading.startswith("2022-10-14")
    assert hits[0].date == "2022-10-14" and hits[0].explain is not None and hits[0].explain["on_day"]
    assert not hits[0].weak
    got = mem.prefetch("What did I do for the thesis on October 14, 2022?", now=NOW, refresh_staged=False)
    first = got.entries[0]
    assert (first.path, first.date) == ("Coursework/Thesis diary.md", "2022-10-14")
    assert "Zotero" in first.text and "Back to the adjoint" in first.text  # the day's two parts
    assert "Hodge" not in first.text and "Started this diary" not in first.text  # not other days, nor its opening
    # no day named: the part that answers, dated by its heading, not read on from the diary's first line
    plain = mem.prefetch("Which bibliography manager did I find better than Papis?", now=NOW, refresh_staged=False)
    diary = next(e for e in plain.entries if e.path == "Coursework/Thesis diary.md")
    assert diary.date == "2022-10-14" and "Started this diary" not in diary.text
    assert named_days("what did I do on the thesis two weeks ago?", D(2022, 10, 28)) == (
        D(2022, 10, 13),
        D(2022, 10, 14),
        D(2022, 10, 15),
    )
    week = mem.recall(
        "What did I do on the thesis two weeks ago?", k=1, now=dt.datetime(2022, 10, 28, 9, tzinfo=dt.UTC), touch=False
    )
    assert week[0].date == "2022-10-14"


def test_a_long_day_is_shown_from_what_answers(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """A day's entry shows the part that answers whole when it fits its room, else read on from its
    answer in that room, then the day's other parts: a long day shown from its start was cut before
    "They told Taylor to get a blood pressure checker" (dexter, asked "what did they tell Taylor to
    do about her blood pressure a week ago?")."""
    filler = " ".join(
        f"In the morning we walked the dog around block {i} and talked about the week ahead." for i in range(12)
    )
    notes = {
        "Daily/2026-11-24.md": f"{filler} At the clinic they told Taylor to get a blood pressure checker.\n\n"
        "## Later\n\nDinner with Jack.\n",
        "Notes/Clinic.md": "The clinic is on Elm Street; parking is in the back.\n",
    }
    mem = make_memory(vault=write_notes(tmp_path / "v", notes), calibration=replace(FAKE, weak=0.0))
    mem.index()
    turn = "What did the clinic tell Taylor to get for her blood pressure a week ago?"
    first = mem.prefetch(turn, now=NOW, refresh_staged=False).entries[0]
    assert first.path == "Daily/2026-11-24.md" and "blood pressure checker" in first.text, first.text
    short = mem.prefetch("What did I eat for dinner on November 24?", now=NOW, refresh_staged=False).entries[0]
    assert (
        "Dinner with Jack" in short.text and "walked the dog" in short.text
    )  # a part that fits: whole, then the day's others


def test_the_day_the_query_names_is_shown_and_its_copies_fold_into_it(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    """The person's daily notes carry one task list forward: asked "what did I do on October 21",
    the newest copy of the 21st's list (12 November) must not stand in for the day; the other days'
    copies are named in its `also_in` instead of taking places (recall.fold_copies), and in its
    prefetch entry's "also in"."""
    task = "- [ ] Reply to Maya about the Atlas timeline\n"
    notes = {f"Daily/{d}.md": f"---\ndate: {d}\n---\n{task}" for d in ("2026-10-19", "2026-10-21", "2026-11-12")}
    notes["Notes/Atlas.md"] = "The Atlas timeline slips to January.\n"
    mem = make_memory(vault=write_notes(tmp_path / "v", notes), calibration=replace(FAKE, weak=0.0))
    mem.index()
    hits = mem.recall("what did I do on October 21", k=5, now=NOW, touch=False)
    assert hits[0].path == "Daily/2026-10-21.md" and hits[0].also_in == ["Daily/2026-11-12.md", "Daily/2026-10-19.md"]
    assert [h.path for h in hits[1:]] == ["Notes/Atlas.md"]
    plain = mem.recall("reply to Maya about the Atlas timeline", k=5, now=NOW, touch=False)
    assert plain[0].path == "Daily/2026-11-12.md"  # no day named: the newest copy shows the line
    # prefetch alike: the person's "what did I do on 2026-10-27" showed 2 November's copy instead
    entry = mem.prefetch("what about Maya did I note on October 21", now=NOW, refresh_staged=False).entries[0]
    assert (entry.path, entry.merged) == ("Daily/2026-10-21.md", ("Daily/2026-11-12.md", "Daily/2026-10-19.md"))


def test_prefetch_shows_the_day_the_turn_names_even_when_its_words_are_far(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    # every cosine is under the weak bar: only the day can put a note in the block
    mem = make_memory(vault=_days_vault(tmp_path / "v"), calibration=replace(FAKE, weak=0.999, strong=0.9999))
    mem.index()
    result = mem.prefetch("Remind me, what did I get up to on October 3?", now=NOW, refresh_staged=False)
    assert [e.path for e in result.entries] == ["Daily/2026-10-03.md"]
    assert "pumpkins" in result.block
    assert mem.prefetch("Remind me, what did I get up to in October?", now=NOW, refresh_staged=False).block == ""


def test_a_faded_note_comes_back_when_the_turn_names_its_day(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = make_memory(vault=_days_vault(tmp_path / "v"))
    mem.index()
    later = NOW + dt.timedelta(days=120)  # the short-tier note of 9 October is long dormant
    hits = mem.recall("what happened on 9 October", k=3, now=later, touch=False, explain=True)
    assert hits[0].path == "Daily/2026-10-09.md" and hits[0].dormant and hits[0].reactivated
    assert hits[0].explain is not None and hits[0].explain["cued_by"] == "the day the query names"
    shown = mem.prefetch("what happened on 9 October", now=later, refresh_staged=False)
    assert "Daily/2026-10-09.md" in [e.path for e in shown.entries]


@pytest.mark.slow
def test_the_installed_cli_says_a_hit_is_first_for_its_day(tmp_path: Path) -> None:
    vault = _days_vault(tmp_path / "v")
    exe = str(Path(sys.executable).parent / "vault-memory")
    args = [exe, "--vault", str(vault), "--index-dir", str(tmp_path / "ix"), "--embedder", "fake"]
    assert subprocess.run([*args, "index"], capture_output=True, text=True, timeout=300).returncode == 0
    now = ["--now", NOW.isoformat()]
    res = subprocess.run(
        [*args, "recall", "what did I do on October 3", "--explain", "--no-touch", "-k", "2", *now, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    first, second = json.loads(res.stdout)["hits"]
    assert first["path"] == "Daily/2026-10-03.md" and first["explain"]["on_day"] and not first["weak"]
    assert not second["explain"]["on_day"]
    text = subprocess.run(
        [*args, "recall", "what did I do on October 3", "--explain", "--no-touch", "-k", "1", *now],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert text.returncode == 0 and "stated on the day the query names: first" in text.stdout, text.stdout
