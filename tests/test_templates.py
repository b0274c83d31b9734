"""A vault's template scaffolding is not text (vault/templates.py)."""

from __future__ import annotations

from pathlib import Path

from vault_memory.vault.markdown import chunk_body
from vault_memory.vault.obsidian import read_settings
from vault_memory.vault.templates import NONE, Scaffolding, read_scaffolding

TEMPLATE = """---
aliases: [<% tp.date.now("YYYY-MM-DD") %>]
---
# <% tp.date.now("MMMM Do, YYYY") %>

[[Daily/<% tp.date.now("YYYY-MM-DD", -1) %>|<<Yesterday]] | [[Daily/<% tp.date.now("YYYY-MM-DD", 1) %>|Tomorrow>>]]

### [[Morning Routine]]
- [ ] Review YNAB
- [ ] Stretch

```button
name Start Time Tracking
type append template
```
^button-start

<% tp.user.getPrompts('Evening Questions', 1) %>

#### [[Journal]]
"""

NOTE = """# May 5th, 2022

[[Daily/2022-05-04|<<Yesterday]] | [[Daily/2022-05-06|Tomorrow>>]]

### [[Morning Routine]]
- [x] Review YNAB
- [ ] Stretch
- [ ] Call the plumber about the boiler

```button
name Start Time Tracking
type append template
```
^button-start

#### [[Journal]]
Today we went to Midas and the serpentine belt was replaced.
"""


def scaffolding() -> Scaffolding:
    return Scaffolding.from_lines(TEMPLATE.split("---\n", 2)[2].split("\n"))


def test_a_notes_template_lines_are_blanked_and_its_own_kept() -> None:
    got = scaffolding().strip(NOTE)
    assert len(got.split("\n")) == len(NOTE.split("\n"))  # lines kept, as empty lines
    kept = [ln for ln in got.split("\n") if ln.strip()]
    assert kept == [
        "# May 5th, 2022",
        "### [[Morning Routine]]",  # a template's headings stay: they cut the note into its sections
        "- [ ] Call the plumber about the boiler",  # the person's own item
        "#### [[Journal]]",
        "Today we went to Midas and the serpentine belt was replaced.",
    ]


def test_expressions_match_anything_checkboxes_either_state_and_a_line_needs_a_word() -> None:
    s = scaffolding()
    assert s.matches("[[Daily/2021-01-01|<<Yesterday]] | [[Daily/2021-01-03|Tomorrow>>]]")
    assert s.matches("- [x] Stretch") and s.matches("  - [ ] Stretch  ")
    assert not s.matches("- [ ] Stretch for ten minutes")  # a whole line, not a prefix
    assert not s.matches("# Anything at all") and not s.matches("whatever the prompt said")
    heading = "### [[Morning Routine]]"
    assert (
        s.matches(heading) and s.strip(heading + "\nRan 5 km") == heading + "\nRan 5 km"
    )  # a template's heading: kept
    # ... unless nothing is under it, a subheading that went with nothing under it included: a
    # heading with nothing under it is its section's text (markdown.chunk_body), and a template's
    # says nothing of the note
    assert s.strip(heading) == "" and s.strip(f"# May 5th\n{heading}\n\n- [ ] Stretch\n") == "# May 5th\n\n\n\n"
    assert s.strip(f"{heading}\n```\n# a comment\n```") == f"{heading}\n```\n# a comment\n```"  # code is text
    assert not NONE and NONE.strip(NOTE) == NOTE and NONE.identity == ""
    assert s.identity and s.identity != Scaffolding.from_lines(["- [ ] Floss"]).identity


def test_a_fenced_block_goes_only_whole() -> None:
    s = scaffolding()
    other = "```button\nname Start Time Tracking\ntype append template\nextra line of mine\n```\nafter"
    assert s.strip(other) == other  # a line of the person's inside: the block stays, fence and all
    unclosed = "```button\nname Start Time Tracking\n"
    assert s.strip(unclosed) == unclosed  # an unclosed fence is code to the end: left alone


def test_chunks_of_a_daily_note_hold_its_own_words_only(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "templates.json").write_text('{"folder": "Templates"}')
    (tmp_path / "Templates").mkdir()
    (tmp_path / "Templates" / "Daily.md").write_text(TEMPLATE)
    found = read_scaffolding(tmp_path, read_settings(tmp_path))
    text = " ".join(c.text for c in chunk_body(NOTE, scaffolding=found))
    assert "serpentine belt" in text and "plumber" in text
    assert not any(w in text for w in ("Review YNAB", "Stretch", "button", "Yesterday"))
    assert read_scaffolding(tmp_path / "nowhere", read_settings(tmp_path / "nowhere")) is NONE


def test_a_vault_without_settings_has_the_templates_its_notes_show(tmp_path: Path) -> None:
    """A vault kept without `.obsidian/` (stop 79: `aneal`, 62 daily notes and its people notes made
    from `Templates/`): a folder named for templates, at the root or one down, that holds a template
    expression is its template folder; so is Foam's `.foam/templates/`, which has no setting. A
    folder so named whose notes hold no expression is a person's notes, and a setting that names a
    folder is read alone."""
    (tmp_path / "Templates").mkdir()
    (tmp_path / "Templates" / "Daily.md").write_text(TEMPLATE)
    (tmp_path / "Templates" / "Person.md").write_text("## Notes:\n| #phone | |\n")
    assert read_settings(tmp_path).template_folders == ("Templates",)
    assert "template folder" in read_settings(tmp_path).why_excluded("Templates/Person.md")
    found = read_scaffolding(tmp_path, read_settings(tmp_path))
    text = " ".join(c.text for c in chunk_body(NOTE, scaffolding=found))
    assert "serpentine belt" in text and "Review YNAB" not in text

    meta = tmp_path / "other" / "Meta" / "_templates"
    meta.mkdir(parents=True)
    (meta / "Week.md").write_text("# Week of {{date:YYYY-[W]ww}}\n")
    assert read_settings(tmp_path / "other").template_folders == ("Meta/_templates",)

    kept = tmp_path / "kept"
    (kept / "Templates").mkdir(parents=True)
    (kept / "Templates" / "How I write cover letters.md").write_text("Open on what they need.\n")
    assert read_settings(kept).template_folders == ()  # no expression: the person's own notes

    foam = tmp_path / "foam"
    (foam / ".foam" / "templates").mkdir(parents=True)
    (foam / ".foam" / "templates" / "daily.md").write_text("## Tasks Today\n1. [ ] Daily Planning\n")
    assert read_settings(foam).template_folders == (".foam/templates",)
    assert read_scaffolding(foam, read_settings(foam)).matches("   1. [x] Daily Planning")  # numbered, either state

    linked = tmp_path / "linked"  # a symlinked folder is never entered (walk.walk_notes' rule)
    linked.mkdir()
    try:
        (linked / "Templates").symlink_to(tmp_path / "Templates", target_is_directory=True)
    except OSError:  # no symlinks on this platform: nothing to check
        pass
    else:
        assert read_settings(linked).template_folders == ()

    named = tmp_path / "named"
    (named / ".obsidian").mkdir(parents=True)
    (named / ".obsidian" / "templates.json").write_text('{"folder": "Scaffold"}')
    (named / "Templates").mkdir()
    (named / "Templates" / "Daily.md").write_text(TEMPLATE)
    assert read_settings(named).template_folders == ("Scaffold",)
