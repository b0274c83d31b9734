"""repeats: whether two statements say the same thing in the same words (one direction or either)."""

from __future__ import annotations

import datetime as dt

from vault_memory.repeats import adds_nothing, days_from, is_repeat, words_of


def test_a_line_whose_dates_moved_on_with_its_day_is_a_repeat() -> None:
    a, b = "- [ ] Water plants 📅 2026-10-26", "- [ ] Water plants 📅 2026-11-05"
    d25, d04 = dt.date(2026, 10, 25), dt.date(2026, 11, 4)
    assert not is_repeat(a, b)  # without the notes' days, a changed date is a changed word
    assert is_repeat(a, b, (d25, d04))  # each due the day after its note: "the day after"
    assert not is_repeat(a, b, (d25, d25 + dt.timedelta(days=3)))  # the date moved against its day
    assert not is_repeat(a, b, (d25, None))  # an undated note has no day to count from
    assert not is_repeat("Deadline 2026-11-14.", "Deadline 2026-11-21.", (d25, d25))  # one day: a change
    assert not is_repeat("Due 2026-13-45.", "Due 2026-13-46.", (d25, d04))  # not dates: words
    assert days_from("met 2026-10-25, due 2026-10-24", d25) == "met dayplus0, due dayminus1"


def test_adds_nothing_is_one_direction_of_is_repeat() -> None:
    plan, again = (
        "Called Grandma, she wants to go through box 3 of the slides on Sunday.",
        "Sunday: Grandma, slides box 3.",
    )
    assert adds_nothing(again, plan) and not adds_nothing(plan, again) and is_repeat(plan, again)
    assert not adds_nothing("I no longer use Vim.", "I use Vim.")  # a negation adds words: news
    a, b = "- [ ] Water plants 📅 2026-10-26", "- [ ] Water plants 📅 2026-11-05"
    d25, d04 = dt.date(2026, 10, 25), dt.date(2026, 11, 4)
    assert adds_nothing(b, a, (d04, d25)) and not adds_nothing(b, a)  # days in the order of the texts
    assert not adds_nothing("", "anything") and not adds_nothing("anything", "")


def test_words_are_read_as_the_note_reads_them() -> None:
    assert words_of("Lunch with [[Jonas Weber|Jonas]].") == frozenset({"lunch", "with", "jonas"})
