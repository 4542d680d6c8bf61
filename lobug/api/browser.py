"""The browser rule, written once: the Host and Origin a request to /v1, /ui or /mcp may carry.

A web page can make the browser that shows it send requests to the daemon, and on this machine
the daemon trusts the loopback peer as its owner. Two ways a page borrows that trust (issue 25):

- **DNS rebinding**: a page on a name its author controls (`evil.example`) points the name at
  the daemon's address, and its requests become same-origin. They still carry `Host:
  evil.example`. So the Host must be one of the daemon's own: an IP literal (an address cannot
  be rebound: a LAN client's `Host: 192.168.1.20:8321` passes), `localhost`, this machine's
  host name (and `NAME.local`, its mDNS name), or a name in `api.allowed_hosts`; any port.
- **Cross-origin requests**: a page on another site, or on another port of this machine, posts
  to the daemon. A present `Origin` must be the daemon's own: exactly the host and port the
  request was sent to (its `Host`, which passed the rule above), or a name in
  `api.allowed_hosts` (a reverse proxy's `https://lobug.home`). `Origin: null` is never ours.

No Host or no Origin is not a browser, and passes. `lobug.api.auth` applies the rule to every
route but the frozen firmware routes (those answer any Host; a loopback caller that fails the
rule is only answered as a stranger there).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket

from aiohttp import hdrs, web
from yarl import URL

from lobug import errors, keys
from lobug.api.bodies import is_json

# A Host header: a bracketed IPv6 literal or a name/IPv4 address, and an optional port.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:/\\@?#\[\]]+)(?::(\d{1,5}))?")


def refusal(request: web.Request) -> errors.ApiError | None:
    """403 when the request's Host or Origin is not the daemon's own (see the module)."""
    host = request.headers.get(hdrs.HOST)
    if host and not _allowed_host(request, host):
        return errors.forbidden(
            f"this daemon does not answer to the name in the Host header ({host[:100]!r}); "
            "use its address, localhost, or add the name to api.allowed_hosts"
        )
    origin = request.headers.get(hdrs.ORIGIN)
    if origin is not None and not _own_origin(request, origin, host):
        return errors.forbidden(
            f"a page from another origin ({origin[:100]!r}) may not call this daemon"
        )
    return None


def json_refusal(request: web.Request) -> errors.ApiError | None:
    """415 for a POST that is not `application/json`, with or without a body: a page on another
    origin cannot send that type without a CORS preflight, which the daemon never grants."""
    if request.method != hdrs.METH_POST:
        return None
    sent = request.content_type if hdrs.CONTENT_TYPE in request.headers else ""
    if is_json(sent):
        return None
    return errors.unsupported_media_type(
        f"expected Content-Type application/json (also without a body), got {sent or 'none'}"
    )


def _name_port(value: str) -> tuple[str, int | None] | None:
    """`Host`-style `name[:port]` as (lowercased name without brackets or final dot, port)."""
    found = _HOST.fullmatch(value.strip())
    if found is None:
        return None
    port = found.group(2)
    return found.group(1).strip("[]").lower().rstrip("."), int(port) if port else None


def _allowed_host(request: web.Request, host: str) -> bool:
    parsed = _name_port(host)
    if parsed is None:
        return False
    name = parsed[0]
    return _is_address(name) or name in _machine_names() or name in _configured(request)


def _own_origin(request: web.Request, origin: str, host: str | None) -> bool:
    try:
        url = URL(origin.strip())
    except ValueError:
        return False
    if url.scheme not in ("http", "https") or not url.host or url.path not in ("", "/"):
        return False
    name = url.host.lower().rstrip(".")
    if host and _name_port(host) == (name, url.explicit_port):
        return True  # same origin: the page came from the address the request went to
    return name in _configured(request)


def _configured(request: web.Request) -> frozenset[str]:
    names = request.config_dict[keys.CONFIG].api.allowed_hosts
    return frozenset(parsed[0] for n in names if (parsed := _name_port(n)) is not None)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@functools.cache
def _machine_names() -> frozenset[str]:
    """`localhost`, this machine's host name and its mDNS name (what the docs call
    `lobug.local`): names only this machine's resolver answers, never a stranger's DNS."""
    name = socket.gethostname().lower().rstrip(".")
    return frozenset({"localhost", name, name.split(".")[0] + ".local"} - {""})
