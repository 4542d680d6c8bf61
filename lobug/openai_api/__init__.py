"""The OpenAI-compatible door: /v1/chat/completions (streamed over SSE) and /v1/models."""

from aiohttp import web

from lobug.openai_api import sse
from lobug.openai_api.errors import openai_error_middleware
from lobug.openai_api.routes import routes


def setup(app: web.Application) -> None:
    """The routes, and the open streams stopped at shutdown (`sse.Streams`)."""
    app.add_routes(routes)
    sse.setup(app)


__all__ = ["openai_error_middleware", "routes", "setup"]
