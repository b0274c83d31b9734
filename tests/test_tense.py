"""Whether a question asks how things are or what happened (search/tense.py)."""

from __future__ import annotations

import pytest

from vault_memory.search.tense import asks_how_things_are


@pytest.mark.parametrize(
    "question",
    [
        "Where do I currently keep my old sneakers?",
        "How many trips have I taken my Canon EOS 80D camera on?",
        "Am I still doing the running plan, or did I change how I'm working out?",  # "still"
        "What's the latest on Taylor's glucose testing?",
        "Where did the switch from Webpack to Vite end up?",  # "end up" names the present
        "How do I reverse a list in Elixir these days?",
        "Is the crib set up in the nursery yet?",
        "When's my wife's birthday?",
    ],
)
def test_questions_about_how_things_are(question: str) -> None:
    assert asks_how_things_are(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did I get for my first Father's Day?",
        "How much was the check the mortgage company sent us around Christmas?",
        "Who offered to pay for the baby's crib?",  # no auxiliary: an event
        "Which musical did Taylor, Jack and I see in March?",
        "What went missing at the airport at the start of the California trip?",
    ],
)
def test_questions_about_what_happened(question: str) -> None:
    assert not asks_how_things_are(question)
