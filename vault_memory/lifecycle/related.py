"""Notes related to a note, by the link graph and by meaning, each with the reason it is listed.

    found = related(ws, "Danube Bike Trip", k=10)

- **Links out**: the note's `[[wikilinks]]` (the catalog keeps each note's link targets),
  resolved the way Obsidian resolves them (resolve.Names: file name, path, title, alias):
  reason "linked from this note".
- **Backlinks**: every indexed note whose links resolve to this one: "links to this note".
- **Meaning**: each of the note's chunks, by the vectors the index already holds for them
  (nothing known is embedded again; a note not indexed yet is chunked and embedded, through
  the vector cache), against every chunk in the index; a note scores as its closest chunk
  pair. The k closest notes that are *not* linked either way, at cosine >= MIN_SIMILARITY,
  are listed as "similar: <the matching passage>". Linked notes get their similarity too,
  and the "similar" reason when they reach the same bar.

**Copies fold** as recall folds them (issue 40): daily notes that each match through one copied
line (a task carried from day to day, its date moved on) are one entry, the closest, naming the
others in `also_in` (newest first); whether two lines are copies is `repeats.is_repeat`, dates read
from each note's day. On a person's vault, 9 of `related "Project Atlas"`'s 10 unlinked notes were
daily notes sharing "- [ ] Reply to Maya Chen about the Atlas timeline".

Every linked note is listed (up to LINKS_MAX, the most similar first) and marked `linked`,
so "related but not linked yet" is simply `linked == False`. Staged memories (drafts) are
left out; private notes are never indexed, so they never appear; a link to a note that is
not indexed is reported in `unresolved`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import VaultMemoryError
from ..hashing import sha256_hex
from ..index.catalog import NoteRow, chunk_owner
from ..index.indexer import note_chunks
from ..repeats import is_repeat
from ..search.workspace import Workspace
from ..text import in_folder, says_something, snippet
from ..vault.fields import parse_list
from ..vault.markdown import extract_info
from ..vault.notefile import read_note
from .reading import check_readable
from .resolve import Names, names, resolve_target

MIN_SIMILARITY = 0.25  # MiniLM: unrelated notes sit around 0.0-0.2 (bench tools --part conflicts, "unrelated")
NEIGHBOURS = 50  # nearest chunks asked per chunk of the note
SOURCE_CHUNKS = 64  # chunks of a long note compared, at most
LINKS_MAX = 50
K_MAX = 50
_WORD = re.compile(r"\w+")


@dataclass
class RelatedNote:
    """One related note and why it is listed."""

    path: str
    node_id: str
    title: str
    linked: bool  # linked either way
    links_here: bool  # it links to the note asked about (a backlink)
    linked_from_here: bool  # the note asked about links to it
    similarity: float | None  # its closest chunk pair's cosine (None: no vectors)
    snippet: str  # the passage of it that is closest to the note asked about
    reasons: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)  # its `superseded_by` (as `read` gives it)
    #: other unlinked notes that match through a copy of the same line, folded into this one, newest first
    also_in: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Related:
    """What `related` returns."""

    path: str
    node_id: str
    title: str
    related: list[RelatedNote]
    links_out: int  # resolved links out of the note
    backlinks: int
    unresolved: list[str] = field(default_factory=list)  # link targets that name no indexed note

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["count"] = len(self.related)
        return out


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3}


def _own_chunks(ws: Workspace, path: str) -> tuple[str, str, tuple[str, ...], list[str], np.ndarray]:
    """(node_id, title, links, chunk texts, their vectors) of the note, from the index when it has it."""
    note = read_note(ws.vault, path, lenient=True)  # read-only, as the index reads it
    check_readable(ws, note)
    row = None
    try:
        row = ws.catalog.note_by_path(path)
    except VaultMemoryError:
        pass
    if row is not None and row.body_hash == note.body_hash:
        chunks = ws.catalog.chunks_of(row.node_id)[:SOURCE_CHUNKS]
        vecs = ws.catalog.get_vectors([c.text_hash for c in chunks])
        chunks = [c for c in chunks if c.text_hash in vecs]
        mat = np.vstack([vecs[c.text_hash] for c in chunks]) if chunks else np.zeros((0, 0), dtype=np.float32)
        return row.node_id, row.title, row.links, [c.text for c in chunks], mat
    # not indexed (yet), or changed since: chunk it like the indexer; embed only unseen text
    emb = ws.embedder
    texts = [
        c.text
        for c in note_chunks(
            note, max_tokens=emb.max_tokens, count_tokens=emb.count_tokens, scaffolding=ws.rules.scaffolding
        )
        if c.text.strip()
    ][:SOURCE_CHUNKS]
    cached = ws.catalog.get_vectors([sha256_hex(t) for t in texts])
    missing = [t for t in texts if sha256_hex(t) not in cached]
    fresh = dict(zip(missing, emb.embed(missing), strict=True)) if missing else {}
    vectors = [cached[sha256_hex(t)] if sha256_hex(t) in cached else fresh[t] for t in texts]
    mat = np.vstack(vectors).astype(np.float32) if texts else np.zeros((0, 0), dtype=np.float32)
    info = extract_info(note.meta, note.body, path.rsplit("/", 1)[-1].removesuffix(".md"))
    node_id = row.node_id if row is not None else f"path:{path}"
    return node_id, info.title, info.links, texts, mat


def _link_graph(
    ws: Workspace, table: Names, path: str, links: tuple[str, ...]
) -> tuple[dict[str, str], set[str], list[str]]:
    """(links out: path -> link text, backlinks: paths, unresolved link texts)."""
    out: dict[str, str] = {}
    unresolved: list[str] = []
    for link in links:
        hits = [p for p in table.paths(link) if p in table.notes]
        if not hits:
            unresolved.append(link)
        elif hits[0] != path:
            out.setdefault(hits[0], link)
    resolved: dict[str, str | None] = {}
    back: set[str] = set()
    # Only notes whose links mention one of this note's names can link to it; names with
    # letters beyond ASCII are matched by case in SQL, so with one of those every note is read.
    keys = table.keys_of(path)
    mention = None if any(not k.isascii() for k in keys) else [k.rsplit("/", 1)[-1] for k in keys]
    for _nid, source, targets in ws.catalog.link_rows(mention):
        if source == path:
            continue
        for link in targets:
            if link not in resolved:
                hits = table.paths(link)
                resolved[link] = hits[0] if hits else None
            if resolved[link] == path:
                back.add(source)
                break
    return out, back, unresolved


def related(ws: Workspace, target: str, *, k: int = 10) -> Related:
    """See the module docstring."""
    k = max(1, min(int(k), K_MAX))
    path = resolve_target(ws, target).path
    node_id, title, links, texts, mine = _own_chunks(ws, path)
    table = names(ws)
    out, back, unresolved = _link_graph(ws, table, path, links)
    staging = ws.config.staging_folder.strip("/")

    # by meaning: every chunk of this note against the index
    best: dict[str, tuple[float, str, int]] = {}  # node_id -> (cosine, their chunk id, our chunk index)
    if len(mine):
        for j, found in enumerate(ws.searcher().neighbours(mine, NEIGHBOURS)):
            for cid, sim in found:
                owner = chunk_owner(cid)
                if owner != node_id and (owner not in best or sim > best[owner][0]):
                    best[owner] = (sim, cid, j)
    linked_paths = set(out) | back
    rows = ws.catalog.notes_by_ids(sorted(set(best) | {table.notes[p][0] for p in linked_paths if p in table.notes}))
    by_path = {r.path: r for r in rows.values()}
    # the similarity of linked notes the neighbour lists did not reach
    missing = [by_path[p].node_id for p in linked_paths if p in by_path and by_path[p].node_id not in best]
    if missing and len(mine):
        hashes = ws.catalog.chunk_hashes_of_notes(missing)
        vecs = ws.catalog.get_vectors(sorted(set(hashes.values())))
        for cid, h in hashes.items():
            if h in vecs:
                sims = mine @ vecs[h]
                j = int(np.argmax(sims))
                owner = chunk_owner(cid)
                if owner not in best or float(sims[j]) > best[owner][0]:
                    best[owner] = (float(sims[j]), cid, j)
    found_chunks = ws.catalog.chunks_by_ids(sorted(b[1] for b in best.values())).values()
    chunk_text = {c.chunk_id: c.text for c in found_chunks}
    chunk_body = {c.chunk_id: c.body for c in found_chunks}

    def entry(nid: str) -> RelatedNote:
        row = rows[nid]
        sim, cid, j = best.get(nid, (None, "", 0))
        theirs = chunk_text.get(cid, "")
        # the passage of theirs around the words the two chunks share (a whole chunk as the
        # query would make snippet() test hundreds of words in every window)
        shared = sorted(_words(theirs) & _words(texts[j]) if texts else set(), key=len, reverse=True)[:20]
        passage = snippet(theirs, " ".join(shared), width=200) if cid else ""
        reasons = []
        if row.path in back:
            reasons.append("links to this note")
        if row.path in out:
            reasons.append("linked from this note")
        if sim is not None and sim >= MIN_SIMILARITY:
            reasons.append(f"similar: {passage}")
        return RelatedNote(
            row.path,
            nid,
            row.title,
            row.path in linked_paths,
            row.path in back,
            row.path in out,
            None if sim is None else round(sim, 4),
            passage,
            reasons,
            [str(v) for v in parse_list(row.meta.get("superseded_by"))],
        )

    linked = [entry(by_path[p].node_id) for p in linked_paths if p in by_path]
    linked.sort(key=lambda r: (-(r.similarity if r.similarity is not None else -1.0), r.path))
    similar = [
        nid
        for nid, (sim, _, _) in best.items()
        if nid in rows
        and rows[nid].path not in linked_paths
        and sim >= MIN_SIMILARITY
        and not (staging and in_folder(rows[nid].path, staging))
    ]
    similar.sort(key=lambda nid: (-best[nid][0], rows[nid].path))
    folded = _fold_copies(ws, similar, rows, {nid: chunk_body.get(best[nid][1], "") for nid in similar}, texts, best, k)
    items = linked[:LINKS_MAX]
    for nid, copies in folded:
        item = entry(nid)
        item.also_in = copies
        items.append(item)
    items.sort(key=lambda r: (-(r.similarity if r.similarity is not None else -1.0), r.path))
    return Related(path, node_id, title, items, len(out), len(back), unresolved)


def _matched_line(theirs: str, ours: str) -> str:
    """The line of their chunk's body that shares the most words with ours: what they are related through."""
    mine = _words(ours)
    lines = [ln for ln in theirs.split("\n") if says_something(ln)] or [theirs]
    return max(lines, key=lambda ln: len(_words(ln) & mine))


def _fold_copies(
    ws: Workspace,
    similar: list[str],
    rows: Mapping[str, NoteRow],
    their_text: Mapping[str, str],
    ours: list[str],
    best: Mapping[str, tuple[float, str, int]],
    k: int,
) -> list[tuple[str, list[str]]]:
    """The first k similar notes, most similar first, each with the notes whose matching line is a
    copy of its own (`repeats.is_repeat`, dates read from each note's day), newest first."""
    kept: list[tuple[str, str, dt.date | None, list[tuple[dt.date | None, str]]]] = []
    for nid in similar:
        row = rows[nid]
        line = _matched_line(their_text[nid], ours[best[nid][2]] if ours else "")
        day = ws.decay.state(row.meta, row.path).stated.day()
        home = next((g for g in kept if is_repeat(g[1], line, (g[2], day))), None)
        if home is not None:
            home[3].append((day, row.path))
        elif len(kept) < k:
            kept.append((nid, line, day, []))
    return [
        (nid, [p for _, p in sorted(copies, key=lambda c: (c[0] or dt.date.min, c[1]), reverse=True)])
        for nid, _, _, copies in kept
    ]


__all__ = ["LINKS_MAX", "MIN_SIMILARITY", "Related", "RelatedNote", "related"]
