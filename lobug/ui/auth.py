"""Who is browsing: the same tokens as /v1 (a cookie set by the login form), or loopback.

The rule is /v1's (lobug.api.auth), applied to a browser: a token presented in the
`lobug_ui` cookie (or an `Authorization: Bearer` header) names the principal and a wrong one
is refused, never quietly upgraded to loopback; without one, a loopback peer is the full-trust
agent "local" while `api.allow_loopback` is on. Anyone else gets the login form (401).

The cookie holds the token itself (HttpOnly, so page script never sees it; SameSite=Strict,
so no other site's page sends it). Every POST form carries a CSRF token: an HMAC, under a key
made when the daemon starts, of who is signed in (the token, the loopback owner, or no one on
the login form) and of this browser's session (a random `lobug_ui_session` cookie), so a page
elsewhere cannot forge one and the login form's token is worth nothing to a signed-in owner.
The Host and Origin of every request are checked before this, by `lobug.api.browser`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from aiohttp import web

from lobug import errors, keys
from lobug.access import Principal, is_loopback, loopback_principal

COOKIE = "lobug_ui"
SESSION_COOKIE = "lobug_ui_session"
CSRF_FIELD = "csrf_token"
COOKIE_PATH = "/ui/"
MAX_TOKEN_CHARS = 512
CSRF_KEY: web.AppKey[bytes] = web.AppKey("ui_csrf_key")
SESSION: web.RequestKey[str] = web.RequestKey("ui_session")
_SESSION_ID = re.compile(r"[0-9a-f]{32}")


class LoginRequired(errors.ApiError):
    """401 for the browser: the page answers with the login form, not a JSON body."""

    def __init__(self, message: str, *, clear_cookie: bool = False) -> None:
        super().__init__(401, "unauthorized", message)
        self.clear_cookie = clear_cookie


def presented_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization")
    if header is not None:
        scheme, _, token = header.strip().partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""
    return request.cookies.get(COOKIE)


def authenticate(request: web.Request) -> Principal:
    """The principal of this browser, or LoginRequired."""
    access = request.config_dict[keys.ACCESS]
    token = presented_token(request)
    if token is not None:
        principal = access.authenticate(token[:MAX_TOKEN_CHARS]) if token else None
        if principal is None:
            raise LoginRequired("That token is not valid. Sign in again.", clear_cookie=True)
        return principal
    if access.allow_loopback and is_loopback(request.remote):
        return loopback_principal()
    raise LoginRequired("Sign in with an API token to see the memory.")


def csrf_token(request: web.Request, *, anonymous: bool = False) -> str:
    """The CSRF token of whoever this browser is signed in as (or of no one, for the login),
    in this browser's session."""
    if anonymous:
        who = "anonymous"
    elif token := presented_token(request):
        who = "token:" + hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
    else:
        who = "loopback"
    key = request.config_dict[CSRF_KEY]
    message = f"csrf:{who}:{session_of(request)}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def session_of(request: web.Request) -> str:
    """This browser's session id: its cookie's, or a new one (`keep_session` sends it)."""
    if SESSION not in request:
        sent = request.cookies.get(SESSION_COOKIE, "")
        request[SESSION] = sent if _SESSION_ID.fullmatch(sent) else secrets.token_hex(16)
    return request[SESSION]


def keep_session(request: web.Request, response: web.StreamResponse) -> None:
    """Set the session cookie a page's CSRF token was made with, when the browser lacks it."""
    session = request.get(SESSION)
    if session is not None and request.cookies.get(SESSION_COOKIE) != session:
        response.set_cookie(SESSION_COOKIE, session, path=COOKIE_PATH, httponly=True,
                            samesite="Strict", secure=request.secure)  # fmt: skip


async def check_csrf(request: web.Request, *, anonymous: bool = False) -> None:
    """Refuse (403) a POST whose form lacks this browser's CSRF token."""
    form = await request.post()
    sent = form.get(CSRF_FIELD)
    if not isinstance(sent, str) or not hmac.compare_digest(
        sent, csrf_token(request, anonymous=anonymous)
    ):
        raise errors.forbidden(
            "the form is missing its security token or it is stale; reload the page and retry"
        )


def set_login_cookie(response: web.StreamResponse, token: str, *, secure: bool) -> None:
    response.set_cookie(
        COOKIE, token, path=COOKIE_PATH, httponly=True, samesite="Strict", secure=secure
    )


def clear_login_cookie(response: web.StreamResponse) -> None:
    response.del_cookie(COOKIE, path=COOKIE_PATH)
