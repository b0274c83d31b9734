"""The latency of a question never asked before, in process, with the default embedder (issue 38).

A new question costs its query vector, and the answer sentences of its 30 best chunks unless the
index holds their vectors (search/sentences.py, written by a full `index`; further down, only the
sentences whose vectors the index holds are scored); a repeated one finds
both cached. Each index is copied without its query-vector and window caches, then every question
is asked once (new) and again (repeated) in one warm process, one after the other, so the two are
measured on the same machine moment; first with `index_sentences = false` (the sentences embedded
at query time, as before issue 38's change), then, the caches dropped again, with the sentence
vectors (embedded once, timed, and kept under the cache for later runs):

- `synth-10000`: the 10,000 synthetic notes `scale --notes 10000` indexes with fake vectors,
  relabelled as MiniLM's: the real model embeds the queries and the answer sentences, so every step
  is timed at 10k notes, but what ranks means nothing (questions: note titles reworded);
- SciFact (5,183 notes, MiniLM, after `scifact`): its test queries;
- the LongMemEval pool (2,933 sessions, MiniLM, after `foreign`): its dev questions.

And a prefetch of a turn never seen before (issue 39), the same way: the turns are other questions of
the same set (the odd ones; recall asks the even ones), so neither finds the other's query vector.

`--questions N` (default 60). Reports p50 / p95 ms per index, new and repeated.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

from ..data import foreign as fd
from ..harness import MARKER_FILE, Result, RunOptions, cache_key, log, open_memory, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--questions", type=int, default=None, help="questions per index (default 60)")


def _fresh_copy(index: Path, dest: Path, relabel_from: Path | None = None) -> Path:
    """`index` copied to `dest` without the caches a process fills (query vectors, answer windows);
    `relabel_from`: a MiniLM index whose embedder identity the copy takes (fake vectors, real queries)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(
        index,
        dest,
        ignore=shutil.ignore_patterns("writer.lock", "query-vectors.sqlite*", "windows.sqlite*", "sentences.sqlite*"),
    )
    if relabel_from is not None:
        src = sqlite3.connect(relabel_from / "catalog.sqlite")
        try:
            (identity,) = src.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        finally:
            src.close()
        db = sqlite3.connect(dest / "catalog.sqlite")
        try:
            db.execute("UPDATE meta SET value = ? WHERE key = 'embedder'", (identity,))
            db.commit()
        finally:
            db.close()
        (dest / MARKER_FILE).write_text(json.dumps({"embedder": "minilm", "identity": identity}) + "\n")
    return dest


def _targets(opts: RunOptions, n: int) -> list[tuple[str, Path, Path, list[str], dt.datetime | None]]:
    out = []
    work = opts.cache / "new_question"
    scifact_index = opts.cache / "index" / cache_key("scifact", "full", "minilm")
    synth_index = opts.cache / "index" / "synth-10000-fake_384-scale"
    synth_vault = opts.cache / "vaults" / "synth-10000"
    if synth_index.is_dir() and synth_vault.is_dir() and scifact_index.is_dir():
        rng = random.Random(7)
        titles = sorted(p.stem for p in synth_vault.rglob("*.md"))
        qs = [f"what did I write about {t.replace('-', ' ')}" for t in rng.sample(titles, n)]
        out.append(
            ("synthetic 10,000 notes", synth_vault, _fresh_copy(synth_index, work / "synth", scifact_index), qs, None)
        )
    else:
        log("new_question: no 10k synthetic index (python -m bench scale --notes 10000) or no SciFact index; skipped")
    if scifact_index.is_dir():
        from ..data.datasets import SCIFACT_CREATED, load_scifact_qrels, read_jsonl

        judged = load_scifact_qrels(opts.data)
        qs = [str(q["text"]) for q in read_jsonl(opts.data / "scifact" / "queries.jsonl") if str(q["_id"]) in judged][
            :n
        ]
        vault = opts.cache / "vaults" / cache_key("scifact", "full")
        out.append(
            (
                "SciFact 5,183 notes",
                vault,
                _fresh_copy(scifact_index, work / "scifact"),
                qs,
                SCIFACT_CREATED + dt.timedelta(days=1),
            )
        )
    lme = opts.cache / "foreign" / "index" / cache_key(fd.LME, "full", "minilm")
    if lme.is_dir():
        ds = fd.longmemeval(opts.data / "longmemeval-pool")
        vault = opts.cache / "foreign" / "vaults" / cache_key(fd.LME, "full")
        out.append(
            (
                "LongMemEval pool 2,933 sessions",
                vault,
                _fresh_copy(lme, work / "lme"),
                [q.text for q in ds.questions][:n],
                None,
            )
        )
    return out


def _sentences(mem: Any, index: Path, keep: Path) -> dict[str, Any]:
    """Give the copy at `index` its sentence vectors: the ones kept at `keep` from an earlier run
    (the same catalog), or embedded now and kept there. What it took, when embedded here."""
    from vault_memory.internals import internals
    from vault_memory.search.sentences import SENTENCES_NAME

    folder = internals(mem)
    info = json.loads(keep.with_suffix(".json").read_text()) if keep.with_suffix(".json").is_file() else {}
    t = time.perf_counter()
    report = folder.fill_sentences()
    seconds = time.perf_counter() - t
    if report.chunks_done:  # embedded in this run: kept for the next one (a consistent copy of the open file)
        keep.unlink(missing_ok=True)
        src, dst = sqlite3.connect(index / SENTENCES_NAME), sqlite3.connect(keep)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        info = {"seconds": round(seconds, 1), "embedded": report.embedded, "chunks": report.chunks_done}
        keep.with_suffix(".json").write_text(json.dumps(info) + "\n")
    chunks, held = folder.sentences().count()
    file_mb = round((index / SENTENCES_NAME).stat().st_size / 2**20, 1)
    return info | {"held": held, "chunks_covered": chunks, "file_mb": file_mb}


def _ask(mem: Any, now: dt.datetime | None, questions: list[str], turns: list[str]) -> dict[str, Any]:
    mem.recall("a first question loads the model", k=10, touch=False, now=now)
    new, again = _twice(lambda q: mem.recall(q, k=10, touch=False, now=now), questions)
    new_turn, turn_again = _twice(lambda q: mem.prefetch(q, now=now, refresh_staged=False), turns)
    return {
        "questions": len(questions),
        "new_p50_ms": round(statistics.median(new), 1),
        "new_p95_ms": _p95(new),
        "repeated_p50_ms": round(statistics.median(again), 1),
        "turns": len(turns),
        "prefetch_new_p50_ms": round(statistics.median(new_turn), 1),
        "prefetch_new_p95_ms": _p95(new_turn),
        "prefetch_repeated_p50_ms": round(statistics.median(turn_again), 1),
    }


def run(opts: RunOptions) -> Result:
    from vault_memory.search.sentences import SENTENCES_NAME

    res = Result("new_question", opts)
    n = 5 if opts.quick else int(opts.extra.get("questions") or 60)
    rows: list[list[Any]] = []
    found: dict[str, Any] = {}
    for what, vault, index, both, now in _targets(opts, 2 * n):
        questions, turns = both[0::2], both[1::2]
        keep = index.parent / f"{index.name}.{SENTENCES_NAME}"
        cells: dict[str, Any] = {}
        # The same copy, the same questions, one after the other: without the sentence vectors
        # (`index_sentences = false`: the query embeds what it scores) and with them.
        with open_memory(vault, index, "minilm", settings={"index_sentences": False}) as mem:
            cells["without"] = _ask(mem, now, questions, turns)
        for name in ("windows.sqlite", "query-vectors.sqlite", SENTENCES_NAME):
            for suffix in ("", "-wal", "-shm"):
                (index / f"{name}{suffix}").unlink(missing_ok=True)
        if keep.is_file():
            shutil.copyfile(keep, index / SENTENCES_NAME)
        with open_memory(vault, index, "minilm") as mem:
            fill = _sentences(mem, index, keep)
            cells["with"] = _ask(mem, now, questions, turns)
        found[what] = cells | {"sentences": fill}
        for label, cell in (("without sentence vectors", cells["without"]), ("with them", cells["with"])):
            rows.append([what, label, *(cell[k] for k in list(cell)[:4]), *(cell[k] for k in list(cell)[5:])])
        log(f"new_question {what}: {found[what]}")
    res.params.update(questions=n, k=10, mode="hybrid")
    res.results["indexes"] = found
    res.markdown += [
        "A question never asked before (its query vector and answer sentences not cached) and the same "
        "question again, in one warm process, MiniLM; each index copied without its caches, asked first "
        "without the sentence vectors a full `index` writes (`index_sentences = false`: the question embeds "
        "the sentences it scores) and then, the caches dropped again, with them.",
        "",
        *table(
            [
                "index",
                "sentence vectors",
                "questions",
                "new p50 ms",
                "new p95 ms",
                "repeated p50 ms",
                "prefetch: new turn p50 ms",
                "p95 ms",
                "repeated p50 ms",
            ],
            rows,
        ),
        "",
        "The sentence vectors (search/sentences.py), embedded once by the index's second pass and kept "
        "under the cache for later runs:",
        "",
        *table(
            ["index", "chunk texts", "sentences", "seconds to embed them", "sentences per second", "file MB"],
            [
                [
                    what,
                    cell["sentences"].get("chunks_covered"),
                    cell["sentences"].get("held"),
                    cell["sentences"].get("seconds"),
                    round(cell["sentences"]["embedded"] / cell["sentences"]["seconds"], 1)
                    if cell["sentences"].get("seconds")
                    else None,
                    cell["sentences"].get("file_mb"),
                ]
                for what, cell in found.items()
            ],
        ),
    ]
    return res


def _twice(ask: Any, texts: list[str]) -> tuple[list[float], list[float]]:
    """Each text asked once (new) and at once again (repeated): the ms of each."""
    new, again = [], []
    for q in texts:
        t = time.perf_counter()
        ask(q)
        new.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        ask(q)
        again.append((time.perf_counter() - t) * 1000)
    return new, again


def _p95(ms: list[float]) -> float:
    """The 95th percentile by the nearest rank below (as this study has always reported it)."""
    return round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1)
