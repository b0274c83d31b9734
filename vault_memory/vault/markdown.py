"""Pure functions over one note: what it is about and how it is cut into chunks.

The parser (another module) hands us the YAML frontmatter as a mapping and the
body as a string with the frontmatter removed. Nothing here touches the disk.

* :func:`extract_info` reads title, tags, aliases and wikilinks, following the
  rules Obsidian uses (tags and links inside code do not count).
* :func:`chunk_body` cuts the body into heading-scoped chunks that each fit a
  token budget, without ever dropping text: every non-whitespace character of
  the body ends up in some chunk (headings appear as the heading path line).

Both use markdown-it-py's CommonMark parser (plus GFM tables) for block
structure, and work on raw source line ranges (``Token.map``) so that chunk
text is the note's own Markdown, not a re-rendering of it.

Longer than most modules: extraction and chunking share one parse tree and its
line/offset helpers; split apart, each half would re-parse or re-export the other's
internals.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vault_memory.errors import ConfigError
from vault_memory.vault.fields import HEADING_SEP, property_key, property_line
from vault_memory.vault.templates import NONE as NO_SCAFFOLDING
from vault_memory.vault.templates import Scaffolding

if TYPE_CHECKING:
    from markdown_it.token import Token

__all__ = [
    "Chunk",
    "Heading",
    "NoteInfo",
    "TARGET_TOKENS",
    "approx_tokens",
    "chunk_body",
    "extract_info",
    "headings",
    "strip_comments",
    "chunk_note",
    "PROPERTIES_HEADING",
    "resolve_inline_queries",
    "strip_link_definitions",
    "strip_reader_marks",
    "strip_queries",
]


# --------------------------------------------------------------------------- #
# Shared helpers
# --------------------------------------------------------------------------- #

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def approx_tokens(text: str) -> int:
    """Cheap, tokenizer-free estimate of how many model tokens `text` costs.

    Counts words and punctuation marks, adds 30 % for sub-word splits and 2
    for special tokens, rounded up. Errs on the high side for prose.
    """
    return math.ceil(len(_TOKEN_RE.findall(text)) * 1.3 + 2)


def _normalise(body: str) -> str:
    # markdown-it normalises these too; doing it ourselves keeps its line
    # numbers aligned with our character offsets.
    return body.replace("\r\n", "\n").replace("\r", "\n")


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _fence_after(fence: str | None, line: str) -> tuple[str | None, str | None]:
    """(the fence open after `line`, the info string when `line` opens one), as CommonMark reads
    fences and the chunker's parser does: three or more backticks or tildes open one; the same
    character, at least as many, and nothing after them close it (```` ```python ```` inside a
    ``` block is code, not its end)."""
    m = _FENCE.match(line)
    if fence is None:
        return (m.group(1), line[m.end() :].strip()) if m else (None, None)
    rest = line[m.end() :].strip() if m else ""
    closes = m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not rest
    return (None if closes else fence), None


def strip_comments(body: str) -> str:
    """The body without Obsidian `%% comments %%` and HTML `<!-- comments -->` (inline or across
    lines), which Obsidian hides in reading view: a person writes there what is not for reading
    ("<!-- spare key in the blue tin -->" is as private as "%% safe code 4711 %%"). Fenced code and
    inline code are left alone (`%%` and `<!--` are literal there). Line breaks inside a comment are
    kept, so the text around it keeps its lines; an unclosed `%%` hides the rest of the note, as in
    Obsidian, and an unclosed `<!--` is text (what a note about HTML writes).
    """
    if "%%" not in body and "<!--" not in body:
        return body
    out: list[str] = []
    closing: str | None = None  # inside a comment: what ends it ("%%" or "-->")
    fence: str | None = None
    lines = body.split("\n")
    last_close = max((k for k, line in enumerate(lines) if "-->" in line), default=-1)  # the last line with "-->"
    for k, line in enumerate(lines):
        if closing is None:
            after, _ = _fence_after(fence, line)
            if fence is not None or after is not None:  # a fence line, or code inside one
                fence = after
                out.append(line)
                continue
        kept: list[str] = []
        i = 0
        while i < len(line):
            if closing is not None:
                end = line.find(closing, i)
                if end < 0:
                    break
                i, closing = end + len(closing), None
                continue
            if line[i] == "`":  # an inline code span: copied as it is
                j = i
                while j < len(line) and line[j] == "`":
                    j += 1
                close = line.find(line[i:j], j)
                end = len(line) if close < 0 else close + (j - i)
                kept.append(line[i:end])
                i = end
                continue
            opened = next((o for o in _COMMENT_OPENS if line.startswith(o, i)), None)
            if opened == "<!--" and "-->" not in line[i + 4 :] and last_close <= k:
                opened = None  # "<!--" that nothing closes is text (a note about HTML), not the rest hidden
            if opened is not None:
                closing = _COMMENT_OPENS[opened]
                i += len(opened)
                continue
            kept.append(line[i])
            i += 1
        out.append("".join(kept))
    return "\n".join(out)


#: What opens a comment a reader never sees, and what closes it.
_COMMENT_OPENS = {"%%": "%%", "<!--": "-->"}


_CALLOUT = re.compile(r"^(\s*(?:>\s*)+)\[!([^\]\s]+)\][+-]?[ \t]*(.*)$")
_BLOCK_ID = re.compile(r"(?:^|(?<=\s))\^[A-Za-z0-9-]+[ \t]*$")
#: Logseq's own block properties, which it never shows: a block folded (`collapsed:: true`) and a
#: block's id, which a `((reference))` names (`id:: 6408c2a1-...`).
_UUID = r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
_LOGSEQ_MARK = re.compile(rf"^[ \t]*(?:-[ \t]+)?(?:collapsed::[ \t]*(?:true|false)|id::[ \t]*{_UUID})[ \t]*$")
#: A Logseq drawer under a block, from its own line to an `:END:` line: `:PROPERTIES:` (the older
#: form of its block properties: `:id:`, `:heading: true`, a task's `:todo:` time) and `:LOGBOOK:`
#: (a task's clock lines). Logseq shows neither.
_DRAWER_OPEN = re.compile(r"^[ \t]*(?:-[ \t]+)?:(?:PROPERTIES|LOGBOOK):[ \t]*$")
_DRAWER_END = re.compile(r"^[ \t]*:END:[ \t]*$")


def strip_reader_marks(body: str) -> str:
    """The body as Obsidian shows it, without the marks it draws as something else:

    - a callout's `[!type]` (and its fold sign): `> [!warning]- Pressure` is a box titled
      "Pressure" over its text, so the line reads `> Pressure:` (`> Warning:` when it has no title,
      as Obsidian titles it);
    - a block's id at the end of its line, `^pressure-note`, which a link to the block names
      and reading view hides (`dexter`'s 894 Readwise notes end every highlight with one, `^rw60275595`,
      and blocks showed them);
    - Logseq's `collapsed:: true` and `id:: <uuid>` lines under a block (`_LOGSEQ_MARK`), which
      Logseq keeps for itself and never shows: the line is left empty; and its drawers,
      `:PROPERTIES:` or `:LOGBOOK:` to `:END:` (`_DRAWER_OPEN`), each of their lines left empty (a
      Logseq journal's entry showed ":PROPERTIES: :id: 6020f3af-… :END:" above the tests it
      listed). A drawer never closed is text.

    - inline HTML that only formats its text (`_PAIRED_TAG`: `<mark class="hltr-yellow">2 x
      Thunderbolt 4</mark>`, how the Highlightr plugin highlights; `<u>`, `<sup>`, `<span
      style=…>`), which Obsidian draws as that text: the tags are left out when the line closes
      what it opens, outside code spans ("the <b> tag" of a note about HTML stays).

    Fenced code is left alone; every line keeps its place."""
    if "[!" not in body and "^" not in body and "::" not in body and ":END:" not in body and "</" not in body:
        return body
    out: list[str] = []
    fence: str | None = None
    lines = body.split("\n")
    ends = [j for j, line in enumerate(lines) if ":END:" in line and _DRAWER_END.match(line)]
    drawer_end = -1  # the index of the `:END:` line closing the drawer being hidden
    for i, line in enumerate(lines):
        after, _ = _fence_after(fence, line)
        if fence is not None or after is not None:
            fence = after
            out.append(line)
            continue
        if i <= drawer_end:
            out.append("")
            continue
        if ":" in line and _DRAWER_OPEN.match(line):
            k = bisect.bisect_right(ends, i)  # the first `:END:` after it (found once: a note of
            drawer_end = ends[k] if k < len(ends) else -1  # 10,000 unclosed drawers stays linear)
            if drawer_end > i:
                out.append("")
                continue
        m = _CALLOUT.match(line)
        if m:  # the title leads into the box's text: "> Pressure:" above "> The boiler pressure should..."
            title = m.group(3).strip() or m.group(2).capitalize()
            line = m.group(1) + (title if title[-1] in ".:?!" else title + ":")
        if "^" in line:
            line = _BLOCK_ID.sub("", line).rstrip()
        if "::" in line and _LOGSEQ_MARK.match(line):
            line = ""
        if "</" in line:
            line = _without_html_marks(line)
        out.append(line)
    return "\n".join(out)


#: Inline HTML elements that only format their text, each opened and closed on one line.
_PAIRED_TAG = re.compile(
    r"<(mark|span|font|u|b|i|em|strong|sup|sub|s|del|ins|small|big|kbd|abbr|cite|q)\b[^<>\n]*>(.*?)</\1\s*>",
    re.IGNORECASE,
)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _without_html_marks(line: str) -> str:
    """The line with its formatting tags left out (`_PAIRED_TAG`, nested ones too), outside code spans."""

    def unwrap(text: str) -> str:
        while (plain := _PAIRED_TAG.sub(r"\2", text)) != text:
            text = plain
        return text

    out, start = [], 0
    for m in _CODE_SPAN.finditer(line):
        out += [unwrap(line[start : m.start()]), m.group(0)]
        start = m.end()
    return "".join([*out, unwrap(line[start:])])


#: Fenced blocks that are queries over the vault, which Obsidian shows as their results
#: (core search embeds, Dataview, Tasks, Obsidian's Bases): their source states nothing a person reads.
QUERY_FENCES = frozenset({"query", "dataview", "dataviewjs", "tasks", "base"})


#: A CommonMark link reference definition (`[label]: destination "title"`), which Markdown shows as
#: nothing: Foam appends one for every wikilink of a note ("Autogenerated link references"), so a
#: note of three words carried the titles of every note it links to.
_LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*\S+(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$")


def strip_link_definitions(body: str) -> str:
    """The body with its link reference definitions blanked (lines kept as empty lines): a run of
    them after a blank line (a definition cannot interrupt a paragraph), outside fenced code."""
    if "]:" not in body:
        return body
    out: list[str] = []
    fence: str | None = None
    after_break = True  # at the start, after a blank line, or after another definition
    for line in body.split("\n"):
        after, info = _fence_after(fence, line)
        code = fence is not None or info is not None
        fence = after
        if not code and after_break and _LINK_DEFINITION.match(line):
            out.append("")
            continue
        out.append(line)
        after_break = not line.strip()
    return "\n".join(out)


#: A Dataview inline query, `= expression` or `$= js`, in backticks: Obsidian shows its result.
_INLINE_QUERY = re.compile(r"`\$?=\s*([^`\n]*)`")
_THIS_FIELD = re.compile(r"this\.([\w\- ]+)$")


def resolve_inline_queries(body: str, properties: Sequence[tuple[str, str]]) -> str:
    """The body with each Dataview inline query as a reader sees it: `= this.rating` is the note's
    own `rating` property, any other query (a computed view) is left out. A note written as
    "`= this.name` > `= this.rating`" with its values in its properties was indexed, and shown,
    as code ("= this.name > = this.rating")."""
    if "`=" not in body and "`$=" not in body:
        return body
    values = {property_key(k): v for k, v in properties}

    def shown(m: re.Match[str]) -> str:
        field_ref = _THIS_FIELD.match(m.group(1).strip())
        return values.get(property_key(field_ref.group(1)), "") if field_ref else ""

    return _INLINE_QUERY.sub(shown, body)


#: Logseq's queries: an advanced query's `#+BEGIN_QUERY` … `#+END_QUERY` (its EDN source), and a
#: block that is only a query macro (`{{query (property type book)}}`); Logseq shows their results.
_LOGSEQ_QUERY_OPEN = re.compile(r"^[ \t]*(?:-[ \t]+)?#\+BEGIN_QUERY\b", re.IGNORECASE)
_LOGSEQ_QUERY_CLOSE = re.compile(r"#\+END_QUERY\b", re.IGNORECASE)
_LOGSEQ_QUERY_MACRO = re.compile(r"^[ \t]*(?:-[ \t]+)?\{\{\s*query\b.*\}\}[ \t]*$", re.IGNORECASE)
#: A line that only embeds a view of Obsidian's Bases (`![[Projects.base]]`, `![[Books.base#Shelf]]`),
#: which Obsidian shows as a table of other notes: its source names no fact of this one.
_BASE_EMBED = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?!\[\[[^\]\n]+?\.base(?:#[^\]\n]*)?(?:\|[^\]\n]*)?\]\][ \t]*$")


def strip_queries(body: str) -> str:
    """The body with each fenced query block (QUERY_FENCES) blanked, its lines kept as empty
    lines. In reading view a person sees the query's results, not `TABLE author FROM #book`:
    indexed, that source matched "book a table" with a reading list. Logseq's queries likewise
    (`#+BEGIN_QUERY` … `#+END_QUERY`, a `{{query …}}` block): a Logseq graph's templates page
    showed `{:title "Therapy Sessions" :query [:find (pull ?b [*]) …` in a block. And a line that
    only embeds a view of Obsidian's Bases (`![[PROJECTS.base]]`, `_BASE_EMBED`), which shows a
    table of other notes: a fetched vault's daily notes each ended on two, and recall showed them."""
    if "```" not in body and "~~~" not in body and "#+" not in body and "{{" not in body and ".base" not in body:
        return body
    out: list[str] = []
    fence: str | None = None
    blank = False
    logseq = False  # inside a Logseq advanced query
    for line in body.split("\n"):
        after, info = _fence_after(fence, line)
        if info is not None:  # it opens a fence
            blank = bool(info) and info.split(maxsplit=1)[0].lower() in QUERY_FENCES
        outside = fence is None and after is None  # a line of text, not of a fence
        if outside and not logseq and _LOGSEQ_QUERY_OPEN.match(line):
            logseq = True
        hidden = logseq or (outside and bool(_LOGSEQ_QUERY_MACRO.match(line) or _BASE_EMBED.match(line)))
        out.append("" if blank or hidden else line)
        if logseq and _LOGSEQ_QUERY_CLOSE.search(line):
            logseq = False
        if fence is not None and after is None:  # it closed one
            blank = False
        fence = after
    return "\n".join(out)


_PARSERS = threading.local()  # per thread: a parser, and the last bodies' trees (_parse)
#: Trees kept per thread: the indexer chunks a group of notes (up to 128 chunks) and then writes
#: their rows, whose links and tags come from the same tree.
PARSES_KEPT = 256


def _parse(body: str) -> tuple[_Node, ...]:
    """The block tree of `body` (read-only: shared). Indexing a note asks for it twice, once
    for its chunks and once for its links and tags (extract_info): parsed once (the last
    PARSES_KEPT bodies, oldest out first), which was a fifth of cataloguing 2,000 notes."""
    last: dict[str, tuple[_Node, ...]] | None = getattr(_PARSERS, "last", None)
    if last is None:
        last = _PARSERS.last = {}
    parsed = last.get(body)
    if parsed is None:
        parsed = tuple(_parse_now(body))
        if len(last) >= PARSES_KEPT:
            del last[next(iter(last))]
        last[body] = parsed
    return parsed


def _parse_now(body: str) -> list[_Node]:
    # Building a parser cost as much as parsing a short note (a tenth of a first index's
    # cataloguing at 2,000 notes), so each thread keeps one; none is shared across threads.
    md = getattr(_PARSERS, "md", None)
    if md is None:
        from markdown_it import MarkdownIt  # only when a note is chunked: 25 ms of every CLI start

        md = _PARSERS.md = MarkdownIt("commonmark").enable("table")
    return _block_tree(md.parse(body))


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


def _inline_text(inline: Token | None) -> str:
    """Plain text of an inline token: markup dropped, code spans kept."""
    if inline is None or not inline.children:
        return inline.content.strip() if inline is not None else ""
    parts: list[str] = []
    for child in inline.children:
        if child.type in ("text", "code_inline", "text_special"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_inline_text(child))
    return re.sub(r"\s+", " ", "".join(parts)).strip()


@dataclass
class _Node:
    """A block token with its nested block children (inline tokens are leaves)."""

    token: Token
    children: list[_Node] = field(default_factory=list)

    @property
    def inline(self) -> Token | None:
        for child in self.children:
            if child.token.type == "inline":
                return child.token
        return None


def _block_tree(tokens: list[Token]) -> list[_Node]:
    root: list[_Node] = []
    stack: list[list[_Node]] = [root]
    for tok in tokens:
        if tok.nesting == 1:
            node = _Node(tok)
            stack[-1].append(node)
            stack.append(node.children)
        elif tok.nesting == -1:
            if len(stack) > 1:
                stack.pop()
        else:
            stack[-1].append(_Node(tok))
    return root


# --------------------------------------------------------------------------- #
# Note info: title, tags, aliases, links
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class NoteInfo:
    """What a note says about itself, derived from frontmatter and body."""

    title: str
    tags: tuple[str, ...]
    aliases: tuple[str, ...]
    links: tuple[str, ...]


_INLINE_TAG_RE = re.compile(r"(?<!\S)#([\w/-]+)")
_WIKILINK_RE = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
_MASK = "\x00"


def _flatten(value: Any) -> Iterator[Any]:
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _flatten(item)
    elif value is not None and not isinstance(value, (dict, bool)):
        yield value


def _clean_tag(raw: str) -> str | None:
    tag = raw.strip().lstrip("#").strip("/").lower()
    if not tag:
        return None
    # Obsidian: a tag needs at least one non-numeric character (#1984 is not one).
    if not re.search(r"[^\d/]", tag):
        return None
    return tag


def _frontmatter_tags(meta: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("tags", "tag"):
        for item in _flatten(meta.get(key)):
            for piece in re.split(r"[,\s]+", str(item)):
                tag = _clean_tag(piece)
                if tag is not None:
                    out.append(tag)
    return out


_PAGE_PROPERTY = re.compile(r"^([A-Za-z][\w-]*)::[ \t]*(.*?)[ \t]*$")


def page_properties(body: str) -> dict[str, str]:
    """The `key:: value` lines a body opens with, before its first other line: a Logseq page's
    properties (`title:: 2022 Taxes`, `alias:: App Ideas`, `tags:: money`), which Logseq writes in
    the file where Obsidian has frontmatter. Keys lower-cased; the first of a key counts."""
    out: dict[str, str] = {}
    if "::" not in body:
        return out
    for line in body.lstrip("\n").split("\n"):
        m = _PAGE_PROPERTY.match(line)
        if m is None:
            break
        out.setdefault(m.group(1).lower(), m.group(2))
    return out


def _page_names(value: str) -> list[str]:
    """A page property's names: `[[App Ideas]], Startup ideas` -> ["App Ideas", "Startup ideas"]."""
    return [n for n in (p.strip().removeprefix("[[").removesuffix("]]").strip() for p in value.split(",")) if n]


def _frontmatter_aliases(meta: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("aliases", "alias"):
        value = meta.get(key)
        if isinstance(value, str):
            items: list[Any] = value.split(",")
        else:
            items = list(_flatten(value))
        for item in items:
            alias = str(item).strip()
            if alias:
                out.append(alias)
    return out


def _mask_code_spans(text: str) -> str:
    """Replace CommonMark code spans (`x`, ``x``) with mask characters."""
    if "`" not in text:
        return text  # no code span (most prose): the scan below walks every character in Python
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] != "`":
            i += 1
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        run = j - i
        k = j
        close = -1
        while k < n:
            if text[k] != "`":
                k += 1
                continue
            m = k
            while m < n and text[m] == "`":
                m += 1
            if m - k == run:
                close = m
                break
            k = m
        if close < 0:
            i = j  # an unmatched backtick run is literal text
            continue
        for p in range(i, close):
            if out[p] != "\n":
                out[p] = _MASK
        i = close
    return "".join(out)


def _prose_segments(body: str, tree: Sequence[_Node]) -> list[str]:
    """Source text of every paragraph, heading and table, with code spans masked.

    Fenced/indented code and HTML blocks are left out entirely, so tags and
    links inside them are ignored.
    """
    lines = body.split("\n")
    segments: list[str] = []
    seen: set[tuple[int, int]] = set()
    todo = list(reversed(tree))
    while todo:
        node = todo.pop()
        tok = node.token
        if tok.type in ("paragraph_open", "heading_open", "table_open") and tok.map:
            span = (tok.map[0], tok.map[1])
            if span not in seen:
                seen.add(span)
                segments.append(_mask_code_spans("\n".join(lines[span[0] : span[1]])))
            continue  # a table's cells are covered by the table's own lines
        todo.extend(reversed(node.children))
    return segments


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _link_target(inner: str) -> str:
    target = inner.split("|", 1)[0]
    target = target.split("#", 1)[0]
    return target.rstrip("\\").strip()  # `\|` is how tables escape the alias pipe


def _wikilinks(text: str) -> Iterator[str]:
    """The note targets of the `[[wikilinks]]` in `text` (`![[photo.png]]` attachments left out)."""
    for match in _WIKILINK_RE.finditer(text):
        target = _link_target(match.group(2))
        if not target:
            continue  # [[#Heading]] points into the same note
        if match.group(1):
            suffix = target.rsplit("/", 1)[-1]
            if "." in suffix and not suffix.lower().endswith(".md"):
                continue  # ![[photo.png]] is an attachment, not a note
        yield target


def _frontmatter_links(value: Any) -> Iterator[str]:
    """Links in property values (`owner: "[[Maya Chen]]"`, `related: ["[[A]]", "[[B]]"]`), which
    Obsidian counts as links (outgoing links, backlinks, graph). Only strings: unquoted
    `[[A]]` is YAML for a nested list, which Obsidian does not read as a link either."""
    if isinstance(value, str):
        yield from _wikilinks(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _frontmatter_links(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _frontmatter_links(item)


def extract_info(meta: Mapping[str, Any], body: str, stem: str) -> NoteInfo:
    """Derive title, tags, aliases and wikilink targets for one note.

    * title: frontmatter ``title`` if non-empty, else the first top-level
      ``# heading``, else `stem`.
    * tags: frontmatter ``tags``/``tag`` (list or comma/space separated string)
      then inline ``#tags`` (Obsidian rules); lowercased, ``#`` stripped,
      de-duplicated in order of first appearance.
    * aliases: frontmatter ``aliases``/``alias`` (list or comma separated string).
    * A Logseq page's own properties (`page_properties`: ``title::``, ``alias::``, ``tags::`` on
      the lines it opens with) count as its frontmatter's would, after them.
    * links: targets of ``[[wikilinks]]`` in frontmatter property values, then
      in the body outside code, without ``|alias`` or ``#heading``;
      ``![[embeds]]`` of non-Markdown files are excluded.
    """
    body = strip_comments(_normalise(body))
    tree = _parse(body)

    page = page_properties(body)
    title = ""
    raw_title = meta.get("title")
    if raw_title is not None:
        title = str(raw_title).strip()
    if not title:
        title = page.get("title", "").strip()
    if not title:
        for node in tree:
            if node.token.type == "heading_open" and node.token.tag == "h1":
                title = _inline_text(node.inline)
                if title:
                    break
    if not title:
        title = stem

    tags = _frontmatter_tags(meta)
    tags += [t for t in (_clean_tag(n) for k in ("tags", "tag") for n in _page_names(page.get(k, ""))) if t]
    links: list[str] = list(_frontmatter_links(meta))
    for segment in _prose_segments(body, tree):
        links.extend(_wikilinks(segment))
        without_links = _WIKILINK_RE.sub(lambda m: _MASK * len(m.group(0)), segment)
        for match in _INLINE_TAG_RE.finditer(without_links):
            tag = _clean_tag(match.group(1))
            if tag is not None:
                tags.append(tag)

    return NoteInfo(
        title=title,
        tags=_dedupe(tags),
        aliases=_dedupe(
            _frontmatter_aliases(meta) + [n for k in ("alias", "aliases") for n in _page_names(page.get(k, ""))]
        ),
        links=_dedupe(links),
    )


@dataclass(frozen=True)
class Heading:
    """One heading of a note body: its level (1-6), its text, and its line (0-based)."""

    level: int
    text: str
    line: int


def headings(body: str) -> list[Heading]:
    """The body's headings in order (ATX and setext; none inside code blocks or HTML)."""
    out: list[Heading] = []
    for node in _parse(_normalise(body)):
        tok = node.token
        if tok.type == "heading_open" and tok.map:
            level = int(tok.tag[1:]) if tok.tag[1:].isdigit() else 1
            out.append(Heading(level, _inline_text(node.inline), tok.map[0]))
    return out


# --------------------------------------------------------------------------- #
# Chunking
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Chunk:
    """One embeddable piece of a note.

    `text` is the heading path line (when `heading` is not empty) followed by
    a newline and the chunk's own Markdown, stripped. `start_line` is the
    0-based body line of the first non-whitespace character of that content.
    """

    index: int
    heading: str
    text: str
    start_line: int


# Chunks are packed up to this many tokens (max_tokens stays the hard cap). On LoCoMo
# (the chunk experiment, last at commit f0844e1, MiniLM) 96 rather than 200 widened hybrid's lead over BM25
# at evidence R@10 from +0.024 to +0.051, but halved the text per hit (chunk-level R@10 of
# every mode dropped, 0.817 -> 0.740 hybrid) and is untested on SciFact: 200 stays until it is.
TARGET_TOKENS = 200
# A range longer than this many characters per token of its limit is first counted by its beginning
# (`_Chunker.fits`): an English token is about 4 characters, so only a range far over the limit is cut.
PROBE_CHARS = 64

_ELLIPSIS = "…"
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_LINE_END_RE = re.compile(r"\n")
_SPACE_RE = re.compile(r"\s+")
_QUOTE_INDENT_RE = re.compile(r"^[\s>]*")  # blockquote markers and indentation in front of a line
_PROSE_BLOCKS = frozenset({"paragraph_open", "heading_open", "inline"})


def _line_structured(text: str) -> bool:
    """Are the source lines of this paragraph units of meaning, not just a wrap width?

    A paragraph with soft line breaks is either a list of lines (a log, a daily note, a
    list without markers) or hard-wrapped prose. A break looks like wrapping when the next
    line's first word would not have fitted on the line (against the longest line) and the
    next line carries on in lower case; when at least half of the breaks look like that,
    the lines are treated as wrapping and the paragraph is split on sentences instead.
    """
    lines = [_QUOTE_INDENT_RE.sub("", ln).rstrip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln]
    if len(lines) < 2:
        return False
    width = max(len(ln) for ln in lines)
    wrapped = sum(
        len(a) + 1 + len(b.split(None, 1)[0]) > width and b[0].islower() for a, b in itertools.pairwise(lines)
    )
    return 2 * wrapped < len(lines) - 1


@dataclass(frozen=True)
class _Unit:
    start: int  # character offsets into the body: [start, end)
    end: int
    node: _Node | None = None  # the block this unit holds, if it is exactly one block
    mode: str = "block"  # how it was produced: block | sentences | lines | text_lines | words


@dataclass(frozen=True)
class _Section:
    heading: str  # full heading path ("" before the first heading)
    header: str  # the line put in front of the text (maybe shortened)
    start: int  # content: the lines after the heading, up to the next heading
    end: int
    nodes: tuple[_Node, ...]
    # Where chunk text starts: `start`, or the heading line itself when the header
    # line had to cut the heading's own text (so that text is not lost).
    chunk_start: int


def _heading_level(tok: Token) -> int:
    return int(tok.tag[1:]) if tok.tag[1:].isdigit() else 1


def _says_it_alone(tok: Token, after: _Node | None) -> bool:
    """Whether heading `tok` has nothing under it (the next block is a heading of its level or
    above, or there is none): no section follows it, and no heading path would carry it. Its line
    is then text of the section it is in, as a Logseq graph's heading blocks are its statements
    ("### Less [[podcasts]]", "### More [[music]]" under "## Decided to be more intentional with what
    I listen to": every one was in no chunk, and nothing found them)."""
    if after is None:
        return True
    nxt = after.token
    return nxt.type == "heading_open" and _heading_level(nxt) <= _heading_level(tok)


class _Chunker:
    def __init__(
        self,
        body: str,
        max_tokens: int,
        target_tokens: int,
        count_tokens: Callable[[str], int],
    ) -> None:
        self.body = body
        self.max_tokens = max_tokens
        self.target_tokens = target_tokens
        self.count = count_tokens
        self.line_starts = _line_starts(body)

    # -- offsets ---------------------------------------------------------- #

    def offset(self, line: int) -> int:
        if line >= len(self.line_starts):
            return len(self.body)
        return self.line_starts[max(line, 0)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset) - 1

    # -- budget ----------------------------------------------------------- #

    def compose(self, header: str, start: int, end: int) -> str:
        content = self.body[start:end].strip()
        if not header:
            return content
        return f"{header}\n{content}".strip()

    def fits(self, header: str, start: int, end: int, limit: int) -> bool:
        if end - start > limit * PROBE_CHARS:
            # Counting a huge range (a 100 MB line) costs its size in time and memory: its first
            # part decides when that alone is over the limit (counts only grow as text is added:
            # ranges end on a blank or at the section's end).
            window = start + limit * PROBE_CHARS
            cut = max(self.body.rfind(" ", start, window), self.body.rfind("\n", start, window))
            if cut > start and self.count(self.compose(header, start, cut)) > limit:
                return False
        return self.count(self.compose(header, start, end)) <= limit

    def choose_header(self, parts: list[str]) -> tuple[str, bool]:
        """Pick the heading line for a section; returns (line, own_heading_intact).

        The line may use at most half of max_tokens. Ancestors are dropped
        first ("… > Child"); if the section's own heading is still too long it
        is cut, and the caller then keeps the full heading line in the content.
        """
        if not parts:
            return "", True
        budget = self.max_tokens // 2
        full = HEADING_SEP.join(parts)
        if self.count(full) <= budget:
            return full, True
        for keep in range(len(parts) - 1, 0, -1):
            line = _ELLIPSIS + HEADING_SEP + HEADING_SEP.join(parts[-keep:])
            if self.count(line) <= budget:
                return line, True
        last = parts[-1]
        lo, hi = 0, len(last)  # longest prefix whose "prefix…" fits (0: "…" alone)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(last[:mid].rstrip() + _ELLIPSIS) <= budget:
                lo = mid
            else:
                hi = mid - 1
        return last[:lo].rstrip() + _ELLIPSIS, False

    # -- sections --------------------------------------------------------- #

    def sections(self, tree: Sequence[_Node]) -> list[_Section]:
        sections: list[_Section] = []
        stack: list[tuple[int, str]] = []
        heading = header = ""
        start = chunk_start = 0
        nodes: list[_Node] = []
        blocks = [n for n in tree if n.token.map]
        for i, node in enumerate(blocks):
            tok, span = node.token, node.token.map
            if (
                tok.type != "heading_open"
                or span is None
                or _says_it_alone(tok, blocks[i + 1] if i + 1 < len(blocks) else None)
            ):
                nodes.append(node)
                continue
            end = self.offset(span[0])
            sections.append(_Section(heading, header, start, end, tuple(nodes), chunk_start))
            level = _heading_level(tok)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _inline_text(node.inline)))
            parts = [text for _, text in stack if text]
            heading = HEADING_SEP.join(parts)
            header, intact = self.choose_header(parts)
            start = self.offset(span[1])
            chunk_start = start if intact else self.offset(span[0])
            nodes = []
        sections.append(_Section(heading, header, start, len(self.body), tuple(nodes), chunk_start))
        return sections

    # -- splitting -------------------------------------------------------- #

    def tile(self, start: int, end: int, nodes: Iterable[_Node]) -> list[_Unit]:
        """Cut [start, end) at the first line of each block; units cover it all."""
        by_start: dict[int, list[_Node]] = {}
        for node in nodes:
            if node.token.map and node.token.type != "inline":
                at = self.offset(node.token.map[0])
                by_start.setdefault(min(max(at, start), end), []).append(node)
        cuts = sorted(at for at in by_start if start < at < end)
        bounds = [start, *cuts, end]
        units: list[_Unit] = []
        for a, b in itertools.pairwise(bounds):
            inside = by_start.get(a, [])  # every block starts exactly at a bound
            units.append(_Unit(a, b, inside[0] if len(inside) == 1 else None, "block"))
        return units

    def split_text(self, start: int, end: int, pattern: re.Pattern[str], mode: str) -> Iterator[_Unit]:
        """Cut [start, end) after each match; whitespace-only pieces join the next one. Lazily: the
        words of a 100 MB line are never a list (17 million units took 2.7 GB, issue 41)."""
        cuts = itertools.chain((m.end() for m in pattern.finditer(self.body, start, end)), [end])
        last: _Unit | None = None
        pending = start
        for cut in cuts:
            if cut > pending and self.body[pending:cut].strip():
                if last is not None:
                    yield last
                last = _Unit(pending, cut, None, mode)
                pending = cut
        if last is not None:
            yield _Unit(last.start, end, None, mode) if pending < end else last  # trailing blanks join it

    def split(self, unit: _Unit) -> Iterable[_Unit]:
        """Break a unit that is too long into smaller units (empty = go to characters)."""
        order: tuple[tuple[re.Pattern[str], str], ...]
        sentences = (_SENTENCE_END_RE, "sentences")
        lines = (_LINE_END_RE, "lines")
        words = (_SPACE_RE, "words")
        if unit.node is not None:
            kids = [c for c in unit.node.children if c.token.map and c.token.type != "inline"]
            if kids:
                tiles = self.tile(unit.start, unit.end, kids)
                if len(tiles) >= 2:
                    return tiles
                if tiles[0].node is not None:  # a wrapper around one block: look inside
                    return self.split(tiles[0])
            if unit.node.token.type not in _PROSE_BLOCKS:
                order = (lines, words)
            elif _line_structured(self.body[unit.start : unit.end]):
                order = ((_LINE_END_RE, "text_lines"), sentences, words)
            else:
                order = (sentences, words)
        elif unit.mode == "block":
            order = (lines, sentences, words)
        elif unit.mode == "text_lines":
            order = (sentences, words)
        elif unit.mode in ("sentences", "lines"):
            order = (words,)
        else:
            order = ()
        for pattern, mode in order:
            pieces = self.split_text(unit.start, unit.end, pattern, mode)
            first = list(itertools.islice(pieces, 2))
            if len(first) >= 2:
                return itertools.chain(first, pieces)
        return []

    def char_pieces(self, header: str, unit: _Unit) -> list[tuple[int, int]]:
        """Last resort: the longest runs of characters that fit max_tokens."""
        out: list[tuple[int, int]] = []
        pos, end = unit.start, unit.end
        while pos < end:
            while pos < end and self.body[pos].isspace():
                pos += 1
            if pos >= end:
                break
            if not self.fits(header, pos, pos + 1, self.max_tokens):
                raise ConfigError(
                    f"max_tokens={self.max_tokens} is too small: a single character "
                    f"with its heading line does not fit; use a larger chunk size"
                )
            # Gallop, then bisect; `good` always fits, `bad` never does.
            limit = end - pos
            good, probe = 1, 2
            while probe <= limit and self.fits(header, pos, pos + probe, self.max_tokens):
                good, probe = probe, probe * 2
            bad = min(probe, limit + 1)
            while bad - good > 1:
                mid = (good + bad) // 2
                if self.fits(header, pos, pos + mid, self.max_tokens):
                    good = mid
                else:
                    bad = mid
            out.append((pos, pos + good))
            pos += good
        return out

    def pack(self, header: str, units: Iterable[_Unit]) -> list[tuple[int, int]]:
        """Greedily group consecutive units up to target_tokens: a unit that fits max_tokens takes
        the longest run of the units after it that fits target_tokens with it.

        The run is found by galloping then bisecting, a few counts per chunk: adding the units one
        at a time counted the growing chunk once per unit, which for a note of one 1 MB line was
        175,000 counts, 8 s (issue 41). The same chunks: a range's count only grows as units are
        added (they end on a blank), so the longest run that fits is where adding one stopped."""
        out: list[tuple[int, int]] = []
        rest = iter(units)
        ahead: collections.deque[_Unit] = collections.deque()
        run = 0  # units the last chunk took after its first

        def have(n: int) -> bool:  # at least n units looked ahead, if there are that many
            while len(ahead) < n:
                nxt = next(rest, None)
                if nxt is None:
                    return False
                ahead.append(nxt)
            return True

        while have(1):
            unit = ahead.popleft()
            if not self.fits(header, unit.start, unit.end, self.max_tokens):
                smaller = self.split(unit)
                pieces = self.pack(header, smaller)
                out.extend(pieces if pieces else self.char_pieces(header, unit))
                continue
            # Start from the last run's length (a long line's chunks take about as many words each):
            # two counts per chunk then; otherwise gallop up or down from it.
            good, bad = 0, 0  # `good` units after it fit with it; `bad` (when not 0) do not
            guess = max(1, run)
            if have(guess) and self.fits(header, unit.start, ahead[guess - 1].end, self.target_tokens):
                good = guess
                step = 1
                while have(good + step) and self.fits(
                    header, unit.start, ahead[good + step - 1].end, self.target_tokens
                ):
                    good, step = good + step, step * 2
                bad = min(good + step, len(ahead) + 1)
            else:
                bad = min(guess, len(ahead) + 1)
            while bad - good > 1:
                mid = (good + bad) // 2
                if self.fits(header, unit.start, ahead[mid - 1].end, self.target_tokens):
                    good = mid
                else:
                    bad = mid
            end = ahead[good - 1].end if good else unit.end
            for _ in range(good):
                ahead.popleft()
            out.append((unit.start, end))
            run = good
        return out

    def section_ranges(self, section: _Section) -> list[tuple[int, int]]:
        start, end = section.chunk_start, section.end
        if self.fits(section.header, start, end, self.max_tokens):
            return [(start, end)]
        return self.pack(section.header, self.tile(start, end, section.nodes))

    def run(self) -> list[Chunk]:
        tree = _parse(self.body)
        sections = [s for s in self.sections(tree) if self.body[s.start : s.end].strip()]
        if not sections:
            # Only headings: the headings themselves are the content.
            sections = [_Section("", "", 0, len(self.body), tuple(tree), 0)]
        made: list[tuple[str, str, int, int]] = []
        for section in sections:
            for start, end in self.section_ranges(section):
                if self.body[start:end].strip():
                    made.append((section.heading, section.header, start, end))
        chunks: list[Chunk] = []
        for heading, header, start, end in made:
            text = self.compose(header, start, end)
            first = start + (len(self.body[start:end]) - len(self.body[start:end].lstrip()))
            chunks.append(Chunk(len(chunks), heading, text, self.line_of(first)))
        return chunks


# Bump when chunk_body's (or chunk_note's) output changes for the same input: the index re-chunks
# every note (re-embedding only texts it has not seen) instead of keeping chunks made by older rules.
# 19: inline HTML that only formats its text (`<mark class="hltr-yellow">…</mark>`) reads as that text;
# 18: a note's file name is among the names BM25 weights as its title when it holds a word they do not
#     (catalog._names_text: the lexical index is rewritten);
# 17: a line that only embeds a view of Obsidian's Bases (`![[PROJECTS.base]]`) is a query, not text;
# 16: a heading with nothing under it is its section's text (it was in no chunk), and a template's
#     heading with nothing under it is scaffolding;
# 15: Logseq's drawers (`:PROPERTIES:` / `:LOGBOOK:` to `:END:`) are not text;
# 14: frontmatter dates written for people (`October 14th 2021, 2:42:26 pm`), epoch numbers, more
#     date keys (`lastmod`) and `2024.03.05` names are read (the catalog keeps each note's stated day);
# 13: a Logseq graph's own marks (collapsed::, id::) and its queries (#+BEGIN_QUERY, {{query}}) are not text;
# 12: HTML comments are hidden like %% ones, a callout's [!type] reads as its title, a block's ^id is gone;
# 11: a template's headings stay (they cut a note into its sections);
# 10: Dataview inline queries read as their values (`= this.rating`) or not at all;
# 9: link reference definitions (Foam's "Autogenerated link references") and, with the vault's
#    templates read (templates.py, its own identity in the indexer's), their scaffolding are not text;
# 8: a fence line with an info string inside an open fence is code, not its end (strip_comments kept
#    the `%%` comment after such a block);
# 7: a note's stated properties end its first chunk (chunk_note);
# 6: fenced query blocks (Dataview, Tasks, search embeds) are not text;
# 5: links in frontmatter properties (every note row again); 4: dates from the text only; 3: %% comments;
# 2: lines, sentences
CHUNKER_VERSION = "19"


def chunk_body(
    body: str,
    *,
    max_tokens: int = 256,
    target_tokens: int = TARGET_TOKENS,
    count_tokens: Callable[[str], int] | None = None,
    scaffolding: Scaffolding = NO_SCAFFOLDING,
) -> list[Chunk]:
    """Cut a note body into heading-scoped chunks of at most `max_tokens`.

    What a reader never sees, or what the vault's templates put there, is not text: `%% comments
    %%` and `<!-- comments -->`, a callout's `[!type]` and a block's `^id` (`strip_reader_marks`),
    fenced query blocks, link reference definitions and the templates' lines (`scaffolding`,
    templates.py) are blanked first.

    Sections start at every top-level heading; a section that fits is one
    chunk. Longer sections are split on block boundaries (list items, quote
    children, paragraphs, code blocks), packed greedily up to `target_tokens`;
    a block that alone exceeds `max_tokens` is split on sentences (or lines for
    code and tables, and for a paragraph whose soft line breaks are not just
    hard wrapping, e.g. a log or a day's notes one per line), then whitespace,
    then characters. Nothing is dropped:
    chunk contents together hold every non-whitespace character of the body,
    except heading lines, which are carried by each chunk's heading path line;
    a heading with nothing under it (no text, no heading below it) is a line of
    its section's text, as no heading path carries it.
    Deterministic; a blank body gives ``[]``.

    Raises ConfigError if the budgets are not positive or so small that a
    single character cannot fit.
    """
    if max_tokens < 1 or target_tokens < 1:
        raise ConfigError(f"chunk sizes must be positive (max_tokens={max_tokens}, target_tokens={target_tokens})")
    body = strip_reader_marks(strip_comments(_normalise(body)))
    body = scaffolding.strip(strip_link_definitions(strip_queries(body)))
    if not body.strip():
        return []
    counter = count_tokens if count_tokens is not None else approx_tokens
    return _Chunker(body, max_tokens, min(target_tokens, max_tokens), counter).run()


#: The heading of a note's properties chunk, after its title ("Boiler > Properties"), when they
#: do not fit in its first chunk.
PROPERTIES_HEADING = "Properties"


def chunk_note(
    body: str,
    properties: Sequence[tuple[str, str]],
    title: str,
    *,
    max_tokens: int = 256,
    target_tokens: int = TARGET_TOKENS,
    count_tokens: Callable[[str], int] | None = None,
    scaffolding: Scaffolding = NO_SCAFFOLDING,
) -> list[Chunk]:
    """A note's chunks: its body's (chunk_body, without its vault's template `scaffolding`) with its stated properties
    (notefile.stated_properties), one `- key: value` line each, at the end of its first chunk,
    where they fit: Obsidian shows them at the top of the note, and "what model is my boiler"
    meets `model: Vaillant ecoTEC plus 832` beside "Pressure should sit between 1.0 and 1.5 bar"
    under "Boiler". A chunk of their own competed with the note's text for its one place in a
    block ("location: Lisbon" shown for the hotel, beside `Hotel:: Casa do Príncipe`). When they do
    not fit, they are chunks of their own after the body's, headed "<title> > Properties"."""
    body = resolve_inline_queries(body, properties)
    chunks = chunk_body(
        body, max_tokens=max_tokens, target_tokens=target_tokens, count_tokens=count_tokens, scaffolding=scaffolding
    )
    if not properties:
        return chunks
    counter = count_tokens if count_tokens is not None else approx_tokens
    lines = "\n".join(f"- {property_line(key, value)}" for key, value in properties)
    if chunks and counter(f"{chunks[0].text}\n\n{lines}") <= max_tokens:
        first = chunks[0]
        return [Chunk(0, first.heading, f"{first.text}\n\n{lines}", first.start_line), *chunks[1:]]
    heading = HEADING_SEP.join(p for p in (" ".join(title.split()), PROPERTIES_HEADING) if p)
    room = max(1, max_tokens - counter(heading) - 1)
    made = chunk_body(lines, max_tokens=room, target_tokens=min(target_tokens, room), count_tokens=counter)
    return chunks + [Chunk(len(chunks) + i, heading, f"{heading}\n{c.text}", 0) for i, c in enumerate(made)]
