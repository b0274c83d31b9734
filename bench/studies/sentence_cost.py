"""What the answer sentences' pass of a first index costs (issue 38; search/sentences.py).

Each real vault of `../shared/real-vaults/` is copied and indexed from nothing with MiniLM, one
after the other in one process: the seconds until the first sentence is embedded (the chunks'
pass: catalog and chunk vectors) and the seconds after it (the sentences' pass), with the
catalog's and `sentences.sqlite`'s sizes. What a first index costs with `index_sentences = true`
(the default) against `false`, measured on one run so the two passes share the machine's moment.

`--vaults DIR` (default ../shared/real-vaults). A few minutes (dexter is the longest).
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from ..data import foreign as fd
from ..harness import Result, RunOptions, log, table
from ..runners.foreign import DEFAULT_VAULTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vaults", type=Path, default=None, help=f"the real vaults' folder (default {DEFAULT_VAULTS})")


def _first_index(src: Path, work: Path) -> dict[str, Any]:
    from vault_memory import Config, Memory

    vault, index = work / "vault", work / "index"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, vault)
    started = time.perf_counter()
    turned: list[float] = []

    def sentences_start(done: int, total: int) -> None:
        if not turned:
            turned.append(time.perf_counter() - started)

    with Memory(Config(vault=vault, index_dir=index, embedder="minilm", read_only=True)) as mem:
        report = mem.index(sentence_progress=sentences_start)
    total = time.perf_counter() - started
    chunks_s = turned[0] if turned else total
    out = {
        "notes": report.notes,
        "chunks": report.chunks,
        "texts_embedded": report.texts_embedded,
        "sentences_embedded": report.sentences_embedded,
        "chunks_seconds": round(chunks_s, 1),
        "sentences_seconds": round(total - chunks_s, 1),
        "catalog_mb": round((index / "catalog.sqlite").stat().st_size / 2**20, 1),
        "sentences_mb": round((index / "sentences.sqlite").stat().st_size / 2**20, 1),
    }
    shutil.rmtree(work, ignore_errors=True)
    return out


def run(opts: RunOptions) -> Result:
    res = Result("sentence_cost", opts)
    vaults = Path(opts.extra.get("vaults") or DEFAULT_VAULTS)
    found: dict[str, Any] = {}
    rows = []
    for name in fd.REAL_VAULTS[:1] if opts.quick else fd.REAL_VAULTS:
        if not (vaults / name).is_dir():
            log(f"sentence_cost: no {vaults / name}; skipped")
            continue
        cell = found[name] = _first_index(vaults / name, opts.cache / "sentence_cost" / name)
        log(f"sentence_cost {name}: {cell}")
        share = cell["sentences_seconds"] / cell["chunks_seconds"] if cell["chunks_seconds"] else None
        rows.append(
            [
                name,
                cell["notes"],
                cell["texts_embedded"],
                cell["chunks_seconds"],
                cell["sentences_embedded"],
                cell["sentences_seconds"],
                round(share, 2) if share is not None else None,
                cell["catalog_mb"],
                cell["sentences_mb"],
            ]
        )
    res.params.update(embedder="minilm", vaults=str(vaults))
    res.results["vaults"] = found
    res.markdown += [
        "A first index from nothing, MiniLM, one vault after the other: the chunks' pass (catalog and "
        "chunk vectors), then the answer sentences' pass (`index_sentences`, the default), timed apart.",
        "",
        *table(
            [
                "vault",
                "notes",
                "chunk texts embedded",
                "chunks' pass s",
                "sentences embedded",
                "sentences' pass s",
                "sentences' / chunks' time",
                "catalog MB",
                "sentences.sqlite MB",
            ],
            rows,
        ),
    ]
    return res
