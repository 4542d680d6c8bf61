"""Rendering a page: the handler's context plus what every page's frame shows."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp_jinja2
from aiohttp import web

from lobug import keys
from lobug.ui import auth

PUBLIC = frozenset({"login", "static"})  # route names a signed-out browser may reach
PageHandler = Callable[[web.Request], Awaitable[Mapping[str, Any]]]


def frame(request: web.Request) -> dict[str, Any]:
    """What base.html shows: who is signed in, the CSRF token, the note after an action."""
    return {
        "principal": request.get(keys.PRINCIPAL),
        "csrf": auth.csrf_token(request, anonymous=request.match_info.route.name in PUBLIC),
        "csrf_field": auth.CSRF_FIELD,
        "path": request.path,
        "done": request.query.get("done", "")[:80],
    }


def render(
    request: web.Request, name: str, context: Mapping[str, Any], *, status: int = 200
) -> web.Response:
    return aiohttp_jinja2.render_template(
        name, request, {**frame(request), **context}, status=status
    )


def template(
    name: str,
) -> Callable[[PageHandler], Callable[[web.Request], Awaitable[web.Response]]]:
    """A handler returning its page's context, rendered with `name`."""

    def wrap(handler: PageHandler) -> Callable[[web.Request], Awaitable[web.Response]]:
        @functools.wraps(handler)
        async def page(request: web.Request) -> web.Response:
            return render(request, name, await handler(request))

        return page

    return wrap
