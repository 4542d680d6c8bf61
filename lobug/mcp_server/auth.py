"""Who calls /mcp: the same bearer tokens and loopback rule as /v1 (lobug/api/auth.py).

`Authorization: Bearer <token>` names the principal (its trust level and agent, so its stores
and category allowlist). Without the header a loopback peer is the full-trust agent "local"
while `api.allow_loopback` is on. A token that is presented but wrong is 401 even from loopback.

One thing /v1 does not need: MCP's streamable HTTP is meant to be reachable from browsers, so
a page from another origin (DNS rebinding) must not borrow the loopback trust. A request with an
`Origin` header that is not a loopback origin must carry a token.
"""

from __future__ import annotations

import logging

from aiohttp import web
from yarl import URL

from lobug import errors, keys
from lobug.access import Principal, is_loopback

log = logging.getLogger(__name__)

LOCAL_HOSTS = frozenset({"localhost"})


def authenticate(request: web.Request) -> Principal:
    """The caller of an /mcp request (AccessControl.principal_for, the /v1 rule), or
    `Unauthorized` (401); 403 for a page from another origin without a token."""
    access = request.app[keys.ACCESS]
    header = request.headers.get("Authorization")
    loopback_owner = header is None and access.allow_loopback and is_loopback(request.remote)
    if loopback_owner and not local_origin(request.headers.get("Origin")):
        log.warning("refused %s %s: a page from %r without a token", request.method,
                    request.path, request.headers.get("Origin"))  # fmt: skip
        raise errors.forbidden(
            "a browser page from another origin must present a bearer token "
            "(Authorization: Bearer <token>)"
        )
    return access.principal_for(header, request.remote)


def local_origin(origin: str | None) -> bool:
    """No Origin (not a browser) or a page served from this machine."""
    if origin is None:
        return True
    try:
        host = URL(origin.strip()).host
    except ValueError:
        return False
    return host is not None and (host.lower() in LOCAL_HOSTS or is_loopback(host))
