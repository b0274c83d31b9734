"""Issue 15's measurements: conflict/duplicate calibration, filter cost, MCP tool latency at 10k notes.

    python -m bench tools --part conflicts            # MiniLM, ~20 s: bench/results/conflicts.json
    python -m bench tools --part filters [--notes N]  # fake embedder: bench/results/filters.json
    python -m bench tools --part mcp [--notes N]      # fake embedder, stdio: bench/results/mcp_tools.json

`conflicts`: a hand-written set of realistic multi-fact notes (a person's preferences, people,
decisions, a project) and memories stated against them, labelled contradiction (same subject,
different claim), restatement (the note says it, mostly in the same words), paraphrase (the note
says it in other words), related (same subject, a compatible fact the note does not state) and
unrelated. For each memory it records the cosine of the memory to the note's whole chunk (what
staging compared before) and to the note's best statement (what conflicts.py compares now),
through the same code as `stage` (conflicts.check on a vault of these notes), and what the check
decides (conflict, duplicate, nothing). The sweep reports, per threshold, the share of each label
flagged, so the default (the calibration record's `conflict`) is picked where contradictions are caught and
related facts are not.

`filters`: on a synthetic vault of N notes (bench/data/synth.py, fake embedder), for filters of
different selectivity: the allowlist (filters.py) alone, the search with it (allowlist
included), the alternative (an unfiltered search whose candidate pool is widened, 100 -> 400
-> 1,600 ..., until k eligible notes remain), and the whole filtered recall.

`mcp`: `vault-memory mcp` as a subprocess over stdio on that vault, driven by the official SDK
client: round-trip p50/p95 of `read` (by title), `related`, filtered and unfiltered `recall`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from vault_memory.internals import internals

from ..harness import CACHE as BENCH_CACHE
from ..harness import Result, RunOptions, table

CACHE = BENCH_CACHE / "tools"
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)

# -- conflicts: the calibration set --------------------------------------------------------

NOTES: dict[str, str] = {
    "Preferences/Coffee.md": """# Coffee

I drink a double espresso every morning, no sugar. Dark roast, made on the Lelit Bianca at home, 18 g in,
36 g out, about 28 seconds.

- Beans: Sumatra Mandheling or the house blend from Röstbar. Light fruity roasts taste sour to me.
- A flat white with oat milk after lunch, at most. Nothing after 15:00 or I sleep badly.
- At the office the machine is terrible, so I bring a thermos.
- Decaf is pointless. Tea is for when I'm ill.

Grinder: Niche Zero, setting 12 for espresso. Descale the Lelit every two months.
""",
    "People/Ines Okafor.md": """# Ines Okafor

My younger sister. Architect at a small studio in Alfama; she has lived in Lisbon since 2019.

- Birthday: 27 April.
- Calls on Sunday evenings, usually around 20:00 Lisbon time.
- Her left knee has been bad since the bike trip; the physio says it's the patellar tendon.
- Visits Leipzig around Christmas and usually once in autumn.
- Allergic to cats, so she stays at a hotel when she visits friends with pets.
""",
    "People/Jonas Weber.md": """# Jonas Weber

My manager at Brightwater since 2023. Runs the backend and platform teams, nine people in total.

- Based in Berlin, in the Leipzig office on Tuesdays and Wednesdays.
- 1:1 every other Thursday at 10:00. He prefers a written agenda the day before.
- Best reached on Slack; he reads email once a day, in the evening.
- Vegetarian. Cycles to work all year, including in snow.
""",
    "Decisions/Team chat.md": """# Team chat

From Monday 28 September 2026 the backend and infrastructure teams chat on Discord instead of Slack.
Slack stays read-only until the end of the year, then the workspace is closed.

- Alerts from Alertmanager post to #incidents through a webhook.
- Guests from Finance get a visitor role.
""",
    "Projects/Home Lab.md": """# Home Lab

The home server is called hearth. It runs Proxmox and hosts Ollama, Home Assistant, Syncthing and Immich.

- Backups with restic: nightly to a USB disk, weekly to Backblaze B2.
- The RTX 3060 in hearth runs the language models.
- Four 8 TB WD Red disks in a ZFS mirror pair.
- The router is an OPNsense box in the hallway cupboard.
""",
    "Preferences/Editor.md": """# Editor

Neovim for everything that is code, Obsidian for everything that is prose. VS Code only for pairing sessions.

- Colour scheme: Kanagawa, the dragon variant. Font: Iosevka Term at 15 pt.
- Plugin manager: lazy.nvim, about 30 plugins.
- Tabs are rendered as 4 spaces; trailing whitespace is stripped.
""",
    "Preferences/Food.md": """# Food

- Ethiopian: injera with misir wot. The place on Eisenbahnstraße is the best in Leipzig.
- No pork, since 2015.
- Coriander leaves taste of soap to me.
- Lactose in larger amounts is a problem; a bit of butter is fine.
- Very sweet desserts are not for me; fruit or dark chocolate instead.
""",
    "Projects/Garden.md": """# Garden irrigation

The drip line on valve 3 waters the herbs and strawberries. Keep the pump at 1.5 bar.

- The controller runs at 6:00 every morning for 20 minutes.
- Karl checked the wiring and insisted on a proper fuse.
- The rain barrel holds 300 litres.
""",
    "Memory/commute.md": """# Commute

Maya takes the S-Bahn to the office on Mondays and Fridays and cycles the other days.
""",
    "Memory/standup.md": """# Standup

The team standup is at 9:30 every weekday in the small meeting room.
""",
}

CASES: list[tuple[str, str, str]] = [  # (note, memory, label)
    # contradictions: same subject, a different claim
    ("Preferences/Coffee.md", "I drink a double espresso every morning with sugar now.", "contradiction"),
    ("Preferences/Coffee.md", "The grinder is set to 14 for espresso.", "contradiction"),
    ("Preferences/Coffee.md", "Maya drinks decaf in the afternoon.", "contradiction"),
    ("Preferences/Coffee.md", "I prefer light fruity roasts for espresso.", "contradiction"),
    ("People/Ines Okafor.md", "Ines has lived in Porto since 2019.", "contradiction"),
    ("People/Ines Okafor.md", "Ines's birthday is on 27 May.", "contradiction"),
    ("People/Ines Okafor.md", "Ines calls on Saturday mornings.", "contradiction"),
    ("People/Jonas Weber.md", "Jonas is in the Leipzig office on Mondays and Fridays.", "contradiction"),
    ("People/Jonas Weber.md", "Jonas is best reached by email.", "contradiction"),
    ("People/Jonas Weber.md", "The 1:1 with Jonas is every Monday at 14:00.", "contradiction"),
    ("Decisions/Team chat.md", "The backend team chats on Slack.", "contradiction"),
    ("Projects/Home Lab.md", "Backups run weekly to a USB disk and monthly to Backblaze B2.", "contradiction"),
    ("Projects/Home Lab.md", "The home server is called ember.", "contradiction"),
    ("Preferences/Editor.md", "Maya uses VS Code for everything that is code.", "contradiction"),
    ("Preferences/Editor.md", "The editor font is JetBrains Mono at 13 pt.", "contradiction"),
    ("Preferences/Food.md", "Maya loves coriander.", "contradiction"),
    ("Projects/Garden.md", "The irrigation controller runs at 21:00 every evening.", "contradiction"),
    ("Memory/commute.md", "Maya cycles to the office every day.", "contradiction"),
    ("Memory/standup.md", "The team standup is at 10:00 on Mondays only.", "contradiction"),
    ("People/Jonas Weber.md", "Jonas no longer cycles to work.", "contradiction"),
    ("Projects/Garden.md", "Keep the irrigation pump at 2.5 bar.", "contradiction"),
    ("Preferences/Food.md", "Maya eats pork again.", "contradiction"),
    ("Projects/Garden.md", "Maya checked the wiring and insisted on a proper fuse.", "contradiction"),
    # restatements: the note says it, mostly in these words
    ("Preferences/Coffee.md", "I drink a double espresso every morning, no sugar.", "restatement"),
    ("Preferences/Coffee.md", "Decaf is pointless.", "restatement"),
    ("People/Ines Okafor.md", "Ines calls on Sunday evenings.", "restatement"),
    ("People/Jonas Weber.md", "Jonas is vegetarian.", "restatement"),
    ("Projects/Home Lab.md", "The home server is called hearth.", "restatement"),
    ("Decisions/Team chat.md", "The backend and infrastructure teams chat on Discord instead of Slack.", "restatement"),
    ("Preferences/Editor.md", "Maya uses Neovim for code and Obsidian for prose.", "restatement"),
    ("Projects/Garden.md", "Keep the irrigation pump at 1.5 bar.", "restatement"),
    ("Memory/standup.md", "The team standup is at 9:30 every weekday.", "restatement"),
    ("People/Ines Okafor.md", "Ines visits Leipzig around Christmas.", "restatement"),
    ("Decisions/Team chat.md", "Slack stays read-only until the end of the year.", "restatement"),
    ("Projects/Garden.md", "The irrigation controller runs at 6:00 every morning.", "restatement"),
    # paraphrases: the note says it in other words
    ("Preferences/Coffee.md", "Every morning she has two shots of espresso without sugar.", "paraphrase"),
    ("People/Ines Okafor.md", "Maya's sister Ines works as an architect in Lisbon.", "paraphrase"),
    ("People/Jonas Weber.md", "Jonas does not eat meat.", "paraphrase"),
    ("Projects/Home Lab.md", "hearth is the name of Maya's home server.", "paraphrase"),
    ("Preferences/Food.md", "Maya has not eaten pork since 2015.", "paraphrase"),
    ("Projects/Garden.md", "The water barrel in the garden takes 300 litres.", "paraphrase"),
    ("Memory/commute.md", "On Mondays and Fridays Maya rides the S-Bahn to work.", "paraphrase"),
    # related: same subject, a compatible fact the note does not state
    ("Preferences/Coffee.md", "Maya's favourite café is Kaffeehaus Riquet.", "related"),
    ("Preferences/Coffee.md", "The Lelit needs a new group gasket.", "related"),
    ("People/Ines Okafor.md", "Ines is learning to play the cello.", "related"),
    ("People/Ines Okafor.md", "Ines's partner is called Rui.", "related"),
    ("People/Jonas Weber.md", "Jonas plays bass in a covers band.", "related"),
    ("Decisions/Team chat.md", "Discord voice channels are used for pairing.", "related"),
    ("Projects/Home Lab.md", "hearth's power supply was replaced in March.", "related"),
    ("Preferences/Editor.md", "Maya's Neovim config lives in her dotfiles repo.", "related"),
    ("Preferences/Food.md", "Maya bakes sourdough bread at weekends.", "related"),
    ("Projects/Garden.md", "The allotment is plot 112.", "related"),
    ("Memory/commute.md", "Maya's bike is a Surly Disc Trucker.", "related"),
    ("Memory/standup.md", "The sprint review is every second Friday.", "related"),
    ("Projects/Home Lab.md", "hearth's ZFS pool is scrubbed on the first Sunday of the month.", "related"),
    ("Preferences/Food.md", "Maya's favourite dessert is a plum tart.", "related"),
    # unrelated
    ("Preferences/Coffee.md", "The car's MOT is due in March.", "unrelated"),
    ("People/Ines Okafor.md", "The router firmware was updated last week.", "unrelated"),
    ("People/Jonas Weber.md", "The tomatoes need staking before July.", "unrelated"),
    ("Projects/Home Lab.md", "Ines prefers window seats on trains.", "unrelated"),
    ("Preferences/Editor.md", "The plum cake recipe uses 1 kg of plums.", "unrelated"),
    ("Projects/Garden.md", "Jonas reads email once a day.", "unrelated"),
]

LABELS = ("contradiction", "restatement", "paraphrase", "related", "unrelated")


def _write_notes(root: Path) -> None:
    for rel, text in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("---\ntags: [calibration]\n---\n" + text, encoding="utf-8")


def run_conflicts() -> dict[str, Any]:
    """Cosines and decisions for every case, through conflicts.check on a vault of NOTES (MiniLM)."""
    import tempfile

    import numpy as np

    from vault_memory.config import Config
    from vault_memory.index.calibration import MINILM
    from vault_memory.index.embedders import make_embedder
    from vault_memory.lifecycle import conflicts
    from vault_memory.memory import Memory

    embedder = make_embedder("minilm")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        _write_notes(vault)
        cfg = Config(vault=vault, index_dir=Path(tmp) / "index", embedder="minilm", read_only=True)
        every = replace(MINILM, conflict=0.0)  # report every candidate; thresholds are swept below
        with Memory(cfg, embedder=embedder, clock=lambda: NOW, calibration=every) as mem:
            mem.index()
            for note, memory, label in CASES:
                started = time.perf_counter()
                found = conflicts.check(internals(mem), "", memory, threshold=0.0)
                seconds = time.perf_counter() - started
                mine = [c for c in found if c.path == note]
                row = internals(mem).catalog.note_by_path(note)
                assert row is not None
                chunk_vecs = internals(mem).catalog.get_vectors(
                    [c.text_hash for c in internals(mem).catalog.chunks_of(row.node_id)]
                )
                mvec = embedder.embed([memory])[0]
                chunk_cos = max(float(np.asarray(v) @ mvec) for v in chunk_vecs.values())
                best = mine[0] if mine else None
                rows.append(
                    {
                        "note": note,
                        "memory": memory,
                        "label": label,
                        "chunk_cosine": round(chunk_cos, 4),
                        "statement_cosine": round(best.similarity or 0.0, 4) if best else None,
                        "statement": best.statement if best else None,
                        "kind": best.kind if best else None,
                        "seconds": round(seconds, 3),
                    }
                )
    thresholds = [round(0.50 + 0.02 * i, 2) for i in range(21)]
    sweep = []
    for t in thresholds:
        entry: dict[str, Any] = {"threshold": t}
        for label in LABELS:
            these = [r for r in rows if r["label"] == label]
            flagged = [r for r in these if (r["statement_cosine"] or 0.0) >= t]
            entry[label] = round(len(flagged) / len(these), 3)
            entry[f"{label}_chunk"] = round(sum(r["chunk_cosine"] >= t for r in these) / len(these), 3)
        sweep.append(entry)
    by_label = {}
    for label in LABELS:
        these = [r for r in rows if r["label"] == label]
        sc = [r["statement_cosine"] or 0.0 for r in these]
        cc = [r["chunk_cosine"] for r in these]
        kinds = [r["kind"] for r in these]
        by_label[label] = {
            "n": len(these),
            "statement_min": min(sc),
            "statement_median": statistics.median(sc),
            "statement_max": max(sc),
            "chunk_min": min(cc),
            "chunk_median": statistics.median(cc),
            "chunk_max": max(cc),
            "duplicate": kinds.count("duplicate"),
        }
    result = {"embedder": embedder.identity, "by_label": by_label, "sweep": sweep, "cases": rows}
    return result


def conflict_lines(result: dict[str, Any]) -> list[str]:
    """The cosines by label, and the share of each label flagged per threshold (statement | chunk level)."""
    lines = table(
        ["label", "n", "statement min / median / max", "chunk min / median / max", "duplicate"],
        [
            [
                label,
                v["n"],
                f"{v['statement_min']:.3f} / {v['statement_median']:.3f} / {v['statement_max']:.3f}",
                f"{v['chunk_min']:.3f} / {v['chunk_median']:.3f} / {v['chunk_max']:.3f}",
                v["duplicate"],
            ]
            for label, v in result["by_label"].items()
        ],
    )
    lines += ["", "Share of each label flagged at a threshold (statement level | chunk level):", ""]
    lines += table(
        ["threshold", *LABELS],
        [
            [f"{e['threshold']:.2f}", *(f"{e[label]:.2f} | {e[label + '_chunk']:.2f}" for label in LABELS)]
            for e in result["sweep"]
        ],
    )
    return lines


# -- filters and MCP latency: a synthetic vault ----------------------------------------------


def _synth(n: int) -> tuple[Path, Path]:
    from ..data.synth import build_synth

    vault, index = CACHE / f"synth-{n}" / "vault", CACHE / f"synth-{n}" / "index"
    build_synth(vault, n)
    from vault_memory.config import Config
    from vault_memory.memory import Memory

    with Memory(Config(vault=vault, index_dir=index, embedder="fake")) as mem:
        report = mem.index()
        print(f"index: {report.notes} notes, {report.chunks} chunks, {report.seconds:.1f}s", file=sys.stderr)
    return vault, index


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)


def _summary(seconds: list[float]) -> dict[str, float]:
    return {"p50_ms": _pct(seconds, 0.5), "p95_ms": _pct(seconds, 0.95), "n": len(seconds)}


def run_filters(n: int, k: int = 5) -> dict[str, Any]:
    """A filtered recall with the allowlist against a predicate on a widened candidate pool."""
    from vault_memory.config import Config
    from vault_memory.memory import Memory
    from vault_memory.search.filters import eligible, make_filter

    from .synth import sample_queries

    vault, index = _synth(n)
    queries = sample_queries(30)
    result: dict[str, Any] = {"notes": n, "k": k, "filters": []}
    with Memory(Config(vault=vault, index_dir=index, embedder="fake", read_only=True), clock=lambda: NOW) as mem:
        tags = sorted({t for row in internals(mem).catalog.notes() for t in row.tags})
        folders = sorted({r.path.split("/", 1)[0] for r in internals(mem).catalog.notes() if "/" in r.path})
        specs = {
            "none": {},
            f"folder {folders[0]}": {"folder": folders[0]},
            f"tag {tags[0]}": {"tags": [tags[0]]},
            "after 2026-01-01": {"after": "2026-01-01"},
            f"tag {tags[1]} + after 2025-01-01": {"tags": [tags[1]], "after": "2025-01-01"},
        }
        mem.recall("warm up", touch=False)
        for name, spec in specs.items():
            flt = make_filter(now=NOW, **spec)
            allow_t: list[float] = []
            search_t: list[float] = []
            recall_t: list[float] = []
            for q in queries:
                started = time.perf_counter()
                allow = eligible(internals(mem), flt)
                allow_t.append(time.perf_counter() - started)
                internals(mem).searcher().search(q, candidates=100, allow=allow)
                search_t.append(time.perf_counter() - started)
                started = time.perf_counter()
                mem.recall(q, k=k, touch=False, **spec)
                recall_t.append(time.perf_counter() - started)
            allowed = len(eligible(internals(mem), flt) or []) if flt else len(internals(mem).catalog.notes())
            # the alternative: search unfiltered, keep eligible candidates, widen the pool until k remain
            pred_t: list[float] = []
            pools: list[int] = []
            allow_set = eligible(internals(mem), flt)
            searcher = internals(mem).searcher()
            for q in queries:
                started = time.perf_counter()
                pool = 100
                while True:
                    cands = searcher.search(q, candidates=pool)
                    kept = [c for c in cands if allow_set is None or c.node_id in allow_set]
                    if len(kept) >= k or pool >= 12_800 or len(cands) < pool // 2:
                        break
                    pool *= 4
                pred_t.append(time.perf_counter() - started)
                pools.append(pool)
            entry = {
                "filter": name,
                "eligible_notes": allowed,
                "share": round(allowed / n, 4),
                "allowlist": _summary(allow_t),
                "search_with_allowlist": _summary(search_t),
                "search_predicate_widened": _summary(pred_t),
                "pool_median": statistics.median(pools),
                "pool_max": max(pools),
                "recall": _summary(recall_t),
            }
            result["filters"].append(entry)
            print(json.dumps(entry), file=sys.stderr)
    return result


def run_mcp(n: int, calls: int = 40) -> dict[str, Any]:
    """Round trips through the official client to `vault-memory mcp` over stdio on the synthetic vault."""
    import anyio
    from mcp import Client, StdioServerParameters

    vault, index = _synth(n)
    from vault_memory.config import Config
    from vault_memory.memory import Memory

    with Memory(Config(vault=vault, index_dir=index, embedder="fake", read_only=True)) as mem:
        rows = internals(mem).catalog.notes()
        titled = [r for r in rows if r.links][:calls]
        tag = sorted({t for r in rows for t in r.tags})[0]
    from .synth import sample_queries

    queries = sample_queries(calls)
    script = Path(sys.executable).parent / "vault-memory"
    command, prefix = (str(script), []) if script.exists() else (sys.executable, ["-m", "vault_memory"])
    params = StdioServerParameters(
        command=command,
        args=[*prefix, "--vault", str(vault), "--index-dir", str(index), "--embedder", "fake", "mcp"],
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "")},
    )
    timings: dict[str, list[float]] = {"read": [], "related": [], "recall": [], "recall_filtered": []}

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await client.call_tool("status", {})
            await client.call_tool("recall", {"query": "warm up", "k": 5})
            for i in range(calls):
                row = titled[i % len(titled)]
                for name, args in (
                    ("read", {"target": row.title}),
                    ("related", {"target": row.title}),
                    ("recall", {"query": queries[i]}),
                    ("recall_filtered", {"query": queries[i], "tags": [tag], "after": "2025-01-01"}),
                ):
                    started = time.perf_counter()
                    r = await client.call_tool("recall" if name.startswith("recall") else name, args)
                    timings[name].append(time.perf_counter() - started)
                    if r.is_error:
                        raise RuntimeError(f"{name} {args}: {r.content}")

    anyio.run(session)
    result = {"notes": n, "embedder": "fake", "calls": calls, "latency": {k: _summary(v) for k, v in timings.items()}}
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--part",
        choices=["conflicts", "filters", "mcp"],
        default="conflicts",
        help="conflicts: calibration (MiniLM); filters, mcp: a synthetic vault (fake embedder)",
    )
    parser.add_argument("--notes", type=int, default=None, help="notes of the synthetic vault (10,000; quick: 300)")


def run(opts: RunOptions) -> Result:
    part = str(opts.extra.get("part") or "conflicts")
    n = int(opts.extra.get("notes") or (300 if opts.quick else 10_000))
    if part == "conflicts":
        res = Result("conflicts", opts)
        res.results = run_conflicts()
        res.markdown = conflict_lines(res.results)
    elif part == "filters":
        res = Result("filters", opts, params={"notes": n})
        res.results = run_filters(n)
        res.markdown = ["```", json.dumps(res.results["filters"], indent=1), "```"]
    else:
        res = Result("mcp_tools", opts, params={"notes": n})
        res.results = run_mcp(n)
        res.markdown = table(
            ["call", *next(iter(res.results["latency"].values())).keys()],
            [[k, *v.values()] for k, v in res.results["latency"].items()],
        )
    return res
