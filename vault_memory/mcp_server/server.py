"""The MCPServer: every tool of tools.py registered, unknown arguments refused, notes as resources.

The SDK validates arguments with a pydantic model that ignores keys it does not know, so
`recall(query="bike", limit=3)` would quietly return 5 hits. `StrictServer.call_tool` refuses
any argument a tool does not take, naming the ones it does (and the likely one meant), and
every tool's input schema says `additionalProperties: false`, so clients can tell too.

`memory://review` is the review note (review.py), rendered now, without writing it.
Notes are also resources: `memory://note/{+path}` is a note's Markdown body (the same rules
as `read`: private notes and non-notes are refused; the SDK already rejects `..`, absolute
paths and NUL bytes in the parameter, and notefile.safe_path anything leading out of the vault).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from .. import __version__
from ..config import Config
from ..errors import VaultMemoryError
from ..index.embedders import Embedder
from .service import Service
from .tools import Tools, specs

INSTRUCTIONS = """\
Long-term memory kept as Markdown notes in the user's vault.
- Before answering a user message, call prefetch(text=<the message>) and read `block`: what you learned before.
- To look something up, call recall(query=<plain words>); read(target=<title or path>) gives a whole note,
  related(target=...) its links, backlinks and similar notes.
- To keep a durable fact, call remember(text=<one self-contained fact>). If it replaces what a note says,
  pass supersedes=<that note>. Use stage + commit only when the user should confirm first.
- Notes are never deleted by these tools; discard moves a draft to the vault's .trash folder."""

NOTE_URI = "memory://note/{+path}"
REVIEW_URI = "memory://review"

#: Likely names a model uses for an argument, by the name the tool takes.
SYNONYMS = {
    "k": ("limit", "n", "top_k", "topk", "count", "max_results", "num_results", "size"),
    "query": ("q", "question", "search", "text", "prompt"),
    "target": ("note", "path", "id", "node_id", "title", "name", "file"),
    "text": ("content", "fact", "memory", "message", "note", "body"),
    "ids": ("id", "node_id", "node_ids"),
}

#: CLI commands with no MCP tool, and why: docs/agents.md.
CLI_ONLY = {
    "index": "the server indexes by itself, in the background",
    "watch": "the server watches by itself",
    "doctor": "maintenance for a person at a terminal",
    "config": "settings are the server's command line",
    "mcp": "starts this server",
    "calibrate": "measures the embedder's cosine scale, for a person at a terminal",
    "hook": "an agent client's hook runs it on each turn; the server's clients call prefetch",
    "demo": "copies the shipped demo vault, for a person trying vault-memory",
}
#: MCP tools whose CLI verb has another name (or is an option of one).
CLI_VERB = {"staged_list": "staged", "commit_all": "commit"}


def _did_you_mean(name: str, allowed: Sequence[str]) -> str | None:
    for real, aliases in SYNONYMS.items():
        if real in allowed and name.lower() in aliases:
            return real
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    return close[0] if close else None


class StrictServer(MCPServer[Any]):
    """MCPServer that refuses unknown tool arguments with a message naming the valid ones."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.arguments: dict[str, list[str]] = {}  # tool -> the arguments it takes, in order

    def add_checked_tool(self, name: str, fn: Any, **kwargs: Any) -> None:
        self.arguments[name] = list(inspect.signature(fn).parameters)
        self.add_tool(fn, name=name, **kwargs)

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        for t in tools:
            t.input_schema = {**t.input_schema, "additionalProperties": False}
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        allowed = self.arguments.get(name)
        unknown = sorted(set(arguments) - set(allowed)) if allowed is not None else []
        if unknown:
            takes = ", ".join(allowed or []) or "no arguments"
            hints = [
                f"`{u}` (did you mean `{m}`?)" if (m := _did_you_mean(u, allowed or [])) else f"`{u}`" for u in unknown
            ]
            raise ToolError(
                f"{name} does not take {', '.join(hints)}; it takes: {takes}. Call it again with those names only"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            # The SDK's text is pydantic's ("1 validation error for recallArguments ... Field required
            # [type=missing ...] For further information visit https://errors.pydantic.dev/..."): a model
            # needs the argument's name, what it is for, and the call to make instead.
            raise ToolError(self._explain(name, exc.__cause__)) from exc.__cause__

    def _explain(self, name: str, error: ValidationError) -> str:
        """`recall needs `query` (What to look up, in plain words); ...` for each invalid argument."""
        tool = self._tool_manager.get_tool(name)
        props: dict[str, Any] = (tool.parameters if tool is not None else {}).get("properties", {})
        said: list[str] = []
        args: list[str] = []
        for err in error.errors():
            arg = ".".join(str(part) for part in err["loc"]) or "arguments"
            about = props.get(str(err["loc"][0]) if err["loc"] else "", {}).get("description", "")
            what = f" ({about[0].lower()}{about[1:]})" if about else ""
            args.append(f"`{arg}`")
            if err["type"] == "missing":
                said.append(f"{name} needs `{arg}`{what}")
            else:
                msg = str(err["msg"]).removeprefix("Input should be ").removeprefix("Value error, ")
                said.append(f"`{arg}`{what} must be {msg}")
        takes = ", ".join(self.arguments.get(name, [])) or "no arguments"
        return f"{'; '.join(said)}. Call {name} again with {', '.join(dict.fromkeys(args))} set (it takes: {takes})"


def build_server(service: Service) -> StrictServer:
    """The server with every tool bound to `service` (started by the server's lifespan)."""

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        service.start()  # after the SDK took over stdout, so nothing printed can corrupt the stream
        try:
            yield
        finally:
            service.close()

    srv = StrictServer("vault-memory", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan)
    tools = Tools(service)
    for name, spec in specs().items():
        srv.add_checked_tool(name, getattr(tools, name), description=spec.description, annotations=spec.annotations)

    @srv.resource(
        NOTE_URI,
        name="note",
        mime_type="text/markdown",
        description="A note's Markdown body by its vault path, e.g. memory://note/People/Ines%20Okafor.md",
    )
    def note(path: str) -> str:
        try:
            got = service.call(lambda m: m.read(path))
        except VaultMemoryError as exc:
            raise ResourceError(str(exc)) from None
        return got.text

    @srv.resource(
        REVIEW_URI,
        name="review",
        mime_type="text/markdown",
        description="The review note: drafts and conflicts, what fades, what came back (as `review`)",
    )
    def review() -> str:
        try:
            return service.call(lambda m: m.review(write=False)).markdown
        except VaultMemoryError as exc:
            raise ResourceError(str(exc)) from None

    return srv


def serve(config: Config, *, embedder: Embedder | None = None) -> None:
    """Run the server on stdin/stdout until the client disconnects."""
    service = Service(config, embedder=embedder)
    build_server(service).run("stdio")


__all__ = ["CLI_ONLY", "CLI_VERB", "NOTE_URI", "REVIEW_URI", "StrictServer", "build_server", "serve"]
