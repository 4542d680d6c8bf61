"""Who calls /mcp: the same bearer tokens and loopback rule as /v1 (lobug/api/auth.py).

`Authorization: Bearer <token>` names the principal (its trust level and agent, so its stores
and category allowlist). Without the header a loopback peer is the full-trust agent "local"
while `api.allow_loopback` is on. A token that is presented but wrong is 401 even from loopback.

MCP's streamable HTTP is meant to be reachable from browsers, so a page must not borrow the
loopback trust: the daemon's auth middleware applies /v1's browser rule (`lobug.api.browser`)
to /mcp before this runs. A Host that is not one of the daemon's names (DNS rebinding) or an
`Origin` that is not the daemon's own (another site, or another port of this machine: not
every `http://localhost:<port>` is us) is 403, token or not, as the MCP transport requires.
"""

from __future__ import annotations

from aiohttp import web

from lobug import keys
from lobug.access import Principal


def authenticate(request: web.Request) -> Principal:
    """The caller of an /mcp request (AccessControl.principal_for, the /v1 rule), or
    `Unauthorized` (401)."""
    return request.app[keys.ACCESS].principal_for(
        request.headers.get("Authorization"), request.remote
    )
