"""Whether a question asks how things are or what happened (search/question.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_notes
from vault_memory.config import Config
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.memory import Memory
from vault_memory.search.question import (
    asks,
    asks_for_work,
    asks_how_things_are,
    asks_price,
    name_forms,
    names_in,
    states_price,
)


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
        "Who owns the search indexer?",  # no auxiliary, a verb in the present
        "Which server hosts the VPN gateway?",
        "Why won't Heroku let me drop the database with rake?",  # a modal, negated
        "How long should I wait between a meal and tea?",
        "Who needs the quarterly report?",  # "needs" is no past for ending in -ed(s)
        "I stashed a pile of changes but only want one file's version back. How do I get it?",  # it asks "how do I"
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
        "Who tipped me off about cleaning out old Homebrew files?",  # a past verb in -ed
        "Why didn't I go with the recommended codemod?",
        "How many days passed between the workshop and planting the tomatoes?",
        # what it asks decides, not what leads up to it (stop 71: "wouldn't" read as the present)
        "After being told the senior promotion probably wouldn't come until year end, what did I decide I want to do?",
        "I can never spell Csikszentmihalyi. What did I decide to do about it?",
    ],
)
def test_questions_about_what_happened(question: str) -> None:
    assert not asks_how_things_are(question)


def test_names_a_question_asks_about() -> None:
    assert names_in("How do I set up a Kubernetes ingress for the app?") == ["Kubernetes"]
    assert names_in("Which SQLite pragma turns on write-ahead logging?") == ["SQLite"]
    assert names_in("How many pages do I have left to read in 'Sapiens'?") == ["Sapiens"]
    assert names_in("In VSCode's vim mode, how do I wrap a word?") == ["VSCode"]
    assert names_in("How many days did it take for my iPad case to arrive?") == ["iPad"]
    assert names_in("Bump the JVM max heap to 2GB for the 4K export") == []  # quantities are no names
    # nor abbreviations, which a note spells out as often as it writes them (flancian: "Write the Agora
    # FAQ answer to 'what is a backlink?'" went silent, the garden never writing "FAQ")
    assert names_in("Write the Agora FAQ answer to 'what is a backlink?'") == ["Agora"]
    assert names_in("Set up SSO for the GraphQL gateway") == ["GraphQL"]
    assert names_in("How do I create a read-only MySQL user with GRANT?") == ["MySQL", "GRANT"]
    # the start of a sentence, question words and "I" name nothing
    assert names_in("When's my wife's birthday? I forgot. Remind me.") == []


def _tips(tmp_path: Path, folder: str, line: str) -> Memory:
    """A vault of five how-to notes in `folder` that say `line`, indexed (the fake embedder)."""
    notes = {f"{folder}/note-{i}.md": f"# Tip {i}\n\n{line}, tip {i}.\n" for i in range(5)}
    vault = write_notes(tmp_path / "v", notes)
    mem = Memory(Config(vault=vault, index_dir=tmp_path / "i", embedder="fake"), embedder=FakeEmbedder())
    mem.index()
    return mem


def test_a_question_about_something_no_note_mentions_is_answered_by_nothing(tmp_path: Path) -> None:
    """Issue 39: "nothing relevant" was said for 0 of 24 questions whose answer is not in the vault.
    A question naming what no note mentions gets only weak hits and no block; the same question
    about what the vault does mention is answered as before."""
    with _tips(tmp_path, "postgres", "Run `psql` and set up the app database for Postgres") as m:
        asked = "How do I set up the app database with Kubernetes?"
        hits = m.recall(asked, k=5, touch=False)
        assert hits and all(h.weak for h in hits)
        assert m.prefetch(asked, refresh_staged=False).block == ""
        known = m.recall("How do I set up the app database with Postgres?", k=5, touch=False)
        assert not known[0].weak


def test_a_request_naming_what_no_note_mentions_still_gets_the_vaults_context(tmp_path: Path) -> None:
    """Stop 63: a turn that asks for something to be done names what the task is about, which the
    vault need not mention ("Write the program note for our jazz night; we close with that Rodgers and
    Hammerstein standard", "only when hasDiscount is true"), and its block went empty though the vault
    held what the turn needed (6 of the seventeenth files' 72 turns). Prefetch keeps the silence for a
    question or a remark; recall still marks every hit weak: nothing in the vault answers about Kubernetes."""
    with _tips(tmp_path, "postgres", "Run `psql` and set up the app database for Postgres") as m:
        request = "Set up the app database for Postgres on our Kubernetes box."
        assert all(h.weak for h in m.recall(request, k=5, touch=False))
        assert "psql" in m.prefetch(request, refresh_staged=False).block
        for other in (
            "How do I set up the app database on our Kubernetes box?",
            "The Kubernetes box has the app database.",
        ):
            assert m.prefetch(other, refresh_staged=False).block == ""


def test_what_asks_a_price_and_what_states_one() -> None:
    for q in (
        "How much did we pay for the glider we got off Facebook Marketplace?",
        "How much is our monthly mortgage payment?",
        "What's the membership fee for a non-profit?",
        "Did I move the garden over to Obsidian Publish, and what does it cost per month?",
        "How much was the scooter we were looking at?",  # stop 79: what a thing was is its price
        "How much are the flights to Japan costing us?",
    ):
        assert asks_price(q), q
    for q in (
        "What time zone is Ding in?",
        "How much flour goes into the challah?",  # an amount, not a price
        "Why do I think people should be able to live without paying rent?",
        "When did Taylor and I go to Duluth?",
        "How much was I sleeping before the move?",  # a person is not a thing with a price
        "How much is there left to do on the deck?",
    ):
        assert not asks_price(q), q
    for stated in (
        "It was $40.",
        "paid 25 euros at the door",
        "CHF 120 a year",
        "the fee is $1-10/month",
        "₹500 for the cab",
        "300 kr at the market",
        "12.50 EUR",
    ):
        assert states_price(stated), stated
    for unstated in (
        "We got the deep freezer at Menards on Saturday.",
        "Bought 2 freezers in 2021",
        "free tickets",
        "3 krakens",  # a currency word only as a whole word
    ):
        assert not states_price(unstated), unstated


def test_a_question_asking_a_price_no_note_states_is_answered_by_nothing(tmp_path: Path) -> None:
    """Issue 39: "how much did we pay for the glider" of a vault whose notes on the glider never give
    its price got their notes as answers, none weak (dexter: 8 such questions over the question
    files; 5 are now silent). A question asking a price that none of its first hits states is
    answered by nothing: every hit weak, no block. Once a note states the price, it is the answer;
    and a request for work keeps its context, as for a name no note mentions."""
    with _tips(tmp_path, "home", "We picked up the glider off Facebook Marketplace for the nursery") as m:
        asked = "How much did we pay for the glider we got off Facebook Marketplace?"
        hits = m.recall(asked, k=5, touch=False)
        assert hits and all(h.weak for h in hits)
        assert m.prefetch(asked, refresh_staged=False).block == ""
        ex = m.recall(asked, k=1, touch=False, explain=True)[0].explain
        assert ex is not None and ex["unstated_price"]
        # the same notes, asked what they do say
        assert not m.recall("Where did we get the glider for the nursery?", k=5, touch=False)[0].weak
        request = "Find the glider we got off Facebook Marketplace and write how much we paid in the budget."
        assert "glider" in m.prefetch(request, refresh_staged=False).block
    with _tips(tmp_path / "priced", "home", "We picked up the glider off Facebook Marketplace for $60") as m:
        hits = m.recall(asked, k=5, touch=False)
        assert not hits[0].weak
        assert "$60" in m.prefetch(asked, refresh_staged=False).block


def test_what_asks() -> None:
    """A question asks for what the vault holds: its first hit is cued when faded (ranking.marks)."""
    for text in (
        "what is my wifi password",  # typed without its question mark
        "Quick question: who is my manager",
        "Is it true that 5% of perinatal mortality is due to low birth weight",
        "Someone sent me a link. Did I ever mean to read it?",
        "I forgot. When's my wife's birthday",
    ):
        assert asks(text), text
    for text in (
        "Write the program note for our jazz night; we close with that Rodgers and Hammerstein standard.",
        "Thanks, Evan. I appreciate your support.",
        "garden shed lawnmower hedge trimmer",
        "I used to love hiking, but it's been a while.",
    ):
        assert not asks(text), text


def test_what_asks_for_something_to_be_done() -> None:
    for text in (
        "Write the program note for our jazz night; we close with that Rodgers and Hammerstein standard.",
        "I need to pass currentUser into the component rendered by this Route; fix the JSX.",
        "Please find me the book Titus recommended.",
        "A friend wants Argentine fiction. Suggest that anthology I noted.",
    ):
        assert asks_for_work(text), text
    for text in (
        "what is my wifi password",
        "How do I set up a Kubernetes ingress?",
        "Thanks, Evan. I appreciate your support.",  # a remark naming whom it thanks
        "Terraform remote state",
        "Can you write the Terraform module?",  # asked as a question: silent as one
    ):
        assert not asks_for_work(text), text


@pytest.mark.parametrize(
    ("folder", "line", "asked", "unknown"),
    [
        # Stop 49: FTS5's Porter stemmer leaves "sshing" whole, as "ssh" has no vowel, and the question
        # was said to name something no note mentions (a second question file for jbranchaud-til).
        (
            "unix",
            "Forward a port with SSH: `ssh -L 3000:localhost:3000`",
            "I'm SSHing into the dev box and need port 3000 forwarded.",
            "I'm Moshing into the dev box and need port 3000 forwarded.",
        ),
        # Stop 51: a Foam page named after a Twitter handle writes "Norman Chella" as `normanchella`,
        # and the turn's block was empty (a fourth question file for flancian, written after the rule).
        (
            "people",
            "Normanchella pinged me: the club he dreams of is a polymath club",
            "Norman Chella pinged me: what is the club he dreams of?",
            "Norman Hella pinged me: what is the club he dreams of?",  # "Hella" is no note's, joined or not
        ),
    ],
    ids=["inflected", "joined"],
)
def test_a_name_the_vault_writes_another_way_is_known(
    tmp_path: Path, folder: str, line: str, asked: str, unknown: str
) -> None:
    """A name the question inflects is known by its stem; a name it sets beside another, by the two
    written as one word. A name the vault writes in no form stays unknown."""
    with _tips(tmp_path, folder, line) as m:
        hits = m.recall(asked, k=5, touch=False)
        assert hits and not hits[0].weak
        assert m.prefetch(asked, refresh_staged=False).block != ""
        assert all(h.weak for h in m.recall(unknown, k=5, touch=False))


def test_an_inflected_name_is_also_read_without_its_ending() -> None:
    assert name_forms("SSHing") == ["SSHing", "SSH"]
    assert name_forms("Dockerized") == ["Dockerized", "Dockeriz"]  # Porter has "docker" for the note's side
    assert name_forms("Kubernetes") == ["Kubernetes", "Kubernet"]
    assert name_forms("Git") == ["Git"]
    assert name_forms("CLIs") == ["CLIs", "CLI"]
    assert name_forms("Bus") == ["Bus"]  # fewer than three letters would be left


def test_names_side_by_side_are_also_read_as_one_word() -> None:
    asked = "How much lower is the Mehr als Wohnen fee, and did Norman Chella say?"
    assert name_forms("Wohnen", asked) == ["Wohnen", "MehralsWohnen"]  # a word between them, at most
    assert name_forms("Chella", asked) == ["Chella", "NormanChella"]
    assert name_forms("Chella", "Write to Chella today") == ["Chella"]  # no name beside it
    assert name_forms("Chella") == ["Chella"]
