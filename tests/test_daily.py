"""`log` into the person's daily note: Obsidian's folder, date format and template, under a heading."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.conftest import MemoryFactory
from vault_memory.errors import ConcurrentEditError
from vault_memory.vault import atomic
from vault_memory.vault.daily import add_under_heading, daily_note_path, render_template
from vault_memory.vault.notefile import read_note
from vault_memory.vault.obsidian import ObsidianSettings, format_moment, read_settings

WHEN = dt.datetime(2026, 11, 29, 9, 5, tzinfo=dt.timezone(dt.timedelta(hours=1)))
TEMPLATE = (  # the shared sample vault's Templates/Daily.md (its list items end in a space)
    '---\ndate: "{{date}}"\ntags:\n  - daily\nmood:\n---\n# {{date:dddd, MMMM D, YYYY}}\n\n'
    "## Tasks\n- [ ] \n\n## Log\n- \n\n## Notes\n[[{{yesterday}}]] · [[{{tomorrow}}]]\n"
)


@pytest.mark.parametrize(
    ("fmt", "out"),
    [
        ("YYYY-MM-DD", "2026-11-29"),
        ("dddd, MMMM D, YYYY", "Sunday, November 29, 2026"),
        ("YYYY/MM/YYYY-MM-DD ddd", "2026/11/2026-11-29 Sun"),
        ("Do MMM YY [at] HH:mm", "29th Nov 26 at 09:05"),
        ("GGGG-[W]WW", "2026-W48"),  # ISO week
        ("gggg-[W]ww", "2026-W49"),  # moment's default (en) locale week: starts Sunday
        ("D-M-Y", "29-11-2026"),  # moment's year in any number of digits (a fetched vault's daily notes)
    ],
)
def test_moment_formats(fmt: str, out: str) -> None:
    assert format_moment(fmt, WHEN) == out


def test_locale_weeks_roll_over_the_year_like_moment() -> None:
    assert format_moment("gggg-ww", dt.date(2026, 12, 31)) == "2027-01"  # the week holding Jan 1st
    assert format_moment("GGGG-WW", dt.date(2027, 1, 1)) == "2026-53"


def test_daily_note_path_follows_folder_and_format() -> None:
    settings = ObsidianSettings(daily_folder="Journal", daily_format="YYYY/MM/YYYY-MM-DD")
    assert daily_note_path(settings, WHEN.date()) == "Journal/2026/11/2026-11-29.md"
    assert daily_note_path(ObsidianSettings(), WHEN.date()) == "2026-11-29.md"  # Obsidian's defaults


def test_template_is_rendered_like_obsidian_daily_notes() -> None:
    out = render_template(
        TEMPLATE + "{{title}} {{time}} {{ date+1d:YYYY-MM-DD }} {{time:HH[h]}}\n",
        day=WHEN.date(),
        now=WHEN,
        daily_format="YYYY-MM-DD",
    )
    assert 'date: "2026-11-29"' in out
    assert "# Sunday, November 29, 2026" in out
    assert "[[2026-11-28]] · [[2026-11-30]]" in out
    assert out.endswith("2026-11-29 09:05 2026-11-30 09h\n")


LOGGED = ["- 09:05 Helped Maya with the VPN"]


def test_entry_goes_after_the_last_line_of_its_section_not_after_the_footer() -> None:
    body = "# Day\n\n## Log\n- 08:10 Dentist moved.\n- sleep:: 8\n\n## Notes\n[[2026-11-28]]\n"
    assert add_under_heading(body, "Log", LOGGED) == (
        "# Day\n\n## Log\n- 08:10 Dentist moved.\n- sleep:: 8\n- 09:05 Helped Maya with the VPN\n\n"
        "## Notes\n[[2026-11-28]]\n"
    )


def test_a_subheading_stays_in_the_section_and_a_placeholder_is_filled() -> None:
    body = "## log\n### Morning\n- 07:00 up\n\n## Notes\n"
    assert (
        add_under_heading(body, "Log", LOGGED)
        == "## log\n### Morning\n- 07:00 up\n- 09:05 Helped Maya with the VPN\n\n## Notes\n"
    )
    templated = "## Log\n- \n\n## Notes\n"
    assert add_under_heading(templated, "Log", LOGGED) == "## Log\n- 09:05 Helped Maya with the VPN\n\n## Notes\n"


def test_a_missing_heading_is_added_at_the_end_and_code_is_not_a_heading() -> None:
    body = "# Day\n\n```\n## Log\n```\n\nSome text.\n\n"
    assert (
        add_under_heading(body, "Log", LOGGED)
        == "# Day\n\n```\n## Log\n```\n\nSome text.\n\n## Log\n- 09:05 Helped Maya with the VPN\n"
    )
    assert add_under_heading("", "Log", LOGGED) == "## Log\n- 09:05 Helped Maya with the VPN\n"


def obsidian_vault(root: Path) -> Path:
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "daily-notes.json").write_text(
        json.dumps({"folder": "Daily Notes", "template": "Templates/Daily", "format": "YYYY-MM-DD"}), encoding="utf-8"
    )
    (root / "Templates").mkdir()
    (root / "Templates" / "Daily.md").write_text(TEMPLATE, encoding="utf-8")
    (root / "People").mkdir()
    (root / "People" / "Maya Chen.md").write_text("---\naliases: [Maya]\n---\nA colleague.\n", encoding="utf-8")
    return root


def test_log_appends_under_the_heading_of_todays_daily_note(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = obsidian_vault(tmp_path / "v")
    (vault / "Daily Notes").mkdir()
    existing = (
        "---\ndate: 2026-11-29\n---\n# Sunday\n\n## Log\n- 08:10 Coffee with Jonas.\n- sleep:: 8\n\n"
        "## Notes\n[[2026-11-28]] · [[2026-11-30]]\n"
    )
    (vault / "Daily Notes" / "2026-11-29.md").write_text(existing, encoding="utf-8")
    mem = make_memory(vault=vault, log_to_daily_note=True, quiet_seconds=0.0)
    mem.index()
    assert mem.log("Helped Maya with the VPN", now=WHEN) == "Daily Notes/2026-11-29.md"
    assert (vault / "Daily Notes" / "2026-11-29.md").read_text(encoding="utf-8") == existing.replace(
        "- sleep:: 8\n", "- sleep:: 8\n- 09:05 Helped [[Maya Chen|Maya]] with the VPN\n"
    )
    assert not (vault / "Memory").exists()  # no parallel episodes note


def test_log_creates_todays_daily_note_from_the_template(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = obsidian_vault(tmp_path / "v")
    mem = make_memory(vault=vault, log_to_daily_note=True, log_heading="Log", quiet_seconds=0.0)
    rel = mem.log("Booked the dentist\nfor Tuesday", now=WHEN)
    assert rel == "Daily Notes/2026-11-29.md"
    text = (vault / rel).read_text(encoding="utf-8")
    assert text == (
        TEMPLATE.replace('"{{date}}"', '"2026-11-29"')
        .replace("{{date:dddd, MMMM D, YYYY}}", "Sunday, November 29, 2026")
        .replace("## Log\n- \n", "## Log\n- 09:05 Booked the dentist\n  for Tuesday\n")
        .replace("{{yesterday}}", "2026-11-28")
        .replace("{{tomorrow}}", "2026-11-30")
    )
    assert read_note(vault, rel).meta["date"] == "2026-11-29"
    # a second entry the same day goes under the first
    mem.log("Called Mum", now=WHEN + dt.timedelta(hours=2))
    assert "- 09:05 Booked the dentist\n  for Tuesday\n- 11:05 Called Mum\n\n## Notes" in (vault / rel).read_text(
        encoding="utf-8"
    )


def test_log_waits_for_a_note_being_edited_then_says_so(
    make_memory: MemoryFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = obsidian_vault(tmp_path / "v")
    (vault / "Daily Notes").mkdir()
    note = vault / "Daily Notes" / "2026-11-29.md"
    note.write_text("## Log\n- 08:00 typing right now\n", encoding="utf-8")
    mem = make_memory(vault=vault, log_to_daily_note=True, quiet_seconds=0.2)
    monkeypatch.setattr(atomic, "quiet_for", lambda st, quiet: quiet)  # it is always just saved
    with pytest.raises(ConcurrentEditError, match="being edited.*not written"):
        mem.log("Helped Maya", now=WHEN)
    assert note.read_text(encoding="utf-8") == "## Log\n- 08:00 typing right now\n"


def test_default_stays_the_episodes_folder(make_memory: MemoryFactory, tmp_path: Path) -> None:
    vault = obsidian_vault(tmp_path / "v")
    mem = make_memory(vault=vault)
    assert mem.log("Helped Maya", now=WHEN) == "Memory/Episodes/2026-11-29.md"
    assert read_settings(vault).daily_template == "Templates/Daily.md"


def test_an_empty_log_heading_is_a_config_error(make_memory: MemoryFactory, tmp_path: Path) -> None:
    from vault_memory.errors import ConfigError

    mem = make_memory(vault=obsidian_vault(tmp_path / "v"), log_to_daily_note=True, log_heading=" ")
    with pytest.raises(ConfigError, match="log_heading"):
        mem.log("Helped Maya", now=WHEN)
