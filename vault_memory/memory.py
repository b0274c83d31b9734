"""`Memory`: the one object the CLI, the MCP server and Python callers use.

The facade of the documented operations (docs/python-api.md), and nothing else: each is a
line or two over its module, and its public members are exactly `DOCUMENTED_OPERATIONS`
(tests/test_api.py compares them with the README). What they run in — the index folder, the
embedder, the writer lock, the caches — is an `IndexFolder` (indexfolder.py) that `Memory`
opens and closes; the edges (CLI, MCP server, watch, doctor), the bench and the tests reach it
with `internals(mem)`. Time enters here: every method takes `now`, defaulting to the clock only
at this edge.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .config import Config, resolve_config
from .errors import ConfigError
from .index.calibration import Calibration
from .index.embedders import Embedder
from .index.indexer import IndexReport
from .indexfolder import CATALOG_NAME, READER_EMBED_BUDGET, READER_EMBED_TOKENS, IndexFolder, VectorProgress, utcnow
from .lifecycle.recall import Hit
from .lifecycle.recall import recall as _recall
from .search.filters import make_filter
from .search.ranking import Mode
from .search.rules import ReadRules
from .search.search import Granularity
from .search.workspace import zoned
from .text import review_path

if TYPE_CHECKING:
    # Types only: the modules behind the agent's other verbs are imported when a verb is used,
    # so a CLI recall does not pay for them (bench `cold`).
    from .lifecycle.prefetch import PrefetchResult
    from .lifecycle.reading import NoteText
    from .lifecycle.recent import RecentNote
    from .lifecycle.related import Related
    from .records import CommitReport, Committed, PinResult, StagedMemory
    from .review.review import Review

#: Memory's public members: the operations docs/python-api.md documents (one heading each).
DOCUMENTED_OPERATIONS = (
    "close",
    "commit",
    "commit_all",
    "discard",
    "index",
    "log",
    "pin",
    "prefetch",
    "read",
    "recall",
    "recent",
    "refresh_review",
    "related",
    "remember",
    "review",
    "stage",
    "staged",
    "status",
    "unpin",
    "vectors",
)


class Memory:
    """A vault and its derived index: the API the CLI and the MCP server are thin layers over.

        with Memory(vault="~/notes") as mem:          # keyword overrides, resolved like CLI flags
            block = mem.prefetch(user_turn).block     # "" when nothing is relevant
            hits = mem.recall("which editor do I use?", k=5)
            mem.remember("The user switched to Helix in November.")

    Settings not given come from `VAULT_MEMORY_*` variables and the config files (config.py).
    Closing releases the index and the writer lock; use it as a context manager.
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        embedder: Embedder | str | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
        calibration: Calibration | None = None,
        rules: ReadRules | None = None,
        **overrides: Any,
    ) -> None:
        """`Memory(config)`, or `Memory(vault=..., **settings)` resolved like CLI flags (config.py).

        `embedder` is an Embedder instance, or a spec string ("minilm", "fake", "ollama:MODEL")
        taken as the `embedder` setting. `calibration` overrides the embedder's cosine thresholds
        (calibration.py; the CLI's way is `vault-memory calibrate`). `rules`: the read path's numbers
        and switches (search/rules.py; default `DEFAULT_RULES`), for a benchmark's variant.
        """
        self._folder = IndexFolder(
            config, embedder=embedder, clock=clock, calibration=calibration, rules=rules, **overrides
        )

    # -- lifecycle ------------------------------------------------------------
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the index and release the writer lock (the context manager calls this)."""
        self._folder.close()

    # -- indexing -------------------------------------------------------------
    def index(
        self,
        *,
        rebuild: bool = False,
        progress: Callable[[int, int], None] | None = None,
        wait: float = 3.0,
        embed_budget: int | None = None,
        embed_tokens: int | None = None,
        verify: bool = False,
        sentence_progress: Callable[[int, int], None] | None = None,
    ) -> IndexReport:
        """Reconcile the index with the vault (or rebuild it from nothing). Takes the writer lock.

        `embed_budget`: embed at most this many texts before returning (None: all), and with
        `embed_tokens` at most that many tokens of text (READER_EMBED_TOKENS: a few seconds). When more
        are new, every changed note is written to the catalog first (searchable by keyword at
        once) and their vectors are left to `fill_vectors()` or the next `index()`
        (`report.texts_pending`): a server answers within seconds of start-up and embeds
        afterwards. `verify` reads every note instead of trusting the stat stamps of unchanged
        files (doctor --fix).

        Once every chunk has its vector, the answer sentences of the chunks get theirs (a second
        pass, `sentence_progress` its progress: chunks done, of how many; `index_sentences`),
        so a new question embeds only itself; until then recall embeds those it scores. A budgeted
        reconcile gives them to a few changed chunks only (`report.sentences_pending`: the rest).
        """
        return self._folder.index(
            rebuild=rebuild,
            progress=progress,
            wait=wait,
            embed_budget=embed_budget,
            embed_tokens=embed_tokens,
            verify=verify,
            sentence_progress=sentence_progress,
        )

    # -- recall and prefetch ---------------------------------------------------
    def recall(
        self,
        query: str,
        k: int = 5,
        *,
        mode: Mode = "hybrid",
        decay: bool = True,
        now: dt.datetime | None = None,
        touch: bool = True,
        granularity: Granularity = "note",
        include_staged: bool = False,
        tags: Sequence[str] | str | None = None,
        folder: str | None = None,
        type: str | None = None,
        after: str | dt.date | None = None,
        before: str | dt.date | None = None,
        explain: bool = False,
    ) -> list[Hit]:
        """The k most relevant notes, ranked with decay; returned notes are rehearsed unless touch=False.

        Filters (filters.py) decide which notes may come back *before* ranking, so the k are
        all eligible: `tags` (each one, nested tags included: `travel` matches `travel/japan`),
        `folder` (at any depth), `type` (frontmatter `type`), `after` / `before` (when the note
        was stated: ISO dates or times, or `7d`, `2w`, `3m`, `1y` back from now).
        `explain=True` fills each hit's `explain` (recall.explain_hit): its BM25 and dense parts,
        best answer window, coverage, relevance, strength, tier, dormancy, and why it moved.
        """
        if not isinstance(query, str) or not query.strip():  # as stage(""), and the MCP tool: an error, not "nothing"
            raise ConfigError("the query is empty; say what to recall in plain words, e.g. 'which editor do I use'")
        now = None if now is None else zoned(now)  # a time without a zone is UTC
        when = now or self._folder.clock()
        flt = make_filter(tags=tags, folder=folder, type=type, after=after, before=before, now=when)
        return self._folder.guarded(
            lambda: _recall(
                self._folder,
                query,
                k,
                mode=mode,
                decay=decay,
                now=now,
                touch=touch,
                granularity=granularity,
                include_staged=include_staged,
                filters=flt,
                explain=explain,
            )
        )

    def prefetch(
        self,
        text: str,
        *,
        budget: int | None = None,
        now: dt.datetime | None = None,
        refresh_staged: bool = True,
        touch: bool = False,
        decay: bool = True,
        tags: Sequence[str] | str | None = None,
        folder: str | None = None,
        type: str | None = None,
        after: str | dt.date | None = None,
        before: str | dt.date | None = None,
    ) -> PrefetchResult:
        """The `[RELEVANT_LEARNED_MEMORY]` block for this turn, at most `budget` characters in all.

        Entries are what `recall(text)` would return, in its order, without weak hits (below the
        embedder's weak bar), superseded or staged notes, lines that are only links or dates, and
        repeats (merged into the entry above, which says where else it appears). `result.block`
        is "" when nothing is relevant.
        Staged memories the turn is about get their expiry extended (`refresh_staged`); shown
        notes are rehearsed only with `touch=True`. `decay=False` is `recall(decay=False)`'s order:
        relevance alone, dormant notes too. The filters are recall's. Logic and rationale: prefetch.py.
        """
        now = None if now is None else zoned(now)  # a time without a zone is UTC
        when = now or self._folder.clock()
        flt = make_filter(tags=tags, folder=folder, type=type, after=after, before=before, now=when)
        from .lifecycle.prefetch import prefetch as _prefetch

        return self._folder.guarded(
            lambda: _prefetch(
                self._folder,
                text,
                budget=budget,
                now=now,
                refresh_staged=refresh_staged,
                touch=touch,
                decay=decay,
                filters=flt,
            )
        )

    # -- reading -----------------------------------------------------------------
    def read(
        self,
        target: str,
        *,
        heading: str | None = None,
        lines: str | tuple[int | None, int | None] | None = None,
        max_chars: int | None = None,
        everything: bool = False,
    ) -> NoteText:
        """A note, one heading's section (`heading`, or `[[Note#Heading]]`) or a line range
        (`"40:80"`, body lines, 1-based), with its path, title, node_id and dates.

        `target` is a title, alias, file name, vault path, `[[wikilink]]` or node_id (resolve.py).
        Writes nothing. What recall never shows, read does not show: `%%` and `<!-- -->` comments are blanked
        and private notes refused, unless the person asks for `everything` (the CLI's `read --all`;
        the MCP server never does). Files that are not notes are refused. Logic: reading.py.
        """
        from .lifecycle.reading import read as _read

        return _read(self._folder, target, heading=heading, lines=lines, max_chars=max_chars, everything=everything)

    def related(self, target: str, *, k: int = 10) -> Related:
        """Notes related to `target` by its links (out and back) and by meaning (its chunks'
        vectors against the index), each marked `linked` or not, with its reasons. Logic: related.py."""
        from .lifecycle.related import related as _related

        return _related(self._folder, target, k=k)

    def recent(self, *, days: float = 7, k: int = 20, now: dt.datetime | None = None) -> list[RecentNote]:
        """Notes written, committed, recalled or logged in the last `days` days, newest first
        (from frontmatter and episode names, never file times). Logic: recent.py."""
        from .lifecycle.recent import recent as _recent

        return _recent(self._folder, days=days, k=k, now=now)

    # -- the agent's write path (staging.py, edits.py) ------------------------
    def stage(
        self, text: str, *, title: str | None = None, tags: Sequence[str] = (), now: dt.datetime | None = None
    ) -> StagedMemory:
        """Write a staged memory (flagged needs_review if it conflicts with a committed note)."""
        from .lifecycle import staging

        return self._folder.guarded(lambda: staging.stage(self._folder, text, title=title, tags=tags, now=now))

    def staged(self, now: dt.datetime | None = None) -> list[StagedMemory]:
        """The staged memories, oldest first; expired ones are moved to .trash/ first."""
        from .lifecycle import staging

        return staging.staged(self._folder, now)

    def commit(
        self, ids: Sequence[str], *, supersedes: str | Sequence[str] | None = None, now: dt.datetime | None = None
    ) -> CommitReport:
        """Commit these staged memories (by node_id or staged path) to the memory folder."""
        from .lifecycle import staging

        return staging.commit(self._folder, ids, supersedes=supersedes, now=now)

    def commit_all(self, now: dt.datetime | None = None) -> CommitReport:
        """Commit every staged memory not flagged needs_review; report the rest and why."""
        from .lifecycle import staging

        return staging.commit_all(self._folder, now)

    def discard(self, id: str) -> str:
        """Move a staged memory to .trash/; returns its path there."""
        from .lifecycle import staging

        return staging.discard(self._folder, id)

    def remember(
        self,
        text: str,
        *,
        title: str | None = None,
        tags: Sequence[str] = (),
        supersedes: str | Sequence[str] | None = None,
        now: dt.datetime | None = None,
    ) -> Committed:
        """Stage and commit in one step (commits even on a conflict, and reports it).

        If a note already states it (conflicts.py), nothing is written and that note is
        returned (`existing`). `supersedes`: the note it replaces (linked both ways).
        """
        from .lifecycle import staging

        return self._folder.guarded(
            lambda: staging.remember(self._folder, text, title=title, tags=tags, supersedes=supersedes, now=now)
        )

    def pin(self, target: str) -> PinResult:
        """Pin a note (node_id, path, title, alias or [[link]]): strength 1, never dormant."""
        from .lifecycle import edits

        return edits.set_pinned(self._folder, target, True)

    def unpin(self, target: str) -> PinResult:
        """Unpin a note (node_id, path, title, alias or [[link]]): it decays like any other again,
        from its last use before the pin (a pinned note is not rehearsed: nothing would change)."""
        from .lifecycle import edits

        return edits.set_pinned(self._folder, target, False)

    def log(self, text: str, now: dt.datetime | None = None) -> str:
        """Append a timestamped line to today's episodic note; returns its path."""
        from .lifecycle import edits

        return edits.log_entry(self._folder, text, now)

    # -- the review -------------------------------------------------------------
    def review(self, now: dt.datetime | None = None, *, write: bool = True) -> Review:
        """What the memory is doing at `now`: drafts and their conflicts, what fades, went dormant, came
        back or was superseded, unreadable notes, and a chart. `result.markdown` is the review note;
        with `write` it is written to `review_note` (a person's edit to it is kept, see review.py);
        `result.to_dict()` is the same content as data. Reads the index as it is (`index` first)."""
        from .review import review
        from .review.review_note import render as render_review

        result = review.gather(self._folder, now)
        result.markdown = render_review(result)
        if write:
            review.write_review(self._folder, result)
        return result

    def refresh_review(self, now: dt.datetime | None = None) -> Review | None:
        """Rewrite the review note if there is one (the watcher calls this when the memory changed)."""
        rel = review_path(self._folder.config)
        if not rel or self._folder.config.read_only or not (self._folder.vault / rel).is_file():
            return None
        return self.review(now)

    # -- status ---------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts, locations, embedder, and what a reconcile would do (without doing it); `index_state`
        (missing, building, embedding, stale, current) and `next_step`, what to run about it ("": nothing)."""
        return self._folder.status()

    def vectors(self) -> VectorProgress:
        """How many chunks have their vector (`chunks`, `embedded`, `pending`, `complete`): while a
        first index fills in, recall is keyword-only. Guarded like every operation: the CLI asks it
        first, and a damaged catalog met here is set aside and rebuilt, not an exit 5 (bench soak)."""
        return self._folder.guarded(self._folder.vectors)


def open_memory(vault: str | Path, **overrides: Any) -> Memory:
    """Shorthand: `with open_memory("~/notes") as mem: ...`."""
    return Memory(resolve_config({"vault": Path(vault), **overrides}))


__all__ = [
    "CATALOG_NAME",
    "DOCUMENTED_OPERATIONS",
    "READER_EMBED_BUDGET",
    "READER_EMBED_TOKENS",
    "Memory",
    "VectorProgress",
    "open_memory",
]
