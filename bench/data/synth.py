"""Synthetic vault generator for scale and reconcile benchmarks (deterministic for a seed).

Notes have realistic lengths (lognormal around 250 words, about 1% over 1,000), frontmatter
in several shapes (tags, dates, node_id present or absent, sometimes none at all), headings,
[[wikilinks]] to other generated notes and inline #tags. Text is drawn from a built-in word
list, so it is varied but meaningless; use it to measure speed, not relevance.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..harness import sync_vault

WORDS = """
account action activity address advice agenda agreement alarm algorithm analysis answer anxiety apple
approach archive argument arrival article aspect assistant attempt attention audience author autumn
backlog balance bandwidth banner baseline basket battery beach benchmark bicycle birthday blanket
blueprint board border bottle boundary branch breakfast bridge briefing budget buffer bug building
cabinet cache calendar camera campaign candidate capacity caption carbon career carpet castle catalog
ceiling cellar century chapter charge checklist chemistry chorus circuit citation client climate
cluster coast code coffee colleague column comment committee community compass compiler concept
concert conference config conflict contract contrast cookie corridor cottage counter country courage
cousin coverage craft credit crystal culture cupboard currency customer cycle dashboard database
deadline debate decision default delivery demand deployment design desk detail device diagram dialogue
diary diet dinner direction discount discovery dispute distance document domain draft drawer dream
driver editor education effect effort election element elevator email emotion empire encoder energy
engine entry episode equation error estate evening event evidence exam exchange exercise experiment
expert export fabric factor failure family feature feedback festival fiction field figure filter
finance fixture flight floor flower folder forest format fortune forum foundation fraction framework
friend function funnel gallery garden gateway gesture glacier goal government gradient grammar graph
gravity guest guide habit hallway hammer handbook harbor harvest headline health heap heart helmet
highway history holiday horizon hospital household hypothesis idea image impact import incident
index inflation initiative insight instance instinct interest interview inventory invoice island
issue journal journey judgment kernel kettle keyboard kitchen knowledge label ladder lake landscape
language laptop lattice launch lawyer layer leader lecture ledger lesson letter library license
lighthouse limit list literature lobby logic loop machine magazine manager manual margin market
meadow measure medicine meeting memory mentor message metric migration milestone mirror mission
model module moment monitor morning mountain museum narrative network notebook novel number object
ocean office opinion orbit orchard outline output owner package painting palace panel paper parade
parser partner passage patch pattern payment pencil people pepper period permit picture pipeline
planet platform playlist pocket poem policy portfolio position poster practice prayer premium
priority problem process product profile program project promise prompt proposal protocol puzzle
quality quarter query question queue rabbit railway rainbow reader recipe record reference region
release report request research resource response review reward rhythm ribbon river roadmap rocket
routine runtime sandbox satellite schedule schema science screen script season sector segment seminar
sensor sequence server session shelter signal sketch snapshot society software solution source spring
sprint stadium standard station statement storage strategy stream street student studio subject
summary summit supply survey symbol syntax system table target teacher template tenant terminal
theory thread ticket timeline token topic tower traffic trail training transfer travel treaty trigger
tunnel tutorial umbrella uniform update upgrade valley value vendor version village vision volume
voyage wallet warehouse weather website weekend window winter workflow workshop yard yield zone
""".split()

ADJECTIVES = """
quick quiet bright careful early late simple complex hidden open private public shared broken stable
fragile modern ancient local remote daily weekly urgent minor major narrow wide gentle rough clear
vague steady rapid slow warm cold fresh stale green golden silver hollow solid digital manual
""".split()

VERBS = """
builds checks moves breaks fixes covers holds tracks links sends stores finds keeps opens closes
shapes guides feeds reads writes plans tests ships merges splits drafts reviews measures explains
""".split()

FOLDERS = ("", "Projects", "Areas", "Resources", "Journal/2023", "Journal/2024", "People", "Archive/Old notes")
START = dt.date(2022, 1, 1)


@dataclass(frozen=True)
class SynthVault:
    root: Path
    paths: list[str]  # vault-relative
    titles: list[str]
    words: int


def _sentence(rng: random.Random, n: int) -> str:
    parts = []
    for _ in range(n):
        r = rng.random()
        parts.append(rng.choice(ADJECTIVES if r < 0.18 else VERBS if r < 0.3 else WORDS))
    s = " ".join(parts)
    return s[0].upper() + s[1:] + rng.choice((".", ".", ".", ".", "?", "!"))


def _titles(rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        words = [rng.choice(ADJECTIVES)] if rng.random() < 0.4 else []
        words += rng.sample(WORDS, rng.randint(1, 3))
        title = " ".join(words).capitalize()
        if title.lower() not in seen:
            seen.add(title.lower())
            out.append(title)
    return out


def note_length(rng: random.Random) -> int:
    """Words in a note: lognormal with median 250 (sigma 0.6 puts ~1% above 1,000)."""
    return max(15, min(6000, int(rng.lognormvariate(math.log(250), 0.6))))


def _frontmatter(rng: random.Random, i: int, tags: list[str]) -> str:
    if rng.random() < 0.08:
        return ""  # a plain note with no frontmatter
    created = START + dt.timedelta(days=rng.randint(0, 900))
    lines = ["---"]
    if rng.random() < 0.6:
        lines.append(f"node_id: {uuid.UUID(int=rng.getrandbits(128), version=4)}")
    lines.append(f"created: {created.isoformat()}")
    if rng.random() < 0.3:
        updated = created + dt.timedelta(days=rng.randint(1, 200))
        lines.append(f"updated: {updated.isoformat()}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00+00:00")
    if tags:
        block = rng.random() < 0.5
        lines.append("tags:" + "".join(f"\n  - {t}" for t in tags) if block else f"tags: [{', '.join(tags)}]")
    if rng.random() < 0.15:
        lines.append(f'aliases: ["note {i}"]')
    if rng.random() < 0.1:
        lines.append(f"status: {rng.choice(('draft', 'done', 'yes', 'no', 'on-hold'))}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _body(rng: random.Random, words: int, titles: list[str], self_index: int) -> str:
    out: list[str] = []
    written = 0
    since_heading = 0
    while written < words:
        if since_heading >= rng.randint(2, 5):
            out.append(f"## {_sentence(rng, rng.randint(1, 4)).rstrip('.?!')}")
            since_heading = 0
        sentences = []
        for _ in range(rng.randint(2, 6)):
            if written >= words:
                break
            n = rng.randint(6, 22)
            s = _sentence(rng, n)
            if rng.random() < 0.12:
                target = rng.randrange(len(titles))
                if target != self_index:
                    shape = rng.random()
                    link = titles[target]
                    if shape < 0.15:
                        link += f"|{rng.choice(WORDS)}"
                    elif shape < 0.25:
                        link += f"#{rng.choice(WORDS).capitalize()}"
                    s = s[:-1] + f" (see [[{link}]])" + s[-1]
            if rng.random() < 0.05:
                s += f" #{rng.choice(WORDS)}"
            sentences.append(s)
            written += n
        out.append(" ".join(sentences))
        if rng.random() < 0.1 and written < words:
            items = [_sentence(rng, rng.randint(3, 9)) for _ in range(rng.randint(2, 5))]
            written += sum(len(i.split()) for i in items)
            out.append("\n".join(f"- {i}" for i in items))
        since_heading += 1
    return "\n\n".join(out)


def generate_synth(n: int, seed: int = 42) -> tuple[dict[str, str], list[str]]:
    """{vault-relative path: text} for n notes, plus their titles; pure and deterministic."""
    rng = random.Random(seed)
    titles = _titles(rng, n)
    files: dict[str, str] = {}
    for i, title in enumerate(titles):
        folder = rng.choice(FOLDERS)
        rel = f"{folder}/{title}.md" if folder else f"{title}.md"
        tags = rng.sample(WORDS, rng.randint(0, 3))
        fm = _frontmatter(rng, i, tags)
        body = _body(rng, note_length(rng), titles, i)
        heading = f"# {title}\n\n" if rng.random() < 0.7 else ""
        files[rel] = f"{fm}{heading}{body}\n"
    return files, titles


def build_synth(root: Path, n: int, seed: int = 42) -> SynthVault:
    files, titles = generate_synth(n, seed)
    sync_vault(root, files)
    words = sum(len(t.split()) for t in files.values())
    return SynthVault(root=root, paths=sorted(files), titles=titles, words=words)


def edit_notes(root: Path, fraction: float = 0.01, seed: int = 1) -> list[str]:
    """Edit `fraction` of the vault's notes in place (at least one); returns their relative paths.

    Half get a paragraph appended, half get their last paragraph rewritten, so the change
    touches one chunk of a long note rather than the whole note.
    """
    rng = random.Random(seed)
    paths = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    if not paths:
        return []
    chosen = rng.sample(paths, max(1, round(len(paths) * fraction)))
    for rel in chosen:
        path = root / rel
        text = path.read_text(encoding="utf-8")
        new_para = " ".join(_sentence(rng, rng.randint(6, 18)) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.5:
            text = text.rstrip("\n") + f"\n\n{new_para}\n"
        else:
            head, sep, _last = text.rstrip("\n").rpartition("\n\n")
            text = f"{head}{sep}{new_para}\n" if sep else text.rstrip("\n") + f"\n\n{new_para}\n"
        path.write_text(text, encoding="utf-8")
    return chosen


def sample_queries(n: int, seed: int = 3) -> list[str]:
    """Short keyword queries drawn from the same vocabulary (for latency, not relevance)."""
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, rng.randint(2, 6))) for _ in range(n)]
