"""Who may call: bearer tokens (or loopback) for /v1, device token and allowlist for firmware.

The middleware decides by the *matched route*, not by the raw path, so an encoded or oddly
spelled path cannot reach a handler without passing the check that route needs:

- firmware routes (`DEVICE_ROUTES`; /health is never guarded): a device that presents the
  configured `api.device_token` in `X-Device-Token` (constant-time compare), or a loopback peer
  while `api.allow_loopback` is on, is the owner's device: its prompts draw on every store.
  Any other caller is known by its device id and address (`lobug.devices`): a device the
  owner paired gets the trust it was given; every other still gets answers (the firmware
  contract is frozen: a device without a token must work) but at `api.unknown_device_trust`
  (default `public`: no stored memory in its prompt), so a stranger on the LAN cannot ask for
  the owner's PIN (issue 16, item 4). A token that is presented but wrong is 401. The device id
  and the device-id allowlist need the JSON body, which only the handler reads (once,
  size-limited), so handlers call `admit_device(request, device_id)` before they store
  anything.
- /v1 routes (except `PUBLIC_V1`): a bearer token, or loopback, as `AccessControl.principal_for`
  rules. A POST must be `application/json`, even without a body (`browser.json_refusal`).
- every route but the firmware routes and /health (/v1, the OpenAI door, /ui, /mcp, /metrics):
  the Host and Origin must be the daemon's own (`lobug.api.browser`), or 403. The firmware
  routes answer any Host (a device may use the Pi's address or any name), but a loopback caller
  that fails the rule is answered as a stranger there, not as the owner.
"""

from __future__ import annotations

import logging

from aiohttp import web

from lobug import errors, keys
from lobug.access import OWNER, Principal, Unauthorized, is_loopback, peer_owner, secret_matches
from lobug.api import browser
from lobug.api.middleware import Handler, error_response
from lobug.config import ApiConfig
from lobug.devices import Caller

log = logging.getLogger(__name__)

DEVICE_TOKEN_HEADER = "X-Device-Token"
DEVICE_ROUTES = frozenset({"/chat/text", "/chat/audio", "/context/sensors"})
ANY_HOST = DEVICE_ROUTES | {"/health"}  # the frozen firmware contract: no Host/Origin rule
V1_PREFIX = "/v1/"
PUBLIC_V1 = frozenset({"/v1/openapi.json"})  # the document of the API is no secret


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    route = _route_of(request)
    try:
        if route in DEVICE_ROUTES:
            request[keys.DEVICE_TRUST] = _device_trust(request)
        elif route not in ANY_HOST:
            if (refused := browser.refusal(request)) is not None:
                log.warning("refused %s %s from %s: %s", request.method, request.path,
                            request.remote, refused.message)  # fmt: skip
                return error_response(refused)
            if (route + "/").startswith(V1_PREFIX) and route not in PUBLIC_V1:
                request[keys.PRINCIPAL] = _authenticate(request)
                if (refused := browser.json_refusal(request)) is not None:
                    return error_response(refused)
    except Unauthorized as exc:
        response = error_response(exc)
        response.headers["WWW-Authenticate"] = exc.challenge
        return response
    return await handler(request)


def principal_of(request: web.Request) -> Principal:
    """The caller of a /v1 handler (set by `auth_middleware`)."""
    try:
        return request[keys.PRINCIPAL]
    except KeyError:
        raise RuntimeError(f"{request.path} is not behind auth_middleware") from None


def require_device(request: web.Request, device_id: str) -> None:
    """403 unless `device_id` is in `api.device_allowlist` (an empty allowlist allows all)."""
    allowlist = request.app[keys.CONFIG].api.device_allowlist
    if allowlist and device_id not in allowlist:
        log.warning("refused device %r on %s: not in api.device_allowlist", device_id, request.path)
        raise errors.ApiError(
            403,
            "forbidden",
            f"device {device_id!r} is not allowed (api.device_allowlist)",
            details={"device_id": device_id},
        )


def _route_of(request: web.Request) -> str:
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else request.path


def _device_trust(request: web.Request) -> str | None:
    """The trust a token or loopback gives a firmware route's caller; None when it is known
    only by its address (`admit_device` asks the device list)."""
    api = request.app[keys.CONFIG].api
    presented = request.headers.get(DEVICE_TOKEN_HEADER)
    if presented is not None:
        if api.device_token is None or not secret_matches(presented, api.device_token):
            log.warning("refused %s %s from %s: bad device token", request.method,
                        request.path, request.remote)  # fmt: skip
            raise Unauthorized(
                f"the {DEVICE_TOKEN_HEADER} header does not match api.device_token",
                'DeviceToken realm="lobug"',
            )
        return "full"
    if browser.refusal(request) is not None:  # a page on a rebound name or another origin
        return api.unknown_device_trust  # never recorded, never paired
    if api.allow_loopback and is_loopback(request.remote):
        return "full"
    return None


def peer_trust(api: ApiConfig, remote: str | None, *, trusted: bool = False) -> str:
    """The trust of a caller known only by its address (no token): a loopback peer while
    `api.allow_loopback` is on, or one the door's own config trusts, is the owner's; anyone
    else is answered at `api.unknown_device_trust`. Firmware routes and Wyoming use it."""
    if trusted or (api.allow_loopback and is_loopback(remote)):
        return "full"
    return api.unknown_device_trust


async def admit_device(request: web.Request, device_id: str, *, turn: bool) -> Caller:
    """A firmware route's caller, once its handler has read the device id: refused (403) when
    the id is not in `api.device_allowlist`; the owner's with the device token or from
    loopback; else known by its id and address (`lobug.devices`: recorded, paired in an open
    window, a stranger at `api.unknown_device_trust` until paired). Call it before storing
    anything; `turn`: the request is one the device talks in (counted in the list)."""
    require_device(request, device_id)
    trust = request.get(keys.DEVICE_TRUST, "public")
    if trust is not None:
        return Caller(trust, OWNER if trust == "full" else peer_owner(request.remote))
    unknown = request.app[keys.CONFIG].api.unknown_device_trust
    return await request.app[keys.DEVICES].admit(
        device_id, request.remote, unknown_trust=unknown, turn=turn
    )


def _authenticate(request: web.Request) -> Principal:
    authorization = request.headers.get("Authorization")
    return request.app[keys.ACCESS].principal_for(authorization, request.remote)
