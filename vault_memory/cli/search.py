"""Commands that build and read the index: `index`, `recall`, `status`."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import typer

from ..errors import naming_once
from ..index.calibration import Calibration
from ..internals import internals
from .options import AsJson, FilterAfter, FilterBefore, FilterFolder, FilterTag, FilterType, Now, parse_now, state
from .output import Progress, emit_json, ensure_current, interrupted, note, render_index_report, say


class Mode(enum.StrEnum):
    hybrid = "hybrid"
    bm25 = "bm25"
    dense = "dense"


_MODES: dict[Mode, Literal["hybrid", "bm25", "dense"]] = {Mode.hybrid: "hybrid", Mode.bm25: "bm25", Mode.dense: "dense"}


def index(
    ctx: typer.Context,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Drop the index and build it from nothing")] = False,
    as_json: AsJson = False,
) -> None:
    """Reconcile the index with the vault: embed only what changed."""
    with state(ctx).memory() as mem:
        # Many new texts are written to the catalog first: recall finds them by keyword meanwhile.
        progress = Progress(
            "embedding",
            detail=lambda: "" if mem.vectors().complete else "  (recall answers by keyword until done)",
        )
        # Then, the chunks done, their answer sentences (search/sentences.py): a line of its own.
        sentences = Progress("embedding answer sentences of", detail=lambda: "  (recall works meanwhile)")

        def sentence_progress(done: int, total: int) -> None:
            progress.close()
            sentences(done, total)

        try:
            report = mem.index(rebuild=rebuild, progress=progress, sentence_progress=sentence_progress)
        except KeyboardInterrupt:
            progress.close()
            sentences.close()
            if sentences.state[1]:
                interrupted(sentences, sentences=True)
            interrupted(progress)
        finally:
            progress.close()
            sentences.close()
    if as_json:
        emit_json(report.to_dict())
    else:
        say(render_index_report(report))


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to recall, in plain words", show_default=False)],
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="How many notes (1-100)")] = 5,
    as_json: AsJson = False,
    now: Now = None,
    no_touch: Annotated[bool, typer.Option("--no-touch", help="Do not rehearse the returned notes")] = False,
    mode: Annotated[Mode, typer.Option("--mode", help="Which retrieval to use")] = Mode.hybrid,
    no_decay: Annotated[bool, typer.Option("--no-decay", help="Rank by relevance alone")] = False,
    tag: FilterTag = None,
    folder: FilterFolder = None,
    type: FilterType = None,
    after: FilterAfter = None,
    before: FilterBefore = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show how each hit was ranked")] = False,
) -> None:
    """Recall the notes most relevant to QUERY (semantic + keyword), freshest first among equals.

    The filters choose which notes may come back before anything is ranked, so the k are all eligible.
    """
    if not query.strip():  # before the vault is opened: a usage error, as `stage ""` and the MCP tool say
        raise typer.BadParameter(
            'the query is empty; say what to recall in plain words, e.g. vault-memory recall "which editor do I use"',
            param_hint="'QUERY'",
        )
    when = parse_now(now)
    with state(ctx).memory() as mem:
        # The query's vector will be needed (unless no chunk has one yet: a first index is
        # being written): load the model meanwhile.
        if (mode is not Mode.bm25 or not no_decay) and mem.vectors().embedded > 0:
            internals(mem).warm_query(query)
        ensure_current(mem)
        hits = mem.recall(
            query,
            k=k,
            now=when,
            touch=not no_touch,
            mode=_MODES[mode],
            decay=not no_decay,
            tags=tag,
            folder=folder,
            type=type,
            after=after,
            before=before,
            explain=explain,
        )
        vectors = mem.vectors()
        writer = None if vectors.complete or internals(mem).lock.held else internals(mem).lock.holder_pid()
    lexical_only = any(h.lexical_only for h in hits) or (mode is Mode.hybrid and not vectors.complete)
    if not vectors.complete:
        by = (
            f"process {writer} is embedding them"
            if writer
            else "more than a command embeds before it answers; `vault-memory index` embeds them, with "
            "progress, and resumes if stopped"
        )
        note(
            f"note: {vectors.pending:,} of {vectors.chunks:,} chunks have no vector yet ({by}); "
            + ("results are keyword-only (BM25) meanwhile" if lexical_only else "those are not searched by meaning")
        )
    if as_json:
        emit_json(
            {
                "hits": [h.to_dict() for h in hits],
                "count": len(hits),
                "lexical_only": lexical_only,
                "vectors": vectors.to_dict(),
            }
        )
        return
    if not hits:
        say("no matching notes")
    for i, h in enumerate(hits, 1):
        flags = "".join(
            [
                " [pinned]" if h.pinned else "",
                " [reactivated]" if h.reactivated else "",
                " [superseded]" if h.superseded_by and "superseded" not in h.change else "",
                " [weak]" if h.weak else "",
            ]
        )
        where = f" > {h.heading}" if h.heading else ""
        say(f"{i}. {h.title}  ({h.path}{where})  score {h.score:.3f}{flags}")
        if h.change:
            say(f"   [{h.change}]")
        say(f"   {h.snippet}")
        if h.also_in:  # the copies this hit folds (recall.fold_copies), newest first; JSON lists all
            more = len(h.also_in) - ALSO_SHOWN
            say(f"   also in: {', '.join(h.also_in[:ALSO_SHOWN])}" + (f" and {more} more" if more > 0 else ""))
        if h.explain is not None:
            for line in render_explain(h.explain):
                say(f"   | {line}")


#: At most this many of a hit's copies are named on its "also in" line.
ALSO_SHOWN = 3


def render_explain(ex: dict[str, Any]) -> list[str]:
    """A hit's `explain` as a few lines for people, each named for the stage of the read path that
    did it (docs/ranking.md: pool, score, pick, order, fold, present)."""
    cover = "" if ex["coverage"] is None else f" x coverage {ex['coverage']:.2f}"
    window = ex["window"]
    dense = f"cosine {ex['dense']:.3f}" + (f", best sentence {window['similarity']:.3f}" if window else "")
    lines = [
        f"score: relevance {ex['relevance']:.3f} (#{ex['relevance_rank']} by relevance; {ex['mode']}"
        + ("; stated on the day the query names: first" if ex.get("on_day") else "")
        + f"): bm25 {ex['bm25']:.2f}{cover}, {dense}"
    ]
    if window and window["similarity"] > ex["dense"]:  # the sentence, not the whole chunk, decided
        lines.append(f"score: answers with: {window['text']}")
    stated = ex["stated"]
    when = (
        f"stated {stated['when']} ({stated['source']})" if stated else "undated (no age; never newer than another note)"
    )
    marks = ", ".join(
        x
        for x in [
            "pinned" if ex["pinned"] else "",
            "dormant" if ex["dormant"] else "",
            ("reactivated" + (f" ({ex['cued_by']})" if ex.get("cued_by") else "")) if ex["reactivated"] else "",
        ]
        if x
    )
    lines.append(
        f"order: strength {ex['strength']:.3f}, tier {ex['tier']}, {when}"
        + (f", {marks}" if marks else "")
        + ("" if ex["decay"] else ", decay off")
    )
    if ex["same_fact"]:
        lines.append("order: states the same thing as: " + ", ".join(ex["same_fact"]))
    if ex.get("repeats"):
        lines.append(f"order: adds no word to {ex['repeats']}, above it: counts from that one's day")
    lines += [("fold: " if m.startswith("a line copied") else "order: ") + m for m in ex["moved"]]
    if ex.get("unknown"):
        lines.append("present: weak: the query names " + ", ".join(ex["unknown"]) + ", which no note mentions")
    elif ex.get("unstated_price"):
        lines.append("present: weak: the query asks a price, which none of its first hits states")
    return lines


def status(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Notes, chunks, index location, embedder and what is pending."""
    with state(ctx).memory() as mem:
        info = mem.status()
    if as_json:
        emit_json(info)
        return
    say(f"vault:     {info['vault']}")
    index_state = info.get("index_state", "current")
    say(f"index:     {info['index_dir']}" + ("" if index_state == "current" else f"  ({index_state})"))
    say(f"embedder:  {info['embedder']}")
    cal = info["calibration"]
    asked = Calibration(**cal).asked_bar  # the library's rule: `asked`, never above `weak`, else `weak`
    say(
        f"calibration: weak {cal['weak']}, asked {asked}, strong {cal['strong']}, conflict {cal['conflict']} "
        f"({cal['source']})"
    )
    store = info["vector_store"]
    where = f" at {store['url']}" if store.get("url") else ""
    if store.get("backend") == "exact":
        say(
            f"vectors:   exact search over the catalog's {store['vectors']} vectors "
            f"(no HNSW index below {store['exact_search_limit']} chunks)"
        )
    else:
        count = store["vectors"] if "vectors" in store else "unavailable: " + str(store.get("error", "?"))
        say(
            f"vectors:   {store.get('backend', 'unavailable')}{where}, "
            f"collection {store.get('collection', '?')} ({count})"
        )
    say(f"notes:     {info['notes']}   chunks: {info['chunks']}")
    vec = info["vectors"]
    if not vec["complete"]:
        share = 100 * vec["embedded"] // max(1, vec["chunks"])
        say(
            f"embedded:  {vec['embedded']}/{vec['chunks']} chunks ({share}%); "
            "recall is keyword-only (BM25) until all are"
        )
    todo = [f"{v} {k}" for k, v in info["pending"].items()]
    if not vec["complete"]:
        todo.append(f"{vec['pending']:,} chunks to embed")
    sent = info["sentences"]
    if sent["on"] and vec["complete"] and sent["covered"] < sent["chunks"]:
        todo.append(
            f"the answer sentences of {sent['chunks'] - sent['covered']:,} chunks "
            "(a new question embeds those it needs meanwhile; `vault-memory index`)"
        )
    say(f"pending:   {', '.join(todo) or 'nothing'}")
    if info.get("next_step"):
        say(f"next:      {info['next_step']}")
    for path, err in info["failures"].items():
        say(f"unreadable: {naming_once(path, err)}")
    for path, why in info.get("passed_over", {}).items():
        say(f"not indexed: {path}: {why}")
