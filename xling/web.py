"""What xling's two servers (`xling annotate`'s page, `xling serve`'s tagging) share: the address they serve on
and the checks every request passes.

Any web page a user opens can send requests to 127.0.0.1, so (as Jupyter and TensorBoard do) a server answers
only a `Host` it serves on (no DNS rebinding), takes JSON only (a page elsewhere cannot post it without the
browser asking first, which these servers never grant) and refuses a request from another `Origin`; bodies are
small and shallow. Serving anywhere but this machine's own address needs a token.
"""

from __future__ import annotations

import hmac
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from xling.errors import XlingError
from xling.fileio import parse_json
from xling.options import opt

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
ANY_ADDRESS = ("0.0.0.0", "::", "")  # serving on every interface: only the token guards it
# A Host header: a name or IPv4 address, or an IPv6 one in brackets, and a port; nothing else (no user@, no path)
HOST_HEADER = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::([0-9]{1,5}))?")
TOKEN_HEADER = "X-Xling-Token"
IDLE_SECONDS = 10


@dataclass
class Address:
    """Where a server listens, and the secret it asks for when others can reach it."""

    host: str = opt("127.0.0.1", "Address to serve on; any other than this machine's own needs --token.")
    port: int = opt(8321, "Port to serve on.")
    token: str | None = opt(None, "A secret every request must carry (required with another --host).")

    def __post_init__(self):
        if not 1 <= self.port <= 65535:
            raise XlingError(f"port must be from 1 to 65535, not {self.port}")
        if self.host not in LOCAL_HOSTS and not self.token:
            raise XlingError(f"serving on {self.host} lets others reach it: give --token SECRET as well")

    def url(self, port: int | None = None, with_token: bool = False) -> str:
        """The address to open (`port`: the one the server got); `with_token`, the secret in it, as it is
        announced (never as it is written down)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        secret = f"?token={self.token}" if with_token and self.token else ""
        return f"http://{host}:{port or self.port}/{secret}"


class Refused(XlingError):
    """A request a server does not take; `status` is the HTTP status it answers, `details` what else the client
    needs to offer a choice."""

    def __init__(self, message: str, status: int = 422, details: dict | None = None):
        super().__init__(message)
        self.status, self.details = status, details or {}


def host_named(header: str) -> str | None:
    """The host a Host header names, lower-cased, without brackets or port; None for one that is not `host[:port]`.
    Compared here rather than by werkzeug's `host_is_trusted`, whose 3.1.9 cuts a trusted `[::1]` at its colon."""
    matched = HOST_HEADER.fullmatch(header.lower())
    if matched is None or int(matched[2] or 0) > 65535:
        return None
    return matched[1].strip("[]")


def refusal(address: Address, request, exempt: bool = False) -> str | None:
    """Why a Flask `request` is refused (403), or None: another Host, no token (unless `exempt`), or a change
    from another origin."""
    trusted = {*LOCAL_HOSTS, address.host.lower().strip("[]")}
    if address.host not in ANY_ADDRESS and host_named(request.host) not in trusted:
        return f"this server answers only {address.host}, not {request.host!r}"
    if address.token and not exempt:
        given = request.headers.get(TOKEN_HEADER) or request.args.get("token") or ""
        if not hmac.compare_digest(given.encode(), address.token.encode()):
            return "this server needs its token: use the address it printed"
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return None
    own = f"{request.scheme}://{request.host}".lower()
    origin = request.headers.get("Origin") or _origin_of(request.headers.get("Referer"))
    if origin is not None and origin.lower() != own:
        return f"a request from {origin} is refused here: only this server's own pages may send one"
    return None


def _origin_of(referer: str | None) -> str | None:
    if not referer:
        return None
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}"


def json_body(request):
    """A Flask `request`'s JSON, refused in one line (4xx) if it is not JSON, too large (Flask's 413) or nested
    too deeply for Python's parser; its shape is the caller's to check."""
    if request.mimetype != "application/json":
        raise Refused("send JSON (Content-Type: application/json)", 415)
    data = request.get_data(cache=False)
    try:
        return parse_json(data) if data.strip() else None
    except RecursionError:
        raise Refused("the JSON is nested too deeply", 400) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise Refused(f"the body is not JSON: {err}", 400) from None


def check_address(host: str, port: int) -> None:
    """The address can be served on: the host is known and the port free (OSError otherwise)."""
    family, kind, protocol, _, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will
        probe.bind(address)


def server_on(address: Address, app):
    """werkzeug's threaded server for `app` on `address`, or one line saying why it cannot listen there. Closing it
    waits for the requests in progress (a thread left writing its log line as the interpreter exits aborts it),
    and a connection silent for `IDLE_SECONDS` is closed, so that neither an idle keep-alive nor a slow sender
    holds a thread or the close."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    handler = type("RequestHandler", (WSGIRequestHandler,), {"timeout": IDLE_SECONDS})
    try:
        check_address(address.host, address.port)  # werkzeug says a port in use in its own words, and exits
        server = make_server(address.host, address.port, app, threaded=True, request_handler=handler)
    except OSError as err:
        raise XlingError(
            f"cannot serve on {address.host} port {address.port}: {err.strerror or err}; give another --host or --port"
        ) from None
    server.daemon_threads, server.block_on_close = False, True
    return server
