"""Pure helpers for the text of an agent's memory: titles, slugs, tags, folders.

No I/O: what a memory is called, where its file goes and how its body reads are
decided here from strings, so they can be tested with strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .errors import ConfigError

TITLE_WORDS = 8  # a default title is the first words of the text
TITLE_CHARS = 80
SLUG_CHARS = 60
_WS = re.compile(r"\s+")
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$")
_SLUG_DROP = re.compile(r"[^\w]+", re.UNICODE)
_TAG_BAD = re.compile(r"[\s,#\[\]{}]+")


def norm(text: str) -> str:
    """Whitespace collapsed and case folded: what "the same text" means for retries."""
    return _WS.sub(" ", text).strip().casefold()


def split_title(body: str) -> tuple[str, str]:
    """(first H1 text or "", the body without that heading line)."""
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        m = _H1.match(line.strip())
        if m:
            return m.group(1).strip(), "\n".join(lines[i + 1:]).strip()
        break
    return "", body.strip()


def default_title(text: str) -> str:
    """The first ~8 words of the text, on one line, without Markdown decoration."""
    words = [w.strip("*_`>#[]") for w in text.split()]
    title = " ".join(w for w in words if w)
    words = title.split()
    short = " ".join(words[:TITLE_WORDS])
    if len(short) > TITLE_CHARS:
        short = short[:TITLE_CHARS].rsplit(" ", 1)[0] or short[:TITLE_CHARS]
    if len(words) > TITLE_WORDS or len(short) < len(title):
        short = short.rstrip(".,;:!?-") + "…"
    return short or "memory"


def clean_input(text: str, title: str | None) -> tuple[str, str, bool]:
    """(title, text, title_given). A leading `# Heading` in the text serves as the title."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("the memory text is empty; give the fact to remember")
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if title is None or not title.strip():
        heading, rest = split_title(text)
        if heading and rest:
            return heading, rest, False
        return default_title(text), text, False
    return _WS.sub(" ", title).strip(), text, True


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Tags without '#', spaces or brackets, each once; an empty one is an error."""
    out: list[str] = []
    for tag in tags:
        clean = _TAG_BAD.sub("-", str(tag).strip().lstrip("#")).strip("-/")
        if not clean:
            raise ConfigError(f"tag {tag!r} is empty after removing '#' and spaces")
        if clean not in out:
            out.append(clean)
    return out


def slug(title: str) -> str:
    """A file-name-safe, lower-case form of the title (at most SLUG_CHARS)."""
    out = _SLUG_DROP.sub("-", title.casefold()).strip("-_")
    return out[:SLUG_CHARS].rstrip("-_") or "memory"


def memory_body(title: str, text: str) -> str:
    return f"# {title}\n\n{text}\n"


def folder_setting(name: str, setting: str, *, allow_root: bool = False) -> str:
    """A configured vault folder as a clean relative path; ConfigError if it could leave the vault."""
    clean = "/".join(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))
    if not clean and not allow_root:
        raise ConfigError(f"{setting} is empty; set it to a folder inside the vault")
    if ".." in clean.split("/") or clean.startswith("."):
        raise ConfigError(f"{setting} {name!r} must be a plain folder inside the vault (no '..', no dot-folder)")
    return clean


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def in_folder(rel: str, folder: str) -> bool:
    return rel.startswith(folder + "/")


_WORD = re.compile(r"\w+")


def snippet(text: str, query: str, width: int = 240) -> str:
    """The part of a chunk with the most query words, on word boundaries."""
    lines = text.split("\n")
    body = " ".join(line.strip() for line in lines[1:] if line.strip()) if len(lines) > 1 else text.strip()
    body = body or text.strip()
    if len(body) <= width:
        return body
    terms = {w for w in _WORD.findall(query.lower()) if len(w) > 2}
    best_start, best_hits = 0, -1
    positions = [m.start() for m in _WORD.finditer(body)]
    low = body.lower()
    if len(low) != len(body) or "\u03a3" in body:
        # Lower-casing changed lengths (İ) or depends on context (Σ at a word's end): then a slice
        # of the lower-cased body is not the lower-cased slice; lower each window as before.
        low = ""
    for start in positions[:: max(1, len(positions) // 200)]:
        # the window lower-cased: a slice of the lower-cased body is the same string (same length)
        window = low[start : start + width] if low else body[start : start + width].lower()
        hits = sum(1 for t in terms if t in window)
        if hits > best_hits:
            best_start, best_hits = start, hits
    start = max(0, best_start - 40)
    if start:
        start = body.find(" ", start) + 1 or start
    piece = body[start : start + width]
    if start + width < len(body):
        piece = piece.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + piece


__all__ = ["clean_input", "clean_tags", "default_title", "folder_setting", "in_folder", "join", "memory_body",
           "norm", "slug", "snippet", "split_title"]
