"""python -m bench NAME [options]: vault-memory's benchmarks (runners) and side studies.

Runners reproduce the tables of docs/benchmarks.md and have a quick mode: `python -m bench all --quick`
runs every runner on small slices with the fake embedder (CI). Studies are one-off or
expensive measurements with options of their own, run by name. Every entry point returns a
harness.Result, written here as <out>/<name>.json and .md (<name>.quick.* in quick mode)
with the machine, date, git commit, load average and parameters of the run.
`python -m bench NAME --help` shows an entry's own options.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType

from .harness import CACHE, DEFAULT_DATA, DEFAULT_OUT, RunOptions, log

# name -> (module, the folder it reads under --data, or None for generated data). A module has
# `run(opts: RunOptions) -> Result` and may have `add_arguments(parser)` for options of its own.
RUNNERS: dict[str, tuple[str, str | None]] = {
    "scifact": ("bench.runners.scifact", "scifact"),
    "locomo": ("bench.runners.locomo", "locomo"),
    "updates": ("bench.runners.updates", None),
    "updates_hard": ("bench.runners.updates_hard", "locomo"),
    "scale": ("bench.runners.scale", None),
    "cold": ("bench.runners.cold", None),
    "first_run": ("bench.runners.first_run", None),
    "pipeline": ("bench.runners.pipeline", None),
    "peers": ("bench.runners.peers", "locomo"),
    "real_vault": ("bench.runners.real_vault", None),
    "lifetime": ("bench.runners.lifetime", "locomo"),
    "foreign": ("bench.runners.foreign", None),
}
STUDIES: dict[str, tuple[str, str | None]] = {
    "ann": ("bench.studies.ann", None),
    "embed_compare": ("bench.studies.embed_compare", None),
    "embed_speed": ("bench.studies.embed_speed", None),
    "prefetch_latency": ("bench.studies.prefetch_latency", None),
    "prefetch_threshold": ("bench.studies.prefetch_threshold", "locomo"),
    "server_mode": ("bench.studies.server_mode", None),
    "watch_latency": ("bench.studies.watch_latency", None),
    "save_race": ("bench.studies.save_race", None),
    "rehearse_floor": ("bench.studies.rehearse_floor", "locomo"),
    "lexical_study": ("bench.studies.lexical_study", None),
    "soak": ("bench.studies.soak", None),
    "tools": ("bench.studies.tools", None),
    "warm_ab": ("bench.studies.warm_ab", None),
    "ablate": ("bench.studies.ablate", None),
    "new_question": ("bench.studies.new_question", None),
    "sentence_cost": ("bench.studies.sentence_cost", None),
    "reweigh": ("bench.studies.reweigh", None),
}
ENTRIES = {**RUNNERS, **STUDIES}
COMMON = ("name", "quick", "data", "out", "cache", "embedder")


def data_available(data: Path, folder: str | None) -> bool:
    return folder is None or (data / folder).is_dir()


def _summary(module: ModuleType) -> str:
    """The first sentence of the module's docstring, on one line."""
    para = " ".join((module.__doc__ or "").strip().split("\n\n", 1)[0].split())
    if len(para) <= 110:
        return para
    end = para.find(". ") + 1
    return para[:end] if 0 < end <= 110 else para[: para.rfind(" ", 0, 108)] + " ..."


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--quick", action="store_true", help="small slices and the fake embedder (CI)")
    common.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"bench data folder (default {DEFAULT_DATA})")
    common.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder (default bench/results)")
    common.add_argument("--cache", type=Path, default=CACHE, help="generated vaults and indexes (default bench/.cache)")
    common.add_argument("--embedder", default=None, help='embedder spec (default "fake" with --quick, else "minilm")')
    sizes = argparse.ArgumentParser(add_help=False)  # the runners' shared size knobs
    sizes.add_argument(
        "--notes",
        default=None,
        help="scale: notes in the synthetic vault, or a comma list (1000,10000); pipeline: notes in its vault (400)",
    )
    sizes.add_argument("--repeats", type=int, default=None, help="scale/cold/pipeline: repeats per measurement")

    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="name", metavar="NAME", required=True)
    groups = (("runners", RUNNERS, [common, sizes]), ("studies", STUDIES, [common]))
    lines = []
    for title, entries, parents in groups:
        lines.append(f"{title}:")
        for name, (module_name, _folder) in entries.items():
            module = importlib.import_module(module_name)
            p = sub.add_parser(
                name, parents=parents, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
            )
            add = getattr(module, "add_arguments", None)
            if add is not None:
                add(p)
            lines.append(f"  {name:<20}{_summary(module)}")
        if title == "runners":
            sub.add_parser("all", parents=[common, sizes], description="Every runner in turn.")
            lines.append(f"  {'all':<20}every runner in turn (skips those whose data is missing)")
    parser.epilog = "\n".join(lines)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    extra = {k: v for k, v in vars(args).items() if k not in COMMON and v is not None}
    opts = RunOptions(
        quick=args.quick, data=args.data.resolve(), out=args.out, cache=args.cache, embedder=args.embedder, extra=extra
    )
    names = list(RUNNERS) if args.name == "all" else [args.name]
    failed: list[str] = []
    skipped: list[str] = []
    for name in names:
        module_name, folder = ENTRIES[name]
        if not data_available(opts.data, folder):
            log(f"{name}: SKIPPED, no {folder}/ under {opts.data} (pass --data)")
            if args.name != "all":
                return 2
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
        if result.results.get("failed"):  # a study that judges itself (soak, save_race) says it failed
            failed.append(name)
    if skipped:
        log(f"skipped (no data): {', '.join(skipped)}")
    if failed:
        log(f"FAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
