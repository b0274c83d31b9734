"""What a vault's own Obsidian settings say about its files (read from `.obsidian/`, never written).

    templates      core Templates' folder (`templates.json`), Templater's folder
                   (`plugins/templater-obsidian/data.json`), and Daily notes' template file
                   (`daily-notes.json`) with the folder it lives in: templates are not notes
                   (`{{date}}` is not a date, and a template's text answers no question);
                   when none is named, Foam's and a templates folder found by its name and
                   its template expressions (`found_templates`)
    excluded       "Excluded files" (`app.json` `userIgnoreFilters`): a `/regex/` or a path
                   prefix, as Obsidian applies them
    daily notes    folder and date format (moment.js tokens), so a daily note's file name dates it

A Logseq graph (`logseq/config.edn`) says one thing of its files: `logseq/` itself (settings,
backups of pages, version files) and its `:hidden` paths are not notes (`logseq_hidden`).

Everything is optional: a missing or unreadable settings file means "not configured".

Longer than 500 lines because it is every setting of the tools a vault is kept with that decides
which files are notes (Obsidian's, Logseq's and Foam's templates and hidden paths) and how a file's
name dates it (moment.js tokens); split, each part would import the others.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

log = logging.getLogger(__name__)

SETTINGS_DIR = ".obsidian"
#: Files only Obsidian's settings folder holds: Obsidian lets a person rename that folder (Settings
#: > About > Override config folder, e.g. `.desktop/`), so a dot-folder at the vault's root holding
#: one of them is its settings folder when there is no `.obsidian/`.
SETTINGS_FILES = ("app.json", "core-plugins.json", "appearance.json", "workspace.json", "daily-notes.json")
DEFAULT_DAILY_FORMAT = "YYYY-MM-DD"
EXCALIDRAW_SUFFIX = ".excalidraw.md"
#: A Logseq graph keeps its settings in `logseq/config.edn`, and in `logseq/` also its backups of
#: pages (`bak/`), version files and trash: older copies of notes, never notes of their own.
LOGSEQ_DIR = "logseq"
LOGSEQ_CONFIG = "config.edn"


@dataclass(frozen=True)
class ObsidianSettings:
    """The parts of `.obsidian/` that decide which files are notes and how daily notes are named."""

    template_folders: tuple[str, ...] = ()  # vault-relative, no trailing slash
    template_files: tuple[str, ...] = ()  # vault-relative .md paths
    excluded: tuple[str, ...] = ()  # userIgnoreFilters, verbatim
    daily_folder: str = ""
    daily_format: str = DEFAULT_DAILY_FORMAT
    daily_template: str = ""  # vault-relative .md path of the daily-notes template, "" when none
    logseq_hidden: tuple[str, ...] = ()  # a Logseq graph: its own folder, then its `:hidden` paths
    _regexes: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    def why_excluded(self, rel: str) -> str:
        """Which of Obsidian's settings takes this path out, in words ("" when none does)."""
        if rel.lower().endswith(EXCALIDRAW_SUFFIX):
            return "it is an Excalidraw drawing"
        if rel in self.template_files:
            return "it is the template of Obsidian's Daily notes (.obsidian/daily-notes.json)"
        for folder in self.template_folders:
            if _within(rel, folder):
                return (
                    f"it is in {folder}/, the vault's template folder (Obsidian's Templates or Templater settings, "
                    "or Foam's, or a templates folder whose notes hold template expressions): a template is not a note"
                )
        for hidden in self.logseq_hidden:
            if _within(rel, hidden):
                if hidden == LOGSEQ_DIR:
                    return "it is in logseq/, Logseq's own folder (its settings, and backups and old versions of pages)"
                return f"Logseq's :hidden setting ({LOGSEQ_DIR}/{LOGSEQ_CONFIG}) takes out /{hidden}"
        if self.excludes(rel):
            return "Obsidian's Excluded files (Settings > Files and links) take it out"
        return ""

    def excludes(self, rel: str, *, is_dir: bool = False) -> bool:
        """Whether Obsidian's own settings take this path out (templates, excluded files, drawings)."""
        if not is_dir and rel.lower().endswith(EXCALIDRAW_SUFFIX):
            return True
        if rel in self.template_files:
            return True
        if any(_within(rel, folder) for folder in (*self.template_folders, *self.logseq_hidden)):
            return True
        probe = rel + "/" if is_dir else rel
        for entry in self.excluded:
            if not (entry.startswith("/") and entry.endswith("/") and len(entry) > 2):
                # A plain entry is a path prefix ("Archive/" takes the folder, "Archive" also
                # "Archived.md"), which is how Obsidian's Excluded files setting reads it.
                if probe.startswith(entry):
                    return True
        return any(rx.search(probe) for rx in self._regexes)


def _within(rel: str, folder: str) -> bool:
    """Whether vault path `rel` is the folder (or file) `folder` or lies under it."""
    return rel == folder or rel.startswith(folder + "/")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.info("%s: not readable as JSON (%s); ignoring it", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def _clean(path: Any) -> str:
    if not isinstance(path, str):
        return ""
    return "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))


def settings_dir(vault: Path) -> Path | None:
    """The vault's Obsidian settings folder: `.obsidian/`, else the dot-folder at its root that
    holds Obsidian's settings files (a renamed config folder: `SETTINGS_FILES`), else None."""
    root = vault / SETTINGS_DIR
    if root.is_dir():
        return root
    try:
        folders = sorted(p for p in vault.iterdir() if p.name.startswith(".") and p.is_dir())
    except OSError:
        return None
    return next((p for p in folders if any((p / f).is_file() for f in SETTINGS_FILES)), None)


_EDN_COMMENT = re.compile(r"(?m)^\s*;.*$")
_EDN_HIDDEN = re.compile(r":hidden\s*\[([^\]]*)\]")
_EDN_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def logseq_hidden(vault: Path) -> tuple[str, ...]:
    """What a Logseq graph keeps out of its pages, when the vault is one (`logseq/config.edn`):
    its own folder `logseq/`, then the paths of its `:hidden` setting (`["/archived" "/test.md"]`,
    from the graph's root). () for a vault that is no Logseq graph."""
    config = vault / LOGSEQ_DIR / LOGSEQ_CONFIG
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ()
    except OSError as exc:
        log.info("%s: not readable (%s); only logseq/ itself is left out", config, exc)
        return (LOGSEQ_DIR,)
    hidden = [LOGSEQ_DIR]
    m = _EDN_HIDDEN.search(_EDN_COMMENT.sub("", text))
    if m is not None:
        hidden += [p for p in (_clean(h) for h in _EDN_STRING.findall(m.group(1))) if p]
    return tuple(dict.fromkeys(hidden))


#: Template files larger than this are not read (a template is a page, not a book).
MAX_TEMPLATE_BYTES = 256 * 1024
#: Foam's templates live in one fixed folder (Foam has no setting for it).
FOAM_TEMPLATES = ".foam/templates"
#: A folder named for templates ("Templates", "_templates", "99 Templates"), at the root or one down.
_TEMPLATES_NAME = re.compile(r"[\W\d_]*templates?", re.I)
#: What only a template writes: a Templater command, a core Templates or Foam variable.
_TEMPLATE_EXPRESSION = re.compile(r"<%.*?%>|\{\{\s*(?:date|time|title)\b.*?\}\}|\$\{(?:FOAM|CURRENT)_\w+", re.S)


def found_templates(vault: Path) -> tuple[str, ...]:
    """The vault's template folders when no setting names one: Foam's `.foam/templates/`, and a
    folder named for templates, at the root or one down, that holds a template expression in one of
    its notes (`<% tp.date.now() %>`, `{{date}}`, `${FOAM_DATE_YEAR}`). A vault copied or kept in git
    without its `.obsidian/` (many leave it out) still has its templates: `aneal` (stop 79) made 62
    daily notes and its people notes from `Templates/`, and without the settings that name it every
    template's checklist and headings were each note's own text, and the templates were notes."""
    out: list[str] = []
    if (vault / FOAM_TEMPLATES).is_dir():
        out.append(FOAM_TEMPLATES)
    tops = _folders(vault)
    candidates = [p for p in tops if _TEMPLATES_NAME.fullmatch(p.name)]
    candidates += [p for top in tops for p in _folders(top) if _TEMPLATES_NAME.fullmatch(p.name)]
    for folder in candidates:
        if any(_TEMPLATE_EXPRESSION.search(_head(note)) for note in sorted(folder.rglob("*.md"))[:50]):
            out.append(folder.relative_to(vault).as_posix())
    return tuple(out)


def _folders(folder: Path) -> list[Path]:
    """The folders in `folder` that are not hidden, by name; none when it cannot be read. A symlinked
    folder is not one (walk.walk_notes' rule: a symlinked folder is never entered), and scandir's
    entries carry their type: the vault's root of 1,393 notes was a stat each (7 ms at start-up)."""
    try:
        with os.scandir(folder) as entries:
            found = [Path(e.path) for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(found)


def _head(note: Path) -> str:
    try:
        with note.open(encoding="utf-8", errors="replace") as f:
            return f.read(MAX_TEMPLATE_BYTES)
    except OSError:
        return ""


def read_settings(vault: Path) -> ObsidianSettings:
    """The vault's Obsidian settings (all empty when it has no settings folder: `settings_dir`),
    and what a Logseq graph keeps out of its pages (`logseq_hidden`): a person may open one folder
    in both. When no setting names a template folder, the folders `found_templates` finds are the
    vault's templates."""
    root = settings_dir(vault)
    hidden = logseq_hidden(vault)
    if root is None:
        return ObsidianSettings(template_folders=found_templates(vault), logseq_hidden=hidden)
    folders: list[str] = []
    files: list[str] = []
    core = _clean(_read_json(root / "templates.json").get("folder"))
    if core:
        folders.append(core)
    templater = _clean(_read_json(root / "plugins" / "templater-obsidian" / "data.json").get("templates_folder"))
    if templater:
        folders.append(templater)
    daily = _read_json(root / "daily-notes.json")
    template = _clean(daily.get("template"))
    if template:
        template = template if template.lower().endswith(".md") else template + ".md"
        files.append(template)
        parent = str(PurePosixPath(template).parent)
        if parent not in (".", "") and parent != _clean(daily.get("folder")):
            folders.append(parent)  # the daily template's folder holds the vault's other templates too
    excluded = [e for e in _read_json(root / "app.json").get("userIgnoreFilters") or [] if isinstance(e, str) and e]
    regexes = []
    for entry in excluded:
        if entry.startswith("/") and entry.endswith("/") and len(entry) > 2:
            try:
                regexes.append(re.compile(entry[1:-1]))
            except re.error as exc:
                log.warning(
                    "%s: Excluded files entry %r is not a valid regex (%s); ignoring it", root / "app.json", entry, exc
                )
    fmt = daily.get("format")
    if not folders:
        folders += found_templates(vault)
    return ObsidianSettings(
        template_folders=tuple(dict.fromkeys(folders)),
        template_files=tuple(dict.fromkeys(files)),
        excluded=tuple(excluded),
        daily_folder=_clean(daily.get("folder")),
        daily_format=fmt if isinstance(fmt, str) and fmt.strip() else DEFAULT_DAILY_FORMAT,
        daily_template=template,
        logseq_hidden=hidden,
        _regexes=tuple(regexes),
    )


# -- dates in file names ----------------------------------------------------------------

_TOKENS = [  # moment.js tokens, longest first
    ("YYYY", r"(?P<Y>\d{4})"),
    ("MMMM", r"(?P<MMMM>[A-Za-z]+)"),
    ("MMM", r"(?P<MMM>[A-Za-z]{3})"),
    ("dddd", r"[A-Za-z]+"),
    ("ddd", r"[A-Za-z]{3}"),
    ("Do", r"(?P<D>\d{1,2})(?:st|nd|rd|th)"),
    ("YY", r"(?P<YY>\d{2})"),
    ("Y", r"(?P<Y>\d{4})"),  # the year in any number of digits ("D-M-Y": 25-9-2025)
    ("MM", r"(?P<M>\d{2})"),
    ("DD", r"(?P<D>\d{2})"),
    ("M", r"(?P<M>\d{1,2})"),
    ("D", r"(?P<D>\d{1,2})"),
    ("ww", r"\d{2}"),
    ("w", r"\d{1,2}"),
    ("E", r"\d"),
    ("d", r"\d"),
]
_MONTHS = {
    m.lower(): i
    for i, m in enumerate(
        [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ],
        start=1,
    )
}


def format_regex(fmt: str) -> re.Pattern[str] | None:
    """A regex for a moment.js date format, or None when it cannot name a day (e.g. no day)."""
    out, i, seen = [], 0, set()
    while i < len(fmt):
        if fmt[i] == "[":  # [literal]
            j = fmt.find("]", i)
            if j < 0:
                return None
            out.append(re.escape(fmt[i + 1 : j]))
            i = j + 1
            continue
        for tok, rx in _TOKENS:
            if fmt.startswith(tok, i):
                name = re.search(r"\?P<(\w+)>", rx)
                if name and name.group(1) in seen:
                    rx = re.sub(r"\?P<\w+>", "?:", rx)  # a repeated field: match, do not capture twice
                elif name:
                    seen.add(name.group(1))
                out.append(rx)
                i += len(tok)
                break
        else:
            out.append(re.escape(fmt[i]))
            i += 1
    if "D" not in seen or not ({"Y", "YY"} & seen) or not ({"M", "MMM", "MMMM"} & seen):
        return None
    return re.compile("^" + "".join(out) + "$")


_ISO_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


_DIGIT = re.compile(r"\d")


def date_from_name(stem: str, fmt: str = DEFAULT_DAILY_FORMAT) -> dt.date | None:
    """The day a daily note's file name names (`2024-03-05`, or the vault's daily-notes format)."""
    m = _ISO_DAY.match(stem)
    if m is not None:
        try:
            return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            pass
    if fmt == DEFAULT_DAILY_FORMAT or not _DIGIT.search(stem):
        return None  # the ISO form was it, or no number (the format's regex costs ~40 us a note)
    return _daily_date(stem, fmt)


NAMED_DATE = re.compile(  # one whole date, year included (date_in_name, fields.heading_day)
    r"(?<![\w-])(?:(?P<y0>\d{4})(?P<s0>[-_./])(?P<m0>\d{2})(?P=s0)(?P<d0>\d{2})"
    r"|(?P<m1>[A-Za-z]{3,9})\.?\s+(?P<d1>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y1>\d{4})"
    r"|(?P<d2>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m2>[A-Za-z]{3,9}),?\s+(?P<y2>\d{4}))(?![\w-])"
)


def date_in_name(stem: str) -> dt.date | None:
    """The day a file name names when it holds one whole date, year included, in a common form
    (fields.text_dates reads it only for a note with no date of its own):
    ISO (`Standup 2024-03-05`; Logseq names its journals `2024_03_05`, Dendron
    `daily.journal.2024.03.05`, and a property may say `2024/03/05`), or a month's name with a
    day either way round (`May 5th, 2022, Thursday`, `5 May 2022`): a person's daily notes named
    by another tool or format than the vault's settings say (a vault's `.obsidian/` is often not
    synced). fields.parse_time reads a date property's words so too. None for no date or two
    different ones."""
    if not _DIGIT.search(stem):
        return None
    found: set[dt.date] = set()
    for m in NAMED_DATE.finditer(stem):
        if m["y0"]:
            parts = (int(m["y0"]), int(m["m0"]), int(m["d0"]))
        else:
            n = "1" if m["m1"] else "2"
            parts = (int(m["y" + n]), _month_named(m["m" + n]), int(m["d" + n]))
        try:
            found.add(dt.date(*parts))
        except ValueError:
            continue
    return found.pop() if len(found) == 1 else None


def _month_named(name: str) -> int:
    """The month a name or its abbreviation of three letters or more names ("Sept" 9), else 0."""
    return next((i for full, i in _MONTHS.items() if full.startswith(name.lower()) and len(name) >= 3), 0)


def _daily_date(stem: str, fmt: str) -> dt.date | None:
    """The day a file name names in the daily-notes format `fmt`, or None."""
    rx = format_regex(fmt)
    m = rx.match(stem) if rx is not None else None
    if m is None:
        return None
    try:
        g = m.groupdict()
        year = int(g["Y"]) if g.get("Y") else 2000 + int(g["YY"])
        if g.get("M"):
            month = int(g["M"])
        else:
            month = _month_named(g.get("MMMM") or g.get("MMM") or "")
        return dt.date(year, month, int(g["D"]))
    except (ValueError, KeyError):
        return None


# -- dates into file names (moment.js `format`, as Obsidian names daily notes) -----------------

_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTH_NAMES = list(_MONTHS)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _locale_week(day: dt.date) -> tuple[int, int]:
    """(week, week-year) as moment's default `en` locale counts them: weeks start on Sunday and
    week 1 is the week holding January 1st (dow 0, doy 6)."""

    def offset(year: int) -> int:  # day of the year (0-based, may be negative) on which week 1 starts
        return -((dt.date(year, 1, 1).weekday() + 1) % 7)

    def weeks(year: int) -> int:
        days = (dt.date(year + 1, 1, 1) - dt.date(year, 1, 1)).days
        return (days - offset(year) + offset(year + 1)) // 7

    year = day.year
    week = (day.timetuple().tm_yday - 1 - offset(year)) // 7 + 1
    if week < 1:
        year -= 1
        week += weeks(year)
    elif week > weeks(year):
        week -= weeks(year)
        year += 1
    return week, year


def _tokens(when: dt.datetime) -> dict[str, str]:
    """Every moment.js token format_moment writes, with its value at `when`."""
    d = when
    iso_year, iso_week, iso_day = d.isocalendar()
    week, week_year = _locale_week(d.date())
    hour12 = d.hour % 12 or 12
    values: dict[str, str] = {
        "YYYY": f"{d.year:04d}",
        "YY": f"{d.year % 100:02d}",
        "Y": str(d.year),
        "Q": str((d.month - 1) // 3 + 1),
        "MMMM": _MONTH_NAMES[d.month - 1].capitalize(),
        "MMM": _MONTH_NAMES[d.month - 1][:3].capitalize(),
        "MM": f"{d.month:02d}",
        "Mo": _ordinal(d.month),
        "M": str(d.month),
        "DDDD": f"{d.timetuple().tm_yday:03d}",
        "DDD": str(d.timetuple().tm_yday),
        "DD": f"{d.day:02d}",
        "Do": _ordinal(d.day),
        "D": str(d.day),
        "dddd": _DAYS[d.weekday()],
        "ddd": _DAYS[d.weekday()][:3],
        "dd": _DAYS[d.weekday()][:2],
        "d": str((d.weekday() + 1) % 7),
        "e": str((d.weekday() + 1) % 7),
        "E": str(iso_day),
        "ww": f"{week:02d}",
        "w": str(week),
        "wo": _ordinal(week),
        "gggg": f"{week_year:04d}",
        "WW": f"{iso_week:02d}",
        "W": str(iso_week),
        "Wo": _ordinal(iso_week),
        "GGGG": f"{iso_year:04d}",
        "HH": f"{d.hour:02d}",
        "H": str(d.hour),
        "hh": f"{hour12:02d}",
        "h": str(hour12),
        "mm": f"{d.minute:02d}",
        "m": str(d.minute),
        "ss": f"{d.second:02d}",
        "s": str(d.second),
        "A": "AM" if d.hour < 12 else "PM",
        "a": "am" if d.hour < 12 else "pm",
        "X": str(int(d.timestamp())),
        "x": str(int(d.timestamp() * 1000)),
    }
    return values


_FORMAT_TOKENS = sorted(_tokens(dt.datetime(2000, 1, 1)), key=len, reverse=True)  # longest first


def format_moment(fmt: str, when: dt.datetime | dt.date) -> str:
    """`when` formatted with a moment.js format string (English names), as Obsidian names daily notes.

    Covers the tokens date and time formats use: years, quarters, months, days (of month, year and
    week), weeks (locale `w`, ISO `W`), hours, minutes, seconds, AM/PM, Unix time and `[literal]` text.
    """
    if not isinstance(when, dt.datetime):
        when = dt.datetime(when.year, when.month, when.day)
    values = _tokens(when)
    out: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "[":
            j = fmt.find("]", i)
            if j >= 0:
                out.append(fmt[i + 1 : j])
                i = j + 1
                continue
        tok = next((t for t in _FORMAT_TOKENS if fmt.startswith(t, i)), None)
        if tok is None:
            out.append(fmt[i])
            i += 1
        else:
            out.append(values[tok])
            i += len(tok)
    return "".join(out)


__all__ = ["ObsidianSettings", "date_from_name", "format_moment", "format_regex", "read_settings"]
