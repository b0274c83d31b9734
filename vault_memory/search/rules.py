"""The read path's rules: every number and switch recall and prefetch follow, in one frozen record.

Like an embedder's calibration record (calibration.py holds the cosine bars), a `ReadRules` is a
value: recall and prefetch read the one their memory was opened with (`Memory(rules=...)`,
default `DEFAULT_RULES`), and a benchmark variant is a modified copy (`dataclasses.replace`),
never a patched module global. `bench ablate` switches each rule off in turn and prints what it
changes on every data set at hand (its table: `ablate.md` among the results).

The stages read them in order (docs/ranking.md, "In six sentences"):

    pool     search.Searcher.pool       candidates per side
    score    search.score               fusion weight, coverage, answer sentences and how they read
    pick     search.pick                which chunk stands for a note, which part a block shows
    order    ranking.order              named days, dormancy marks and cues, one fact, successors
    fold     recall.fold_copies         a line copied into several notes is one hit
    present  recall.present / prefetch  hits, or block entries (what an entry shows, what is left out)

A switch is a rule that is a choice, not plumbing: without it the read path still answers, and
`bench ablate` measures what it buys. Numbers beside each field cite the benchmark that chose them
(docs/ranking.md has the tables).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class ReadRules:
    """Every number and switch of the read path (module docstring)."""

    # -- pool --------------------------------------------------------------------------
    #: Each side (BM25 and dense) proposes this many chunks: fixed, so k never changes relevance
    #: (min-max scaling is over the candidates). SciFact's Recall@100 is measured on it.
    candidates: int = 100

    # -- score -------------------------------------------------------------------------
    #: The dense weight of the convex fusion (LoCoMo R@10 flat over 0.4-0.6; SciFact hybrid 0.734).
    fusion_alpha: float = 0.5
    #: BM25 is weighted by the share of the query's content words a chunk holds: a chunk sharing one
    #: everyday word with the query does not get the full lexical weight.
    coverage: bool = True
    #: ... and a chunk covers the words of its note's names too: title, aliases, file name.
    names_count: bool = True
    #: Every candidate is scored also by its best sentence (the answer window), at most this many
    #: sentences each (3; 0 switches windows off). A sentence the index does not hold yet (sentences.py:
    #: a first index still filling, `index_sentences = false`) is embedded at query time for the
    #: `embed_candidates` most relevant chunks only: what a new question may cost before `index` ran.
    windows_per_chunk: int = 3
    embed_candidates: int = 30
    #: The dense side of relevance is this share the query's cosine to the candidate's note as a
    #: whole (the mean of its chunks' vectors: wholes.py), the rest its best part's (the chunk, or
    #: its answer sentence): a note about what the query asks outranks one that touches it once
    #: among other things (0 switches it off). Stop 83, left one set out: +48 over 59 question files
    #: of the three vaults, -8 on the LongMemEval pool (0.15: +33, -3; 0.45: +42, -12).
    whole_note: float = 0.3
    #: A chunk that only points at other pages (Markdown links, URLs, dates: text.points_elsewhere)
    #: or only says its own name in a heading is worth this share of its relevance: a README listing every note,
    #: a line of day links, a page a link created and nobody filled in ("# Matrix").
    navigation_weight: float = 0.5
    #: A property line is read with its note's title when it names a query word the title does not
    #: ("Boiler: installed: 2019").
    titled_properties: bool = True

    # -- pick --------------------------------------------------------------------------
    #: A note is ranked by its chunks that say something of their own (not only links and dates).
    says_something_first: bool = True

    # -- order -------------------------------------------------------------------------
    #: Notes stated on a day the query names come first (and are never weak).
    named_days: bool = True
    #: Newest first among the statements of one fact, inside the first `head` notes by relevance,
    #: between notes whose relevance is within `relevance_band` (bench same_fact) ...
    one_fact: bool = True
    #: ... only for a question that asks how things are, not what happened (question.py).
    one_fact_present_only: bool = True
    head: int = 5
    relevance_band: float = 0.35
    #: Statements of one fact are linked only within one folder (a note updates notes of its kind).
    same_folder: bool = True
    #: A later note that adds no word to one above it counts from that one's day.
    repeats_count_from_first: bool = True
    #: A superseded note never ranks above a successor that replaces what it says for the query
    #: (answers it, or answers alike: ranking.replaced_by; off: the note keeps its place, and
    #: prefetch still leaves it out).
    successors_first: bool = True
    #: A dormant note is cued by every content word of a query of at least this many words ...
    full_cue_min_terms: int = 2
    #: ... or by being the first hit of a query that asks (question.asks): a question asks for its
    #: answer, and forgetting decides what memory offers unasked, not what it finds when asked
    #: (off: only a clear match, every word or the day named cue a faded note).
    first_hit_cue: bool = True
    #: A dormant note about other people than the query names is never cued back, nor the question's
    #: first hit ("What phone does my partner Alex use now?" does not bring back "The user's new phone
    #: is a Galaxy S23"; "which language am I learning" cues the owner's note below the sister's;
    #: text.other_people).
    cues_its_people: bool = True
    #: The first hit of a query that asks is weak only below the calibration's `asked` bar, lower
    #: than `weak`: a question asks for its answer, and its best-ranked note, chosen by both sides,
    #: says more than its cosine alone (off: `weak` for every hit; bench lifetime: the needed fact
    #: in the block 0.924 -> 0.946 with block precision kept; a lower `weak` for every hit lost it).
    first_hit_asked: bool = True
    #: A question naming something no note mentions ("how do I set up a Kubernetes ingress" in a vault
    #: that never says Kubernetes) is answered by nothing in the vault: every hit is weak, no block.
    unknown_names_silence: bool = True
    #: A question that asks a price (question.asks_price) is answered by nothing in the vault when
    #: none of its first `head` hits states one: every hit is weak, no block ("how much did we pay
    #: for the glider" in a vault that never gives its price).
    unstated_price_silence: bool = True
    #: Recall leaves dormant notes out unless cued, as prefetch does (off: forgetting decides what
    #: memory offers unasked, not what it finds when asked; bench lifetime).
    recall_hides_dormant: bool = False

    # -- fold --------------------------------------------------------------------------
    #: A note that states what a hit above states in the same words is folded into that hit.
    fold_copies: bool = True

    # -- present: the block ------------------------------------------------------------
    #: A dormant note the turn cues is shown (bench lifetime: old facts in the block 0.692 -> 0).
    shows_cued_dormant: bool = True
    #: ... unless a live note names it in `conflicts_with` and answers the turn at least this share as
    #: well (its relevance against the dormant note's; None: never kept out). A note flagged similar
    #: when it was saved but about something else (another person's phone) does not answer as well
    #: (bench lifetime: 0.0, any live note: the needed fact in the block 0.852; 0.7: 0.891).
    keeps_replaced_out: float | None = 0.7
    #: Recall writes a use into a note only once it has lost this share of its strength (a write
    #: that moves the curve by less changes little of what decay does).
    rehearse_below: float = 0.5
    #: An entry shows the code block after its answer (a how-to's command) ...
    answer_code: bool = True
    #: ... and this many sentences on each side of the answer, in its list item or paragraph ...
    context_sentences: int = 1
    #: ... and, when the answer is a list item with items indented under it, those items, as a line
    #: that leads in shows what it introduces: an outline's bullet is read with its sub-bullets (a
    #: Logseq journal's "Daily transaction report" over "When copying into Google Sheets, the Asset
    #: ID will sometimes come through as scientific notation"). Stop 68, found on a Logseq graph
    #: fetched after the rules were written; the shared vaults: `flancian` +2 turns, nothing else moved.
    answer_children: bool = True
    #: The block's first entry, the note most likely to answer, shows in the room its answering
    #: lines leave the rest of its note, across its parts (stop 50), from its first line (stop 54;
    #: nearest lines first before), when its note is about a subject: the fact a turn needs is often a few
    #: lines from the sentence most like the turn ("which teacher's videos did I like" is closest to
    #: "Yoga has been great for my lower back pain"; "I like [[yoga with adriene]]" is four lines on),
    #: and a page about a subject says first what matters most about it (a list of state parks whose
    #: "#1: Glendalough: My favorite" is a part above the sentence that ranked it; a person's page
    #: that says what he is building in its first lines). A note about a subject (undated, or last
    #: dated by an edit and not named by its day: decay.about_a_subject) says more about it in the
    #: rest of it; a dated note (a day's log, a memory, a session) states other things of its day,
    #: and filled it took the room of the statements below (bench updates_hard: every statement of
    #: a fact shown 0.778 -> 0.753; every entry filled, 0.543).
    first_entry_fills: bool = True
    #: ... and has this share of the block's budget for its line, when that is more than the entry
    #: cap (stop 54: 600 of the default 1,200 characters; the fifth question files, written by people
    #: who never saw the code and never tuned on, held what the turn needs on one more turn in each
    #: vault, 9/12/18 -> 10/13/19 of 24, and no question's block lost its answer; the team's labelled
    #: vault, one turn fewer in bench ablate's block column, 0.922 -> 0.917). Judged again over 34
    #: files at stop 76: 0.65 and 0.8 gain flancian 3-4 turns and lose jbranchaud-til 6; 0.35 loses 32.
    #: The room the entries below it leave is the first entry's too (prefetch, stop 77: +4 turns of
    #: 40 files, none lost; a share is what it has when the block is full).
    first_entry_share: float = 0.5
    #: An entry that only points elsewhere (text.says_too_little) is no entry, unless pointing is all
    #: its note does: a bookmark ("marroni cake", `- [[go]] https://…/marronicake`) is then shown
    #: with its title, which says what the link is ("pull up the recipe I saved"; stop 59). Stop 59
    #: showed only the block's first entry so: on flancian's nine files then, every such note was one
    #: turn more for 87 entries; on the ten files written after that rule, 17 turns more and none
    #: fewer (stop 73, docs/ranking.md), so every bookmark in the block is shown with its title.
    titled_pointers: bool = True
    #: An entry that repeats one above (the same words, dates moved with the day) is merged into it.
    merge_repeats: bool = True
    #: An entry shortened to fit the budget keeps at least this much text, or is not shown.
    min_entry_text: int = 40
    #: At most this many other paths are named in an entry's "also in".
    also_shown: int = 2

    def but(self, **changes: Any) -> ReadRules:
        """A copy with these fields changed (a benchmark variant); unknown names are an error."""
        return replace(self, **changes)


DEFAULT_RULES = ReadRules()


def switches() -> list[str]:
    """The names of the rules that can be switched off (the boolean fields), in stage order."""
    return [f.name for f in fields(ReadRules) if f.type in ("bool", bool)]


__all__ = ["DEFAULT_RULES", "ReadRules", "switches"]
