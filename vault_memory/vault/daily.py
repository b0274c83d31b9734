"""`log` into the person's daily note: today's note in Obsidian's daily-notes folder, under a heading.

With `log_to_daily_note = true`, `vault-memory log TEXT` appends `- HH:MM TEXT` to the daily
note Obsidian would open today (`.obsidian/daily-notes.json`: folder, moment.js date format,
template), under the `log_heading` section:

- the entry goes after the last line of that section (so after the section's list, never
  after a footer such as `## Notes`); a bare `- ` placeholder the template left there is
  filled in instead of kept above the entry;
- a missing heading is added at the end of the note (`## Log`);
- a missing note is created from the daily-notes template, rendered the way Obsidian's daily
  notes do it ({{date}} and {{title}} are the note's date in the daily format, {{time}} the time,
  {{date:FORMAT}} / {{time:FORMAT}} with offsets like {{date+1d:FORMAT}}, {{yesterday}},
  {{tomorrow}});
- a note saved within the last `quiet_seconds` (someone is typing in it) is waited for, up to
  twice that long, then the entry is refused with a message: a log line is never bought with
  a person's keystrokes.

The pure parts (`daily_note_path`, `render_template`, `add_under_heading`) are tested with strings.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from ..errors import ConcurrentEditError, NoteError, NoteNotFoundError
from ..text import join
from .notefile import read_note, write_note
from .obsidian import ObsidianSettings, format_moment

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_PLACEHOLDER = re.compile(r"^[ \t]*[-*+][ \t]*$")  # an empty list item a template leaves to be filled
_TEMPLATE_VAR = re.compile(r"{{\s*(date|time)\s*(?:([+-]\d+)([yqMmwdhs]))?\s*(?::(.*?))?}}", re.IGNORECASE)


def daily_note_path(settings: ObsidianSettings, day: dt.date) -> str:
    """Vault path of the daily note for `day` (the format may hold folders: `YYYY/MM/YYYY-MM-DD`)."""
    name = format_moment(settings.daily_format, day)
    return join(settings.daily_folder, f"{name}.md")


def _shift(when: dt.datetime, amount: int, unit: str) -> dt.datetime:
    if unit in ("y", "q", "M"):
        months = amount * {"y": 12, "q": 3, "M": 1}[unit]
        total = when.year * 12 + (when.month - 1) + months
        year, month = divmod(total, 12)
        day = min(
            when.day,
            [
                31,
                29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28,
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ][month],
        )
        return when.replace(year=year, month=month + 1, day=day)
    seconds = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}[unit]
    return when + dt.timedelta(seconds=amount * seconds)


def render_template(template: str, *, day: dt.date, now: dt.datetime, daily_format: str) -> str:
    """The template with its variables filled in, as Obsidian's daily notes fill them for `day`."""
    name = format_moment(daily_format, day)
    at = dt.datetime(day.year, day.month, day.day, now.hour, now.minute, now.second)

    def var(m: re.Match[str]) -> str:
        kind, amount, unit, fmt = m.group(1).lower(), m.group(2), m.group(3), m.group(4)
        if amount is None and fmt is None:
            return name if kind == "date" else format_moment("HH:mm", now)
        when = _shift(at, int(amount), unit if unit in ("M", "m") else unit.lower()) if amount else at
        return format_moment(fmt.strip(), when) if fmt is not None else format_moment(daily_format, when)

    out = re.sub(r"{{\s*title\s*}}", lambda _: name, template, flags=re.IGNORECASE)
    out = _TEMPLATE_VAR.sub(var, out)
    out = re.sub(
        r"{{\s*yesterday\s*}}",
        lambda _: format_moment(daily_format, day - dt.timedelta(days=1)),
        out,
        flags=re.IGNORECASE,
    )
    return re.sub(
        r"{{\s*tomorrow\s*}}",
        lambda _: format_moment(daily_format, day + dt.timedelta(days=1)),
        out,
        flags=re.IGNORECASE,
    )


def entry_lines(text: str, when: dt.datetime) -> list[str]:
    """`- HH:MM text`, the lines of a multi-line entry indented under the item."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").strip().split("\n")]
    return [f"- {when:%H:%M} {lines[0]}", *(f"  {ln}" if ln else "" for ln in lines[1:])]


def add_under_heading(body: str, heading: str, entry: list[str], *, level: int = 2) -> str:
    """`body` with `entry` appended to the section titled `heading` (any level, case aside; the first
    one outside code), after its last non-blank line; a section that is missing is added at the end."""
    lines = body.split("\n")
    fence: str | None = None
    start: int | None = None
    start_level = 0
    end = len(lines)
    for i, line in enumerate(lines):
        f = _FENCE.match(line)
        if f:
            mark = f.group(1)[0] * 3
            fence = None if fence is not None and line.strip().startswith(fence) else (fence or mark)
            continue
        if fence is not None:
            continue
        m = _HEADING.match(line)
        if not m:
            continue
        if start is None and m.group(2).strip().casefold() == heading.strip().casefold():
            start, start_level = i, len(m.group(1))
        elif start is not None and len(m.group(1)) <= start_level:
            end = i
            break
    if start is None:
        while lines and not lines[-1].strip():
            lines.pop()
        head = [*lines, ""] if lines else []
        return "\n".join([*head, f"{'#' * level} {heading.strip()}", *entry, ""])
    last = max((k for k in range(start + 1, end) if lines[k].strip()), default=start)
    if last > start and _PLACEHOLDER.match(lines[last]):
        return "\n".join([*lines[:last], *entry, *lines[last + 1 :]])
    return "\n".join([*lines[: last + 1], *entry, *lines[last + 1 :]])


def _split_frontmatter(text: str) -> tuple[str, str]:
    """(the frontmatter block with its fences, or "", the rest) of a whole note's text."""
    lines = text.split("\n")
    if lines and lines[0].rstrip() == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip() in ("---", "..."):
                return "\n".join(lines[: i + 1]) + "\n", "\n".join(lines[i + 1 :])
    return "", text


def log_to_daily_note(
    root: Path, settings: ObsidianSettings, *, heading: str, entry: list[str], when: dt.datetime, quiet: float
) -> str:
    """Append `entry` under `heading` in the daily note of `when`'s day (created from the template if
    missing); returns its vault path. Waits up to 2 × `quiet` for a note being edited, then raises
    ConcurrentEditError saying so."""
    rel = daily_note_path(settings, when.date())
    for attempt in (1, 2):
        try:
            note = read_note(root, rel)
        except NoteNotFoundError:
            text = ""
            if settings.daily_template:
                try:
                    text = (root / settings.daily_template).read_text(encoding="utf-8-sig")
                except OSError:
                    text = ""  # Obsidian creates the note empty when its template is missing
                text = render_template(text, day=when.date(), now=when, daily_format=settings.daily_format)
            head, rest = _split_frontmatter(text)
            try:
                write_note(root, rel, expected_hash=None, whole=head + add_under_heading(rest, heading, entry))
                return rel
            except NoteError:
                if not (root / rel).exists() or attempt == 2:
                    raise
                continue  # Obsidian created it a moment ago: append to that one
        new_body = add_under_heading(note.body, heading, entry)
        try:
            write_note(root, rel, expected_hash=note.file_hash, body=new_body, quiet=quiet, wait=2 * quiet)
            return rel
        except ConcurrentEditError as exc:
            if attempt == 2 or "being written" in str(exc):
                raise ConcurrentEditError(
                    rel,
                    f"is being edited (saved in the last {quiet:g} s and not quiet "
                    f"since); the log entry was not written; try again when the note "
                    "has been left alone for a few seconds",
                ) from exc
    raise AssertionError("unreachable")


__all__ = ["add_under_heading", "daily_note_path", "entry_lines", "log_to_daily_note", "render_template"]
