"""Signing in with an API token (kept in an HttpOnly cookie) and signing out."""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from lobug import keys
from lobug.ui import auth, pages

routes = web.RouteTableDef()


def safe_next(raw: object) -> str:
    """Where to go after signing in: a path inside /ui/ only, never another site."""
    target = raw if isinstance(raw, str) else ""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith(auth.COOKIE_PATH) or "\\" in target:
        return auth.COOKIE_PATH
    return target


async def login_page(
    request: web.Request, message: str = "", *, status: int = 200, next_url: str | None = None
) -> web.Response:
    """The login form; after signing in the browser goes back to the page it asked for."""
    if next_url is None:
        next_url = request.path_qs if request.method == "GET" else ""
    context = {
        "message": message,
        "next": safe_next(next_url),
        "csrf": auth.csrf_token(request, anonymous=True),
    }
    return pages.render(request, "login.html", context, status=status)


@routes.get("/login", name="login")
async def login_form(request: web.Request) -> web.Response:
    return await login_page(request, next_url=request.query.get("next", auth.COOKIE_PATH))


@routes.post("/login", name="login")
async def login(request: web.Request) -> web.Response:
    form = await request.post()
    token = form.get("token")
    token = token.strip() if isinstance(token, str) else ""
    principal = request.config_dict[keys.ACCESS].authenticate(token[: auth.MAX_TOKEN_CHARS])
    if principal is None:
        return await login_page(
            request, "That token is not valid.", status=401, next_url=str(form.get("next", ""))
        )
    response = web.HTTPSeeOther(safe_next(form.get("next")))
    auth.set_login_cookie(response, token, secure=request.secure)
    raise response


@routes.post("/logout", name="logout")
async def logout(request: web.Request) -> web.Response:
    response = web.HTTPSeeOther("/ui/login")
    auth.clear_login_cookie(response)
    raise response
