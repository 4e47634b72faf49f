"""The `serve` command: `chunkwise.serve` on the command line (a `Service`, then its HTTP
server or its MCP tools until interrupted).

Its `--host`/`--port` are where it listens; the Chroma server a collection may live on is
`--chroma-host`/`--chroma-port` here (the other store commands' `--host`/`--port`).
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from .options import add_command, lexical_option, store_location

EXAMPLE = ("chunkwise serve --db chunkwise-db --port 8765\n"
           "  curl -s 'http://127.0.0.1:8765/search?query=trailing+slash&k=3'\n"
           "  chunkwise serve --db chunkwise-db --mcp stdio")


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers, "serve", cmd_serve,
        help="answer queries over HTTP or MCP, the model loaded once",
        description="Open a collection read-only, load its embedding model once and answer "
                    "queries until interrupted: JSON over HTTP (GET/POST /search, /fetch, "
                    "GET /sources, /health) or, with --mcp, as an MCP server with the tools "
                    "search, fetch and list_sources (pip install 'chunkwise[serve]'). "
                    "Requests are bounded (a 64 KiB body, k <= 100, a 4,096-character "
                    "query); anything but a read is refused. See docs/serve.md.",
        examples=EXAMPLE)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    p.add_argument("--mcp", choices=("stdio", "http"), default=None,
                   help="serve MCP instead of the JSON endpoints: stdio (an agent runs this "
                        "command) or http (streamable HTTP at /mcp on --host/--port)")
    g = p.add_argument_group("store")
    g.add_argument("--db", default=None, metavar="DIR",
                   help="embedded Chroma database directory (default ./chunkwise-db)")
    g.add_argument("--chroma-host", default=None, metavar="HOST",
                   help="a Chroma server (`chroma run`) instead of --db")
    g.add_argument("--chroma-port", type=int, default=None, metavar="PORT",
                   help="its port (default 8000)")
    g.add_argument("--collection", default="chunkwise", metavar="NAME",
                   help="collection name (default chunkwise)")
    g.add_argument("--retries", type=int, default=5, metavar="N",
                   help="retries when the Chroma server is unreachable (default 5)")
    g.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up a Chroma server call after this long (default 60)")
    g.add_argument("--lexical-index", default=None, metavar="FILE",
                   help="the collection's word index (default: inside --db; with "
                        "--chroma-host, the file ingest wrote it to)")
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="embedder for queries (default: the one the collection was built with)")


def cmd_serve(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..serve import Service

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be 0 to 65535, got {args.port}")
    if args.mcp is not None:  # a missing SDK is said before the model is loaded
        from ..serve.mcp_tools import require_sdk

        require_sdk()
    store = argparse.Namespace(**{**vars(args), "host": args.chroma_host,
                                  "port": args.chroma_port})
    service = Service(embedder=args.embedder, lexical=lexical_option(args),
                      **store_location(store))
    from ..serve.httpd import is_loopback

    if not is_loopback(args.host):
        print(f"warning: listening on {args.host}: anyone who can reach it can read the "
              "collection (there is no authentication)", file=sys.stderr)
    if args.mcp is not None:
        from ..serve.mcp_tools import MCP_PATH, run

        if args.mcp == "http":
            print(f"chunkwise: MCP on http://{args.host}:{args.port}{MCP_PATH} "
                  f"({service.name}, {service.health()['records']} records)", file=sys.stderr)
        try:
            run(service, args.mcp, host=args.host, port=args.port)
        except KeyboardInterrupt:
            pass
        return 0
    from ..serve.httpd import make_server

    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops it as Ctrl-C does: exit 0
    try:
        server = make_server(service, args.host, args.port)
    except OSError as e:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from e
    print(f"chunkwise: serving {service.name} ({service.health()['records']} records) on "
          f"{server.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
