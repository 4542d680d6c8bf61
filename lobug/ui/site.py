"""The memory browser as an aiohttp sub-application at /ui/: templates, static files, guard."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib import resources

import aiohttp_jinja2
import jinja2
from aiohttp import web

from lobug import errors, keys
from lobug.ui import (
    auth,
    browse_routes,
    devices_routes,
    login_routes,
    memory_routes,
    pages,
    proposal_routes,
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PREFIX = "/ui"
HEADERS = {
    # Everything a page needs is served from here: no inline script, no frames, no referrer
    # to other sites.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes Chrome send Origin: null
    "Cache-Control": "no-store",
}


def setup(app: web.Application) -> None:
    """Mount the browser under /ui/ (and send /ui there)."""

    async def to_ui(request: web.Request) -> web.Response:
        raise web.HTTPFound(PREFIX + "/")

    app.router.add_get(PREFIX, to_ui)  # before the sub-app, whose prefix would match first
    app.add_subapp(PREFIX, create_ui_app())


def create_ui_app() -> web.Application:
    ui = web.Application(middlewares=[ui_middleware])
    ui[auth.CSRF_KEY] = secrets.token_bytes(32)  # made anew each time the daemon starts
    env = aiohttp_jinja2.setup(
        ui,
        loader=jinja2.PackageLoader("lobug.ui", "templates"),
        autoescape=True,
    )
    env.filters["when"] = when
    for table in (browse_routes.routes, memory_routes.routes, proposal_routes.routes,
                  devices_routes.routes, login_routes.routes):  # fmt: skip
        ui.add_routes(table)
    ui.router.add_static("/static/", str(resources.files("lobug.ui") / "static"), name="static")
    return ui


@web.middleware
async def ui_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Sign-in and CSRF checks, security headers, and errors as pages instead of JSON."""
    try:
        name = request.match_info.route.name
        if name not in pages.PUBLIC:
            request[keys.PRINCIPAL] = auth.authenticate(request)
        if request.method == "POST":
            await auth.check_csrf(request, anonymous=name in pages.PUBLIC)
        response = await handler(request)
    except auth.LoginRequired as exc:
        response = await login_routes.login_page(request, exc.message, status=401)
        if exc.clear_cookie:
            auth.clear_login_cookie(response)
    except errors.ApiError as exc:
        response = error_page(request, exc.status, exc.message)
    response.headers.update(HEADERS)
    auth.keep_session(request, response)
    return response


def error_page(request: web.Request, status: int, message: str) -> web.Response:
    titles = {400: "That did not work", 403: "Not allowed", 404: "Not found",
              409: "It changed meanwhile", 503: "Not available right now"}  # fmt: skip
    context = {"status": status, "title": titles.get(status, "Something went wrong"),
               "message": message}  # fmt: skip
    return pages.render(request, "error.html", context, status=status)


def when(ts: float | None) -> str:
    """A Unix time as a short UTC date and time for the pages; '—' for none."""
    if ts is None:
        return "—"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "—"
