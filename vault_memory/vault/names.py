"""Every note's names, as Obsidian's quick switcher and its [[links]] see them (pure).

Built from the catalog's light name rows (node_id, path, title, aliases) and kept by `IndexFolder`
until a note's path, title or aliases change (catalog `names_gen`): building it for 10,000
notes takes ~50 ms, and every command that takes a note, and every link `related` follows,
asks it.

The table of names, apart from resolve.py (which note a name means) only because it sits under
the workspace: `Workspace.note_names` hands it out, and resolve.py takes a workspace. The two are
one concern, resolving a name to a note; links are linking.py's, the relations relations.py's.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

MAX_SUGGESTIONS = 5


class Names:
    """Every note's names as Obsidian's quick switcher and its links see them.

    casefolded name -> [(rank, path, how)]: file names and vault paths (without `.md`) rank
    0, titles 1, aliases 2. A link may also name a note by the end of its path
    (`[[deep/Note]]`).
    """

    def __init__(self, rows: Iterable[tuple[str, str, str, Sequence[str]]], extra_paths: Iterable[str] = ()) -> None:
        self.table: dict[str, list[tuple[int, str, str]]] = {}
        self.notes: dict[str, tuple[str, str]] = {}  # path -> (node_id, title) of the indexed notes
        out = self.table
        for node_id, path, title, aliases in rows:
            self.notes[path] = (node_id, title)
            bare = path[:-3] if path.lower().endswith(".md") else path  # string ops: PurePosixPath costs 20 us
            stem = bare.rsplit("/", 1)[-1]
            out.setdefault(stem.casefold(), []).append((0, path, "file name"))
            out.setdefault(bare.casefold(), []).append((0, path, "path"))
            if title and title.casefold() != stem.casefold():
                out.setdefault(title.casefold(), []).append((1, path, "title"))
            for alias in aliases:
                out.setdefault(alias.casefold(), []).append((2, path, "alias"))
        for rel in extra_paths:
            out.setdefault(rel.rsplit("/", 1)[-1].removesuffix(".md").casefold(), []).append((0, rel, "file name"))

    def lookup(self, name: str) -> list[tuple[int, str, str]]:
        """(rank, path, how) of every note this name fits, the best rank only."""
        key = name.strip().casefold().removesuffix(".md")
        hits = self.table.get(key, [])
        if not hits and "/" in key:
            hits = [(r, p, h) for k, v in self.table.items() if k.endswith("/" + key) for r, p, h in v if h == "path"]
        if not hits:
            return []
        best = min(r for r, _, _ in hits)
        return [(r, p, h) for r, p, h in hits if r == best]

    def keys_of(self, path: str) -> list[str]:
        """Every name (casefolded) under which this note can be linked."""
        return [k for k, v in self.table.items() if any(p == path for _, p, _ in v)]

    def paths(self, name: str) -> list[str]:
        """The notes a link text names, nearest the vault root first (more than one: ambiguous)."""
        return sorted({p for _, p, _ in self.lookup(name)}, key=lambda p: (p.count("/"), p))

    def near(self, name: str) -> list[str]:
        """Paths of the notes whose names are closest to `name` (for "did you mean")."""
        key = name.strip().casefold().removesuffix(".md")
        close = difflib.get_close_matches(key, list(self.table), n=MAX_SUGGESTIONS, cutoff=0.6)
        return list(dict.fromkeys(sorted({p for _, p, _ in self.table[k]})[0] for k in close))


__all__ = ["MAX_SUGGESTIONS", "Names"]
