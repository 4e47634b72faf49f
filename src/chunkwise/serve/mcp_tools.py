"""The MCP face of a `Service`: tools `search`, `fetch` and `list_sources` on the official
MCP Python SDK (`mcp` >= 2.3, its `MCPServer`), over stdio or streamable HTTP.

    chunkwise serve --db chunkwise-db --mcp stdio     # an agent spawns it
    chunkwise serve --db chunkwise-db --mcp http      # http://127.0.0.1:8765/mcp

The tools take the parameters of the JSON endpoints (`chunkwise.serve.service`), with the
same bounds, and return the same objects as structured content. All three are marked
read-only; a bad argument is a tool error with one line, never a traceback. `mcp` is an
optional dependency (`pip install 'chunkwise[serve]'`), imported here only.
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import ChunkwiseError, MissingDependencyError
from .service import DEFAULT_SECTION_TOKENS, Service

__all__ = ["TRANSPORTS", "build", "require_sdk", "run"]

#: `--mcp` values and the SDK's names for them
TRANSPORTS = {"stdio": "stdio", "http": "streamable-http"}
#: where the streamable HTTP transport answers
MCP_PATH = "/mcp"

INSTRUCTIONS = (
    "Search a chunkwise collection of documents (Markdown, HTML, PDF, code, tables, ...). "
    "`search` returns the best chunks for a question, each with its source, section path, "
    "pages and id (hybrid: meaning and exact words; `where` filters on metadata such as "
    "{\"format\": \"pdf\"} or {\"source\": \"docs/a.md\"}). `fetch` returns one chunk by id "
    "with its enclosing section, for more context. `list_sources` lists the documents.")


def require_sdk() -> None:
    """A `MissingDependencyError` naming the extra unless the MCP SDK (2.x) imports."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as e:  # mcp missing, or a 1.x release (no mcp.server.mcpserver)
        raise MissingDependencyError("mcp >= 2.3 (the MCP Python SDK)", "serve") from e


def build(service: Service) -> Any:
    """An `MCPServer` whose tools call `service`."""
    require_sdk()
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    app = MCPServer("chunkwise", instructions=INSTRUCTIONS, version=_version(),
                    log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                idempotent_hint=True, open_world_hint=False)

    def call(method: Any, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return method({k: v for k, v in params.items() if v is not None})
        except ChunkwiseError as e:
            raise ToolError(" ".join(str(e).split())) from e

    @app.tool(annotations=read_only)
    def search(query: str, k: int = 5, mode: Literal["hybrid", "dense", "lexical"] = "hybrid",
               where: dict[str, Any] | None = None, contains: str | None = None,
               expand_section: bool = False) -> dict[str, Any]:
        """The k best chunks for a question (at most 100): source, section_path, pages,
        text, id, and how each was found. where: a Chroma metadata filter, e.g.
        {"format": "pdf"}; contains: only chunks whose text holds this exact string;
        expand_section: return each hit's enclosing section instead of the bare chunk."""
        return call(service.search, {"query": query, "k": k, "mode": mode, "where": where,
                                     "contains": contains,
                                     "expand": "section" if expand_section else None})

    @app.tool(annotations=read_only)
    def fetch(id: str, section: bool = True,  # noqa: A002 - the parameter a client sees
              tokens: int = DEFAULT_SECTION_TOKENS) -> dict[str, Any]:
        """One chunk by its id (from search), and with section=true the part of its
        enclosing section around it, within `tokens` tokens."""
        return call(service.fetch, {"id": id, "section": section, "tokens": tokens})

    @app.tool(annotations=read_only)
    def list_sources(contains: str | None = None) -> dict[str, Any]:
        """Every document in the collection (its source name, format and record count);
        contains: only names holding this text."""
        return call(service.sources, {"contains": contains})

    return app


def run(service: Service, transport: str, *, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve `service`'s tools on `transport` (`stdio` or `http`) until interrupted (stdio:
    until the client closes the pipe)."""
    app = build(service)
    if transport == "stdio":
        app.run("stdio")
        return
    from mcp.server.transport_security import TransportSecuritySettings

    # DNS rebinding protection: only this server's own host names may call it
    hosts = [f"{h}:{port}" for h in ("127.0.0.1", "localhost", host)]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=hosts,
                                         allowed_origins=[f"http://{h}" for h in hosts])
    app.run("streamable-http", host=host, port=port, streamable_http_path=MCP_PATH,
            max_request_body_size=service.limits.body, transport_security=security)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chunkwise")
    except PackageNotFoundError:  # pragma: no cover - a source tree
        return "unknown"
