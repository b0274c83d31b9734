"""The manual is true to the code: the CLI reference is generated and current, every command and MCP
tool is documented exactly once, every path a doc names exists (each missing one listed with its doc
and line, so a module moved into a subpackage shows every place to fix), every `module.NAME` a doc
cites is in the code, every setting has its row, and the Python API chapter lists `Memory`'s
documented operations in a form a test can read, its code blocks parsing.

Each checker first proves it can fail (`test_*_can_fail`).
"""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
README = REPO / "README.md"
README_MAX_LINES = 220
CHAPTERS = (
    "quickstart.md",
    "agents.md",
    "memory-model.md",
    "ranking.md",
    "configuration.md",
    "reliability.md",
    "how-it-works.md",
    "benchmarks.md",
    "python-api.md",
    "cli.md",
)


def doc_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- the README is the front door --------------------------------------------------------------


def test_the_readme_is_short_and_links_every_chapter() -> None:
    readme = text(README)
    assert readme.count("\n") <= README_MAX_LINES, f"README.md has {readme.count(chr(10))} lines"
    assert {p.name for p in DOCS.glob("*.md")} == set(CHAPTERS)
    for name in CHAPTERS:
        assert f"(docs/{name}" in readme, f"the README does not link docs/{name}"


def test_the_readme_gives_the_two_commands_and_the_working_claude_code_command() -> None:
    readme = text(README)
    from tests.test_first_hour import QUICK_START_QUERY  # the query that test runs on a fresh clone

    for doc in (readme, text(DOCS / "quickstart.md")):
        assert f'vault-memory --vault sample_vault --read-only recall "{QUICK_START_QUERY}"' in doc
    assert ".venv/bin/python -m pytest -q -n 2\n" in readme  # .ci/run runs exactly this
    assert "claude mcp add vault-memory -e VAULT_MEMORY_VAULT=" in readme
    assert "claude mcp add -e" not in readme + "".join(text(p) for p in DOCS.glob("*.md"))


# -- the CLI reference -------------------------------------------------------------------------


def test_the_cli_reference_is_current() -> None:
    from vault_memory.cli.reference import reference

    assert text(DOCS / "cli.md") == reference(), (
        "docs/cli.md is stale: run `python -m vault_memory.cli.reference --write`"
    )


def command_names() -> list[str]:
    from vault_memory.cli.main import COMMANDS

    return [name for name, _ in COMMANDS]


def headings(doc: str, level: int) -> list[str]:
    return re.findall(rf"^{'#' * level} (.+?)\s*$", doc, re.M)


def test_every_command_has_one_heading_in_the_cli_reference() -> None:
    found = headings(text(DOCS / "cli.md"), 3)
    for name in command_names():
        assert found.count(f"`vault-memory {name}`") == 1, name
    assert len(found) == len(command_names())


def test_every_option_and_its_variable_is_in_the_cli_reference() -> None:
    import typer.main

    from vault_memory.cli.main import app

    doc = text(DOCS / "cli.md")
    group = typer.main.get_command(app)
    for cmd in [group, *getattr(group, "commands", {}).values()]:
        for p in cmd.params:
            for opt in p.opts:
                assert f"`{opt}" in doc or f", {opt}" in doc or f" {opt}`" in doc, opt
    for var in re.findall(r"VAULT_MEMORY_[A-Z_]+", text(REPO / "vault_memory" / "cli" / "options.py")):
        assert f"`{var}`" in doc, var


def error_classes() -> set[str]:
    """Every class in the package that derives from an error of the tree (by reading the code)."""
    names = {"VaultMemoryError"}
    found: dict[str, list[str]] = {}
    for path in (REPO / "vault_memory").rglob("*.py"):
        for node in ast.walk(ast.parse(text(path))):
            if isinstance(node, ast.ClassDef):
                found[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
    grew = True
    while grew:
        grew = False
        for name, bases in found.items():
            if name not in names and any(b in names for b in bases):
                names.add(name)
                grew = True
    return names


def test_every_error_and_its_exit_code_is_in_the_reference() -> None:
    from vault_memory.cli.reference import exit_codes

    doc = text(DOCS / "cli.md")
    classes = error_classes()
    assert {"NoteBusyError", "AmbiguousTargetError", "NoteProtectedError"} <= classes
    for name in classes:
        assert f"`{name}`" in doc, f"{name} is not in docs/cli.md's exit codes"
    codes = {code for code, _ in exit_codes()}
    assert {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 130} <= codes


# -- MCP tools: one entry each in the agents chapter -------------------------------------------


def test_every_mcp_tool_has_one_entry_in_the_agents_chapter() -> None:
    from vault_memory.mcp_server import CLI_ONLY, specs

    doc = text(DOCS / "agents.md")
    rows = re.findall(r"^\| `(\w+)` \|", doc.split("### Tools", 1)[1].split("\n## ", 1)[0], re.M)
    assert sorted(rows) == sorted(specs()), "the tools table must list each MCP tool once"
    for name in CLI_ONLY:
        assert f"`{name}`" in doc


# -- JSON output: the commands that take --json ------------------------------------------------


def test_every_command_with_json_is_in_the_json_table() -> None:
    import typer.main

    from vault_memory.cli.main import app

    group = typer.main.get_command(app)
    with_json = {n for n, c in getattr(group, "commands", {}).items() if any("--json" in p.opts for p in c.params)}
    section = text(DOCS / "agents.md").split("## JSON output", 1)[1]
    listed = set()
    for cell in re.findall(r"^\| ([^|]+) \|", section, re.M):
        listed |= set(re.findall(r"`(\w+)`", cell))
    assert with_json <= listed, sorted(with_json - listed)


# -- settings ----------------------------------------------------------------------------------


def test_every_setting_and_every_retired_one_has_its_row() -> None:
    import dataclasses

    from vault_memory.config import _RETIRED, Config

    doc = text(DOCS / "configuration.md")
    every = doc.split("## Every setting", 1)[1].split("\n## ", 1)[0]
    retired = doc.split("## Retired settings", 1)[1].split("\n## ", 1)[0]
    fields = {f.name for f in dataclasses.fields(Config)} - {"extra"} - set(_RETIRED)
    rows = set(re.findall(r"^\| `(\w+)` \|", every, re.M))
    assert rows == fields, sorted(rows ^ fields)
    named = set(re.findall(r"`(\w+)`", " ".join(re.findall(r"^\| ([^|]+) \|", retired, re.M))))
    assert set(_RETIRED) <= named, sorted(set(_RETIRED) - named)


# -- the Python API chapter --------------------------------------------------------------------

#: The operations the issue-25 README documented; the chapter may add, never drop, one.
KNOWN_OPERATIONS = {
    "index",
    "recall",
    "prefetch",
    "read",
    "related",
    "recent",
    "stage",
    "staged",
    "commit",
    "commit_all",
    "discard",
    "remember",
    "pin",
    "unpin",
    "log",
    "review",
    "refresh_review",
    "status",
}


def documented_operations() -> list[str]:
    """The `Memory` operations docs/python-api.md documents: one `### `Memory.name(...)`` heading each."""
    doc = text(DOCS / "python-api.md")
    return [m for h in headings(doc, 3) for m in re.findall(r"^`Memory\.(\w+)\(", h)]


def test_the_python_api_chapter_lists_memorys_operations_once_each() -> None:
    import inspect

    from vault_memory.memory import Memory

    ops = documented_operations()
    assert len(ops) == len(set(ops)), "an operation has two headings"
    assert KNOWN_OPERATIONS <= set(ops)
    for name in ops:
        member = getattr(Memory, name, None)
        assert callable(member) and not name.startswith("_"), f"Memory.{name} is documented but not there"
        params = list(inspect.signature(member).parameters)[1:]
        heading = next(h for h in headings(text(DOCS / "python-api.md"), 3) if h.startswith(f"`Memory.{name}("))
        for p in params:
            assert re.search(rf"\b{p}\b", heading), f"Memory.{name}: parameter {p} is not in its heading"


def test_the_python_api_chapters_code_blocks_parse() -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", text(DOCS / "python-api.md"), re.S | re.M)
    assert len(blocks) >= 3, "docs/python-api.md has no python blocks"
    for block in blocks:
        ast.parse(block)  # a SyntaxError names the line
    assert "mem.recall(" in "".join(blocks)


def test_the_readmes_python_loop_parses_and_is_ten_lines() -> None:
    [block] = re.findall(r"^```python\n(.*?)^```", text(README), re.S | re.M)
    ast.parse(block)
    assert len(block.strip().split("\n")) <= 10


# -- every path a doc names exists -------------------------------------------------------------

_LINK = re.compile(r"\]\(([^)\s]+)\)")
GENERATED = "bench/.cache"  # made by the benchmarks, gitignored
_ROOTS = ("vault_memory", "bench", "tests", "docs", "sample_vault", ".ci")
_PATH = re.compile(rf"(?<![\w/.:-])((?:{'|'.join(re.escape(r) for r in _ROOTS)})/[\w./@-]*[\w/])")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    h = unicodedata.normalize("NFC", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h.replace("`", ""))
    return h.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out: set[str] = set()
    in_code = False
    for line in text(path).split("\n"):
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"^#{1,6} (.+?)\s*$", line)):
            out.add(slug(m.group(1)))
    return out


def _line(body: str, at: int) -> int:
    return body.count("\n", 0, at) + 1


def broken_paths(doc: Path, body: str) -> list[str]:
    """Repository paths and links in `body` (the text of `doc`) that lead nowhere, each as
    "doc:line: what": a module moved into a subpackage shows every place that still names it."""
    problems = []
    for m in _LINK.finditer(body):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        where = f"{doc.name}:{_line(body, m.start())}"
        if not dest.exists():
            problems.append(f"{where}: link {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: link {target}: no such heading")
    for m in _PATH.finditer(body):
        path = m.group(1)
        if any(c in path + body[m.end() : m.end() + 2] for c in "<*{") or path.startswith(GENERATED):
            continue  # a pattern, or a folder the benchmarks make
        if not (REPO / path.rstrip("/")).exists():
            problems.append(f"{doc.name}:{_line(body, m.start())}: {path}: no such path")
    return problems


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: p.name)
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    body = re.sub(r"git show \S+", "", text(doc))  # `git show f0844e1:bench/x.py` names history
    problems = broken_paths(doc, body)
    assert not problems, "paths the docs name that do not exist:\n" + "\n".join(problems)


#: `module.name` spans that are not code: file names and fields of the JSON `status` prints.
NOT_ATTRIBUTES = re.compile(r"\.(py|md|sqlite|json|toml|bin)$|^server\.startup_indexed$")


def missing_attributes(doc: Path, body: str) -> list[str]:
    """`module.NAME` (or `vault_memory.module.NAME`) spans in `body` naming what the module lacks:
    a constant renamed or removed since the doc was written, listed with the doc and line."""
    import importlib
    import pkgutil

    import vault_memory

    modules = {m.name.rsplit(".", 1)[-1]: m.name for m in pkgutil.walk_packages(vault_memory.__path__, "vault_memory.")}
    problems = []
    for m in re.finditer(r"`(?:vault_memory\.)?([a-z_]+)\.([A-Za-z_][\w.]*)(?:\([^`]*\))?`", body):
        module, attr = m.group(1), m.group(2)
        if module not in modules or NOT_ATTRIBUTES.search(f"{module}.{attr}"):
            continue
        obj: object = importlib.import_module(modules[module])
        for part in attr.split("."):
            if not hasattr(obj, part):
                problems.append(f"{doc.name}:{_line(body, m.start())}: {module}.{attr}: no such name")
                break
            obj = getattr(obj, part)
    return problems


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: p.name)
def test_every_module_name_a_doc_cites_exists(doc: Path) -> None:
    problems = missing_attributes(doc, text(doc))
    assert not problems, "names the docs cite that the code does not have:\n" + "\n".join(problems)


def test_the_name_checker_can_fail() -> None:
    bad = "one `recall.REHEARSE_MAX_HITS`,\n`rules.ReadRules.head` and `vault_memory.decay.NO_SUCH` "
    bad += "but not `catalog.sqlite`"
    assert missing_attributes(DOCS / "ranking.md", bad) == [
        "ranking.md:1: recall.REHEARSE_MAX_HITS: no such name",
        "ranking.md:2: decay.NO_SUCH: no such name",
    ]


def test_the_path_checker_can_fail() -> None:
    doc = DOCS / "ranking.md"
    bad = (
        "see `vault_memory/no_such_module.py`, [a link](nowhere.md), [an anchor](agents.md#no-such-heading) "
        "and bench/results/none.md."
    )
    found = broken_paths(doc, bad)
    assert len(found) == 4 and all(p.startswith("ranking.md:1: ") for p in found), found
    assert broken_paths(doc, "one\ntwo `tests/none.py`") == ["ranking.md:2: tests/none.py: no such path"]
    good = "see `vault_memory/search/ranking.py`, [tools](agents.md#tools), bench/results/<name>.json, bench/results/"
    assert broken_paths(doc, good) == []


def test_comments_in_the_code_cite_files_that_exist() -> None:
    """Paths named in the package's and the benchmarks' comments and docstrings exist too."""
    problems = []
    for root in ("vault_memory", "bench", "tests"):
        for path in (REPO / root).rglob("*.py"):
            if ".cache" in path.parts:
                continue
            if path.name == "test_docs.py":
                continue  # its own examples of broken paths
            for number, line in enumerate(text(path).split("\n"), 1):
                for m in _PATH.finditer(line):
                    cited, after = m.group(1), line[m.end() : m.end() + 2]
                    if any(c in cited + after for c in "<*{") or cited.startswith(GENERATED):
                        continue
                    if not (REPO / cited.rstrip("/")).exists():
                        if "git show" in line or "last lived in" in line or "^" in line:
                            continue  # history, said so
                        problems.append(f"{path.relative_to(REPO)}:{number}: {cited}")
    assert not problems, "paths the code cites that do not exist:\n" + "\n".join(problems)
