"""The MCP server: end to end over stdio (a real subprocess), and in-process for the edge cases."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import SAMPLE, snapshot
from vault_memory.config import Config
from vault_memory.index.embedders import FakeEmbedder
from vault_memory.mcp_server import Service, build_server

TOOLS = {
    "recall",
    "read",
    "related",
    "recent",
    "prefetch",
    "remember",
    "stage",
    "staged_list",
    "commit",
    "commit_all",
    "discard",
    "pin",
    "unpin",
    "log",
    "review",
    "status",
}


def cli_command() -> tuple[str, list[str]]:
    script = Path(sys.executable).parent / "vault-memory"
    if script.exists():
        return str(script), []
    return sys.executable, ["-m", "vault_memory"]


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.slow
def test_stdio_server_end_to_end(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE, vault, symlinks=True)
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntitle: not yours\n---\nsecret\n")
    command, prefix = cli_command()
    params = StdioServerParameters(
        command=command,
        args=[*prefix, "--vault", str(vault), "--index-dir", str(tmp_path / "index"), "--embedder", "fake", "mcp"],
        env={
            "VAULT_MEMORY_CONFIG": str(tmp_path / "no-user-config.toml"),
            "PATH": os.environ.get("PATH", ""),
            # the code under test, when it is not the installed one (a worktree run with PYTHONPATH)
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        },
        cwd=str(tmp_path),
    )
    latencies: list[float] = []

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == TOOLS
            assert all(t.description and len(t.description) < 400 for t in tools.tools)

            fact = "The user's bicycle is a green Brompton folding bike bought in Utrecht."
            saved = await client.call_tool("remember", {"text": fact})
            assert not saved.is_error, text_of(saved)
            memory = saved.structured_content
            assert memory is not None and memory["path"].startswith("Memory/") and memory["indexed"] is True

            found = await client.call_tool("recall", {"query": "which folding bike does the user ride?", "k": 3})
            assert not found.is_error, text_of(found)
            assert found.structured_content is not None
            hits = found.structured_content["hits"]
            assert hits and hits[0]["node_id"] == memory["node_id"] and "Brompton" in hits[0]["snippet"]

            for target in ("../../etc/passwd", "../outside.md", str(outside), "/etc/passwd"):
                refused = await client.call_tool("pin", {"target": target})
                assert refused.is_error and "refused" in text_of(refused), text_of(refused)

            bad = await client.call_tool("recall", {"query": "bike", "k": 0})
            assert bad.is_error and "from 1 to 50" in text_of(bad)
            limit = await client.call_tool("recall", {"query": "bike", "limit": 3})
            assert limit.is_error and "`limit` (did you mean `k`?)" in text_of(limit), text_of(limit)

            # read by title, by alias, by [[link#heading]]
            for target, path, heading in (
                ("Danube Bike Trip", "Projects/Danube Bike Trip.md", ""),
                ("Donauradweg", "Projects/Danube Bike Trip.md", ""),
                ("[[Ines Okafor#Gift ideas|gifts]]", "People/Ines Okafor.md", "Gift ideas"),
            ):
                got = await client.call_tool("read", {"target": target})
                assert not got.is_error and got.structured_content is not None, text_of(got)
                assert got.structured_content["path"] == path and got.structured_content["heading"] == heading
            # related: the backlinks, and at least one note related but not linked
            rel = await client.call_tool("related", {"target": "Danube Bike Trip"})
            assert not rel.is_error and rel.structured_content is not None
            items = rel.structured_content["related"]
            assert {"People/Ines Okafor.md", "Preferences/Coffee.md"} <= {r["path"] for r in items if r["links_here"]}
            assert any(not r["linked"] for r in items)
            # filters: only eligible notes
            filtered = await client.call_tool(
                "recall",
                {"query": "trip plans", "k": 5, "tags": ["travel"], "folder": "Projects", "after": "2026-01-01"},
            )
            assert not filtered.is_error and filtered.structured_content is not None
            assert [h["path"] for h in filtered.structured_content["hits"]] == ["Projects/Danube Bike Trip.md"]
            # remember with supersedes, then discard a draft
            newer = await client.call_tool(
                "remember", {"text": "The user's bicycle is now a black Brompton.", "supersedes": memory["node_id"]}
            )
            assert not newer.is_error and newer.structured_content is not None, text_of(newer)
            assert newer.structured_content["supersedes"] == [memory["node_id"]]
            draft = await client.call_tool("stage", {"text": "The allotment is plot 112."})
            assert draft.structured_content is not None
            gone = await client.call_tool("discard", {"id": draft.structured_content["node_id"]})
            assert not gone.is_error and gone.structured_content is not None
            assert gone.structured_content["path"].startswith(".trash/")

            still = await client.call_tool("status", {})  # the server is still serving
            assert not still.is_error and still.structured_content is not None
            assert still.structured_content["server"]["keeps_index_current"] is True
            # what status says of the index, and what to run about it (issue 25): while the server
            # takes in the notes just written it is "building" (it is the writer: nothing to run);
            # then current, with nothing to run. On a loaded machine the watcher can lag a few seconds.
            state = still.structured_content
            deadline = time.monotonic() + 60
            while state["index_state"] == "building" and time.monotonic() < deadline:
                assert "nothing to run" in state["next_step"]
                await anyio.sleep(0.25)
                again = await client.call_tool("status", {})
                assert again.structured_content is not None
                state = again.structured_content
            assert state["index_state"] == "current"
            assert state["next_step"] == ""

            for _ in range(20):
                started = time.perf_counter()
                r = await client.call_tool("recall", {"query": "folding bike", "k": 5})
                latencies.append(time.perf_counter() - started)
                assert not r.is_error

    anyio.run(session)
    assert outside.read_text() == "---\ntitle: not yours\n---\nsecret\n"
    print(
        f"\nMCP recall round trip over stdio (fake embedder, sample vault): median "
        f"{statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms over 20 calls"
    )


# -- in-process: the same server object, without a subprocess --------------------------------


def _service(vault: Path, index_dir: Path, **overrides: Any) -> Service:
    cfg = Config(vault=vault, index_dir=index_dir, embedder="fake", **overrides)
    return Service(cfg, embedder=FakeEmbedder(), lock_retry=0.2, index_wait=3.0)


def run_with(service: Service, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(build_server(service), read_timeout_seconds=60) as client:
            await body(client)

    anyio.run(main)


@pytest.mark.slow
def test_the_agent_loop_over_stdio_leaves_every_chunk_its_vector(tmp_path: Path) -> None:
    """Issue 41, finding 1, as reported: status; 2 s later a recall that rehearses (the note's first
    node_id) and at once `remember`. The server's watcher took the memory's request between two
    embedding steps, and that nested run pruned the rehearsed note's vector: recall by meaning never
    found it again, and `doctor` said "consistent"."""
    import sqlite3
    import subprocess

    vault, index = tmp_path / "v", tmp_path / "i"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes" / "coffee.md").write_text(
        "---\ntitle: Coffee\ndate: 2020-01-01\n---\nI drink a double espresso every morning.\n", encoding="utf-8"
    )
    command, prefix = cli_command()
    base = [*prefix, "--vault", str(vault), "--index-dir", str(index), "--embedder", "fake"]
    env = {
        "VAULT_MEMORY_CONFIG": str(tmp_path / "no-user-config.toml"),
        "PATH": os.environ.get("PATH", ""),
        **{k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME")},
    }
    subprocess.run([command, *base, "index"], check=True, capture_output=True, env=env, timeout=120)
    params = StdioServerParameters(command=command, args=[*base, "mcp"], env=env, cwd=str(tmp_path))

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            assert not (await client.call_tool("status", {})).is_error
            await anyio.sleep(2.2)  # at 8b68fab: lost in every run from 1.9 s on
            found = await client.call_tool("recall", {"query": "double espresso every morning"})
            assert not found.is_error and found.structured_content is not None
            saved = await client.call_tool("remember", {"text": "The user's bike is a steel Surly."})
            assert not saved.is_error, text_of(saved)
            await anyio.sleep(3.0)

    anyio.run(session)
    assert "node_id:" in (vault / "Notes" / "coffee.md").read_text(encoding="utf-8")  # it was rehearsed
    db = sqlite3.connect(index / "catalog.sqlite")
    try:
        unvectored = db.execute(
            "SELECT c.text FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.text_hash = c.text_hash)"
        ).fetchall()
    finally:
        db.close()
    assert unvectored == []
    doctor = subprocess.run([command, *base, "doctor"], capture_output=True, text=True, env=env, timeout=120)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


@pytest.fixture()
def served(vault: Path, tmp_path: Path) -> Service:
    return _service(vault, tmp_path / "index")


def test_inputs_are_validated_with_a_message_saying_what_to_do(served: Service) -> None:
    async def body(c: Client) -> None:
        cases = [
            ("recall", {"query": "x", "k": 51}, "from 1 to 50"),
            ("recall", {"query": "   "}, "is empty"),
            ("prefetch", {"text": "hello", "budget": 99}, "from 100 to 20000"),
            ("prefetch", {"text": "hello", "budget": 20001}, "from 100 to 20000"),
            ("remember", {"text": ""}, "is empty"),
            ("remember", {"text": "x" * 20001}, "limit is 20000"),
            ("stage", {"text": " "}, "is empty"),
            ("commit", {"ids": []}, "ids"),
            ("commit", {"ids": ["ok", ""]}, "non-empty"),
            ("commit", {"ids": ["no-such-id"]}, "no staged memory"),
            ("pin", {"target": ""}, "is empty"),
            ("pin", {"target": "no-such-note"}, "no note"),
            ("log", {"text": ""}, "is empty"),
        ]
        for name, args, expected in cases:
            r = await c.call_tool(name, args)
            assert r.is_error, (name, args)
            assert expected in text_of(r), (name, args, text_of(r))
        ok = await c.call_tool("status", {})
        assert not ok.is_error

    run_with(served, body)


def test_paths_cannot_leave_the_vault(served: Service, vault: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("---\nnode_id: abc\n---\nsecret\n")
    (vault / "link-out.md").symlink_to(secret)
    (vault / "dir-out").symlink_to(tmp_path)

    async def body(c: Client) -> None:
        for target in (
            "link-out.md",
            "dir-out/secret.md",
            "../secret.md",
            str(secret),
            "Inbox/../../secret.md",
            "C:\\Windows\\win.ini",
            "\\\\server\\share\\x.md",
        ):
            r = await c.call_tool("pin", {"target": target})
            assert r.is_error, target
        r = await c.call_tool("commit", {"ids": ["../secret.md"]})
        assert r.is_error and "refused" in text_of(r)

    run_with(served, body)
    assert secret.read_text() == "---\nnode_id: abc\n---\nsecret\n"


def test_no_tool_deletes_a_note(served: Service, vault: Path) -> None:
    async def body(c: Client) -> None:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == TOOLS and not {"delete", "remove"} & names
        staged = await c.call_tool("stage", {"text": "The user waters the ficus on Mondays."})
        assert not staged.is_error and staged.structured_content is not None
        listed = await c.call_tool("staged_list", {})
        assert listed.structured_content is not None and listed.structured_content["count"] == 1
        committed = await c.call_tool("commit", {"ids": staged.structured_content["node_id"]})  # one id, no list
        assert not committed.is_error and committed.structured_content is not None
        assert [x["node_id"] for x in committed.structured_content["committed"]] == [
            staged.structured_content["node_id"]
        ]
        assert not (await c.call_tool("commit_all", {})).is_error
        logged = await c.call_tool("log", {"text": "Talked about the ficus."})
        assert not logged.is_error

    before = {p for p in snapshot(vault) if not p.startswith(".")}
    run_with(served, body)
    after = set(snapshot(vault))
    assert before <= after  # every note that was there is still there


def test_a_crash_inside_a_tool_is_a_tool_error_and_the_server_goes_on(served: Service) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("disk on fire")

    async def body(c: Client) -> None:
        original = served.mem.recall
        served.mem.recall = boom  # type: ignore[method-assign]
        r = await c.call_tool("recall", {"query": "anything"})
        assert r.is_error and "internal error" in text_of(r) and "still running" in text_of(r)
        served.mem.recall = original  # type: ignore[method-assign]
        r = await c.call_tool("recall", {"query": "ollama keep alive"})
        assert not r.is_error

    run_with(served, body)


def test_prefetch_tool_returns_the_block(served: Service) -> None:
    async def body(c: Client) -> None:
        # A new vault is served by keyword within seconds and embedded afterwards; prefetch judges
        # relevance by meaning, so it is asked once every chunk has its vector.
        for _ in range(200):
            if served.call(lambda m: m.vectors().complete):
                break
            await anyio.sleep(0.05)
        r = await c.call_tool("prefetch", {"text": "GPU driver for CUDA on the Windows box", "budget": 400})
        assert not r.is_error and r.structured_content is not None
        block = r.structured_content["block"]
        assert block.startswith("[RELEVANT_LEARNED_MEMORY]") and len(block) <= 400
        assert r.structured_content["entries"][0]["path"] == "Inbox/GPU setup on the Windows box.md"

    run_with(served, body)


def test_second_server_on_the_same_index_serves_reads(vault: Path, tmp_path: Path) -> None:
    first = _service(vault, tmp_path / "index")
    second = _service(vault, tmp_path / "index")

    async def main() -> None:
        async with Client(build_server(first)) as a:
            assert not (await a.call_tool("recall", {"query": "ollama"})).is_error
            deadline = time.monotonic() + 30
            while not first.writer and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            assert first.writer
            async with Client(build_server(second)) as b:
                while not second.indexed_once.is_set():
                    await anyio.sleep(0.05)
                assert not second.writer  # the lock is taken: it reads instead of fighting for it
                r = await b.call_tool("recall", {"query": "ollama keep alive", "k": 2})
                assert not r.is_error and r.structured_content is not None and r.structured_content["hits"]
                saved = await b.call_tool("remember", {"text": "The reader server wrote this about kayaks."})
                assert not saved.is_error and saved.structured_content is not None
                assert saved.structured_content["indexed"] is True  # the first server's watcher indexed it
                s = await b.call_tool("status", {})
                assert s.structured_content is not None
                assert s.structured_content["server"]["keeps_index_current"] is False

    anyio.run(main)


# -- the toolset: parity with the CLI, strict arguments, typed results, hints ------------------


def test_mcp_and_cli_offer_the_same_verbs() -> None:
    from vault_memory.cli.main import COMMANDS
    from vault_memory.mcp_server import CLI_ONLY, CLI_VERB, specs

    cli = {name for name, _ in COMMANDS}
    mcp_verbs = {CLI_VERB.get(name, name) for name in specs()}
    assert mcp_verbs == cli - set(CLI_ONLY), sorted(mcp_verbs ^ (cli - set(CLI_ONLY)))
    assert set(CLI_ONLY) <= cli  # the documented CLI-only verbs exist
    agents = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text(encoding="utf-8")
    for name in specs():
        assert f"| `{name}` |" in agents, f"MCP tool {name} is not in docs/agents.md's tool table"
    for name in CLI_ONLY:
        assert f"`{name}`" in agents


def test_unknown_arguments_are_refused_naming_the_valid_ones(served: Service) -> None:
    async def body(c: Client) -> None:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        assert all(t.input_schema.get("additionalProperties") is False for t in listed.values())
        for name, args, expected in [
            ("recall", {"query": "bike", "limit": 3}, "`limit` (did you mean `k`?); it takes: query, k, tags"),
            ("read", {"path": "Projects/Eris.md"}, "`path` (did you mean `target`?)"),
            ("status", {"verbose": True}, "it takes: no arguments"),
            ("remember", {"text": "x y z", "tag": ["a"]}, "`tag` (did you mean `tags`?)"),
        ]:
            r = await c.call_tool(name, args)
            assert r.is_error and expected in text_of(r), (name, text_of(r))

    run_with(served, body)


def test_every_tool_has_a_typed_output_schema_and_honest_hints(served: Service) -> None:
    async def body(c: Client) -> None:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        for t in tools.values():
            schema = t.output_schema
            assert schema and schema.get("type") == "object" and schema.get("properties"), t.name
            assert t.annotations is not None and t.annotations.open_world_hint is False
        read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
        assert read_only == {"read", "related", "recent", "review", "status"}
        destructive = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
        assert destructive == {"discard"}
        assert tools["recall"].annotations and tools["recall"].annotations.idempotent_hint  # rehearsal coalesces
        assert set(tools["read"].output_schema["properties"]) >= {"path", "title", "node_id", "text", "stated"}

    run_with(served, body)


def test_read_related_recent_and_filters_in_process(served: Service, vault: Path) -> None:
    async def body(c: Client) -> None:
        r = await c.call_tool("read", {"target": "Ines", "lines": "1:3"})
        assert not r.is_error and r.structured_content is not None
        assert r.structured_content["path"] == "People/Ines Okafor.md" and r.structured_content["end_line"] == 3
        r = await c.call_tool("read", {"target": "Danube Bike Trp"})
        assert r.is_error and "near matches: Projects/Danube Bike Trip.md" in text_of(r)
        r = await c.call_tool("read", {"target": "../outside.md"})
        assert r.is_error and "refused" in text_of(r)
        first = await c.call_tool("recall", {"query": "coffee", "k": 1})  # maybe while vectors fill in
        assert first.structured_content is not None
        # (the vectors may complete between the ranking and the count: keyword-only hits, complete vectors)
        assert first.structured_content["lexical_only"] or first.structured_content["vectors"]["complete"]
        note = first.structured_content["note"]
        assert ("keyword-only" in note) == first.structured_content["lexical_only"]
        assert ("nothing relevant" in note) == all(h["weak"] for h in first.structured_content["hits"])
        for _ in range(200):
            if served.call(lambda m: m.vectors().complete):
                break
            await anyio.sleep(0.05)
        r = await c.call_tool("recall", {"query": "coffee", "folder": "Preferences", "k": 10})
        assert r.structured_content is not None and r.structured_content["hits"]
        assert r.structured_content["lexical_only"] is False and "keyword-only" not in r.structured_content["note"]
        assert r.structured_content["vectors"]["complete"] and not r.structured_content["vectors"]["pending"]
        assert all(h["path"].startswith("Preferences/") for h in r.structured_content["hits"])
        assert r.structured_content["filter"] == "folder Preferences"
        r = await c.call_tool("recall", {"query": "coffee", "k": 2, "explain": True})
        assert r.structured_content is not None
        assert all({"bm25", "strength", "tier", "moved"} <= set(h["explain"]) for h in r.structured_content["hits"])
        assert all("change" in h for h in r.structured_content["hits"])
        r = await c.call_tool("recall", {"query": "coffee", "after": "last week"})
        assert r.is_error and "is not a date" in text_of(r)
        r = await c.call_tool("prefetch", {"text": "which coffee beans", "tags": "preferences"})
        assert not r.is_error and r.structured_content is not None
        assert all(e["path"].startswith("Preferences/") for e in r.structured_content["entries"])
        saved = await c.call_tool("remember", {"text": "Maya's bike lock code is 4711.", "tags": ["bike"]})
        assert not saved.is_error
        r = await c.call_tool("recent", {"days": 1})
        assert r.structured_content is not None
        assert [n["event"] for n in r.structured_content["notes"]][:1] == ["created"]
        r = await c.call_tool("unpin", {"target": "[[Home Lab]]"})
        assert not r.is_error and r.structured_content is not None and r.structured_content["pinned"] is False
        r = await c.call_tool("staged_list", {})
        assert r.structured_content is not None and r.structured_content["count"] == 0

    run_with(served, body)


def test_notes_are_resources(served: Service) -> None:
    async def body(c: Client) -> None:
        templates = (await c.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["memory://note/{+path}"]
        got = await c.read_resource("memory://note/People/Ines%20Okafor.md")
        text = getattr(got.contents[0], "text", "")
        assert text.startswith("# Ines Okafor") and "node_id" not in text
        for uri in ("memory://note/../outside.md", "memory://note/.obsidian/app.json", "memory://note/Nope.md"):
            with pytest.raises(Exception):  # noqa: B017 - the SDK raises its MCPError for a failed read
                await c.read_resource(uri)

    run_with(served, body)


def test_read_over_mcp_hides_a_comment_in_a_heading(served: Service, vault: Path) -> None:
    """What recall hides every tool hides (issue 41, finding 5): the MCP `read`, its outline, its "no such
    heading" error and the note resource."""
    (vault / "Coffee grinder.md").write_text(
        "# Coffee grinder\n\n## Grinder %%safe code 4711%%\n\nBurr grinder, setting 12.\n", encoding="utf-8"
    )

    async def body(c: Client) -> None:
        for args in ({"target": "Coffee grinder.md"}, {"target": "Coffee grinder.md", "heading": "Grinder"}):
            r = await c.call_tool("read", args)
            assert not r.is_error and r.structured_content is not None, text_of(r)
            assert "4711" not in str(r.structured_content) and "Grinder" in str(r.structured_content)
        r = await c.call_tool("read", {"target": "[[Coffee grinder#Roaster]]"})
        assert r.is_error and "Grinder" in text_of(r) and "4711" not in text_of(r)
        got = await c.read_resource("memory://note/Coffee%20grinder.md")
        assert "4711" not in getattr(got.contents[0], "text", "")

    run_with(served, body)


def test_review_through_mcp_writes_nothing(served: Service, vault: Path) -> None:
    """The review note is readable through MCP (a tool and a resource) without writing it into the vault."""

    async def body(c: Client) -> None:
        staged = await c.call_tool("stage", {"text": "Maya's bike lock code is 4711.", "title": "Bike lock"})
        assert not staged.is_error
        r = await c.call_tool("review", {})
        assert not r.is_error and r.structured_content is not None
        out = r.structured_content
        assert out["path"] == "Memory/Review.md" and "Bike lock" in out["markdown"]
        assert [d["title"] for d in out["review"]["drafts"]] == ["Bike lock"]
        got = await c.read_resource("memory://review")
        assert "Bike lock" in getattr(got.contents[0], "text", "")

    run_with(served, body)
    assert not (vault / "Memory" / "Review.md").exists()


def test_results_say_they_are_keyword_only_while_vectors_fill_in() -> None:
    from vault_memory.mcp_server.tools import _progress_note

    filling = {"chunks": 26000, "embedded": 1200, "pending": 24800, "complete": False}
    assert _progress_note(True, filling) == (
        "results are keyword-only (BM25) while 1,200 of 26,000 chunks are "
        "embedded; ask again in a while for ranking by meaning too"
    )
    assert "unreachable" in _progress_note(True, {**filling, "embedded": 26000, "pending": 0, "complete": True})
    assert _progress_note(False, filling) == ""
