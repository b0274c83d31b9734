"""A small generated benchmark of facts that change over time (our own, deterministic).

About 40 subjects (a preference, a URL, a tool, a person's role, a meeting day, a server
name, ...), each stated 2-4 times months apart in separate notes, worded differently each
time, among distractor notes that mention the same things without the fact. Each subject
has one query whose true answer is the newest statement. A good memory retrieves all the
statements (the history matters) and ranks the newest first.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from pathlib import Path

from ..harness import iso, sync_vault


@dataclass(frozen=True)
class Kind:
    name: str
    entities: tuple[str, ...]
    values: tuple[str, ...] | dict[str, tuple[str, ...]]  # per-entity pools when a dict
    statements: tuple[str, ...]  # {e} entity, {v} value
    changes: tuple[str, ...]  # later statements only: {o} the previous value
    query: str
    distractors: tuple[str, ...]
    title: str  # note title, {e}


KINDS: tuple[Kind, ...] = (
    Kind(
        "coffee",
        ("Alice Chen", "Marco Rossi", "Priya Raman", "Tom Becker"),
        (
            "oat milk flat white",
            "double espresso",
            "cold brew, no sugar",
            "cortado",
            "black americano",
            "chai latte",
            "iced mocha",
            "decaf cappuccino",
        ),
        (
            "{e} orders a {v} these days.",
            "Note for coffee runs: {e} drinks a {v}.",
            "{e} told me their usual coffee is a {v}.",
            "Getting drinks for the team: {e} wants a {v}.",
            "Remember {e} likes a {v} in the morning.",
        ),
        ("{e} gave up the {o} and drinks a {v} now.", "{e} switched from a {o} to a {v}."),
        "What coffee does {e} drink?",
        ("Had coffee with {e} and talked about the offsite.", "{e} brought pastries to the standup."),
        "Coffee with {e}",
    ),
    Kind(
        "url",
        ("staging dashboard", "status page", "API documentation", "metrics board"),
        (
            "https://dash.staging.acme-internal.net",
            "https://status.acme.io",
            "https://docs.acme.dev/api/v2",
            "https://grafana.ops.acme.io/d/main",
            "https://acme.atlassian.net/wiki/status",
            "https://internal.acme.io/metrics",
            "https://ops-portal.acme.cloud/board",
            "https://acme.statuspage.io",
        ),
        (
            "The {e} lives at {v}.",
            "Bookmark: {e} -> {v}",
            "If you need the {e}, go to {v}.",
            "Link for the {e}: {v}",
            "Sharing the {e} address with the new hires: {v}",
        ),
        ("The {e} moved off {o}; it is served from {v} now.", "Updated link: the {e} is at {v} (not {o} any more)."),
        "What is the URL of the {e}?",
        ("The {e} was slow to load during the incident.", "Someone asked whether the {e} needs a login."),
        "{e} link",
    ),
    Kind(
        "tool",
        ("continuous integration", "issue tracking", "on-call paging", "infrastructure provisioning"),
        {
            "continuous integration": ("Jenkins", "GitHub Actions", "Buildkite", "CircleCI", "GitLab CI"),
            "issue tracking": ("Jira", "Linear", "GitHub Issues", "YouTrack", "Shortcut"),
            "on-call paging": ("PagerDuty", "Opsgenie", "incident.io", "Grafana OnCall", "Splunk On-Call"),
            "infrastructure provisioning": ("Terraform", "Pulumi", "Ansible", "CloudFormation", "OpenTofu"),
        },
        (
            "We use {v} for {e}.",
            "Decision: {e} runs on {v}.",
            "The team settled on {v} for {e}.",
            "For {e} the tool of choice is {v}.",
            "Onboarding doc says {e} is handled with {v}.",
        ),
        ("We migrated {e} from {o} to {v}.", "{e}: {o} is retired, everything goes through {v} now."),
        "Which tool do we use for {e}?",
        ("Long discussion about {e} costs; no decision yet.", "The {e} setup needs better documentation."),
        "Tooling: {e}",
    ),
    Kind(
        "role",
        ("Dana Okafor", "Lukas Meyer", "Sofia Alvarez", "Kenji Watanabe"),
        (
            "backend engineer",
            "tech lead for payments",
            "engineering manager",
            "staff engineer",
            "product manager for search",
            "head of platform",
            "site reliability engineer",
            "data scientist",
        ),
        (
            "{e} works as a {v}.",
            "{e} has the role of {v}.",
            "Org chart: {e}, {v}.",
            "Met {e} ({v}) to go over the roadmap.",
            "For questions in that area ask {e}, our {v}.",
        ),
        ("{e} moved from {o} to {v}.", "Org update: {e} is no longer {o}; they are {v} now."),
        "What is {e}'s role?",
        ("{e} is out on holiday next week.", "Lunch with {e}; we talked about hiking trails."),
        "{e}",
    ),
    Kind(
        "meeting",
        ("design review", "sprint planning", "team retro", "architecture sync"),
        (
            "Monday at 10:00",
            "Tuesday at 14:00",
            "Wednesday at 09:30",
            "Thursday at 11:00",
            "Friday at 15:00",
            "Tuesday at 16:30",
            "Thursday at 09:00",
        ),
        (
            "The {e} is on {v}.",
            "Calendar: {e} every {v}.",
            "Reminder that the {e} happens {v}.",
            "We hold the {e} on {v}.",
            "Booked the big room for the {e}, {v}.",
        ),
        ("The {e} moved from {o} to {v}.", "Rescheduled: {e} is now {v} instead of {o}."),
        "When is the {e} meeting?",
        ("The {e} ran long; we only got through half the agenda.", "Action items from the {e} are in the tracker."),
        "{e} meeting",
    ),
    Kind(
        "server",
        ("primary database", "build server", "log collector", "VPN gateway"),
        ("db-prod-01", "pg-main-2", "orion-07", "atlas-3", "vega-db-1", "lyra-12", "kestrel-4", "nimbus-9"),
        (
            "The {e} runs on host {v}.",
            "Inventory: {e} = {v}.",
            "SSH into {v} to reach the {e}.",
            "The {e} is deployed on {v}.",
            "Runbook: the {e} sits on the machine called {v}.",
        ),
        ("Migrated the {e} from {o} to {v}.", "The {e} left {o}; its new host is {v}."),
        "Which server hosts the {e}?",
        ("Disk alert on the {e} cleared by itself.", "Patched the {e} during the maintenance window."),
        "{e} host",
    ),
    Kind(
        "editor",
        ("Hannah Schulz", "Omar Haddad", "Mei Lin", "Jonas Berg"),
        ("Vim", "VS Code", "Emacs", "Helix", "Zed", "Sublime Text", "IntelliJ IDEA", "Neovim"),
        (
            "{e} writes code in {v}.",
            "{e}'s editor of choice is {v}.",
            "Pairing with {e} today, in {v} as usual.",
            "{e} swears by {v} for everything.",
            "Screen-shared with {e}; they were using {v}.",
        ),
        ("{e} dropped {o} and now uses {v}.", "{e} switched editors, {o} to {v}."),
        "Which editor does {e} use?",
        ("{e} gave a talk about keyboard shortcuts.", "Reviewed a pull request from {e}."),
        "Pairing with {e}",
    ),
    Kind(
        "seat",
        ("payments team", "search team", "design team", "support team"),
        (
            "the third floor, east wing",
            "room 412 on the fourth floor",
            "the ground floor near reception",
            "the second floor by the kitchen",
            "the annex building, floor one",
            "the fifth floor corner office",
            "the open area on floor six",
        ),
        (
            "The {e} sits on {v}.",
            "You can find the {e} at {v}.",
            "Office map: {e} -> {v}.",
            "Visitors for the {e} should head to {v}.",
            "The {e} desks are in {v}.",
        ),
        ("The {e} moved from {o} to {v}.", "Office shuffle: the {e} is in {v} now, not {o}."),
        "Where does the {e} sit?",
        ("The {e} ordered new monitors.", "Cake for the {e} birthday celebration."),
        "Where is the {e}",
    ),
    Kind(
        "release",
        ("Atlas launch", "mobile app 3.0 release", "billing migration", "data warehouse cutover"),
        ("15 March", "2 April", "30 May", "18 June", "1 September", "20 October", "12 November", "4 December"),
        (
            "The {e} is planned for {v}.",
            "Target date for the {e}: {v}.",
            "We aim to ship the {e} on {v}.",
            "Leadership signed off on {v} for the {e}.",
            "Timeline: {e} lands {v}.",
        ),
        ("The {e} slipped from {o} to {v}.", "New date for the {e} is {v} ({o} was too tight)."),
        "When is the {e}?",
        ("Risk review for the {e}; testing is behind.", "Drafted the announcement for the {e}."),
        "{e} timeline",
    ),
    Kind(
        "owner",
        ("authentication service", "search indexer", "billing API", "mobile push notifications"),
        ("Rita Gomez", "Samuel Osei", "Yuki Tanaka", "Ben Carter", "Leila Nasser", "Igor Petrov", "Chloe Martin"),
        (
            "The {e} is owned by {v}.",
            "Owner of the {e}: {v}.",
            "{v} is the go-to person for the {e}.",
            "Escalations about the {e} go to {v}.",
            "Code owners file lists {v} for the {e}.",
        ),
        ("Ownership of the {e} passed from {o} to {v}.", "{o} handed the {e} over to {v}."),
        "Who owns the {e}?",
        ("Outage in the {e} last night, short one.", "The {e} needs a dependency upgrade."),
        "{e} ownership",
    ),
)

FILLER = (
    "Lunch ran late so the afternoon was short.",
    "Need to follow up on the quarterly numbers.",
    "The train was delayed again this morning.",
    "Spent an hour cleaning up old tickets.",
    "Read an interesting article about sleep and memory.",
    "The heating in the office is broken again.",
    "Bought a new notebook for meeting notes.",
    "Weekly report sent to the group.",
    "Too many meetings today, little focus time.",
    "Drafted the agenda for next week.",
    "The coffee machine on our floor is fixed.",
    "Reminder to renew the conference registration.",
    "Walked to work; it was sunny.",
    "Budget spreadsheet needs another pass.",
    "Interviewed a candidate for the open role.",
    "Finished the book club chapter.",
)

END = dt.datetime(2025, 3, 3, tzinfo=dt.UTC)  # the newest statement's day; now is a day later
NEWEST_AGE_DAYS = ((1, 60), (61, 180), (181, 400))  # buckets for the newest statement's age


@dataclass(frozen=True)
class UpdateCase:
    subject: str
    kind: str
    query: str
    answer: str
    values: tuple[str, ...]  # oldest -> newest
    statements: tuple[str, ...]  # vault-relative note paths, oldest -> newest
    dates: tuple[dt.datetime, ...]


@dataclass(frozen=True)
class UpdateBench:
    vault: Path
    cases: list[UpdateCase]
    now: dt.datetime  # a day after the newest statement
    n_notes: int


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _note(created: dt.datetime, title: str, sentences: list[str]) -> str:
    return f"---\ncreated: {iso(created)}\n---\n# {title}\n\n{' '.join(sentences)}\n"


def _when(rng: random.Random, day: dt.datetime) -> dt.datetime:
    return day.replace(hour=rng.randint(8, 19), minute=rng.choice((0, 15, 30, 45)))


def generate_updates(
    subjects: int = 40, seed: int = 7, filler_notes: int = 30
) -> tuple[dict[str, str], list[UpdateCase]]:
    """The vault as {path: text} plus the cases; pure and deterministic for a seed."""
    rng = random.Random(seed)
    pairs = [(kind, entity) for kind in KINDS for entity in kind.entities]
    # Interleave kinds so a small `subjects` still covers many kinds.
    order = sorted(range(len(pairs)), key=lambda i: (i % len(KINDS[0].entities), i))
    chosen = [pairs[i] for i in order[:subjects]]
    files: dict[str, str] = {}
    cases: list[UpdateCase] = []
    later: list[tuple[str, list[str], tuple[int, int]]] = []  # (title, lines, filler count range)

    def add(day: dt.datetime, title: str, sentences: list[str]) -> str:
        base = f"notes/{day:%Y-%m-%d}-{_slug(title)}"
        path, n = f"{base}.md", 1
        while path in files:
            n += 1
            path = f"{base}-{n}.md"
        files[path] = _note(day, title, sentences)
        return path

    for kind, entity in chosen:
        pool = kind.values[entity] if isinstance(kind.values, dict) else kind.values
        n_statements = rng.choice((2, 2, 3, 3, 4))
        values = rng.sample(pool, n_statements)
        templates = rng.sample(kind.statements, n_statements)
        # Spread the newest statement's age at query time evenly over recent / months / long ago;
        # the first subject's newest statement is the newest of all (now = a day after it).
        lo, hi = NEWEST_AGE_DAYS[len(cases) % len(NEWEST_AGE_DAYS)]
        days = [END - dt.timedelta(days=0 if not cases else rng.randint(lo, hi))]
        for _ in values[1:]:
            days.append(days[-1] - dt.timedelta(days=rng.randint(60, 200)))  # months apart
        days.reverse()
        paths: list[str] = []
        dates: list[dt.datetime] = []
        for i, value in enumerate(values):
            when = _when(rng, days[i])
            if i > 0 and rng.random() < 0.35:
                line = rng.choice(kind.changes).format(e=entity, v=value, o=values[i - 1])
            else:
                line = templates[i].format(e=entity, v=value)
            sentences = rng.sample(FILLER, rng.randint(0, 2)) + [line] + rng.sample(FILLER, rng.randint(0, 2))
            paths.append(add(when, kind.title.format(e=entity), sentences))
            dates.append(when)
        for template in rng.sample(kind.distractors, rng.randint(1, 2)):
            later.append((kind.title.format(e=entity), [template.format(e=entity)], (1, 2)))
        cases.append(
            UpdateCase(
                subject=f"{kind.name}: {entity}",
                kind=kind.name,
                query=kind.query.format(e=entity),
                answer=values[-1],
                values=tuple(values),
                statements=tuple(paths),
                dates=tuple(dates),
            )
        )
    later += [("", [], (3, 6))] * filler_notes
    # Distractors and journal notes are dated inside the statements' span, never after "now".
    first = min(d for c in cases for d in c.dates).replace(hour=0, minute=0)
    span = (END - first).days - 1
    for title, lines, (lo, hi) in later:
        when = _when(rng, first + dt.timedelta(days=rng.randint(0, span)))
        add(when, title or f"Journal {when:%d %B %Y}", lines + rng.sample(FILLER, rng.randint(lo, hi)))
    return files, cases


def build_updates(vault: Path, quick: bool = False, seed: int = 7) -> UpdateBench:
    files, cases = generate_updates(subjects=12 if quick else 40, seed=seed, filler_notes=10 if quick else 30)
    sync_vault(vault, files)
    newest = max(d for c in cases for d in c.dates)
    return UpdateBench(vault=vault, cases=cases, now=newest + dt.timedelta(days=1), n_notes=len(files))
