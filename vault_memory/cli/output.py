"""Rendering: JSON on stdout, notes and progress on stderr, and what a terminal may be shown.

Notes are written by anyone (a web clipper, a shared vault, a model), and a terminal obeys
what it is sent: an escape sequence in a title can retitle the window, write the clipboard
(OSC 52) or hide text. Every human-readable line goes through `clean` (`say` on stdout,
`note` on stderr, and the log formatter main.py installs): escape sequences are removed
whole, other C0 and C1 controls and DEL dropped; newlines and tabs stay. JSON is exact
instead: json escapes C0 itself, and `emit_json` writes DEL and C1 as `\\u00XX` escapes,
which decode to the same string.

JSON convention (docs/agents.md, "JSON output"): every `--json` prints exactly one JSON object; a list
is always under a plural key (`hits`, `staged`, `committed`, `left`, `entries`), listings
also carry `count`; a record (hit, staged memory, committed, left, pin result) has the same
fields wherever it appears, the `to_dict()` of the library's record.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import typer

from ..errors import naming_once
from ..internals import internals

if TYPE_CHECKING:
    from vault_memory.index.indexer import IndexReport
    from vault_memory.memory import Memory


# ESC or its 8-bit form, then: a CSI sequence (parameters, intermediates, a final byte); an OSC,
# DCS, SOS, PM or APC string up to BEL or ST (or the end: an unterminated one swallows the rest);
# or any other two-character escape.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])(?:[^\x07\x1b\x9c]|\x1b(?!\\))*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x7e]?"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f]")


def clean(text: str) -> str:
    """`text` safe to show on a terminal: escape sequences and control characters removed (\\n, \\t kept)."""
    if not isinstance(text, str):
        text = str(text)
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


def say(message: str) -> None:
    """A line of human-readable data on stdout (cleaned for the terminal)."""
    typer.echo(clean(message))


def emit_json(data: Mapping[str, Any]) -> None:
    """The one JSON writer: one object per command, UTF-8 as is, dates and paths as strings."""
    if not isinstance(data, Mapping):  # the convention, enforced where it is cheap to notice
        raise TypeError(f"--json output must be one object, not {type(data).__name__}")
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    typer.echo(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


def note(message: str) -> None:
    """What happened, for a human: stderr, so stdout stays data (cleaned for the terminal)."""
    typer.echo(clean(message), err=True)


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """`embedding 340/1048 chunks (32%)  11.4/s  ETA 1:02` on stderr, redrawn in place.

    Only when stderr is a terminal (a pipe or a log file gets nothing). The rate is the
    average since the first call, which includes the model's load: honest, and steady
    enough for an ETA after a few seconds. Redraws at most every `interval` seconds.
    """

    def __init__(
        self,
        label: str,
        unit: str = "chunks",
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 0.25,
        enabled: bool | None = None,
        detail: Callable[[], str] | None = None,
    ) -> None:
        """`detail` is asked for text to append to each redraw (e.g. that recall is keyword-only)."""
        self.label, self.unit = label, unit
        self.detail = detail
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.interval = interval
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._start: float | None = None
        self._start_done = 0
        self._last_draw = -float("inf")
        self._width = 0
        self._state: tuple[int, int] = (0, 0)  # the latest (done, total)
        self._drawn: tuple[int, int] | None = None  # what the line shows now

    @property
    def state(self) -> tuple[int, int]:
        """The latest (done, total), drawn or not (what an interrupted run had reached)."""
        return self._state

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        self._state = (done, total)
        if not self.enabled:
            return
        now = self.clock()
        if self._start is None:
            self._start, self._start_done = now, done
        if done < total and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self._drawn = self._state
        self._draw(self.line(done, total, now))

    def line(self, done: int, total: int, now: float) -> str:
        elapsed = now - (self._start if self._start is not None else now)
        rate = (done - self._start_done) / elapsed if elapsed > 0 else 0.0
        if done >= total:
            speed = f" ({rate:.1f}/s)" if rate > 0 else ""
            return f"{self.label} {done}/{total} {self.unit} in {_clock(elapsed)}{speed}"
        pct = int(100 * done / total)
        eta = _clock((total - done) / rate) if rate > 0 else "?"
        extra = self.detail() if self.detail is not None else ""
        return f"{self.label} {done}/{total} {self.unit} ({pct}%)  {rate:.1f}/s  ETA {eta}{extra}"

    def _draw(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = max(self._width, len(text))

    def close(self) -> None:
        """End the line (drawing the final state if the last update was skipped)."""
        if self._width == 0:
            return
        if self._drawn != self._state:  # the last update was skipped by the redraw interval
            self._draw(self.line(*self._state, self.clock()))
        self.stream.write("\n")
        self.stream.flush()
        self._width = 0


ANNOUNCE_TEXTS = 32  # a command that embeds this many texts before it answers says so first (a second or more)


def ensure_current(mem: Memory) -> None:
    """Reconcile before reading, with progress, unless another process is writing the index.

    A vault small enough is embedded here, before the answer (IndexFolder.ensure_current): the first
    run of a small vault says so on stderr, since it takes a few seconds; Ctrl-C meanwhile says
    that the next run resumes."""
    progress = Progress("indexing")
    told = False

    def step(done: int, total: int) -> None:
        nonlocal told
        if not told and done == 0 and total >= ANNOUNCE_TEXTS:
            told = True
            first = mem.vectors().embedded == 0
            note(
                f"first run: embedding this vault's {total:,} texts before answering (a vault this small "
                "takes seconds; later runs embed only what changed)"
                if first
                else f"embedding {total:,} new texts before answering"
            )
        progress(done, total)

    try:
        internals(mem).ensure_current(step)
    except KeyboardInterrupt:
        progress.close()
        interrupted(progress)
    finally:
        progress.close()


def interrupted(progress: Progress, *, sentences: bool = False) -> NoReturn:
    """Ctrl-C while embedding: what was done is kept, and the next run resumes from there (exit 130).
    `sentences`: in the second pass, the answer sentences (search/sentences.py), when every chunk has its vector."""
    done, total = progress.state
    if sentences:
        note(
            f"interrupted at the answer sentences of {done:,} of {total:,} chunks: every chunk has its vector "
            "and recall works; run `vault-memory index` to embed the rest (a new question embeds those it "
            "needs meanwhile)"
        )
        raise typer.Exit(130)
    reached = f" at {done:,} of {total:,} texts" if total else ""
    note(
        f"interrupted{reached}: what was embedded is kept; run `vault-memory index` to resume where it "
        "stopped (nothing is embedded twice; until then recall answers by keyword)"
    )
    raise typer.Exit(130)


SKIPPED_LISTED = 10  # unreadable notes `index` names; status lists every one


def _listed(why_of: dict[str, str], where_all: str) -> list[str]:
    """The first SKIPPED_LISTED notes and why, each naming its path once, then how many more."""
    out = [f"  {naming_once(path, why)}" for path, why in sorted(why_of.items())]
    more = len(out) - SKIPPED_LISTED
    return out[:SKIPPED_LISTED] + ([f"  ... and {more} more ({where_all})"] if more > 0 else [])


def render_index_report(report: IndexReport) -> str:
    counts = report.counts
    parts = [f"{counts.get(k, 0)} {k}" for k in ("new", "modified", "moved", "meta", "deleted", "unchanged")]
    lines = [
        f"indexed {report.notes} notes, {report.chunks} chunks ({', '.join(parts)}); "
        f"embedded {report.texts_embedded} texts"
        + (f" and {report.sentences_embedded} answer sentences" if report.sentences_embedded else "")
        + f" in {report.seconds:.2f}s"
    ]
    if report.texts_pending:
        lines.append(
            f"{report.texts_pending} texts wait for their vectors: recall answers by keyword (BM25) "
            "until they are embedded"
        )
    if report.sentences_pending and not report.texts_pending:
        lines.append(
            f"the answer sentences of {report.sentences_pending} chunks wait for their vectors: a new question "
            "embeds those it needs meanwhile (`vault-memory index` embeds them)"
        )
    if report.failures:
        # Named here, every time: the warning on stderr is said once, when a note is first seen or changed.
        n = len(report.failures)
        lines.append(f"skipped {n} note{'s' if n != 1 else ''} that could not be read (kept out until fixed):")
        lines += _listed(report.failures, "`vault-memory status` lists them all")
    if report.properties_unread:
        n = len(report.properties_unread)
        lines.append(
            f"read {n} note{'s' if n != 1 else ''} whose properties are not valid YAML by their text "
            "(properties one line at a time; nothing is written into them until the YAML is fixed):"
        )
        lines += _listed(report.properties_unread, "`vault-memory doctor` lists them all")
    return "\n".join(lines)
