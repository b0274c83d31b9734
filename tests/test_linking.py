"""Links from a memory to the notes it names: only real names, only where it is safe."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import NOW, MemoryFactory
from vault_memory.internals import internals
from vault_memory.lifecycle.linking import Mention, NameRow, link_mentions, mentions_from_rows
from vault_memory.vault.notefile import read_note


def row(path: str, title: str = "", aliases: tuple[str, ...] = (), tags: tuple[str, ...] = ()) -> NameRow:
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    return (path, title or stem, aliases, tags)


ROWS = [
    row("People/Maya Chen.md", aliases=("Maya", "M. Chen")),
    row("People/Jonas Weber.md", aliases=("Jonas", "JW")),
    row("People/Mum.md", aliases=("Mom", "Mother")),
    row("Projects/Project Atlas.md", aliases=("Atlas", "Atlas migration")),
    row("Projects/Atlas Runbook.md"),
    row("Areas/Home/Coffee.md", aliases=("espresso",)),
    row("Home.md", tags=("moc",)),
    row("Inbox/Untitled.md"),
    row("Inbox/quick idea.md"),
    row("Daily Notes/2026-11-12.md"),
    row("Archive/Maya.md", title="Maya"),  # a second note called Maya: the name is ambiguous
]


def names(rows: list[NameRow] = ROWS) -> list[Mention]:
    return mentions_from_rows(rows)


def test_alias_links_to_the_person_note() -> None:
    out = link_mentions("Maya Chen prefers written async updates.", names())
    assert out == "[[Maya Chen]] prefers written async updates."
    rows = [r for r in ROWS if r[0] != "Archive/Maya.md"]
    assert (
        link_mentions("Maya prefers written async updates.", names(rows))
        == "[[Maya Chen|Maya]] prefers written async updates."
    )


@pytest.mark.parametrize("text", ["Maya Chen met Jonas about Atlas.", "Espresso with Mum", "nothing here"])
def test_keeping_only_names_in_the_text_links_the_same(text: str) -> None:
    assert link_mentions(text, mentions_from_rows(ROWS, text=text)) == link_mentions(text, names())


def test_a_name_two_notes_share_is_not_guessed() -> None:
    assert link_mentions("Maya prefers tea.", names()) == "Maya prefers tea."


def test_case_aware_whole_words_longest_first_once_each() -> None:
    ms = names()
    assert link_mentions("maya and atlases and Atlantic", ms) == "maya and atlases and Atlantic"
    assert (
        link_mentions("The Atlas Runbook says Atlas is late; Atlas again.", ms)
        == "The [[Atlas Runbook]] says [[Project Atlas|Atlas]] is late; Atlas again."
    )
    assert link_mentions("Mum's birthday; ask Jonas.", ms) == "[[Mum]]'s birthday; ask [[Jonas Weber|Jonas]]."
    # a lower-case alias is a word a person chose: any case
    assert link_mentions("Espresso, no sugar.", ms) == "[[Coffee|Espresso]], no sugar."


def test_generic_and_structural_names_are_never_linked() -> None:
    text = "Work from home; the inbox is empty; Home and Inbox and Untitled; a quick idea; 2026-11-12; JW."
    assert link_mentions(text, names()) == text


def test_never_inside_code_links_urls_or_tags() -> None:
    ms = names()
    text = "`Jonas` [Jonas](https://example.com/Jonas) https://x.y/Jonas #Jonas <Jonas>\n```\nJonas\n```\nthen Jonas."
    assert link_mentions(text, ms) == text.replace("then Jonas.", "then [[Jonas Weber|Jonas]].")
    # a note the text links already is not linked a second time
    linked = "Ask [[Jonas Weber|JW]] or Jonas."
    assert link_mentions(linked, ms) == linked


def test_a_path_link_when_two_notes_share_a_file_name() -> None:
    rows = [row("People/Sam.md", title="Sam Lee"), row("Pets/Sam.md", title="Sam the cat")]
    out = link_mentions("Sam Lee called.", mentions_from_rows(rows))
    assert out == "[[People/Sam|Sam Lee]] called."


def test_remember_links_the_person_note_it_names(make_memory: MemoryFactory, vault: Path) -> None:
    mem = make_memory()
    mem.index()
    done = mem.remember("Ines prefers the night train; Ruth Brandt hates surprises.", now=NOW)
    assert done.path == "Memory/Ines prefers the night train; Ruth Brandt hates surprises.md"
    body = read_note(vault, done.path).body
    assert body == "[[Ines Okafor|Ines]] prefers the night train; [[Ruth Brandt]] hates surprises.\n"
    # a real backlink: the index sees it; and the text still reads the same for a retry
    row = internals(mem).catalog.note_by_path(done.path)
    assert row is not None and {"Ines Okafor", "Ruth Brandt"} <= set(row.links)
    again = mem.remember("Ines prefers the night train; Ruth Brandt hates surprises.", now=NOW)
    assert again.existing and again.node_id == done.node_id


def test_autolink_can_be_turned_off(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = tmp_path / "v"
    (vault / "People").mkdir(parents=True)
    (vault / "People" / "Maya Chen.md").write_text("---\naliases: [Maya]\n---\nA person.\n", encoding="utf-8")
    mem = make_memory(vault=vault, autolink=False)
    mem.index()
    done = mem.remember("Maya likes tea.", now=NOW)
    assert read_note(vault, done.path).body == "Maya likes tea.\n"
