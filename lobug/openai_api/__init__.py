"""The OpenAI-compatible door: /v1/chat/completions (streamed over SSE) and /v1/models."""

from lobug.openai_api.errors import OPENAI_ROUTES, openai_error_middleware
from lobug.openai_api.routes import routes

__all__ = ["OPENAI_ROUTES", "openai_error_middleware", "routes"]
