"""Right on text nobody here wrote: three people's vaults and the LongMemEval pool's dev questions.

Every question file in `../shared/real-vaults/` (`--vaults`) and the pool's dev questions
(`longmemeval-pool/` under `--data`) are asked through the library, nothing written, in each mode
(hybrid, the default; bm25 and dense alone):

- recall (k = 10): the right note first, in the top 5, MRR@10 (a hit is right when its path is an
  answer's or its note contains an answer's text; the pool: an answer session), for the pool also
  every answer in the top 5; "newest first" where a question names stale notes (a `latest` or
  `decision` question, a knowledge update): its newest answer above every stale note;
  questions with no answer: every hit `weak`; answered questions whose hits are all weak;
- prefetch (default budget, or `--budget`; hybrid): each agent turn's block holds what the turn needs (the real
  vaults' `must_contain`/`any_of`; the pool: an answer session's entry); a question with no answer
  gets an empty block; an answered one an empty block (the pool); entries that are only navigation
  or print Dataview code, counted.

Per vault and per question kind, written to `foreign.md` among the results. `evaluate()` is what `bench ablate`
runs for each variant of the read path's rules.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vault_memory.text import unlink

from ..data import foreign as fd
from ..harness import (
    REPO,
    Result,
    RunOptions,
    cache_key,
    index_report,
    log,
    open_memory,
    progress_printer,
    sync_vault,
    table,
)

MODES = ("hybrid", "bm25", "dense")
K = 10
DEFAULT_VAULTS = REPO.parent / "shared" / "real-vaults"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vaults", type=Path, default=None, help=f"the real vaults' folder (default {DEFAULT_VAULTS})")
    parser.add_argument(
        "--sets", default=None, help="comma list of data sets (dexter,flancian,jbranchaud-til,longmemeval)"
    )
    parser.add_argument("--modes", default=None, help="comma list of modes (default hybrid,bm25,dense)")
    parser.add_argument(
        "--budget", type=int, default=None, help="the block's budget in characters (default: Config's prefetch_budget)"
    )
    parser.add_argument(
        "--combine",
        default=None,
        help="comma list of earlier foreign results (.json), one per question file: run nothing, sum each set's "
        "counts over all of them (writes foreign-combined.md)",
    )
    parser.add_argument(
        "--rules",
        default=None,
        help="a variant of the read path's rules for the whole run, as NAME=VALUE,... of ReadRules' fields "
        "(coverage=off, fusion_alpha=0.6, keeps_replaced_out=none); `bench ablate --judge` compares such runs",
    )
    parser.add_argument(
        "--every",
        type=Path,
        default=None,
        help="a folder of question-file folders (bench/questions): run the files in --vaults and the pool, then "
        "each folder's, in one process, and sum each set's counts over all of them (writes foreign-every.md)",
    )


def read_rules(spec: str | None) -> Any:
    """`--rules`: the shipped rules with the fields NAME=VALUE,... changed (a switch takes on/off,
    true/false or 1/0; a number its value; a field that may be unset, none), or None without a spec.
    A name ReadRules does not have, or a value its field cannot take, stops the run saying which."""
    from vault_memory.search.rules import DEFAULT_RULES

    changes: dict[str, Any] = {}
    for item in (x.strip() for x in (spec or "").split(",")):
        if not item:
            continue
        name, sep, raw = (part.strip() for part in item.partition("="))
        if not sep or not hasattr(DEFAULT_RULES, name):
            raise SystemExit(f"bench foreign --rules: {item!r} is not NAME=VALUE of a field of rules.ReadRules")
        now, word = getattr(DEFAULT_RULES, name), raw.lower()
        try:
            if isinstance(now, bool):
                if word not in ("on", "true", "1", "off", "false", "0"):
                    raise ValueError(raw)
                changes[name] = word in ("on", "true", "1")
            elif word == "none":
                changes[name] = None
            else:
                changes[name] = type(now)(raw) if now is not None else float(raw)
        except ValueError as e:
            raise SystemExit(f"bench foreign --rules: {name} cannot be {raw!r} (it is {now!r} by default)") from e
    return DEFAULT_RULES.but(**changes) if changes else None


def datasets(opts: RunOptions, names: Sequence[str] | None = None) -> list[fd.Dataset]:
    """The data sets at hand (a missing one is skipped with a line on stderr)."""
    vaults = Path(opts.extra.get("vaults") or DEFAULT_VAULTS)
    wanted = list(names) if names else [*fd.REAL_VAULTS, fd.LME]
    out = []
    for name in wanted:
        if name == fd.LME:
            root = opts.data / "longmemeval-pool"
            if root.is_dir():
                out.append(fd.longmemeval(root, limit=12 if opts.quick else None))
            else:
                log(f"foreign: no {root}; LongMemEval skipped")
        elif (vaults / f"{name}.questions.json").is_file():
            ds = fd.real_vault(vaults, name)
            # A question file kept apart from its vault (questions written later) reads the vault
            # where the shared ones are; with no vault at all the set is skipped, never indexed as
            # empty (which would empty the cached copy and its index).
            home = opts.extra.get("vault_home")  # --every: the folder its question folders' vaults are in
            homes = (vaults, *([Path(home)] if home else []), DEFAULT_VAULTS)
            source = next((v / name for v in homes if (v / name).is_dir()), None)
            if source is None:
                log(f"foreign: no vault {vaults / name} (nor {DEFAULT_VAULTS / name}); {name} skipped")
                continue
            out.append(dataclasses.replace(ds, source=source))
        else:
            log(f"foreign: no {vaults / name}; skipped")
    return out


@contextmanager
def opened(ds: fd.Dataset, opts: RunOptions, **memory: Any) -> Iterator[tuple[Any, Path, dict[str, Any]]]:
    """The data set's vault copied into the cache and indexed; yields (a read-only Memory, the
    vault, the index report). `memory`: more settings for the Memory (e.g. `rules=`)."""
    vault = opts.cache / "foreign" / "vaults" / cache_key(ds.name, opts.suffix)
    index_dir = opts.cache / "foreign" / "index" / cache_key(ds.name, opts.suffix, opts.embedder_name)
    if ds.source is not None:
        synced = fd.copy_tree(ds.source, vault)
    else:
        assert ds.files is not None
        synced = sync_vault(vault, ds.files)
    log(f"foreign {ds.name}: vault {synced}")
    budget = opts.extra.get("budget")
    settings = {"prefetch_budget": int(budget)} if budget is not None else None
    with open_memory(vault, index_dir, opts.embedder_name, settings, **memory) as mem:
        rep = index_report(mem.index(progress=progress_printer(f"foreign {ds.name}")))
        yield mem, vault, rep


# -- what counts ------------------------------------------------------------------------

_WIKILINK = re.compile(r"!?\[\[[^\]]*\]\]")
_MDLINK = re.compile(r"!?\[[^\]]*\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_WORD = re.compile(r"[^\W\d_]{2,}")
_DATAVIEW = re.compile(r"`=\s*this\.|`=\s*\[|^```\s*(dataview|dataviewjs|query)\b|\$=\s*dv\.", re.I | re.M)


def navigation_only(text: str) -> bool:
    """An entry that is only a way to other notes: once its links (wikilinks, Markdown links with their
    text, URLs), dates and task boxes are out, fewer than two words of its own are left (a README's
    `- [Generate A UUID](postgres/generate-a-uuid.md)`, a daily note's `[[2026-10-15]] · [[2026-10-19]]`).
    Counted independently of the library's own rule (text.says_something), a little stricter. An
    entry that points nowhere is never navigation, however short: "I'm a subscriber." (whose "I'm"
    has no word of two letters) and "Nah" say something, or too little, but lead to no other note."""
    rest = _DATE.sub(" ", _URL.sub(" ", _MDLINK.sub(" ", _WIKILINK.sub(" ", text))))
    if rest == text:  # no link, URL or date: nothing to navigate to
        return False
    return len(_WORD.findall(rest.replace("[x]", " ").replace("[ ]", " "))) < 2


#: A Markdown link to a web page ("[R Graphics Cookbook](https://r-graphics.org/)").
_WEB_MDLINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\((?:https?://|www\.)[^)\n]*\)")


def bookmarks_only(text: str, title: str | None = None) -> bool:
    """A navigation entry (`navigation_only`) that says what it is once the text of its links to web
    pages is read, where that text names the page in two words or more: a saved link
    (`[International Stamps](https://store.usps.com/…)`), not a way to another note. Counted apart
    since stop 80, whose reader shows such entries (text._bookmarks_read). Since stop 82 a web page
    saved in a note and shown under the note's `title` is one too ("Amadeo: A [[person]].
    [[twitter]] https://twitter.com/kingmob84"): the title names what the page is."""

    def read(m: re.Match[str]) -> str:
        return f" {m.group(1)} " if len(_WORD.findall(m.group(1))) >= 2 else m.group(0)

    if not navigation_only(text):
        return False
    titled = bool(title) and text.startswith(f"{title}: ") and _URL.search(text) is not None
    return titled or not navigation_only(_WEB_MDLINK.sub(read, text))


def ends_on_a_lead_in(text: str) -> bool:
    """An entry whose last line leads in ("… as needed:") and shows nothing of what it introduces."""
    return text.rstrip().rstrip("…").rstrip().endswith(":")


def dataview_code(text: str) -> bool:
    """An entry that prints a Dataview expression or query as code (`= this.name`)."""
    return bool(_DATAVIEW.search(text)) or "= this." in text


#: A line's Markdown mark, which a block does not print: a list item's "- ", a heading's "### ", a
#: quote's "> ". A helper who copied "- Pesto sauce" or "### Stool test" from the note wants the line
#: a block shows as "Pesto sauce" (counted so since stop 79; before, only as written or as it reads).
_LINE_MARK = re.compile(r"^\s*(?:[-*+]|#{1,6}|>)\s+")


#: A table row as written ("| Base Pay      | $200,000 |"), which a block shows as its cells, named by
#: its header ("Pay: Base Pay; Amount: $200,000") or as a key and its value ("Base Pay: $200,000"):
#: held when one entry shows its cells in order (counted so since stop 80; before, never).
_TABLE_ROW = re.compile(r"\|.*\|")


def _cells_in_order(row: str, text: str) -> bool:
    """Whether `text` shows every non-empty cell of the table row `row`, in order."""
    at = 0
    for cell in (_reads(c) for c in row.strip().strip("|").split("|")):
        if cell:
            at = text.find(cell, at)
            if at < 0:
                return False
            at += len(cell)
    return True


def _flat(text: str) -> str:
    return " ".join(text.split())


def _reads(text: str) -> str:
    """Text as it reads, to say whether a block holds a turn's exact text: a note's
    `Birthday: [[October 11th]]` is held by a block that shows the property as "Birthday: October
    11th" (links read as their words on both sides; stop 51). A turn's text is also held when the
    block shows it as written: a URL a turn needs is not among the words of the Markdown link that
    holds it, `[a paper on Persistent Non-Symbolic Experiences](http://www.nonsymbolic.org/…)`
    (until stop 72 such a block was counted as missing it)."""
    return _flat(unlink(text))


class Notes:
    """The text of a vault's notes, read once each (whether a hit's note holds an answer's text)."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self._text: dict[str, str] = {}

    def _read(self, path: str) -> str:
        if path not in self._text:
            try:
                self._text[path] = (self.vault / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._text[path] = ""
        return self._text[path]

    def holds(self, path: str, texts: Sequence[str]) -> bool:
        return bool(texts) and any(t in self._read(path) for t in texts)

    def says_more(self, path: str) -> bool:
        """Whether the note holds words of its own beyond links and dates (navigation_only)."""
        return not navigation_only(self._read(path))


def score_hits(q: fd.Question, hits: Sequence[Any], notes: Notes) -> dict[str, Any]:
    """One question's recall, scored."""
    paths = [h.path for h in hits]
    right = [p in q.answers or notes.holds(p, q.answer_texts) for p in paths]
    rank = next((i + 1 for i, r in enumerate(right) if r), None)
    out: dict[str, Any] = {
        "top": paths[:5],
        "rank": rank,
        # hits in the top 5 shown by a part of only links and dates, from a note that says more
        "links_only": sum(1 for h in hits[:5] if navigation_only(h.snippet) and notes.says_more(h.path)),
        "all_weak": bool(hits) and all(h.weak for h in hits) or not hits,
        "top_weak": bool(hits) and hits[0].weak,
    }
    if len(q.answers) > 1:
        out["all_in_5"] = all(a in paths[:5] for a in q.answers)
    if q.newest is not None:
        at = paths.index(q.newest) if q.newest in paths else None
        out["newest_first"] = at is not None and all(s not in paths[:at] for s in q.stale)
    return out


def score_block(turn: fd.Turn, got: Any) -> dict[str, Any]:
    """One turn's block, scored: what it needs is there; entries that are only navigation or code."""
    block = _reads(got.block)

    def holds(text: str) -> bool:  # as it reads, or as it is written: a URL is not in the words of its link
        if _TABLE_ROW.fullmatch(text.strip()):
            return any(_cells_in_order(text, _reads(e.text)) for e in got.entries)
        return _reads(text) in block or text in got.block or _reads(_LINE_MARK.sub("", text, count=1)) in block

    if turn.answers:
        ok = any(e.path in turn.answers for e in got.entries)
    else:
        ok = bool(block) and all(holds(m) for m in turn.must)
        ok = ok and (not turn.any_of or any(holds(a) for a in turn.any_of))
    return {
        "ok": ok,
        "empty": not got.block,
        "entries": len(got.entries),
        "chars": len(got.block),
        "navigation": sum(1 for e in got.entries if navigation_only(e.text)),
        "bookmarks": sum(1 for e in got.entries if bookmarks_only(e.text, e.title)),
        "dataview": sum(1 for e in got.entries if dataview_code(e.text)),
        "lead_in": sum(1 for e in got.entries if ends_on_a_lead_in(e.text)),
        "paths": [e.path for e in got.entries],
    }


# -- asking -----------------------------------------------------------------------------


def evaluate(
    mem: Any,
    ds: fd.Dataset,
    vault: Path,
    *,
    modes: Sequence[str] = MODES,
    blocks: bool = True,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Every question of `ds` in each mode and (with `blocks`) every turn's and question's block;
    per-question records (`questions`, `turns`) and the latency of each hybrid recall (ms)."""
    notes = Notes(vault)
    per_q: list[dict[str, Any]] = []
    lat: list[float] = []
    for q in ds.questions:
        rec: dict[str, Any] = {"id": q.id, "kind": q.kind, "q": q.text}
        for mode in modes:
            t = clock()
            hits = mem.recall(q.text, k=K, mode=mode, now=q.now, touch=False, before=q.before)
            if mode == "hybrid":
                lat.append((clock() - t) * 1000)
            rec[mode] = score_hits(q, hits, notes)
        if blocks:
            got = mem.prefetch(q.text, now=q.now, refresh_staged=False, before=q.before)
            rec["block"] = score_block(fd.Turn(q.id, q.text, answers=q.answers, now=q.now), got)
        per_q.append(rec)
    per_t = []
    if blocks:
        for turn in ds.turns:
            got = mem.prefetch(turn.text, now=turn.now, refresh_staged=False, before=turn.before)
            per_t.append({"id": turn.id, "turn": turn.text, **score_block(turn, got)})
    return {"questions": per_q, "turns": per_t, "latency_ms": lat}


def _share(xs: Sequence[bool]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def summarize(ev: dict[str, Any], modes: Sequence[str] = MODES) -> dict[str, Any]:
    """The counts of one data set's evaluation (what the tables show)."""
    qs = ev["questions"]
    answered = [r for r in qs if r["kind"] not in fd.NO_ANSWER]
    none = [r for r in qs if r["kind"] in fd.NO_ANSWER]
    out: dict[str, Any] = {"questions": len(qs), "answered": len(answered), "no_answer": len(none)}
    for mode in modes:
        ranks = [r[mode]["rank"] for r in answered if mode in r]
        if not ranks:
            continue
        m: dict[str, Any] = {
            "first": _share([x == 1 for x in ranks]),
            "top5": _share([x is not None and x <= 5 for x in ranks]),
            "mrr": round(sum(1 / x for x in ranks if x) / len(ranks), 3),
        }
        all5 = [r[mode]["all_in_5"] for r in answered if "all_in_5" in r[mode]]
        if all5:
            m["all_in_5"] = _share(all5)
        # "what's the latest on X": the first hit is its (newest) answer
        latest = [r[mode]["rank"] == 1 for r in answered if r["kind"] == "latest"]
        if latest:
            m["latest_first"] = [sum(latest), len(latest)]
        nf = [r[mode]["newest_first"] for r in qs if "newest_first" in r[mode] and r["kind"] != "knowledge-update"]
        if nf:  # the newest answer above every note the question names as stale
            m["newest_above_stale"] = [sum(nf), len(nf)]
        ku = [r[mode]["newest_first"] for r in qs if "newest_first" in r[mode] and r["kind"] == "knowledge-update"]
        if ku:
            m["newest_first_ku"] = [sum(ku), len(ku)]
        m["no_answer_all_weak"] = [sum(r[mode]["all_weak"] for r in none), len(none)]
        m["answered_all_weak"] = [sum(r[mode]["all_weak"] for r in answered), len(answered)]
        m["links_only_hits"] = sum(r[mode].get("links_only", 0) for r in qs)
        by_kind: dict[str, list[int | None]] = defaultdict(list)
        for r in answered:
            by_kind[r["kind"]].append(r[mode]["rank"])
        m["by_kind"] = {
            k: {
                "n": len(v),
                "first": _share([x == 1 for x in v]),
                "top5": _share([x is not None and x <= 5 for x in v]),
            }
            for k, v in sorted(by_kind.items())
        }
        out[mode] = m
    blocks = [r["block"] for r in qs if "block" in r]
    turns = ev["turns"] or [b for r, b in zip(qs, blocks, strict=False) if r["kind"] not in fd.NO_ANSWER]
    if blocks or turns:
        b: dict[str, Any] = {}
        if ev["turns"]:
            b["turns_ok"] = [sum(t["ok"] for t in ev["turns"]), len(ev["turns"])]
        else:  # the pool: each answered question's own block
            ans = [r["block"] for r in answered if "block" in r]
            b["answer_in_block"] = _share([x["ok"] for x in ans])
            b["answered_empty"] = _share([x["empty"] for x in ans])
        nb = [r["block"] for r in none if "block" in r]
        if nb:
            b["no_answer_empty"] = [sum(x["empty"] for x in nb), len(nb)]
            b["no_answer_silent"] = [
                sum(x["empty"] and r["hybrid"]["all_weak"] for x, r in zip(nb, none, strict=True)),
                len(nb),
            ]
        every = blocks + list(ev["turns"])
        b["navigation_entries"] = sum(x["navigation"] for x in every)
        b["bookmark_entries"] = sum(x.get("bookmarks", 0) for x in every)
        b["dataview_entries"] = sum(x["dataview"] for x in every)
        b["lead_in_entries"] = sum(x.get("lead_in", 0) for x in every)
        b["entries"] = sum(x["entries"] for x in every)
        b["mean_chars"] = round(statistics.fmean(x["chars"] for x in every), 1) if every else 0
        out["blocks"] = b
    if ev["latency_ms"]:
        out["recall_p50_ms"] = round(statistics.median(ev["latency_ms"]), 1)
    return out


def _frac(pair: Sequence[int] | None) -> str:
    return "" if not pair else f"{pair[0]}/{pair[1]}"


def run(opts: RunOptions) -> Result:
    if opts.extra.get("combine"):
        return run_combined(opts, [Path(p) for p in str(opts.extra["combine"]).split(",") if p])
    modes = [m for m in (opts.extra.get("modes") or "").split(",") if m] or list(MODES)
    if opts.extra.get("every"):
        return run_every(opts, Path(opts.extra["every"]), modes)
    res = Result("foreign", opts)
    sets = [s for s in (opts.extra.get("sets") or "").split(",") if s] or None
    vaults = str(opts.extra.get("vaults") or "../shared/real-vaults")  # the questions files read (--vaults)
    res.params.update(k=K, modes=modes, vaults=vaults, pool="longmemeval-pool (dev)")
    if opts.extra.get("rules"):
        res.params["rules"] = str(opts.extra["rules"])
    if opts.extra.get("budget") is not None:
        res.params["budget"] = int(opts.extra["budget"])
    summaries, detail = _evaluated(opts, sets, modes)
    res.results.update(summary=summaries, detail=detail)
    res.markdown += render(summaries, modes, res.params.get("budget"))
    return res


def _evaluated(
    opts: RunOptions, sets: Sequence[str] | None, modes: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each data set at hand asked in `modes`: its summary and its per-question detail, by name."""
    summaries: dict[str, Any] = {}
    detail: dict[str, Any] = {}
    rules = read_rules(opts.extra.get("rules"))
    for ds in datasets(opts, sets):
        t0 = time.perf_counter()
        with opened(ds, opts, **({"rules": rules} if rules is not None else {})) as (mem, vault, rep):
            log(f"foreign {ds.name}: index {rep}")
            ev = evaluate(mem, ds, vault, modes=modes)
        summaries[ds.name] = summarize(ev, modes)
        summaries[ds.name]["notes"] = rep.get("notes") or rep.get("notes_total")
        detail[ds.name] = ev
        log(f"foreign {ds.name}: {time.perf_counter() - t0:.0f}s {summaries[ds.name].get('hybrid', {})}")
    return summaries, detail


def question_sets(folder: Path) -> list[str]:
    """The data sets a folder has question files for (`<name>.questions.json`), by name."""
    return sorted(f.name.removesuffix(".questions.json") for f in folder.glob("*.questions.json"))


def run_every(opts: RunOptions, root: Path, modes: Sequence[str]) -> Result:
    """`--every`: the question files in `--vaults` (the shared ones by default) and the pool, then
    each folder of `root` that holds question files (its vaults read from `--vaults`' folder), in
    one process (a vault is copied and indexed at its first run; each later run finds it unchanged
    and reconciles nothing); each set's counts summed over all of them, as `--combine` sums earlier
    runs. With `--sets`, only those sets of each folder (the pool among them). The JSON keeps each
    file's summary and its per-question detail (`--combine` reads the summaries)."""
    if not root.is_dir():
        raise SystemExit(f"bench foreign --every: {root} is no folder; give the folder of question-file folders")
    res = Result("foreign-every", opts)  # timed from here
    home = Path(opts.extra.get("vaults") or DEFAULT_VAULTS)
    wanted = {s for s in (opts.extra.get("sets") or "").split(",") if s}

    def chosen(names: Sequence[str]) -> list[str]:
        return [n for n in names if not wanted or n in wanted]

    folders = sorted(d for d in root.iterdir() if d.is_dir() and chosen(question_sets(d)))
    runs: list[tuple[str, dict[str, Any]]] = []
    details: list[dict[str, Any]] = []
    for label, folder, sets in [
        (str(opts.extra.get("vaults") or "../shared/real-vaults"), home, chosen([*question_sets(home), fd.LME])),
        *[(str(d), d, chosen(question_sets(d))) for d in folders],
    ]:
        if not sets:
            continue
        one = dataclasses.replace(opts, extra={**opts.extra, "vaults": folder, "vault_home": home})
        summaries, detail = _evaluated(one, sets, modes)
        runs.append((label, summaries))
        details.append(detail)
    res.params.update(k=K, modes=list(modes), every=str(root), files=[label for label, _ in runs])
    if opts.extra.get("rules"):
        res.params["rules"] = str(opts.extra["rules"])
    if opts.extra.get("budget") is not None:
        res.params["budget"] = int(opts.extra["budget"])
    res.results.update(
        runs=[
            {"questions": label, "summary": summary, "detail": detail}
            for (label, summary), detail in zip(runs, details, strict=True)
        ]
    )
    return _combined(res, runs)


def render(summaries: dict[str, Any], modes: Sequence[str], budget: int | None = None) -> list[str]:
    """The tables of foreign.md."""
    md = ["Right note first / in the top 5 / MRR@10 (hybrid, the default), then the first hit of each mode alone:", ""]
    rows = []
    for name, s in summaries.items():
        h = s.get("hybrid", {})
        row = [name, s["answered"], h.get("first"), h.get("top5"), h.get("mrr")]
        row += [s.get(m, {}).get("first") for m in modes if m != "hybrid"]
        row += [_frac(h.get("latest_first") or h.get("newest_first_ku")), _frac(h.get("newest_above_stale"))]
        row += [h.get("all_in_5"), h.get("links_only_hits")]
        rows.append(row)
    md += table(
        [
            "set",
            "answered",
            "first",
            "top 5",
            "MRR",
            *[f"{m} first" for m in modes if m != "hybrid"],
            "latest: newest answer first (pool: knowledge updates, newest above older)",
            "newest above every stale note",
            "all answers in top 5",
            "top-5 hits shown by a line of links from a note that says more",
        ],
        rows,
    )
    said = "default budget" if budget is None else f"a budget of {budget} characters"
    md += ["", f"The block and the silence (hybrid, {said}):", ""]
    rows = []
    for name, s in summaries.items():
        h, b = s.get("hybrid", {}), s.get("blocks", {})
        rows.append(
            [
                name,
                _frac(b.get("turns_ok")) or b.get("answer_in_block"),
                _frac(h.get("no_answer_all_weak")),
                _frac(b.get("no_answer_silent")),
                _frac(h.get("answered_all_weak")),
                b.get("answered_empty"),
                b.get("navigation_entries"),
                b.get("bookmark_entries"),
                b.get("dataview_entries"),
                b.get("lead_in_entries"),
                b.get("mean_chars"),
                s.get("recall_p50_ms"),
            ]
        )
    md += table(
        [
            "set",
            "block holds what the turn needs",
            "no answer: every hit weak",
            "no answer: weak and no block",
            "answered: all hits weak",
            "answered: empty block",
            "navigation entries",
            "of which saved web links (a link's text of two words or more, or a URL under its note's title)",
            "Dataview entries",
            'entries ending on a lead-in ("… as needed:") without what it introduces',
            "block chars (mean)",
            "recall p50 ms",
        ],
        rows,
    )
    md += ["", "By question kind (hybrid): first / top 5 (n):", ""]
    kinds = sorted({k for s in summaries.values() for k in s.get("hybrid", {}).get("by_kind", {})})
    rows = []
    for name, s in summaries.items():
        bk = s.get("hybrid", {}).get("by_kind", {})
        rows.append(
            [name] + [f"{bk[k]['first']:.2f} / {bk[k]['top5']:.2f} ({bk[k]['n']})" if k in bk else "" for k in kinds]
        )
    md += table(["set", *kinds], rows)
    return md


#: The counts `combine` sums as [right, of]: each run's pair added to the others'.
PAIRS = ("latest_first", "newest_first_ku", "no_answer_all_weak", "answered_all_weak")


def combine(runs: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each set's counts summed over many runs' summaries (`runs`: a label and its `summary`, one
    per question file): how many runs, answered questions, per mode the questions right first and
    in the top 5 and the sum of reciprocal ranks; the pairs of `PAIRS` and the turns whose block held
    what they need; and `led_by`, the runs where a mode alone put more right notes first than hybrid
    (label, answered, then hybrid's and each other mode's count, in `MODES` order; None for a mode
    the run did not measure)."""
    out: dict[str, dict[str, Any]] = {}
    for label, summary in runs:
        for name, s in summary.items():
            n = s.get("answered", 0)
            t = out.setdefault(name, {"runs": 0, "answered": 0, "modes": {}, "pairs": {}, "led_by": []})
            t["runs"] += 1
            t["answered"] += n
            firsts = {}
            for mode in MODES:
                if mode not in s:
                    continue
                m, got = t["modes"].setdefault(mode, {"first": 0, "top5": 0, "mrr": 0.0}), s[mode]
                firsts[mode] = round((got.get("first") or 0) * n)
                m["first"] += firsts[mode]
                m["top5"] += round((got.get("top5") or 0) * n)
                m["mrr"] += (got.get("mrr") or 0) * n
            pairs = {key: s.get("hybrid", {}).get(key) for key in PAIRS}
            blocks = s.get("blocks", {})
            pairs["turns_ok"] = blocks.get("turns_ok")  # the block's, not a mode's
            if blocks.get("answer_in_block") is not None:  # the pool: answered questions with an answer entry
                pairs["answer_entries"] = [round(blocks["answer_in_block"] * n), n]
            for key, pair in pairs.items():
                if pair:
                    have = t["pairs"].setdefault(key, [0, 0])
                    have[0], have[1] = have[0] + pair[0], have[1] + pair[1]
            alone = [firsts.get(mode) for mode in MODES if mode != "hybrid"]  # None: not run
            if "hybrid" in firsts and any(a is not None and a > firsts["hybrid"] for a in alone):
                t["led_by"].append((label, n, firsts["hybrid"], *alone))
    return out


def run_combined(opts: RunOptions, files: Sequence[Path]) -> Result:
    """`--combine`: each set's counts summed over earlier foreign runs, one per question file."""
    import json

    res = Result("foreign-combined", opts)
    runs = []
    for f in files:
        try:
            got = json.loads(f.read_text())
            runs.append((str(got["params"].get("vaults", f.parent.name)), got["results"]["summary"]))
        except (OSError, ValueError, KeyError) as e:
            msg = f"bench foreign --combine: {f} is no foreign result ({e}); give the .json a foreign run wrote"
            raise SystemExit(msg) from e
    res.params.update(files=[str(f) for f in files])
    return _combined(res, runs)


def _combined(res: Result, runs: Sequence[tuple[str, dict[str, Any]]]) -> Result:
    """`res` with each set's counts summed over `runs` (`combine`), as a table, and the runs where a
    mode alone leads."""
    sums = combine(runs)
    res.results.update(combined=sums)
    modes = [m for m in MODES if any(m in t["modes"] for t in sums.values())]

    def per_mode(t: dict[str, Any], key: str) -> str:
        n = t["answered"] or 1
        return " / ".join(f"{t['modes'][m][key] / n:.3f}" if m in t["modes"] else "" for m in modes)

    rows = [
        [
            name,
            t["runs"],
            t["answered"],
            per_mode(t, "first"),
            per_mode(t, "top5"),
            per_mode(t, "mrr"),
            _frac(t["pairs"].get("latest_first") or t["pairs"].get("newest_first_ku")),
            _frac(t["pairs"].get("no_answer_all_weak")),
            _frac(t["pairs"].get("answered_all_weak")),
            _frac(t["pairs"].get("turns_ok")),
        ]
        for name, t in sums.items()
    ]
    said = " / ".join(modes)
    res.markdown += [
        f"Each set's counts summed over {len(runs)} runs of `bench foreign`, one per question file, then divided "
        f"by the answered questions of all of them; first, top 5 and MRR@10 per mode ({said}).",
        "",
        *table(
            [
                "set",
                "runs",
                "answered",
                f"first ({said})",
                f"top 5 ({said})",
                f"MRR ({said})",
                "latest: newest answer first (pool: knowledge updates)",
                "no answer: every hit weak",
                "answered: all hits weak",
                "block holds what the turn needs",
            ],
            rows,
        ),
    ]
    led = [[name, *row] for name, t in sums.items() for row in t["led_by"]]
    if led:
        others = [m for m in MODES if m != "hybrid"]  # the order of `combine`'s led_by rows
        res.markdown += [
            "",
            f"The runs where a mode alone puts more right notes first than hybrid ({len(led)} of "
            f"{sum(t['runs'] for t in sums.values())}; right first, in questions):",
            "",
            *table(["set", "questions", "answered", "hybrid", *others], led),
        ]
    return res
