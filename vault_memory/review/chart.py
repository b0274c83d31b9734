"""A Mermaid line chart of memory strength over the coming weeks, for the review note. Pure.

Mermaid's `xychart-beta` (what Obsidian renders; `xychart` in Mermaid 11 is the same diagram)
draws lines but no legend, so each line gets a colour from a fixed palette (set through an
`%%{init}%%` directive, which every Mermaid release Obsidian has shipped reads) and the review
note prints the legend beside it with a square of the same colour. The grammar emitted is the
one in Mermaid's `xychart.jison`: a title, a band x-axis of quoted labels, a numeric y-axis
range, and one `line "name" [numbers]` per memory, every line as long as the x-axis.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

# (legend square, line colour): the squares are the emoji whose colour each line is drawn in.
PALETTE = (
    ("🟥", "#e03131"),
    ("🟦", "#1971c2"),
    ("🟩", "#2f9e44"),
    ("🟧", "#f08c00"),
    ("🟪", "#9c36b5"),
    ("🟫", "#8d5524"),
)
THRESHOLD_COLOUR = "#868e96"  # the dormancy threshold, drawn last, in grey
MAX_LINES = len(PALETTE)


@dataclass(frozen=True)
class Line:
    """One memory's strength at each x-axis point."""

    name: str
    values: tuple[float, ...]


def _quoted(text: str) -> str:
    """A Mermaid string: no double quotes or line breaks inside (the grammar has no escapes)."""
    return '"' + re.sub(r'["\n\r]+', " ", text).strip() + '"'


def _number(value: float) -> str:
    return f"{max(0.0, min(1.0, value)):.3f}".rstrip("0").rstrip(".") or "0"


def strength_chart(
    lines: Sequence[Line], labels: Sequence[str], *, threshold: float, title: str, x_title: str = "from now"
) -> str:
    """The ```mermaid block: one line per memory (at most MAX_LINES), then the threshold in grey."""
    lines = list(lines)[:MAX_LINES]
    for line in lines:
        if len(line.values) != len(labels):
            raise ValueError(f"{line.name}: {len(line.values)} values for {len(labels)} x-axis labels")
    palette = [colour for _, colour in PALETTE[: len(lines)]] + [THRESHOLD_COLOUR]
    init = {"themeVariables": {"xyChart": {"plotColorPalette": ", ".join(palette)}}}
    out = [
        "```mermaid",
        f"%%{{init: {json.dumps(init)}}}%%",
        "xychart-beta",
        f"    title {_quoted(title)}",
        f"    x-axis {_quoted(x_title)} [{', '.join(_quoted(label) for label in labels)}]",
        '    y-axis "strength" 0 --> 1',
    ]
    for line in lines:
        out.append(f"    line {_quoted(line.name)} [{', '.join(_number(v) for v in line.values)}]")
    out.append(f"    line {_quoted('dormant below')} [{', '.join(_number(threshold) for _ in labels)}]")
    out.append("```")
    return "\n".join(out)


__all__ = ["MAX_LINES", "PALETTE", "THRESHOLD_COLOUR", "Line", "strength_chart"]
