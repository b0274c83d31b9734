"""The review as a note Obsidian renders as it is: callouts, tables, `[[links]]`, a Mermaid chart. Pure.

Sections, always in this order (an empty one says so in a line, so the page keeps its shape):
drafts awaiting commit (full text; a conflict side by side with the note it conflicts with;
the command that resolves each), the chart of strength ahead for the memories that matter
most, what fades soon, what went dormant, what came back, what was superseded, and notes
that could not be read. Every link names an existing note; table cells escape `|` (also the
one inside `[[Note|shown]]`, which Obsidian reads back) and carry line breaks as `<br>`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from ..vault.fields import local_zone
from .chart import PALETTE, Line, strength_chart
from .review import ChartLine, NoteView, Review

MAX_ROWS = 25  # rows per table; the rest are counted (`review --json` has them all)


def _day(value: dt.datetime | None) -> str:
    return value.astimezone(local_zone()).date().isoformat() if value is not None else "–"


def _when(value: dt.datetime | None) -> str:
    return value.astimezone(local_zone()).strftime("%Y-%m-%d %H:%M") if value is not None else "–"


def _cell_line(line: str) -> str:
    m = re.match(r"^#{1,6}\s+(.*?)\s*#*$", line.strip())
    return f"**{m.group(1)}**" if m else line.strip()  # a heading cannot live in a cell: bold it


def cell(text: str) -> str:
    """Text for a table cell: `|` escaped (links too), line breaks as <br>, headings in bold."""
    flat = "<br>".join(_cell_line(line) for line in text.strip().split("\n"))
    return flat.replace("\\|", "|").replace("|", "\\|")


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        out += ["", f"_… and {len(rows) - MAX_ROWS} more (`vault-memory review --json` lists them all)._"]
    return out


def _quote(text: str) -> list[str]:
    return [f"> {line}" if line.strip() else ">" for line in text.strip().split("\n")]


def _drafts(review: Review) -> list[str]:
    out = ["## Drafts awaiting commit", ""]
    if not review.drafts:
        return [*out, "No drafts: nothing is staged.", ""]
    out += [
        "Each draft is a note in the staging folder; open it to edit it before it is committed. "
        "`vault-memory review --interactive` walks them one by one.",
        "",
    ]
    for d in review.drafts:
        meta = f"staged {_day(d.created)}"
        meta += (
            f" · expired {_day(d.expires)}"
            if d.expired
            else (f" · expires {_day(d.expires)}" if d.expires else " · does not expire")
        )
        meta += f" · id `{d.node_id}`" if d.node_id else ""
        out += [f"### {d.link}", ""]
        if d.conflicts:
            names = ", ".join(c.link for c in d.conflicts)
            out += [f"> [!warning] Conflicts with {names}", f"> {meta}", ""]
            out += _table(
                ["This draft says", *(f"{cell(c.link)} says" for c in d.conflicts)],
                [[cell(d.text), *(cell(c.text) if c.text else "_(not readable)_" for c in d.conflicts)]],
            )
            out.append("")
        elif d.expired:
            out += [
                "> [!failure] Expired: it goes to `.trash/` the next time drafts are listed",
                f"> {meta}",
                ">",
                *_quote(d.text),
                "",
            ]
        else:
            out += [f"> [!note] Draft · {meta}", *_quote(d.text), ""]
        out += ["Resolve it with one of:", ""]
        out += [f"- {meaning}: `{command}`" for meaning, command in d.commands]
        out.append("")
    return out


def _chart(review: Review) -> list[str]:
    out = ["## Strength ahead", ""]
    if not review.chart:
        return [*out, "No memory to chart yet.", ""]
    labels = ["now", *(f"+{d // 7}w" for d in review.chart_days[1:])]
    lines = [Line(_line_name(c), tuple(c.values)) for c in review.chart]
    out += [
        f"_How strong the memories used most recently would be in the coming {len(labels) - 1} weeks if nothing "
        f"recalled them; below {review.dormant_below:g} a memory is dormant (recall leaves it out unless "
        "asked for it closely)._",
        "",
        strength_chart(
            lines, labels, threshold=review.dormant_below, title="Strength if not recalled", x_title="weeks from now"
        ),
        "",
    ]
    rows = [
        [
            square,
            cell(_legend(c)),
            c.note.tier,
            f"{c.note.strength:.2f}",
            _day(c.note.dormant_on),
            _day(c.note.last_used),
        ]
        for (square, _), c in zip(PALETTE, review.chart, strict=False)
    ]
    rows.append(["grey", "dormant below", "", f"{review.dormant_below:g}", "", ""])
    return [*out, *_table(["", "Memory", "Tier", "Strength now", "Dormant on", "Last used"], rows), ""]


def _line_name(line: ChartLine) -> str:
    """A line's name: its memory's title, or how many memories share the curve."""
    if not line.shared:
        return line.note.title
    return f"{line.note.title} and {len(line.shared)} more ({len(line.shared) + 1} memories)"


SHARED_LISTED = 5  # memories named in the legend for one shared curve; the rest are counted


def _legend(line: ChartLine) -> str:
    if not line.shared:
        return line.note.link
    links = [n.link for n in [line.note, *line.shared]]
    more = f" and {len(links) - SHARED_LISTED} more" if len(links) > SHARED_LISTED else ""
    return f"{len(links)} memories with this curve: {', '.join(links[:SHARED_LISTED])}{more}"


def _notes(title: str, empty: str, notes: list[NoteView], head: list[str], row: str) -> list[str]:
    out = [f"## {title}", ""]
    if not notes:
        return [*out, empty, ""]
    rows = []
    for n in notes:
        values = {
            "link": cell(n.link),
            "tier": n.tier,
            "strength": f"{n.strength:.2f}",
            "dormant": _day(n.dormant_on),
            "used": _day(n.last_used),
            "back": _when(n.reactivated),
            "why": cell(n.why),
        }
        rows.append([values[k] for k in row.split()])
    return [*out, *_table(head, rows), ""]


def _kept_out(review: Review, days: str) -> list[str]:
    out = [f"## Kept out of prefetch in the last {days}", ""]
    if not review.kept_out:
        return [*out, "Forgetting kept nothing out of a prefetch block.", ""]
    n = review.kept_out_blocks
    out += [
        f"_Dormant memories that answered a turn but were left out of its block ({n} block{'s' if n != 1 else ''}); "
        "recall still finds them when asked, and recalling one brings it back._",
        "",
    ]
    rows = [
        [cell(f"[[{k.path.removesuffix('.md')}]]"), str(k.blocks), f"{k.strength:.3f}", cell(k.example)]
        for k in review.kept_out[:MAX_ROWS]
    ]
    return [*out, *_table(["Memory", "Blocks", "Strength", "For example"], rows), ""]


def render(review: Review) -> str:
    """The body of the review note (the frontmatter is written by review.write_review)."""
    days = f"{review.window_days:g} day{'s' if review.window_days != 1 else ''}"
    conflicted = sum(1 for d in review.drafts if d.conflicts)
    summary = (
        f"**{len(review.drafts)} draft{'s' if len(review.drafts) != 1 else ''}** ({conflicted} in conflict) · "
        f"**{len(review.fading)} fading** · **{len(review.dormant)} went dormant** · "
        f"**{len(review.reactivated)} came back** · **{len(review.kept_out)} kept out of prefetch** · "
        f"**{len(review.superseded)} superseded** · "
        f"**{len(review.unreadable)} unreadable**"
    )
    kept = review.path.rsplit("/", 1)[-1].removesuffix(".md")
    out = [
        f"> [!info] Generated by vault-memory on {_when(review.now)}",
        "> Rewritten by `vault-memory review`, and by `vault-memory watch` when the memory changes. "
        f"Write your own notes elsewhere: if this note was edited, the next rewrite keeps your version as "
        f"`{kept} (edited DATE).md` beside it and writes a fresh one.",
        "",
        summary,
        "",
        *_drafts(review),
        *_chart(review),
        *_notes(
            f"Fading: dormant within {days}",
            "Nothing goes dormant soon.",
            review.fading,
            ["Memory", "Strength", "Dormant on", "Why"],
            "link strength dormant why",
        ),
        *_notes(
            f"Went dormant in the last {days}",
            "Nothing went dormant recently.",
            review.dormant,
            ["Memory", "Dormant since", "Why"],
            "link dormant why",
        ),
        *_notes(
            f"Came back in the last {days}",
            "Nothing dormant was recalled recently.",
            review.reactivated,
            ["Memory", "Came back", "Strength now"],
            "link back strength",
        ),
        *_kept_out(review, days),
        "## Superseded",
        "",
    ]
    if review.superseded:
        out += _table(
            ["Old note", "Replaced by", "Stated"],
            [[cell(s.old_link), cell(s.new_link), _day(s.when)] for s in review.superseded],
        )
    else:
        out.append("No note has been superseded.")
    out += ["", "## Notes that could not be read", ""]
    if review.unreadable:
        out += _table(
            ["Note", "Why"], [[cell(f"[[{p.removesuffix('.md')}]]"), cell(why)] for p, why in review.unreadable]
        )
    else:
        out.append("Every note could be read.")
    return "\n".join(out).rstrip() + "\n"


__all__ = ["MAX_ROWS", "cell", "render"]
