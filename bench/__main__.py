"""python -m bench <name|all> [--quick] [--data DIR] [--out DIR] [--embedder NAME] [--notes N]

Runners: scifact, locomo (third-party data, read in place from --data), updates and scale
(generated here), ann (HNSW vs exact search), cold (fresh-process CLI recall) and pipeline
(first-index throughput against the bare embedder).
`all --quick` runs every runner on small slices with the fake embedder;
CI runs that. Results go to <out>/<name>.json and <name>.md (<name>.quick.* in quick mode).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

from .harness import CACHE, DEFAULT_DATA, DEFAULT_OUT, RunOptions, log

RUNNERS = {
    "scifact": ("bench.runners.scifact", "scifact"),
    "locomo": ("bench.runners.locomo", "locomo"),
    "updates": ("bench.runners.updates", None),
    "scale": ("bench.runners.scale", None),
    "ann": ("bench.studies.ann", None),
    "cold": ("bench.runners.cold", None),
    "pipeline": ("bench.runners.pipeline", None),
}


def data_available(data: Path, folder: str | None) -> bool:
    return folder is None or (data / folder).is_dir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[1])
    parser.add_argument("name", choices=[*RUNNERS, "all"])
    parser.add_argument("--quick", action="store_true", help="small slices and the fake embedder (CI)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"bench data folder (default {DEFAULT_DATA})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder (default bench/results)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="generated vaults and indexes (default bench/.cache)")
    parser.add_argument("--embedder", default=None, help='embedder spec (default "fake" with --quick, else "minilm")')
    parser.add_argument("--notes", default=None,
                        help="scale runner: notes in the synthetic vault, or a comma list (1000,10000); "
                             "pipeline runner: notes in its vault (400)")
    parser.add_argument("--vectors", type=int, default=None, help="ann runner: add a synthetic set of N vectors")
    parser.add_argument("--noise", type=float, default=None,
                        help="ann runner: spread of the synthetic clusters "
                             "(0.9 default; about 3-4 is near-uniform, hard)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="scale/cold/pipeline runners: repeats per measurement")
    args = parser.parse_args(argv)

    extra = {k: str(v) for k, v in (("notes", args.notes), ("vectors", args.vectors), ("repeats", args.repeats),
                                                  ("noise", args.noise))
             if v}
    opts = RunOptions(quick=args.quick, data=args.data.resolve(), out=args.out, cache=args.cache,
                      embedder=args.embedder, extra=extra)
    names = list(RUNNERS) if args.name == "all" else [args.name]
    failed: list[str] = []
    skipped: list[str] = []
    for name in names:
        module_name, folder = RUNNERS[name]
        if not data_available(opts.data, folder):
            msg = f"{name}: SKIPPED, no {folder}/ under {opts.data} (pass --data)"
            if args.name != "all":
                log(msg)
                return 2
            log(msg)
            skipped.append(name)
            continue
        log(f"== {name} ({'quick' if opts.quick else 'full'}, embedder {opts.embedder_name})")
        t = time.perf_counter()
        try:
            result = importlib.import_module(module_name).run(opts)
            json_path, md_path = result.write()
        except Exception:
            traceback.print_exc()
            failed.append(name)
            continue
        log(f"== {name}: {time.perf_counter() - t:.1f}s -> {json_path}, {md_path}")
        print(md_path.read_text(encoding="utf-8"))
    if skipped:
        log(f"skipped (no data): {', '.join(skipped)}")
    if failed:
        log(f"FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
