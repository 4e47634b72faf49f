"""`chunkwise serve`: a long-lived, read-only process that keeps the embedding model and a
collection open and answers queries, one module a concern: `service` (the four requests,
checked and bounded), `httpd` (JSON over HTTP, the standard library's server) and
`mcp_tools` (the same as MCP tools, on the optional `mcp` SDK). Nothing heavy is imported
until a `Service` is built."""

from .service import LIMITS, Limits, NotFound, Service

__all__ = ["LIMITS", "Limits", "NotFound", "Service"]
