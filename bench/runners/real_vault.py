"""Right on a person's vault: the labelled questions of data/realvault.py, asked as an agent would.

Both vaults (`../shared/obsidian-vault`, `sample_vault/`) are copied three ways (file times
kept; every file time now, as `git clone` gives; reversed a second apart) and indexed; every
question is asked through the library at `NOW`, nothing written:

- `recall(query, k=10, explain=True)` on the clone: the right note first / in the top 3; every
  freshness move (a hit placed above a more relevant one because it was stated later) scored
  against the labels (right only when the two state different values of what the question
  asks, the newer above); every `change` label scored the same way; the first n of `-k n` equal
  to the first n of `-k 10` for n = 1..10;
- the same recall on the other two copies: identical paths, `change`, `date` and `strength`;
- `prefetch(turn)`: the block holds the fact the turn needs; no two entries state the same
  value; no entry is only links or dates; questions without an answer get no block;
- `weak`: the questions with no answer have only weak hits, answered ones a top hit that is not;
- `hidden`: what a `%%` comment holds is never shown by recall, prefetch or `read`.

The numbers are counts over the labelled set (218 questions); the JSON keeps each question's hits.
It runs on older trees too (fields they lack are read as absent), so before/after is one command.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from collections.abc import Sequence
from typing import Any

from ..data import realvault as rv
from ..harness import REPO, Result, RunOptions, k_prefix_stable, log, open_memory, table

K = 10


def _moves(hits: Sequence[Any]) -> list[tuple[int, int]]:
    """(moved hit, hit it was moved above) for every freshness move, as places in `hits`."""
    out = []
    for i, h in enumerate(hits):
        ex = h.explain or {}
        if not any("moved above" in m for m in ex.get("moved", [])):
            continue
        mine = ex.get("relevance_rank", 0)
        out += [(i, j) for j in range(i + 1, len(hits)) if (hits[j].explain or {}).get("relevance_rank", 0) < mine]
    return out


def _label_pairs(hits: Sequence[Any]) -> list[tuple[int, int]]:
    """(labelled hit, the hit its label names) for every `change` label that names a place."""

    out = []
    for i, h in enumerate(hits):
        for m in re.findall(r"#(\d+)", h.change or ""):
            j = int(m) - 1
            if 0 <= j < len(hits) and j != i:
                out.append((i, j))
        if h.change and not re.search(r"#\d+", h.change):
            out.append((i, i))  # a label naming nobody ("newest of 2 statements" in older trees)
    return out


def _sentences(text: str) -> list[str]:
    try:
        from vault_memory.text import split_sentences
    except ImportError:  # an older tree: its windows were its sentences
        from vault_memory.windows import split_windows as split_sentences  # type: ignore[no-redef]

    return split_sentences(text)


def _words(text: str) -> set[str]:
    """An entry's content words as it reads (links as their text), stemmed as ranking stems a query."""
    try:
        from vault_memory.search.ranking import query_terms
    except ImportError:  # an older tree (before the modules were grouped)
        from vault_memory.ranking import query_terms  # type: ignore[no-redef]
    from vault_memory.text import unlink

    return set(query_terms(unlink(text)))


def _newer(a: Any, b: Any) -> bool:
    return (a.date or "") > (b.date or "")


def _view(hits: Sequence[Any]) -> list[tuple[str, str, str | None, float]]:
    return [(h.path, h.change, h.date, round(h.strength, 6)) for h in hits]


def _ask(mem: Any, case: rv.Case) -> dict[str, Any]:
    hits = mem.recall(case.query, k=K, now=rv.NOW, touch=False, explain=True)
    paths = [h.path for h in hits]
    moves = _moves(hits)
    labels = _label_pairs(hits)

    def right(pairs: list[tuple[int, int]], newer_first: bool) -> tuple[int, int, int]:
        ok = skip = 0
        for i, j in pairs:
            if i == j:
                continue
            verdict = case.pair(hits[i].path, hits[j].path)
            if verdict == "skip":
                skip += 1
            elif verdict == "change" and (not newer_first or _newer(hits[i], hits[j])):
                ok += 1
        return ok, len(pairs) - skip, skip

    # recall's side of the labels: of the true changes (two notes giving different values) that are
    # both returned and both dated, those with the newer statement above the older
    changes = [
        (i, j)
        for i in range(len(hits))
        for j in range(i + 1, len(hits))
        if case.pair(hits[i].path, hits[j].path) == "change" and hits[i].date and hits[j].date
    ]
    newer_above = sum(1 for i, j in changes if _newer(hits[i], hits[j]))

    prefix = k_prefix_stable(hits, lambda n: mem.recall(case.query, k=n, now=rv.NOW, touch=False), range(1, K + 1))
    block = mem.prefetch(case.prefetch_text, now=rv.NOW, refresh_staged=False)
    entries = block.entries
    low = block.block.lower()
    same = [
        (entries[a], entries[b])
        for a in range(len(entries))
        for b in range(a + 1, len(entries))
        if case.pair(entries[a].path, entries[b].path) == "same"
    ]
    repeated = len(same)
    # of those, the pairs whose lower entry adds no word to the one above it (a repeat, not a
    # second statement of one value beside other facts: "seat 14A", "Niche Zero")
    redundant = sum(1 for upper, lower in same if not _words(lower.text) - _words(upper.text))
    # of those, the pairs where both entries show the needed fact (the others state the value
    # elsewhere in their note: the block shows it once)
    both = sum(1 for a, b in same if all(any(n in e.text for n in case.needed) for e in (a, b)))
    # any two entries (labelled or not) alike but for their numbers: one line copied from note to
    # note ("- [ ] Water plants 📅 2026-10-26" in nine daily notes), what "repeats itself" means
    # a sentence (3 words or more, numbers aside) shown by more than one entry: each extra showing
    # (what "each statement once" counts: "13:00 Lunch with [[Jonas Weber]]." in four log entries)
    shown_in: dict[frozenset[str], set[int]] = {}
    for i, e in enumerate(entries):
        for sentence in _sentences(e.text):
            words = frozenset(_words(re.sub(r"\d+", "0", sentence)))
            if len(words) >= 3:
                shown_in.setdefault(words, set()).add(i)
    shown_again = sum(len(at) - 1 for at in shown_in.values())
    masked = [_words(re.sub(r"\d+", "0", e.text)) for e in entries]
    near = sum(
        1
        for a in range(len(entries))
        for b in range(a + 1, len(entries))
        if masked[a] and masked[b] and (masked[a] <= masked[b] or masked[b] <= masked[a])
    )

    def says_nothing(text: str) -> bool:

        bare = re.sub(r"!?\[\[[^\]]*\]\]", " ", text)
        bare = re.sub(r"\b\d{1,4}(?:[-./:]\d{1,4})*\b", " ", bare)
        return re.search(r"[^\W\d_]{2,}", bare) is None

    def body(h: Any) -> str:
        return h.text[len(h.heading) + 1 :] if h.heading and h.text.startswith(h.heading + "\n") else h.text

    def note_says_something(path: str) -> bool:
        try:
            text = mem.read(path).text
        except Exception:  # noqa: BLE001 (a note recall returns may refuse to be read: count it as saying something)
            return True
        text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
        return not says_nothing(re.sub(r"(?m)^#.*$", " ", text))

    # recall's hits in the top 5 shown by a chunk of only links and dates from a note that says more
    links_only = sum(1 for h in hits[:5] if says_nothing(body(h)) and note_says_something(h.path))
    # recall's hits in the top 5 that state what a hit above states in the same words (a line
    # copied from day to day, its dates moved on with its note's day: repeats.is_repeat)
    try:
        from vault_memory.repeats import is_repeat
    except ImportError:  # an older tree: it lived in text.py
        from vault_memory.text import is_repeat  # type: ignore[attr-defined,no-redef]

    def said(h: Any) -> str:
        return ((h.explain or {}).get("window") or {}).get("text") or body(h)

    def day(h: Any) -> dt.date | None:
        return dt.date.fromisoformat(h.date[:10]) if h.date else None

    top5 = hits[:5]
    copies = sum(1 for i, h in enumerate(top5) if any(is_repeat(said(g), said(h), (day(g), day(h))) for g in top5[:i]))
    weak = [getattr(h, "weak", None) for h in hits]
    shown = " ".join([h.text + " " + h.snippet for h in hits]) + " " + block.block
    for h in hits[:3]:
        try:
            shown += " " + mem.read(h.path).text
        except Exception:  # noqa: BLE001 (a note recall returns may refuse to be read: say so, go on)
            pass
    return {
        "query": case.query,
        "turn": case.prefetch_text,
        "hits": [
            {
                "path": h.path,
                "date": h.date,
                "change": h.change,
                "similarity": round(h.similarity, 4),
                "weak": w,
                "moved": (h.explain or {}).get("moved", []),
            }
            for h, w in zip(hits, weak, strict=True)
        ],
        "first_right": bool(paths) and paths[0] in case.best,
        "top3_right": any(p in case.best for p in paths[:3]),
        "moves": right(moves, True),
        "labels": right(labels, False),
        "changes_newer_above": [newer_above, len(changes)],
        "prefix_stable": prefix,
        "links_only": links_only,
        "copies_top5": copies,
        "view": _view(hits),
        "prefetch": {
            "block": block.block,
            "entries": [e.path for e in entries],
            "needed": any(n.lower() in low for n in case.needed) if case.needed else None,
            "empty": block.block == "",
            "repeated_pairs": repeated,
            "repeated_adding_nothing": redundant,
            "repeated_both_show": both,
            "near_identical_pairs": near,
            "sentences_shown_again": shown_again,
            "says_nothing": sum(1 for e in entries if says_nothing(e.text)),
        },
        "weak_top": weak[0] if weak else None,
        "all_weak": all(w for w in weak) if weak and None not in weak else None,
        "hidden_shown": [s for s in case.hidden if s in shown],
    }


def _conflicts(mem: Any, m: rv.Remembered) -> dict[str, Any]:
    """The notes `remember` would flag for one memory (conflicts.check, as stage and remember run
    it), against the notes it really contradicts."""
    from vault_memory.internals import internals
    from vault_memory.lifecycle.conflicts import check

    flagged = sorted({c.path for c in check(internals(mem), m.text.rstrip("."), m.text)})
    return {
        "memory": m.text,
        "flagged": flagged,
        "right": len(set(flagged) & m.conflicts),
        "wrong": sorted(set(flagged) - m.conflicts),
        "missed": sorted(m.conflicts - set(flagged)),
    }


def run(opts: RunOptions) -> Result:
    res = Result("real_vault", opts)
    sources = rv.vault_sources(REPO)
    if not sources[rv.OBSIDIAN].is_dir():
        log(f"real_vault: {sources[rv.OBSIDIAN]} is missing: the sample vault only")
        sources.pop(rv.OBSIDIAN)
    root = opts.cache / "real_vault" / opts.embedder_name
    per: dict[str, dict[str, list[dict[str, Any]]]] = {}
    checked: dict[str, list[dict[str, Any]]] = {}  # what `remember` would flag (rv.REMEMBERED)
    for name, src in sources.items():
        cases = rv.cases(name)
        if opts.quick:
            cases = cases[:8]
        for copy in rv.COPIES:
            vault = rv.copy_vault(src, root / f"{name}-{copy}", copy)
            index = root / f"{name}-{copy}.index"
            shutil.rmtree(index, ignore_errors=True)  # each copy indexed from nothing, as a new user's
            with open_memory(vault, index, opts.embedder_name) as mem:
                mem.index()
                per.setdefault(name, {})[copy] = [_ask(mem, c) for c in cases]
                if copy == "now":
                    checked[name] = [_conflicts(mem, m) for m in rv.remembered(name)[: 3 if opts.quick else None]]
            log(f"real_vault: {name} ({copy} file times): {len(cases)} questions")
    rows = []
    summary: dict[str, Any] = {}
    for name, by_copy in per.items():
        qs = by_copy["now"]
        cases = rv.cases(name)[: len(qs)]
        answerable = [q for q, c in zip(qs, cases, strict=True) if not c.nothing]
        nothing = [q for q, c in zip(qs, cases, strict=True) if c.nothing]
        moves_ok = sum(q["moves"][0] for q in qs)
        moves_n = sum(q["moves"][1] for q in qs)
        labels_ok = sum(q["labels"][0] for q in qs)
        labels_n = sum(q["labels"][1] for q in qs)
        same = sum(  # recall's paths, change labels, dates and strengths, and the prefetch block
            1
            for i in range(len(qs))
            if len({(tuple(map(tuple, by_copy[c][i]["view"])), by_copy[c][i]["prefetch"]["block"]) for c in rv.COPIES})
            == 1
        )
        needs = [q["prefetch"]["needed"] for q in qs if q["prefetch"]["needed"] is not None]
        summary[name] = s = {
            "questions": len(qs),
            "right_first": sum(q["first_right"] for q in answerable),
            "right_top3": sum(q["top3_right"] for q in answerable),
            "answerable": len(answerable),
            "moves": [moves_ok, moves_n],
            "labels": [labels_ok, labels_n],
            "changes_newer_above": [sum(q.get("changes_newer_above", [0, 0])[i] for q in qs) for i in (0, 1)],
            "prefix_stable": sum(q["prefix_stable"] for q in qs),
            "links_only": sum(q.get("links_only", 0) for q in qs),
            "copies_top5": sum(q.get("copies_top5", 0) for q in qs),
            "copies_identical": same,
            "prefetch_needed": [sum(needs), len(needs)],
            "prefetch_repeated_pairs": sum(q["prefetch"]["repeated_pairs"] for q in qs),
            "prefetch_repeated_adding_nothing": sum(q["prefetch"].get("repeated_adding_nothing", 0) for q in qs),
            "prefetch_repeated_both_show": sum(q["prefetch"].get("repeated_both_show", 0) for q in qs),
            "prefetch_near_identical": sum(q["prefetch"].get("near_identical_pairs", 0) for q in qs),
            "prefetch_sentences_shown_again": sum(q["prefetch"].get("sentences_shown_again", 0) for q in qs),
            "prefetch_says_nothing": sum(q["prefetch"]["says_nothing"] for q in qs),
            "no_answer_block_empty": [sum(q["prefetch"]["empty"] for q in nothing), len(nothing)],
            "no_answer_all_weak": [sum(bool(q["all_weak"]) for q in nothing), len(nothing)],
            "answered_top_weak": sum(bool(q["weak_top"]) for q in answerable),
            "hidden_shown": sorted({h for q in qs for h in q["hidden_shown"]}),
            "remember_flagged": [
                sum(c["right"] for c in checked.get(name, [])),
                sum(len(c["flagged"]) for c in checked.get(name, [])),
            ],
            "remember_missed": sum(len(c["missed"]) for c in checked.get(name, [])),
        }
        rows.append(
            [
                name,
                len(qs),
                f"{s['right_first']}/{len(answerable)}",
                f"{s['right_top3']}/{len(answerable)}",
                f"{moves_ok}/{moves_n}",
                f"{labels_ok}/{labels_n}",
                "{}/{}".format(*s["changes_newer_above"]),
                f"{s['prefix_stable']}/{len(qs)}",
                s["links_only"],
                s["copies_top5"],
                f"{same}/{len(qs)}",
                f"{sum(needs)}/{len(needs)}",
                f"{s['prefetch_repeated_pairs']} / {s['prefetch_repeated_both_show']} "
                f"({s['prefetch_repeated_adding_nothing']})",
                s["prefetch_near_identical"],
                s["prefetch_sentences_shown_again"],
                s["prefetch_says_nothing"],
                f"{s['no_answer_block_empty'][0]}/{len(nothing)}",
                f"{s['no_answer_all_weak'][0]}/{len(nothing)}",
                s["answered_top_weak"],
                ", ".join(s["hidden_shown"]) or "none",
                "{}/{} ({} missed)".format(*s["remember_flagged"], s["remember_missed"]) if checked.get(name) else "-",
            ]
        )
    res.params.update(k=K, now=rv.NOW.isoformat(), copies=list(rv.COPIES), labelled=len(rv.cases()))
    res.results = {"summary": summary, "questions": {n: per[n]["now"] for n in per}, "remembered": checked}
    res.markdown += [
        "Labelled questions about a person's Obsidian vault and sample_vault/ (bench/data/realvault.py), "
        f"asked at {rv.NOW.date()} on a clone (every file time = now); `recall -k {K} --explain`. Moves and "
        "labels: right / all (a move or label is right only between notes that give different values for what"
        " the question asks, the newer above). True changes: of the pairs of notes giving different values "
        "that are both returned and both dated, those with the newer above the older. Links-only hits: "
        "hits in recall's top 5 shown by a part of only links and dates (`[[2026-10-15]] · [[2026-10-19]]`) "
        "from a note that says more. Copies in the top 5: hits stating what a hit above states in the same "
        "words (repeats.is_repeat, dates counted from each note's day). Copies: identical "
        "paths, change, date and strength, and an identical prefetch block, with file times kept, now, and "
        "reversed. Prefetch: the block holds "
        "the needed fact; pairs of entries from notes labelled with the same value / of those, the pairs "
        "where both entries show the needed fact (in brackets: those whose lower entry adds no word to the "
        "one above it); pairs of any entries alike but for their numbers (a line copied from note to note); "
        "sentences (3 words or more, numbers aside) shown by a second entry, counted per extra entry; "
        "entries that are only links or dates. No answer: block empty; every hit weak. Answered, top hit "
        "weak: a miss of the weak bar. Remember: the notes `remember` flags for memories an agent might "
        "commit (bench/data/realvault.py, REMEMBERED), right when the memory changes what the note "
        "says; missed: such notes not flagged.",
        "",
        *table(
            [
                "vault",
                "questions",
                "right #1",
                "right in top 3",
                "freshness moves",
                "change labels",
                "true changes: newer above",
                "k-prefix stable",
                "recall: links-only hits",
                "recall: copies in the top 5",
                "3 copies identical",
                "prefetch: needed fact",
                "prefetch: same-value pairs / both showing it (adding nothing)",
                "prefetch: near-identical pairs",
                "prefetch: a sentence shown again",
                "prefetch: says nothing",
                "no answer: no block",
                "no answer: all weak",
                "answered, top weak",
                "hidden shown",
                "remember: conflicts right / flagged",
            ],
            rows,
        ),
    ]
    if opts.quick:
        res.markdown += ["", "_Quick: 8 questions a vault, fake embedder; the numbers say nothing about ranking._"]
    return res


__all__ = ["run"]
