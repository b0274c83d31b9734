"""The house: imports only go down, modules stay one concept each.

Every import inside `vault_memory/` counts, including those under `TYPE_CHECKING` and
inside functions: a lazy import is still a loop in the design.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "vault_memory"
MAX_LINES = 500  # a module above this must say why at its top ("Longer than")
FLOORS = 20  # the longest import chain allowed (`floors`); issue 25 measured 23 before regrouping


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """vault_memory modules this file imports, anywhere in it."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("vault_memory"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("vault_memory"):
                continue
            for alias in node.names:  # `from . import staging` imports a module, not the package's names
                sub = f"{mod}.{alias.name}"
                out.add(sub if sub in modules else mod)
    return out


def import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        graph[name] = {m for m in _imports(path, set(files)) if m in files and m != name}
    return graph


def floors(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports (each module importing the next), as the list of its modules.

    Its length is the package's number of floors; `len(graph)` its rooms. Every import counts, as
    in `import_graph`: module level, under `TYPE_CHECKING` and inside functions. Run this file
    (`python tests/test_architecture.py`) to print both and the chain."""
    memo: dict[str, list[str]] = {}

    def chain(node: str, seen: frozenset[str]) -> list[str]:
        if node in memo:
            return memo[node]
        below = [chain(m, seen | {node}) for m in sorted(graph.get(node, ())) if m not in seen]
        memo[node] = [node, *max(below, key=len, default=[])]
        return memo[node]

    return max((chain(n, frozenset()) for n in sorted(graph)), key=len, default=[])


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a path that returns to its start), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_can_fail() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_in_the_package() -> None:
    graph = import_graph()
    assert "vault_memory.memory" in graph and len(graph) > 20
    # packages import their own modules (`__init__` re-exports); a cycle through a package
    # __init__ is still a cycle, so nothing is excluded
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_floor_counter_counts_the_longest_chain() -> None:
    assert floors({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": set()}) == ["a", "b", "c"]


def test_the_house_has_few_floors() -> None:
    """Issue 25: 23 floors (72 rooms) counting every import before the house was regrouped, 20 after."""
    chain = floors(import_graph())
    assert len(chain) <= FLOORS, " -> ".join(chain)


# The groups, lowest first: a module may import its own group and the groups below it, never
# one above. The ground is the top-level modules the groups share; the top is the facade and
# the tools over it; the edges (cli, mcp_server) come last and nothing in the library imports them.
LAYERS: list[tuple[str, set[str]]] = [
    ("ground", {"errors", "config", "hashing", "oscalls", "text", "repeats", "records", "demo", "markers"}),
    ("vault", {"vault"}),
    ("index", {"index"}),
    ("search", {"search"}),
    ("lifecycle", {"lifecycle"}),
    ("review", {"review"}),
    ("top", {"indexfolder", "internals", "memory", "watch", "doctor", "hooks", "", "__main__"}),
    ("mcp_server", {"mcp_server"}),
    ("cli", {"cli"}),
]


def _layer(module: str) -> int:
    rest = module.removeprefix("vault_memory").removeprefix(".")
    head = rest.split(".", 1)[0]
    for i, (_, members) in enumerate(LAYERS):
        if head in members:
            return i
    raise AssertionError(f"{module} is in no group of LAYERS: give it one")


def test_every_module_has_a_group_and_imports_only_down() -> None:
    graph = import_graph()
    upward = [
        f"{a} ({LAYERS[_layer(a)][0]}) imports {b} ({LAYERS[_layer(b)][0]})"
        for a, targets in sorted(graph.items())
        for b in sorted(targets)
        if _layer(b) > _layer(a) and not (a == "vault_memory.__main__" and b.startswith("vault_memory.cli"))
    ]
    assert not upward, "\n".join(upward)


def test_the_library_never_imports_the_cli() -> None:
    graph = import_graph()
    for a, targets in graph.items():
        if not a.startswith("vault_memory.cli") and a != "vault_memory.__main__":
            assert not any(t.startswith("vault_memory.cli") for t in targets), a


def test_each_group_says_what_lives_there_and_what_it_may_import() -> None:
    for group in ("vault", "index", "search", "lifecycle", "review"):
        doc = ast.get_docstring(ast.parse((PKG / group / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert "May import" in doc, group
        listed = {p.stem for p in (PKG / group).glob("*.py") if p.stem != "__init__"}
        assert all(m in doc for m in listed), (group, sorted(m for m in listed if m not in doc))


def test_only_one_module_imports_chromadb() -> None:
    importers = set()
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(n.split(".")[0] == "chromadb" for n in names):
                importers.add(_module_name(path))
    assert importers == {"vault_memory.index.vectorstore"}, importers


def test_operations_take_a_workspace_not_memory() -> None:
    graph = import_graph()
    below = [
        "lifecycle.staging",
        "lifecycle.edits",
        "lifecycle.recall",
        "lifecycle.prefetch",
        "search.search",
        "search.ranking",
        "index.indexer",
        "index.catalog",
        "vault.notefile",
        "search.decay",
        "records",
        "text",
        "search.workspace",
        "vault.walk",
    ]
    for mod in below:
        assert "vault_memory.memory" not in graph[f"vault_memory.{mod}"], f"{mod} imports memory.py"
        assert "vault_memory.indexfolder" not in graph[f"vault_memory.{mod}"], f"{mod} imports indexfolder.py"


def test_ranking_is_pure() -> None:
    src = (PKG / "search" / "ranking.py").read_text(encoding="utf-8")
    tree = ast.parse(src)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {
        (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level
    }
    assert not imported & {"os", "sqlite3", "chromadb", "pathlib", "time", "subprocess"}


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(PKG)))
def test_long_modules_say_why(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count("\n") <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert "Longer than" in doc, f"{path.name} has {text.count(chr(10))} lines; split it or say why at its top"


def test_starting_the_cli_leaves_the_other_verbs_modules_unloaded() -> None:
    """A cold `vault-memory recall` pays for every module it imports (bench `cold`): the write
    path, prefetch, review, reading, the Markdown parser and the HTTP client are imported when
    a verb needs them, not at start-up."""
    import subprocess
    import sys

    code = (
        "import sys, vault_memory.cli.main; "
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('vault_memory', 'markdown_it', 'urllib', 'chromadb', 'onnxruntime', 'tokenizers', 'pydantic'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "vault_memory.lifecycle.recall" in out and "vault_memory.index.indexer" in out  # it did look
    late = {
        "vault_memory.lifecycle.staging",
        "vault_memory.lifecycle.edits",
        "vault_memory.lifecycle.prefetch",
        "vault_memory.review.review",
        "vault_memory.lifecycle.reading",
        "vault_memory.lifecycle.related",
        "vault_memory.lifecycle.conflicts",
        "markdown_it",
        "urllib.request",
        "chromadb",
        "onnxruntime",
        "tokenizers",
    }
    assert late.isdisjoint(out), sorted(late & set(out))


if __name__ == "__main__":
    _graph = import_graph()
    _chain = floors(_graph)
    print(f"{len(_chain)} floors, {len(_graph)} rooms")
    print(" -> ".join(m.removeprefix("vault_memory.") for m in _chain))


READ_PATH = ("search", "lifecycle.recall", "lifecycle.prefetch", "repeats", "ranking", "windows", "recall", "prefetch")
_PATCH = re.compile(
    r"(?:monkeypatch\.setattr|mock\.patch(?:\.object)?|setattr)\(\s*"
    r"(?P<target>[\"']?[\w.]+[\"']?)"
)


def patched_read_path(text: str) -> list[str]:
    """The patches in `text` whose target is a module of the read path (by name, or by the string
    path of one of its globals): a benchmark variant or a test passes a modified `ReadRules` instead."""
    out = []
    for m in _PATCH.finditer(text):
        target = m.group("target").strip("\"'")
        parts = target.removeprefix("vault_memory.").split(".")
        if any(".".join(parts[: n + 1]) in READ_PATH or parts[n] in READ_PATH for n in range(len(parts))):
            out.append(target)
    return out


def test_the_patch_finder_can_fail() -> None:
    assert patched_read_path('monkeypatch.setattr("vault_memory.search.ranking.HEAD", 10)') == [
        "vault_memory.search.ranking.HEAD"
    ]
    assert patched_read_path("monkeypatch.setattr(prefetch, 'SHOWS_CUED_DORMANT', False)") == ["prefetch"]
    assert patched_read_path("setattr(mod, name, value)") == []
    assert patched_read_path("monkeypatch.setattr(atomic, 'KERNEL', k)") == []


def test_no_module_of_the_read_path_is_patched_in_bench_or_tests() -> None:
    """Issue 37: a variant of the read path is a modified copy of its rules record (search/rules.py),
    never a patched module global."""
    problems = []
    for root in ("bench", "tests"):
        for path in (REPO / root).rglob("*.py"):
            if ".cache" in path.parts or path.name == "test_architecture.py":
                continue
            problems += [f"{path.relative_to(REPO)}: {t}" for t in patched_read_path(path.read_text(encoding="utf-8"))]
    assert not problems, problems
