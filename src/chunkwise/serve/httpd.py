"""JSON over HTTP for a `Service`: the standard library's `ThreadingHTTPServer`, one thread
a request, no dependency.

    GET  /health                       the collection, its size, the model
    GET  /sources[?contains=TEXT]      every source with its format and record count
    GET  /search?query=TEXT&k=5&mode=hybrid&where=JSON&contains=TEXT&expand=section
    POST /search   {"query": TEXT, "k": 5, "mode": ..., "where": {...}, "contains": ...}
    GET  /fetch?id=ID[&section=false&tokens=512]
    POST /fetch    {"id": ID, "section": true, "tokens": 512}

Every answer is a JSON object; an error is `{"error": ONE LINE, "status": N}` with that
status: 400 a bad request (malformed JSON, an unknown or out-of-bounds parameter), 403 a
Host that is not a loopback name on a loopback server (DNS rebinding), 404 an unknown path
or id, 405 any other method (it is read-only: nothing is written through
it), 411 a body without a length, 413 a body over `Limits.body`, 503 the store failing, 500
anything else (logged here with its traceback, never sent).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping
from urllib.parse import parse_qsl, urlsplit

from ..errors import ChunkwiseError, ConfigError, StoreError
from .service import NotFound, Service

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "Server", "is_loopback", "make_server"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: seconds a connection may stay silent before it is closed (a client that opens a
#: connection and sends nothing does not hold a thread for ever)
IDLE_TIMEOUT = 30.0
#: after refusing a body unread: seconds and bytes still read (and dropped) before closing
LINGER, LINGER_BYTES = 2.0, 16 * 1024 ** 2
#: the endpoints, and the methods each answers
ROUTES: dict[str, tuple[str, ...]] = {"/health": ("GET",), "/sources": ("GET",),
                                      "/search": ("GET", "POST"), "/fetch": ("GET", "POST")}


class Server(ThreadingHTTPServer):
    """The HTTP server of one `Service`."""

    daemon_threads = True  # a request in flight does not keep the process alive on exit
    block_on_close = False

    def __init__(self, address: tuple[str, int], service: Service) -> None:
        self.service = service
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


def make_server(service: Service, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> Server:
    """A `Server` bound to `host`:`port` (0: a free port), not yet serving: call
    `serve_forever()` (and `shutdown()` from another thread)."""
    return Server((host, port), service)


class Handler(BaseHTTPRequestHandler):
    server: Server
    server_version = "chunkwise"
    protocol_version = "HTTP/1.1"
    # a request line too malformed to name its version is answered with a status line and
    # headers (http.server's default, HTTP/0.9, would send the JSON bare)
    default_request_version = "HTTP/1.0"
    _unread = False  # set when a refusal leaves a body unread (see `finish`)
    timeout = IDLE_TIMEOUT

    # -- methods --------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._answer("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._answer("POST")

    def _refuse(self) -> None:
        self._drain()
        self._send_error(HTTPStatus.METHOD_NOT_ALLOWED,
                         f"{self.command} is not served: this server is read-only "
                         "(GET and POST of /search, /fetch, /sources, /health)",
                         allow=", ".join(ROUTES.get(self._path(), ("GET", "POST"))))

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _refuse

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """http.server's own errors (a malformed request line, an unknown method, headers
        too long) as JSON like the rest."""
        self.close_connection = True
        self._send_error(code, message or HTTPStatus(code).phrase)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        log.info("%s %s", self.address_string(), format % args)

    # -- one request ----------------------------------------------------------------------
    def _path(self) -> str:
        return urlsplit(self.path).path.rstrip("/") or "/"

    def _answer(self, method: str) -> None:
        path = self._path()
        if not self._host_allowed():
            self._drain()
            return self._send_error(HTTPStatus.FORBIDDEN,
                                    f"Host {self.headers.get('Host', '')!r:.80} is not this "
                                    "server's: a server on a loopback address answers "
                                    "localhost, 127.0.0.1 and ::1 only (DNS rebinding)")
        methods = ROUTES.get(path)
        if methods is None:
            self._drain()
            return self._send_error(HTTPStatus.NOT_FOUND,
                                    f"no endpoint {path!r:.80}: use {', '.join(ROUTES)}")
        if method not in methods:
            self._drain()
            return self._send_error(HTTPStatus.METHOD_NOT_ALLOWED,
                                    f"{path} answers {' and '.join(methods)} only",
                                    allow=", ".join(methods))
        try:
            params = self._body() if method == "POST" else self._query()
        except _Refused as e:
            return self._send_error(e.status, str(e))
        handler: Callable[[Mapping[str, Any]], dict[str, Any]] = {
            "/health": self.server.service.health, "/sources": self.server.service.sources,
            "/search": self.server.service.search, "/fetch": self.server.service.fetch}[path]
        try:
            out = handler(params)
        except ConfigError as e:
            return self._send_error(HTTPStatus.BAD_REQUEST, _one_line(e))
        except NotFound as e:
            return self._send_error(HTTPStatus.NOT_FOUND, _one_line(e))
        except StoreError as e:
            log.warning("%s: %s", path, e)
            return self._send_error(HTTPStatus.SERVICE_UNAVAILABLE, _one_line(e))
        except ChunkwiseError as e:
            return self._send_error(HTTPStatus.BAD_REQUEST, _one_line(e))
        except Exception as e:  # a bug: logged in full here, one line there
            log.exception("%s failed", path)
            return self._send_error(HTTPStatus.INTERNAL_SERVER_ERROR,
                                    f"internal error ({type(e).__name__}); the server log has "
                                    "the details")
        self._send(HTTPStatus.OK, out)

    def _host_allowed(self) -> bool:
        """A server listening on a loopback address answers requests addressed to a
        loopback name only: a web page whose name an attacker points at 127.0.0.1 (DNS
        rebinding) sends its own name as Host and is refused."""
        if not is_loopback(str(self.server.server_address[0])):
            return True
        host = self.headers.get("Host")
        if host is None:  # HTTP/1.0 without one: not a browser
            return True
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return is_loopback(name.strip("[]"))

    def _query(self) -> dict[str, Any]:
        """The query string's parameters; the numbers as numbers, `where` and `section`
        decoded from JSON text."""
        try:
            pairs = parse_qsl(urlsplit(self.path).query, keep_blank_values=True,
                              strict_parsing=False, max_num_fields=32)
        except ValueError as e:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed query string: {e}") from e
        params: dict[str, Any] = {}
        for key, value in pairs:
            if key in params:
                raise _Refused(HTTPStatus.BAD_REQUEST, f"parameter {key!r:.40} given twice")
            params[key] = value
        for key in ("k", "tokens", "expand_tokens"):  # numbers, as a JSON body has them
            if params.get(key, "").isdigit():
                params[key] = int(params[key])
        for key in ("where", "section"):
            if key in params:
                try:
                    params[key] = json.loads(params[key])
                except json.JSONDecodeError as e:
                    raise _Refused(HTTPStatus.BAD_REQUEST,
                                   f"{key} is not valid JSON: {e}") from e
        if "q" in params and "query" not in params:  # the short spelling
            params["query"] = params.pop("q")
        return params

    def _body(self) -> dict[str, Any]:
        """The JSON object of a POST body, within `Limits.body` bytes."""
        limit = self.server.service.limits.body
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = self._unread = True
            raise _Refused(HTTPStatus.LENGTH_REQUIRED,
                           "send the body with a Content-Length, not chunked")
        raw = self.headers.get("Content-Length")
        if raw is None:
            raise _Refused(HTTPStatus.LENGTH_REQUIRED, "a POST needs a Content-Length")
        try:
            length = int(raw)
            if length < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise _Refused(HTTPStatus.BAD_REQUEST, f"bad Content-Length {raw!r:.40}") from None
        if length > limit:
            self.close_connection = True  # the body is not read: the connection cannot go on
            self._unread = True
            raise _Refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                           f"the body is {length} bytes; at most {limit}")
        data = self.rfile.read(length)
        try:
            params = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"the body is not UTF-8: {e}") from e
        except json.JSONDecodeError as e:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed JSON: {e}") from e
        if not isinstance(params, dict):
            raise _Refused(HTTPStatus.BAD_REQUEST,
                           f"the body must be a JSON object, not {type(params).__name__}")
        return params

    def finish(self) -> None:
        """After a refusal that left a body unread, read (and drop) what the client still
        sends for a moment before closing: closing with unread bytes resets the connection,
        and the client may lose the answer that says why."""
        super().finish()
        if not self._unread:
            return
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(LINGER)
            left = LINGER_BYTES
            while left > 0 and (got := self.connection.recv(min(left, 65536))):
                left -= len(got)
        except OSError:
            pass

    def _drain(self) -> None:
        """Read (and drop) a small body of a request that is refused, so that the
        connection can serve the next one; a large or unmeasured one closes it."""
        raw = self.headers.get("Content-Length")
        if raw and raw.isdigit() and int(raw) <= self.server.service.limits.body:
            self.rfile.read(int(raw))
        elif raw or self.headers.get("Transfer-Encoding"):
            self.close_connection = self._unread = True

    # -- answers --------------------------------------------------------------------------
    def _send_error(self, status: int, message: str, *, allow: str | None = None) -> None:
        self._send(status, {"error": message, "status": int(status)}, allow=allow)

    def _send(self, status: int, body: Mapping[str, Any], *, allow: str | None = None) -> None:
        try:
            data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError):  # a value JSON cannot hold (NaN in stored metadata)
            log.exception("%s: the answer is not JSON", self._path())
            status, allow = HTTPStatus.INTERNAL_SERVER_ERROR, None
            data = json.dumps({"error": "internal error: the answer could not be written as "
                               "JSON; the server log has the details",
                               "status": int(status)}).encode("utf-8")
        self.send_response(int(status))
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        if allow:
            self.send_header("Allow", allow)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


class _Refused(Exception):
    """A request refused before the service sees it (its status and reason)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine's loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())
