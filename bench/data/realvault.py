"""A labelled set of questions a person (or their agent) asks of two real vaults.

The vaults are `../shared/obsidian-vault` (a person's 50-file Obsidian vault: daily notes
from a template, people, projects, properties, `%%` comments, Excalidraw, attachments) and
this repository's `sample_vault/`. Nothing here is generated: each case is a question with
the notes that answer it, labelled by hand by reading the notes.

Each case gives:
- `best`: the notes that are a right first answer (the note that states the answer; where a
  person's note about the thing and a daily note's passing mention both state it, the
  thing's own note is listed, and the mention too only when it states the whole answer);
- `values`: every note that states an answer, with the value it states. Two notes with
  *different* values for the case answer the same question with different statements: that
  pair, and only that pair, is a true "change" (the newer should go first and be labelled).
  Two notes with the *same* value restate one fact: a change label or a freshness move
  between them is wrong, and a prefetch block that shows both repeats itself. A value of
  "?" marks a note whose statement is ambiguous for the case: pairs with it are not scored;
- `needed`: for prefetch, strings any one of which, found in the block, means the block
  holds the fact the turn needs (`turn` is the prefetch text when it differs from `query`);
- `nothing`: the vault holds no answer (the block should be empty, the hits weak);
- `hidden`: strings that must never be shown (a `%%` comment's secret).

The notes are dated by the vaults' own evidence only: date properties and daily-note names.
`now` is the day after the newest daily note of either vault.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

try:
    from vault_memory.vault.atomic import QUIET_SECONDS, bookkeeping_quiet
except ImportError:  # an older tree (before the modules were grouped): its own quiet second

    def bookkeeping_quiet(quiet: float) -> float:
        return 3 * quiet

    QUIET_SECONDS = 1.0

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
OBSIDIAN = "obsidian"
SAMPLE = "sample"


@dataclass(frozen=True)
class Case:
    vault: str
    query: str
    best: tuple[str, ...] = ()
    values: Mapping[str, str] = field(default_factory=dict)
    needed: tuple[str, ...] = ()
    turn: str = ""
    nothing: bool = False
    hidden: tuple[str, ...] = ()

    @property
    def prefetch_text(self) -> str:
        return self.turn or self.query

    def pair(self, a: str, b: str) -> str:
        """ "change" (different values), "same" (one value restated), "none" (at least one of the
        two states no answer) or "skip" (ambiguous)."""
        va, vb = self.values.get(a), self.values.get(b)
        if va is None or vb is None:
            return "none"
        if "?" in (va, vb):
            return "skip"
        return "same" if va == vb else "change"

    def change_pairs(self) -> set[frozenset[str]]:
        return {frozenset(p) for p in combinations(sorted(self.values), 2) if self.pair(*p) == "change"}


D = "Daily Notes/"
OV = OBSIDIAN
SV = SAMPLE

CASES: tuple[Case, ...] = (
    # -- the person's Obsidian vault ------------------------------------------------------
    Case(
        OV,
        "which hotel am I staying at in Lisbon",
        best=("Projects/Lisbon Conference.md",),
        values={"Projects/Lisbon Conference.md": "Casa do Príncipe"},
        needed=("Casa do Príncipe",),
        turn="I land in Lisbon in March. Where am I staying again?",
    ),
    Case(
        OV,
        "boiler pressure top up",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "filling loop below 0.8 bar"},
        needed=("filling loop",),
        turn="The boiler pressure gauge is low, how do I top it up?",
    ),
    Case(
        OV,
        "what pressure should the boiler be at",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "1.0-1.5 bar"},
        needed=("1.0 and 1.5 bar",),
    ),
    Case(
        OV,
        "what is the plumber's phone number",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "Pete 07700 900123"},
        needed=("07700 900123",),
        turn="I need to call the plumber, what's his number?",
    ),
    Case(
        OV,
        "when is my dentist appointment",
        best=("Areas/Health/Dentist.md", D + "2026-10-11.md", D + "2026-11-12.md"),
        values={
            "Areas/Health/Dentist.md": "14 Nov 9:30",
            D + "2026-10-11.md": "14 Nov 9:30",
            D + "2026-11-12.md": "14 Nov 9:30",
        },
        needed=("14 November", "November 14"),
    ),
    Case(
        OV,
        "what should I bring to the dentist",
        best=("Areas/Health/Dentist.md",),
        values={"Areas/Health/Dentist.md": "insurance card"},
        needed=("insurance card",),
    ),
    Case(
        OV,
        "which hot drink do I have in the morning",
        best=("Areas/Home/Coffee.md",),
        values={"Areas/Home/Coffee.md": "double espresso"},
        needed=("double espresso",),
        turn="Make me my usual morning drink order for the café.",
    ),
    Case(
        OV,
        "what grinder setting for the Ethiopian beans",
        best=("Areas/Home/Coffee.md", D + "2026-10-13.md"),
        values={"Areas/Home/Coffee.md": "12", D + "2026-10-13.md": "12"},
        needed=("setting 12",),
    ),
    Case(
        OV,
        "where is the spare key for the garden shed",
        best=("Areas/Home/Garden.md",),
        values={"Areas/Home/Garden.md": "under the blue pot"},
        needed=("blue pot",),
    ),
    Case(
        OV,
        "what is planted in the north bed",
        best=("Areas/Home/Garden.md", D + "2026-10-17.md"),
        values={"Areas/Home/Garden.md": "garlic", D + "2026-10-17.md": "garlic"},
        needed=("garlic",),
    ),
    Case(
        OV,
        "what is the shed lock combination",
        nothing=True,
        hidden=("4471",),
    ),
    Case(
        OV,
        "plan dinner with Jonas",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "vegetarian"},
        needed=("vegetarian",),
        turn="Can you help me plan dinner with Jonas next week?",
    ),
    Case(
        OV,
        "what does Jonas do for work",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "designer"},
        needed=("designs the Atlas dashboard", "designer"),
    ),
    Case(
        OV,
        "what does Jonas like",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "cycling, espresso, Lisbon"},
        needed=("cycling, espresso",),
        turn="I want to get Jonas a small present. What is he into?",
    ),
    Case(
        OV,
        "who owns the VPN rollout",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "Maya"},
        needed=("VPN and hardware-key rollout",),
    ),
    Case(
        OV,
        "how does Maya prefer to get updates",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "async, in writing"},
        needed=("async updates in writing",),
        turn="I have news for Maya about the project. Should I set up a call?",
    ),
    Case(
        OV,
        "when is Maya's birthday",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "1990-07-22"},
        needed=("1990-07-22",),
    ),
    Case(
        OV,
        "when is Mum's birthday",
        best=("People/Mum.md",),
        values={"People/Mum.md": "3 December"},
        needed=("3 December", "1958-12-03"),
    ),
    Case(
        OV,
        "gift idea for Mum",
        best=("People/Mum.md", D + "2026-10-23.md"),
        values={"People/Mum.md": "ceramic teapot", D + "2026-10-23.md": "ceramic teapot"},
        needed=("teapot",),
        turn="Mum's birthday is coming up, what could I give her?",
    ),
    Case(
        OV,
        "what is the status of the Atlas migration",
        best=("Projects/Project Atlas.md", D + "2026-10-19.md"),
        values={"Projects/Project Atlas.md": "70% done", D + "2026-10-19.md": "70% done"},
        needed=("70%",),
    ),
    Case(
        OV,
        "what is Atlas blocked on",
        best=("Projects/Project Atlas.md", D + "2026-10-19.md"),
        values={"Projects/Project Atlas.md": "IAM policy", D + "2026-10-19.md": "IAM policy"},
        needed=("IAM policy",),
    ),
    Case(
        OV,
        "roll back the ingest deploy",
        best=("Projects/Atlas Runbook.md",),
        values={"Projects/Atlas Runbook.md": "helm rollback"},
        needed=("helm rollback ingest",),
        turn="The ingest deploy is broken, walk me through rolling it back.",
    ),
    Case(
        OV,
        "how do I deploy ingest",
        best=("Projects/Atlas Runbook.md",),
        values={"Projects/Atlas Runbook.md": "helm upgrade"},
        needed=("helm upgrade",),
    ),
    Case(
        OV,
        "did we choose Helm or Kustomize",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "Helm"},
        needed=("Helm charts, not Kustomize",),
    ),
    Case(
        OV,
        "where does Postgres run for Atlas",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "managed service", "Excalidraw/Atlas architecture.excalidraw.md": "?"},
        needed=("managed service",),
    ),
    Case(
        OV,
        "what happens if the IAM policy is not approved",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "cutover slips to January"},
        needed=("slips to January",),
    ),
    Case(
        OV,
        "which editor do I use",
        best=(D + "2026-10-07.md", D + "2026-11-08.md"),
        values={D + "2026-10-07.md": "Helix", D + "2026-11-08.md": "Helix"},
        needed=("Helix",),
    ),
    Case(
        OV,
        "what did the physio say about running",
        best=("Areas/Health/Running log.md",),
        values={"Areas/Health/Running log.md": "IT band, no hills"},
        needed=("IT band",),
        turn="Should I do the hilly route for my run today?",
    ),
    Case(
        OV,
        "what version is the printer driver pinned to",
        best=("Inbox/crlf note.md",),
        values={"Inbox/crlf note.md": "3.2"},
        needed=("3.2",),
    ),
    Case(
        OV,
        "idea for the boiler dashboard",
        best=("Inbox/quick idea.md",),
        values={"Inbox/quick idea.md": "smart plug dashboard"},
        needed=("smart plug",),
    ),
    Case(
        OV,
        "what is a stock in systems thinking",
        best=("Reading/Thinking in Systems.md",),
        values={"Reading/Thinking in Systems.md": "changes only through flows"},
        needed=("only through its flows",),
    ),
    Case(
        OV,
        "when is standup on Mondays",
        best=(D + "2026-10-15.md",),
        values={D + "2026-10-15.md": "9:45"},
        needed=("9:45",),
    ),
    Case(
        OV,
        "what did I think of the Thai place",
        best=(D + "2026-10-21.md",),
        values={D + "2026-10-21.md": "green curry too sweet"},
        needed=("too sweet",),
        turn="Where should we go for dinner on Elm Street, maybe the Thai place?",
    ),
    Case(
        OV,
        "what does the car need before winter",
        best=(D + "2026-10-31.md",),
        values={D + "2026-10-31.md": "winter tyres"},
        needed=("winter tyres",),
    ),
    Case(
        OV,
        "how far did I cycle to the lake",
        best=(D + "2026-10-27.md",),
        values={D + "2026-10-27.md": "42 km"},
        needed=("42 km",),
    ),
    Case(
        OV,
        "how did I fix the flaky CI test in ingest",
        best=(D + "2026-10-25.md",),
        values={D + "2026-10-25.md": "pinned tz database"},
        needed=("tz database",),
    ),
    Case(
        OV,
        "what is my talk at the Lisbon conference about",
        best=("Projects/Lisbon Conference.md",),
        values={"Projects/Lisbon Conference.md": "ingest to Kubernetes"},
        needed=("Moving ingest to Kubernetes",),
    ),
    Case(
        OV,
        "when are my flights to Lisbon",
        best=("Projects/Lisbon Conference.md", D + "2026-10-29.md"),
        values={"Projects/Lisbon Conference.md": "12-16 March", D + "2026-10-29.md": "12-16 March"},
        needed=("12–16 March",),
    ),
    Case(
        OV,
        "what is on my reading list",
        best=("Reading/Reading list.md",),
        values={"Reading/Reading list.md": "list"},
        needed=("Designing Data-Intensive Applications", "The Mom Test"),
    ),
    Case(
        OV,
        "when was the boiler last serviced",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "2026-02-10"},
        needed=("2026-02-10",),
    ),
    Case(
        OV,
        "quantum chromodynamics lattice gauge theory",
        nothing=True,
    ),
    Case(
        OV,
        "what is the capital of Australia",
        nothing=True,
        turn="Quick trivia question: what is the capital of Australia?",
    ),
    # -- sample_vault -------------------------------------------------------------------
    Case(
        SV,
        "which hot drink does she like in the morning",
        best=("Preferences/Coffee.md",),
        values={"Preferences/Coffee.md": "double espresso"},
        needed=("espresso",),
    ),
    Case(
        SV,
        "what grinder setting for espresso",
        best=("Preferences/Coffee.md",),
        values={"Preferences/Coffee.md": "12"},
        needed=("setting 12",),
    ),
    Case(
        SV,
        "which editor do I use for code",
        best=("Preferences/Editor.md",),
        values={"Preferences/Editor.md": "Neovim"},
        needed=("Neovim",),
    ),
    Case(
        SV,
        "what colour scheme and font do I use in the editor",
        best=("Preferences/Editor.md",),
        values={"Preferences/Editor.md": "Kanagawa, Iosevka"},
        needed=("Kanagawa",),
    ),
    Case(
        SV,
        "where does the team chat now",
        best=("Decisions/Switched team chat to Discord.md",),
        values={
            "Decisions/Switched team chat to Discord.md": "Discord",
            "Projects/Ledger Migration.md": "Slack",
            "Memory/infra-requests.md": "Discord",
            "Daily/2026-10-02.md": "Discord",
            "Daily/2026-10-05.md": "Discord",
            "People/Jonas Weber.md": "?",
        },
        needed=("Discord",),
    ),
    Case(
        SV,
        "where do ledger migration status updates go",
        best=("Decisions/Switched team chat to Discord.md", "Projects/Ledger Migration.md"),
        values={
            "Projects/Ledger Migration.md": "Slack",
            "Decisions/Switched team chat to Discord.md": "Discord",
        },
        needed=("Discord",),
    ),
    Case(
        SV,
        "where should I post infrastructure requests",
        best=("People/Priya Raman.md", "Memory/infra-requests.md"),
        values={"People/Priya Raman.md": "#infra", "Memory/infra-requests.md": "#infra"},
        needed=("#infra",),
    ),
    Case(
        SV,
        "what is the staging URL now",
        best=("Decisions/Move staging URL.md",),
        values={"Decisions/Move staging URL.md": "staging-eu"},
        needed=("staging-eu.brightwater.example",),
    ),
    Case(
        SV,
        "when is Jonas on parental leave",
        best=("Memory/jonas-parental-leave.md", "Daily/2026-10-09.md"),
        values={
            "Memory/jonas-parental-leave.md": "12 Oct to 15 Jan",
            "Daily/2026-10-09.md": "12 Oct to 15 Jan",
            "Daily/2026-10-02.md": "12 Oct to 15 Jan",
        },
        needed=("12 October", "mid-January"),
    ),
    Case(
        SV,
        "who runs the sprint reviews while Jonas is away",
        best=("Memory/jonas-parental-leave.md", "Daily/2026-10-09.md"),
        values={"Memory/jonas-parental-leave.md": "Maya", "Daily/2026-10-09.md": "Maya"},
        needed=("Maya runs the sprint reviews", "sprint reviews to me"),
    ),
    Case(
        SV,
        "when does Ines visit",
        best=("Memory/ines-visit-october.md", "People/Ines Okafor.md"),
        values={
            "Memory/ines-visit-october.md": "17-19 October",
            "People/Ines Okafor.md": "17-19 October",
            "Daily/2026-10-03.md": "17-19 October",
        },
        needed=("17", "19 October"),
        turn="My sister is coming to Leipzig, which days was that again?",
    ),
    Case(
        SV,
        "when does Ines's train arrive",
        best=("Memory/ines-visit-october.md",),
        values={"Memory/ines-visit-october.md": "11:40"},
        needed=("11:40",),
    ),
    Case(
        SV,
        "what is wrong with Ines's knee",
        best=("People/Ines Okafor.md",),
        values={"People/Ines Okafor.md": "patellar tendon", "Daily/2026-10-03.md": "better"},
        needed=("patellar tendon",),
    ),
    Case(
        SV,
        "what pressure should the pump run at for valve 3",
        best=("Memory/valve-3-pressure.md",),
        values={"Memory/valve-3-pressure.md": "1.5 bar", "Projects/Garden Irrigation.md": "?"},
        needed=("1.5 bar",),
    ),
    Case(
        SV,
        "what does Priya avoid eating",
        best=("Preferences/Food.md",),
        values={"Preferences/Food.md": "beef"},
        needed=("avoids beef",),
        turn="I'm cooking for Priya on Friday, anything she doesn't eat?",
    ),
    Case(
        SV,
        "what snacks should I bring Grandma",
        best=("People/Ruth Brandt.md", "Preferences/Food.md"),
        values={"People/Ruth Brandt.md": "savoury", "Preferences/Food.md": "savoury"},
        needed=("savoury",),
        turn="I'm visiting Grandma on Sunday, should I bake her a cake?",
    ),
    Case(
        SV,
        "when do I visit Grandma",
        best=("Memory/sunday-visits.md", "People/Ruth Brandt.md"),
        values={"Memory/sunday-visits.md": "Sundays", "People/Ruth Brandt.md": "Sundays"},
        needed=("Sunday",),
        turn="Can we plan a hike for Sunday afternoon?",
    ),
    Case(
        SV,
        "how are the home lab backups done",
        best=("Decisions/Restic for home lab backups.md", "Projects/Home Lab.md"),
        values={"Decisions/Restic for home lab backups.md": "restic", "Projects/Home Lab.md": "restic"},
        needed=("restic", "Restic"),
    ),
    Case(
        SV,
        "why restic and not borg",
        best=("Decisions/Restic for home lab backups.md",),
        values={"Decisions/Restic for home lab backups.md": "B2 needs rclone"},
        needed=("rclone",),
    ),
    Case(
        SV,
        "what GPU is in the home server",
        best=("Projects/Home Lab.md",),
        values={"Projects/Home Lab.md": "RTX 3060"},
        needed=("3060",),
    ),
    Case(
        SV,
        "what is the home server called",
        best=("Memory/home-server-hearth.md", "Projects/Home Lab.md"),
        values={"Memory/home-server-hearth.md": "hearth", "Projects/Home Lab.md": "hearth"},
        needed=("hearth",),
    ),
    Case(
        SV,
        "what model does Eris run",
        best=("Projects/Eris.md",),
        values={"Projects/Eris.md": "qwen2.5:14b"},
        needed=("qwen2.5:14b",),
    ),
    Case(
        SV,
        "why did we pick Postgres for Ledger",
        best=("Decisions/Postgres for Ledger.md",),
        values={"Decisions/Postgres for Ledger.md": "transactions, reporting"},
        needed=("transactions",),
    ),
    Case(
        SV,
        "when were reads flipped to Postgres",
        best=("Projects/Ledger Migration.md",),
        values={"Projects/Ledger Migration.md": "2025-12-19"},
        needed=("2025-12-19",),
    ),
    Case(
        SV,
        "how far am I with scanning box 3 of the slides",
        best=("Daily/2026-10-08.md",),
        values={
            "Projects/Photo Archive.md": "150 of 500",
            "Daily/2026-10-03.md": "60 more scanned",
            "Daily/2026-10-08.md": "255 of 500",
        },
        needed=("255",),
    ),
    Case(
        SV,
        "when is the meetup talk",
        best=("Projects/Meetup Talk.md",),
        values={"Projects/Meetup Talk.md": "12 November 19:00"},
        needed=("12 November",),
    ),
    Case(
        SV,
        "how should answers be formatted for Maya",
        best=("Memory/answer-style.md",),
        values={"Memory/answer-style.md": "short, conclusion first"},
        needed=("short",),
    ),
    Case(
        SV,
        "what did Jonas approve for preview environments",
        best=("Daily/2026-10-06.md",),
        values={"Daily/2026-10-06.md": "option 2, preview label"},
        needed=("option 2", "`preview` label"),
    ),
    Case(
        SV,
        "how big is Karl's shed roof",
        best=("Daily/2026-10-03.md",),
        values={"Daily/2026-10-03.md": "2.4 x 3.1 m"},
        needed=("2.4 × 3.1",),
    ),
    Case(
        SV,
        "what music do I listen to while working",
        best=("Preferences/Music While Working.md",),
        values={"Preferences/Music While Working.md": "instrumental"},
        needed=("Instrumental", "Nils Frahm"),
        turn="Put on something for me to listen to while I code.",
    ),
    Case(
        SV,
        "what shell do I use",
        best=("Preferences/Tools.md",),
        values={"Preferences/Tools.md": "fish"},
        needed=("fish",),
    ),
    Case(
        SV,
        "how did Ines get to Vienna on the bike trip",
        best=("Projects/Danube Bike Trip.md",),
        values={"Projects/Danube Bike Trip.md": "train from Tulln"},
        needed=("Tulln",),
    ),
    Case(
        SV,
        "when can I schedule meetings with Tomás",
        best=("People/Tomás Álvarez.md",),
        values={"People/Tomás Álvarez.md": "before 16:00"},
        needed=("16:00", "16:30"),
        turn="Book a meeting with Tomás for 17:00 tomorrow.",
    ),
    Case(
        SV,
        "how does the garden irrigation controller work",
        best=("Projects/Garden Irrigation.md",),
        values={"Projects/Garden Irrigation.md": "ESP32"},
        needed=("ESP32",),
    ),
    Case(
        SV,
        "how do we do standup now",
        best=("Daily/2026-10-05.md",),
        values={"Daily/2026-10-05.md": "Discord voice"},
        needed=("Discord voice",),
    ),
    Case(
        SV,
        "which driver works with CUDA 12.4",
        best=("Inbox/GPU setup on the Windows box.md",),
        values={"Inbox/GPU setup on the Windows box.md": "566.36"},
        needed=("566.36",),
    ),
    Case(
        SV,
        "what temperature does the agent run at",
        best=("Inbox/agent config decisions.md",),
        values={"Inbox/agent config decisions.md": "0.2"},
        needed=("0.2",),
    ),
    Case(
        SV,
        "how do I restart the agent after a crash",
        best=("Inbox/agent runbook.md",),
        values={"Inbox/agent runbook.md": "systemctl restart"},
        needed=("systemctl --user restart",),
    ),
    Case(
        SV,
        "how do I keep the ollama model loaded",
        best=("Inbox/ollama keep-alive.md",),
        values={"Inbox/ollama keep-alive.md": "OLLAMA_KEEP_ALIVE=-1"},
        needed=("OLLAMA_KEEP_ALIVE=-1",),
    ),
    Case(
        SV,
        "which embedding model scored best in my eval",
        best=("Inbox/model eval 2025-10.md",),
        values={"Inbox/model eval 2025-10.md": "nomic-embed-text"},
        needed=("nomic-embed-text",),
    ),
    Case(
        SV,
        "what is the suitcase size for the Tokyo trip",
        best=("Inbox/Reise nach Tokio 🗼.md",),
        values={"Inbox/Reise nach Tokio 🗼.md": "55 × 40 × 23"},
        needed=("55 × 40 × 23",),
    ),
    Case(
        SV,
        "what is Karl's phone number listed under",
        best=("People/Karl Neumann.md",),
        values={"People/Karl Neumann.md": "Karl Garten"},
        needed=("Karl Garten",),
    ),
    Case(
        SV,
        "recipe for beef wellington",
        nothing=True,
    ),
)


#: Questions written later (session 30), after the rules above were set, to try them on questions
#: they were not tuned on. Their first run found three misfires, fixed since (properties never
#: indexed, a Dataview query's source read as text, a snippet cutting off its own words), so
#: they are not held out any more: they keep those fixes. Each labelled as the cases above.
LATER: tuple[Case, ...] = (
    Case(
        OV,
        "what company does Maya work for",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "Northwind"},
        needed=("Northwind",),
    ),
    Case(
        OV,
        "what team is Maya on",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "Platform"},
        needed=("Platform",),
    ),
    Case(
        OV,
        "what model is my boiler",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "Vaillant"},
        needed=("Vaillant",),
    ),
    Case(
        OV,
        "when was the boiler installed",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "installed: 2019"},
        needed=("installed: 2019",),
    ),
    Case(
        OV,
        "what seat do I have on the Lisbon flight",
        best=("Projects/Lisbon Conference.md",),
        values={"Projects/Lisbon Conference.md": "14A"},
        needed=("14A",),
    ),
    Case(
        OV,
        "what is the budget for the Lisbon trip",
        best=("Projects/Lisbon Conference.md",),
        values={"Projects/Lisbon Conference.md": "1200"},
        needed=("1200",),
    ),
    Case(
        OV,
        "what time is my talk in Lisbon",
        best=("Projects/Lisbon Conference.md",),
        values={"Projects/Lisbon Conference.md": "Thursday 11:00"},
        needed=("Thursday 11:00",),
    ),
    Case(
        OV,
        "what do I drink on weekends",
        best=("Areas/Home/Coffee.md",),
        values={"Areas/Home/Coffee.md": "flat white"},
        needed=("flat white",),
    ),
    Case(
        OV,
        "what is growing in the south bed",
        best=("Areas/Home/Garden.md",),
        values={"Areas/Home/Garden.md": "tomatoes"},
        needed=("tomatoes",),
    ),
    Case(
        OV,
        "who wrote Thinking in Systems",
        best=("Reading/Thinking in Systems.md",),
        values={"Reading/Thinking in Systems.md": "Donella Meadows"},
        needed=("Donella Meadows",),
    ),
    Case(
        OV,
        "what did the physio tell me to stretch",
        best=("Areas/Health/Running log.md",),
        values={"Areas/Health/Running log.md": "IT band"},
        needed=("IT band",),
    ),
    Case(
        OV,
        "how long was my longest run",
        best=("Areas/Health/Running log.md",),
        values={"Areas/Health/Running log.md": "10 km"},
        needed=("10 km",),
    ),
    Case(
        OV,
        "when did I get new running shoes",
        best=("Areas/Health/Running log.md",),
        values={"Areas/Health/Running log.md": "new shoes"},
        needed=("new shoes",),
    ),
    Case(
        OV,
        "who is my dentist",
        best=("Areas/Health/Dentist.md",),
        values={"Areas/Health/Dentist.md": "Okafor"},
        needed=("Okafor",),
    ),
    Case(
        OV,
        "when is Project Atlas due",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "2026-12-15"},
        needed=("2026-12-15",),
    ),
    Case(
        OV,
        "who owns Project Atlas",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "owner: [[Maya Chen]]"},
        needed=("owner: [[Maya Chen]]",),
    ),
    Case(
        OV,
        "when is the Atlas cutover",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "Dec 1"},
        needed=("Dec 1",),
    ),
    Case(
        OV,
        "how do I watch the ingest rollout",
        best=("Projects/Atlas Runbook.md",),
        values={"Projects/Atlas Runbook.md": "rollout status"},
        needed=("rollout status",),
    ),
    Case(
        OV,
        "what does Jonas design",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "Atlas dashboard"},
        needed=("Atlas dashboard",),
    ),
    Case(
        OV,
        "when did I meet Jonas",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "2019-09-01"},
        needed=("2019-09-01",),
    ),
    Case(
        OV,
        "what kind of books does Mum like",
        best=("People/Mum.md",),
        values={"People/Mum.md": "crime novels"},
        needed=("crime novels",),
    ),
    Case(
        OV,
        "what tea does Mum drink",
        best=("People/Mum.md",),
        values={"People/Mum.md": "green tea"},
        needed=("green tea",),
    ),
    Case(
        OV,
        "what are leverage points",
        best=("Reading/Thinking in Systems.md",),
        values={"Reading/Thinking in Systems.md": "paradigms > goals"},
        needed=("paradigms > goals",),
    ),
    Case(
        OV,
        "how much did I sleep on November 12",
        best=("Daily Notes/2026-11-12.md",),
        values={"Daily Notes/2026-11-12.md": "sleep:: 8"},
        needed=("sleep:: 8",),
    ),
    Case(
        OV,
        "what was my mood on October 3",
        best=("Daily Notes/2026-10-03.md",),
        values={"Daily Notes/2026-10-03.md": "mood: great"},
        needed=("mood: great",),
    ),
    Case(
        OV,
        "what do I still need to do before the Lisbon trip",
        best=("Projects/Lisbon Conference.md",),
        values={"Projects/Lisbon Conference.md": "boarding passes"},
        needed=("boarding passes",),
    ),
    Case(
        OV,
        "what is left to do on Atlas",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "Load test"},
        needed=("Load test",),
    ),
    Case(
        OV,
        "what does a reinforcing loop do",
        best=("Reading/Thinking in Systems.md",),
        values={"Reading/Thinking in Systems.md": "amplify"},
        needed=("amplify",),
    ),
    Case(
        OV,
        "what average speed did I ride to the lake",
        best=("Daily Notes/2026-10-27.md",),
        values={"Daily Notes/2026-10-27.md": "24 km/h"},
        needed=("24 km/h",),
    ),
    Case(
        OV,
        "who is Pete",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "Plumber:: Pete"},
        needed=("Plumber:: Pete",),
    ),
    Case(
        OV,
        "when does the plumber come",
        best=(
            "Daily Notes/2026-10-01.md",
            "Daily Notes/2026-11-02.md",
        ),
        values={"Daily Notes/2026-10-01.md": "comes Thursday", "Daily Notes/2026-11-02.md": "comes Thursday"},
        needed=("comes Thursday",),
    ),
    Case(
        OV,
        "what went wrong with Maya's VPN key",
        best=(
            "Daily Notes/2026-10-05.md",
            "Daily Notes/2026-11-06.md",
        ),
        values={"Daily Notes/2026-10-05.md": "failed again", "Daily Notes/2026-11-06.md": "failed again"},
        needed=("failed again",),
    ),
    Case(
        OV,
        "does Jonas eat meat",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "vegetarian"},
        needed=("vegetarian",),
    ),
    Case(
        OV,
        "which Kubernetes tool do we deploy Atlas with",
        best=(
            "Projects/Project Atlas.md",
            "Projects/Atlas Runbook.md",
        ),
        values={"Projects/Project Atlas.md": "Helm", "Projects/Atlas Runbook.md": "Helm"},
        needed=(
            "Helm",
            "helm",
        ),
    ),
    Case(
        OV,
        "what chat channel for Atlas ops",
        best=("Projects/Atlas Runbook.md",),
        values={"Projects/Atlas Runbook.md": "#atlas-ops"},
        needed=("#atlas-ops",),
    ),
    Case(
        OV,
        "what is the grinder model",
        best=("Areas/Home/Coffee.md",),
        values={"Areas/Home/Coffee.md": "Niche Zero"},
        needed=("Niche Zero",),
    ),
    Case(
        OV,
        "what should I send Maya",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "cost spreadsheet"},
        needed=("cost spreadsheet",),
    ),
    Case(
        OV,
        "what was the green curry like",
        best=("Daily Notes/2026-10-21.md",),
        values={"Daily Notes/2026-10-21.md": "too sweet"},
        needed=("too sweet",),
    ),
    Case(
        OV,
        "what to keep in mind when updating Maya",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "async updates"},
        needed=("async updates",),
        turn="I'm writing Maya an update on Atlas, anything I should keep in mind?",
    ),
    Case(
        OV,
        "book dinner with Jonas",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "vegetarian"},
        needed=("vegetarian",),
        turn="Book a table for Jonas and me on Friday.",
    ),
    Case(
        OV,
        "what did the physio say about my knee",
        best=("Areas/Health/Running log.md",),
        values={"Areas/Health/Running log.md": "IT band"},
        needed=(
            "IT band",
            "no hills",
        ),
        turn="My knee hurts after the run, what did the physio say?",
    ),
    Case(
        OV,
        "who do I call about the boiler",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "07700 900123"},
        needed=("07700 900123",),
        turn="The boiler is making noise, who do I call?",
    ),
    Case(
        OV,
        "how do I take my coffee",
        best=("Areas/Home/Coffee.md",),
        values={"Areas/Home/Coffee.md": "double espresso"},
        needed=("double espresso",),
        turn="Make me a coffee like I usually have it.",
    ),
    Case(
        OV,
        "what should I read next",
        best=("Reading/Reading list.md",),
        values={"Reading/Reading list.md": "The Mom Test"},
        needed=(
            "The Mom Test",
            "Designing Data-Intensive",
        ),
        turn="What's a good book to read next?",
    ),
    Case(
        SV,
        "what CPU is in hearth",
        best=("Projects/Home Lab.md",),
        values={"Projects/Home Lab.md": "Ryzen 5 5600G"},
        needed=("Ryzen 5 5600G",),
    ),
    Case(
        SV,
        "how much power does the home server draw",
        best=("Projects/Home Lab.md",),
        values={"Projects/Home Lab.md": "48 W"},
        needed=("48 W",),
    ),
    Case(
        SV,
        "what is the ZFS pool called",
        best=("Projects/Home Lab.md",),
        values={"Projects/Home Lab.md": "`tank`"},
        needed=("`tank`",),
    ),
    Case(
        SV,
        "where do backups go",
        best=(
            "Projects/Home Lab.md",
            "Decisions/Restic for home lab backups.md",
        ),
        values={"Projects/Home Lab.md": "Backblaze B2", "Decisions/Restic for home lab backups.md": "Backblaze B2"},
        needed=(
            "Backblaze B2",
            "b2:hearth-restic",
        ),
    ),
    Case(
        SV,
        "when was the last restore test",
        best=(
            "Projects/Home Lab.md",
            "Decisions/Restic for home lab backups.md",
        ),
        values={"Projects/Home Lab.md": "2026-08-16", "Decisions/Restic for home lab backups.md": "2026-08-16"},
        needed=(
            "2026-08-16",
            "August 2026",
        ),
    ),
    Case(
        SV,
        "what UPS do I have",
        best=("Projects/Home Lab.md",),
        values={"Projects/Home Lab.md": "APC Back-UPS 700"},
        needed=("APC Back-UPS 700",),
    ),
    Case(
        SV,
        "which Obsidian plugins do I use",
        best=("Preferences/Editor.md",),
        values={"Preferences/Editor.md": "Dataview, Templater, Calendar"},
        needed=("Dataview, Templater, Calendar",),
    ),
    Case(
        SV,
        "how do I sync the vault",
        best=("Preferences/Editor.md",),
        values={"Preferences/Editor.md": "Syncthing"},
        needed=("Syncthing",),
    ),
    Case(
        SV,
        "what is Karl's plot number",
        best=("People/Karl Neumann.md",),
        values={"People/Karl Neumann.md": "plot 111"},
        needed=("plot 111",),
    ),
    Case(
        SV,
        "how old is Karl",
        best=("People/Karl Neumann.md",),
        values={"People/Karl Neumann.md": "electrician, 71"},
        needed=("electrician, 71",),
    ),
    Case(
        SV,
        "what does Karl's wife bake",
        best=("People/Karl Neumann.md",),
        values={"People/Karl Neumann.md": "plum cake"},
        needed=("plum cake",),
    ),
    Case(
        SV,
        "when is Karl at the allotment",
        best=("People/Karl Neumann.md",),
        values={"People/Karl Neumann.md": "from 7:00"},
        needed=("from 7:00",),
    ),
    Case(
        SV,
        "what do I owe Karl",
        best=("People/Karl Neumann.md",),
        values={"People/Karl Neumann.md": "shed roof"},
        needed=("shed roof",),
    ),
    Case(
        SV,
        "what context window does the agent use",
        best=("Inbox/agent config decisions.md",),
        values={"Inbox/agent config decisions.md": "8192"},
        needed=("8192",),
    ),
    Case(
        SV,
        "which model does the agent use",
        best=(
            "Inbox/agent config decisions.md",
            "Inbox/ollama keep-alive.md",
        ),
        values={"Inbox/agent config decisions.md": "llama3.1:8b", "Inbox/ollama keep-alive.md": "llama3.1:8b"},
        needed=("llama3.1:8b",),
    ),
    Case(
        SV,
        "what did the weekly review find",
        best=("Inbox/weekly review.md",),
        values={"Inbox/weekly review.md": "API key"},
        needed=("API key",),
    ),
    Case(
        SV,
        "what did Priya merge",
        best=("Daily/2026-10-05.md",),
        values={"Daily/2026-10-05.md": "preview environment proof of concept"},
        needed=("preview environment proof of concept",),
    ),
    Case(
        SV,
        "how much do preview environments cost",
        best=("Daily/2026-10-06.md",),
        values={"Daily/2026-10-06.md": "€420"},
        needed=("€420",),
    ),
    Case(
        SV,
        "what fonts were missing in the container",
        best=("Daily/2026-10-05.md",),
        values={"Daily/2026-10-05.md": "fonts-dejavu"},
        needed=("fonts-dejavu",),
    ),
    Case(
        SV,
        "how many slides did we caption with Grandma",
        best=("Daily/2026-10-05.md",),
        values={"Daily/2026-10-05.md": "35 slides"},
        needed=("35 slides",),
    ),
    Case(
        SV,
        "what did Karl and I measure",
        best=("Daily/2026-10-03.md",),
        values={"Daily/2026-10-03.md": "2.4 × 3.1"},
        needed=("2.4 × 3.1",),
    ),
    Case(
        SV,
        "who decided on Postgres for Ledger",
        best=("Decisions/Postgres for Ledger.md",),
        values={"Decisions/Postgres for Ledger.md": "Maya Okafor"},
        needed=("Maya Okafor",),
    ),
)


#: 13 questions asked first of the next stop's library (properties read with their note's title),
#: held out from it: the block held the fact for 8 of them with the last stop's library, 11 with it.
PROPERTIES: tuple[Case, ...] = (
    Case(
        OV,
        "what rating did I give Thinking in Systems",
        best=("Reading/Thinking in Systems.md",),
        values={"Reading/Thinking in Systems.md": "4"},
        needed=("rating: 4",),
    ),
    Case(
        OV,
        "when did I start reading Thinking in Systems",
        best=("Reading/Thinking in Systems.md",),
        values={"Reading/Thinking in Systems.md": "2026-10-09"},
        needed=("2026-10-09",),
    ),
    Case(
        OV,
        "what is Maya's role",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "Staff engineer"},
        needed=("Staff engineer",),
    ),
    Case(
        OV,
        "what is Jonas's role",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "designer"},
        needed=("designer", "designs the Atlas dashboard"),
    ),
    Case(
        OV,
        "what company is Jonas with",
        best=("People/Jonas Weber.md",),
        values={"People/Jonas Weber.md": "freelance"},
        needed=("freelance",),
    ),
    Case(
        SV,
        "when is Ines's birthday",
        best=("People/Ines Okafor.md", "Projects/Danube Bike Trip.md"),
        values={"People/Ines Okafor.md": "27 April", "Projects/Danube Bike Trip.md": "27 April"},
        needed=("1996-04-27", "birthday in April"),
    ),
    Case(
        SV,
        "what is Priya's role",
        best=("People/Priya Raman.md",),
        values={"People/Priya Raman.md": "SRE"},
        needed=("Site reliability engineer", "SRE at Brightwater"),
    ),
    Case(
        SV,
        "when did the Eris project start",
        best=("Projects/Eris.md",),
        values={"Projects/Eris.md": "2026-02-08"},
        needed=("2026-02-08",),
    ),
    Case(
        SV,
        "who owns the agent runbook",
        best=("Inbox/agent runbook.md",),
        values={"Inbox/agent runbook.md": "me"},
        needed=("owner: me",),
    ),
    Case(
        SV,
        "what version is the model eval",
        best=("Inbox/model eval 2025-10.md",),
        values={"Inbox/model eval 2025-10.md": "1.1"},
        needed=("version: 1.1",),
    ),
    Case(
        SV,
        "what does Tomás do",
        best=("People/Tomás Álvarez.md",),
        values={"People/Tomás Álvarez.md": "backend developer"},
        needed=("Backend developer",),
    ),
    Case(
        SV,
        "who were the deciders on Postgres",
        best=("Decisions/Postgres for Ledger.md",),
        values={"Decisions/Postgres for Ledger.md": "Maya Okafor, Jonas Weber, Tomás Álvarez, Priya Raman"},
        needed=("Maya Okafor",),
    ),
    Case(
        SV,
        "what does Priya run",
        best=("People/Priya Raman.md",),
        values={"People/Priya Raman.md": "Kubernetes clusters", "Decisions/Postgres for Ledger.md": "?"},
        needed=("Kubernetes clusters", "Hetzner"),
    ),
)


#: 13 questions asked of the library after the property rule, written as an owner would ask them and
#: never tuned on. Two of them (the downside of local models, the GPT-4 idea) showed that a faded
#: decision left the block empty though it was the first hit: the first-hit cue came from those two.
ASKED: tuple[Case, ...] = (
    Case(
        OV,
        "how far did I run on November 4",
        best=(D + "2026-11-04.md",),
        values={D + "2026-11-04.md": "5k"},
        needed=("Ran 5k",),
    ),
    Case(
        OV,
        "did anything hurt after my run",
        best=(D + "2026-11-04.md", D + "2026-10-03.md", "Areas/Health/Running log.md"),
        values={
            D + "2026-11-04.md": "left knee",
            D + "2026-10-03.md": "left knee",
            "Areas/Health/Running log.md": "knee",
        },
        needed=("knee slightly sore",),
    ),
    Case(
        OV,
        "when did I last read Thinking in Systems",
        best=(D + "2026-11-10.md",),
        values={D + "2026-11-10.md": "2026-11-10", D + "2026-10-09.md": "2026-10-09"},
        needed=("2026-11-10",),
    ),
    Case(
        OV,
        "what does Maya need from me",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "the Atlas cost spreadsheet"},
        needed=("Atlas cost spreadsheet", "about the Atlas timeline"),
    ),
    Case(
        OV,
        "when should I water the plants next",
        best=(D + "2026-11-12.md",),
        values={D + "2026-11-12.md": "2026-11-13"},
        needed=("2026-11-13",),
    ),
    Case(
        OV,
        "My knee hurts after running, when did that start?",
        best=("Areas/Health/Running log.md", D + "2026-10-03.md"),
        values={"Areas/Health/Running log.md": "2026-10-03", D + "2026-10-03.md": "2026-10-03"},
        needed=("2026-10-03",),
    ),
    Case(
        OV,
        "what do I still owe Maya",
        best=("People/Maya Chen.md",),
        values={"People/Maya Chen.md": "the Atlas cost spreadsheet"},
        needed=("Atlas cost spreadsheet", "about the Atlas timeline"),
        turn="Remind me what I still owe Maya.",
    ),
    Case(
        SV,
        "why does Eris not use hosted APIs",
        best=("Decisions/Eris runs local models only.md", "Projects/Eris.md"),
        values={"Decisions/Eris runs local models only.md": "?", "Projects/Eris.md": "?"},
        needed=("anyone else's computer", "opaque", "stopped trusting"),
    ),
    Case(
        SV,
        "how much does it cost to run the 14B model",
        best=("Decisions/Eris runs local models only.md",),
        values={"Decisions/Eris runs local models only.md": "€6 a month"},
        needed=("€6 a month",),
    ),
    Case(
        SV,
        "how often do I check for new models",
        best=("Decisions/Eris runs local models only.md",),
        values={"Decisions/Eris runs local models only.md": "once a month"},
        needed=("once a month",),
    ),
    Case(
        SV,
        "can Eris browse the web",
        best=("Decisions/Eris runs local models only.md",),
        values={"Decisions/Eris runs local models only.md": "no"},
        needed=("No web browsing",),
    ),
    Case(
        SV,
        "what is the downside of running models locally",
        best=("Decisions/Eris runs local models only.md",),
        values={"Decisions/Eris runs local models only.md": "?"},
        needed=("Weaker answers", "No web browsing", "Updates to models are my job"),
    ),
    Case(
        SV,
        "should Eris call GPT-4 for the hard questions",
        best=("Decisions/Eris runs local models only.md",),
        values={"Decisions/Eris runs local models only.md": "no"},
        needed=("no hosted APIs", "run it by hand"),
        turn="I'm thinking of letting Eris call GPT-4 for the hard questions. Good idea?",
    ),
)


#: 7 questions that name a day, asked of the library while trying the person's vault as its owner
#: would ("what did I do on the weekend of October 17" found the day's `[[prev]] · [[next]]` line
#: and an empty block): they are where the day rule (search/days.py) came from, so they are not
#: held out; LoCoMo's 140 questions that name a day are (bench locomo).
DAYS: tuple[Case, ...] = (
    Case(
        OV,
        "what did I do on the weekend of October 17",
        best=(D + "2026-10-17.md",),
        values={D + "2026-10-17.md": "garlic"},
        needed=("garlic",),
    ),
    Case(
        OV,
        "what did I do on October 21",
        best=(D + "2026-10-21.md",),
        values={D + "2026-10-21.md": "Thai place"},
        needed=("Thai place",),
        turn="Remind me, what did I get up to on October 21?",
    ),
    Case(
        OV,
        "what happened on November 8",
        best=(D + "2026-11-08.md",),
        values={D + "2026-11-08.md": "Helix"},
        needed=("Helix",),
    ),
    Case(
        OV,
        "what did I do on 2026-10-27",
        best=(D + "2026-10-27.md",),
        values={D + "2026-10-27.md": "lake"},
        needed=("Cycled to the lake",),
    ),
    Case(
        OV,
        "what was going on around October 11",
        best=(D + "2026-10-11.md",),
        values={D + "2026-10-11.md": "dentist moved"},
        needed=("Dentist appointment moved",),
    ),
    Case(
        SV,
        "what did I do on October 3",
        best=("Daily/2026-10-03.md",),
        values={"Daily/2026-10-03.md": "allotment"},
        needed=("Allotment",),
    ),
    Case(
        SV,
        "what happened on 8 October",
        best=("Daily/2026-10-08.md",),
        values={"Daily/2026-10-08.md": "resilver"},
        needed=("resilver",),
        turn="What happened on 8 October? I've lost track.",
    ),
)


@dataclass(frozen=True)
class Remembered:
    """A memory an agent might commit to the person's vault, and the notes it really contradicts
    (a changed value of what they state): what `remember` should flag, and nothing else."""

    vault: str
    text: str
    conflicts: frozenset[str] = frozenset()


#: 34 questions asked of a clone (file times now) as the owner would, at stop 35, after the rule
#: that a repeated statement counts from its first note and before anything else was changed, and
#: labelled after they were asked: held out, nothing is tuned on them.
OWNER: tuple[Case, ...] = (
    Case(
        OV,
        "what editor am I using for Rust",
        best=(D + "2026-10-07.md", D + "2026-11-08.md"),
        values={D + "2026-10-07.md": "Helix", D + "2026-11-08.md": "Helix"},
        needed=("Helix",),
    ),
    Case(
        OV,
        "when did my knee start hurting",
        best=("Areas/Health/Running log.md", D + "2026-10-03.md"),
        values={"Areas/Health/Running log.md": "2026-10-03", D + "2026-10-03.md": "2026-10-03"},
        needed=("2026-10-03",),
    ),
    Case(
        OV,
        "what's the latest on the Atlas migration",
        best=("Projects/Project Atlas.md", D + "2026-10-19.md"),
        values={"Projects/Project Atlas.md": "70%", D + "2026-10-19.md": "70%"},
        needed=("70%",),
    ),
    Case(
        OV,
        "is the dentist appointment still on the 14th",
        best=("Areas/Health/Dentist.md", D + "2026-10-11.md", D + "2026-11-12.md"),
        values={
            "Areas/Health/Dentist.md": "14 Nov 9:30",
            D + "2026-10-11.md": "14 Nov 9:30",
            D + "2026-11-12.md": "14 Nov 9:30",
        },
        needed=("14 November", "November 14"),
    ),
    Case(
        OV,
        "what time is standup",
        best=(D + "2026-10-15.md",),
        values={D + "2026-10-15.md": "9:45"},
        needed=("9:45",),
    ),
    Case(
        OV,
        "when did the plumber come",
        best=(D + "2026-10-01.md", D + "2026-11-02.md"),
        values={D + "2026-10-01.md": "Thursday", D + "2026-11-02.md": "Thursday"},
        needed=("he comes Thursday",),
    ),
    Case(
        OV,
        "what did Maya say about the VPN",
        best=(D + "2026-10-05.md", D + "2026-11-06.md"),
        values={D + "2026-10-05.md": "key failed", D + "2026-11-06.md": "key failed"},
        needed=("VPN hardware key failed",),
    ),
    Case(
        OV,
        "how's my running going",
        best=("Areas/Health/Running log.md",),
        values={"Areas/Health/Running log.md": "10 km"},
        needed=("10 km",),
    ),
    Case(
        OV,
        "what's my resting heart rate",
        nothing=True,
    ),
    Case(
        OV,
        "what do I need to buy for the car",
        best=(D + "2026-10-31.md",),
        values={D + "2026-10-31.md": "winter tyres"},
        needed=("winter tyres",),
    ),
    Case(
        OV,
        "which beans am I using",
        best=("Areas/Home/Coffee.md", D + "2026-10-13.md"),
        values={"Areas/Home/Coffee.md": "Ethiopian", D + "2026-10-13.md": "Ethiopian"},
        needed=("Ethiopian",),
    ),
    Case(
        OV,
        "when is the Atlas cutover review",
        best=("Projects/Project Atlas.md",),
        values={"Projects/Project Atlas.md": "slips to January"},
        needed=("cutover slips to January",),
    ),
    Case(
        OV,
        "what is the boiler service interval",
        best=("Areas/Home/Boiler.md",),
        values={"Areas/Home/Boiler.md": "annual"},
        needed=("annual service",),
    ),
    Case(
        OV,
        "did I reply to Maya yet",
        best=(D + "2026-11-12.md", "People/Maya Chen.md"),
        values={D + "2026-11-12.md": "not yet"},
        needed=("Reply to [[Maya Chen]]",),
    ),
    Case(
        SV,
        "what is the current staging URL",
        best=("Decisions/Move staging URL.md",),
        values={"Decisions/Move staging URL.md": "staging-eu"},
        needed=("staging-eu.brightwater.example",),
    ),
    Case(
        SV,
        "where is staging now",
        best=("Decisions/Move staging URL.md",),
        values={"Decisions/Move staging URL.md": "staging-eu"},
        needed=("staging-eu.brightwater.example",),
    ),
    Case(
        SV,
        "who covers Jonas's code reviews",
        best=("Memory/jonas-parental-leave.md", "Daily/2026-10-09.md"),
        values={"Memory/jonas-parental-leave.md": "Priya", "Daily/2026-10-09.md": "Priya"},
        needed=("Priya takes",),
    ),
    Case(
        SV,
        "who runs the sprint reviews now",
        best=("Memory/jonas-parental-leave.md", "Daily/2026-10-09.md"),
        values={"Memory/jonas-parental-leave.md": "Maya", "Daily/2026-10-09.md": "Maya"},
        needed=("Maya runs the sprint reviews", "handed over the sprint reviews to me"),
    ),
    Case(
        SV,
        "how did the ZFS resilver go",
        best=("Daily/2026-10-09.md",),
        values={"Daily/2026-10-08.md": "started, 9 hours", "Daily/2026-10-09.md": "finished, no errors"},
        needed=("Resilver finished overnight",),
    ),
    Case(
        SV,
        "what is the latest on the home server disk",
        best=("Daily/2026-10-09.md",),
        values={
            "Projects/Home Lab.md": "replace the oldest WD Red",
            "Daily/2026-10-02.md": "replacement ordered",
            "Daily/2026-10-08.md": "swapped, resilver started",
            "Daily/2026-10-09.md": "resilver finished",
        },
        needed=("Resilver finished overnight",),
    ),
    Case(
        SV,
        "which disk failed in hearth",
        best=("Projects/Home Lab.md", "Daily/2026-10-02.md"),
        values={"Projects/Home Lab.md": "WD Red", "Daily/2026-10-02.md": "WD Red"},
        needed=("WD Red",),
    ),
    Case(
        SV,
        "where did we book dinner for Ines",
        best=("Daily/2026-10-09.md",),
        values={"Daily/2026-10-09.md": "the Ethiopian place"},
        needed=("Ethiopian place",),
    ),
    Case(
        SV,
        "how is Ines's knee",
        best=("Daily/2026-10-03.md",),
        values={"People/Ines Okafor.md": "bad, patellar tendon", "Daily/2026-10-03.md": "better"},
        needed=("Her knee is better",),
    ),
    Case(
        SV,
        "how many slides are left to scan",
        best=("Daily/2026-10-08.md",),
        values={"Projects/Photo Archive.md": "150 of 500", "Daily/2026-10-08.md": "255 of 500"},
        needed=("255 of ~500",),
    ),
    Case(
        SV,
        "how many slides have I scanned from box 3",
        best=("Daily/2026-10-08.md",),
        values={
            "Projects/Photo Archive.md": "150 of 500",
            "Daily/2026-10-03.md": "60 more scanned",
            "Daily/2026-10-08.md": "255 of 500",
        },
        needed=("255",),
    ),
    Case(
        SV,
        "when will the slides be finished",
        best=("Projects/Photo Archive.md",),
        values={"Projects/Photo Archive.md": "by Christmas"},
        needed=("by Christmas",),
    ),
    Case(
        SV,
        "what did Grandma remember about the wedding",
        best=("Daily/2026-10-05.md",),
        values={"Daily/2026-10-05.md": "everyone but the groom's brother"},
        needed=("groom's brother",),
    ),
    Case(
        SV,
        "what is the team chat tool",
        best=("Decisions/Switched team chat to Discord.md",),
        values={"Decisions/Switched team chat to Discord.md": "Discord"},
        needed=("Discord",),
    ),
    Case(
        SV,
        "when did we move standup to Discord",
        best=("Daily/2026-10-05.md",),
        values={"Daily/2026-10-05.md": "2026-10-05"},
        needed=("Standup moved to Discord voice",),
    ),
    Case(
        SV,
        "how did the talk abstract go",
        best=("Daily/2026-10-08.md",),
        values={"Daily/2026-10-08.md": "submitted, accepted unofficially"},
        needed=("submitted",),
    ),
    Case(
        SV,
        "what is the status of the preview environments",
        best=("Daily/2026-10-06.md", "Daily/2026-10-05.md"),
        values={"Daily/2026-10-05.md": "?", "Daily/2026-10-06.md": "?"},
        needed=("€90", "approved option 2"),
    ),
    Case(
        SV,
        "what does Eris get wrong",
        best=("Projects/Eris.md", "Daily/2026-10-05.md"),
        values={"Projects/Eris.md": "stale", "Daily/2026-10-05.md": "stale"},
        needed=("Stale facts win", "stale memory"),
    ),
    Case(
        SV,
        "how many questions on my list does Eris get right",
        best=("Daily/2026-10-09.md",),
        values={"Projects/Eris.md": "16/20", "Daily/2026-10-09.md": "17/20"},
        needed=("17/20",),
    ),
    Case(
        SV,
        "what does Eris use for search",
        best=("Projects/Eris.md",),
        values={"Projects/Eris.md": "embeddings plus BM25"},
        needed=("embeddings plus BM25",),
    ),
)


#: 14 memories written for the person's vault after `remember` flagged five daily notes' task line
#: "- [ ] Reply to Maya Chen about the Atlas timeline" as conflicting with "Maya asked to move the
#: Atlas cutover review to Thursday 10:00": 8 change what a note says, 6 are new facts. A daily
#: note's log line is not among the notes a memory changes: "08:10 Dentist appointment moved to
#: November 14" says what happened that morning, and stays true when the appointment moves again
#: (conflicts.check: a dated record can repeat a memory, never conflict with it; issue 40). The
#: three daily notes first labelled here as conflicts (the dentist's two, the editor's one) were
#: relabelled when that rule came in, with Dentist.md and Project Atlas.md still to be flagged.
REMEMBERED: tuple[Remembered, ...] = (
    Remembered(OV, "Maya now prefers a quick call over written updates.", frozenset({"People/Maya Chen.md"})),
    Remembered(OV, "The plumber Pete has a new number: 07700 900456.", frozenset({"Areas/Home/Boiler.md"})),
    Remembered(OV, "Boiler pressure should now sit between 1.2 and 1.8 bar.", frozenset({"Areas/Home/Boiler.md"})),
    Remembered(
        OV,
        "The dentist appointment moved again, to 21 November at 10:00.",
        frozenset({"Areas/Health/Dentist.md"}),
    ),
    Remembered(OV, "We switched the Atlas deploys from Helm to Kustomize.", frozenset({"Projects/Project Atlas.md"})),
    Remembered(OV, "I'm back to Vim for the Rust project."),
    Remembered(OV, "Jonas eats fish now, he is no longer vegetarian.", frozenset({"People/Jonas Weber.md"})),
    Remembered(OV, "The Lisbon hotel is now the Memmo Alfama.", frozenset({"Projects/Lisbon Conference.md"})),
    Remembered(OV, "Maya asked to move the Atlas cutover review to Thursday 10:00."),
    Remembered(OV, "Jonas recommended the bakery on Elm Street."),
    Remembered(OV, "Mum wants the Ann Cleeves novel in hardback."),
    Remembered(OV, "The garden shed needs a new padlock."),
    Remembered(OV, "Booked a table at the Thai place for Friday with Jonas."),
    Remembered(OV, "Standup stays at 9:45 on Mondays, now also on Thursdays."),
    # three more, on sample_vault/, tried after the rule and not tuned on
    Remembered(SV, "I switched my editor to Helix.", frozenset({"Preferences/Editor.md"})),
    Remembered(SV, "The meetup talk moved to 19 November.", frozenset({"Projects/Meetup Talk.md"})),
    Remembered(SV, "Karl lent me his ladder for the shed roof."),
)


def remembered(vault: str) -> list[Remembered]:
    return [m for m in REMEMBERED if m.vault == vault]


def vault_sources(repo: Path) -> dict[str, Path]:
    """Where each vault lives (read in place; the runner copies them)."""
    return {OBSIDIAN: repo.parent / "shared" / "obsidian-vault", SAMPLE: repo / "sample_vault"}


def cases(vault: str | None = None) -> list[Case]:
    return [c for c in (*CASES, *LATER, *PROPERTIES, *ASKED, *DAYS, *OWNER) if vault is None or c.vault == vault]


#: How a copy's file times are set: as the source had them; all now (what `git clone`, `cp -r`
#: and a sync download give); reversed, a second apart (the last file by name is the oldest).
COPIES = ("kept", "now", "reversed")


def copy_vault(src: Path, dst: Path, mtimes: str) -> Path:
    """A writable copy of `src` at `dst` (replaced if there) with its file times set `mtimes`."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, copy_function=shutil.copy2)  # copy2: the source's times, for "kept"
    files = sorted(p for p in dst.rglob("*") if p.is_file())
    for p in [dst, *dst.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)  # the shared source is read-only
    if mtimes == "now":
        now = time.time()
        for p in files:
            os.utime(p, (now, now))
        # A person asks after the clone has finished: within the quiet window of a file's last
        # write nothing is written into it (an editor may be saving), so a question asked in the
        # same second would lose its rehearsals, and later strengths would differ from the copies'.
        time.sleep(max(0.0, now + bookkeeping_quiet(QUIET_SECONDS) + 0.05 - time.time()))
    elif mtimes == "reversed":
        base = time.time() - 10 * len(files)
        for i, p in enumerate(reversed(files)):
            os.utime(p, (base + i, base + i))
    elif mtimes != "kept":
        raise ValueError(f"mtimes must be one of {COPIES}, not {mtimes!r}")
    return dst


__all__ = ["CASES", "COPIES", "NOW", "OBSIDIAN", "SAMPLE", "Case", "cases", "copy_vault", "vault_sources"]
