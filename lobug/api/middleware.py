"""The one error middleware (every error body is built here) and the request log."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from lobug import errors
from lobug.errors import ApiError
from lobug.storage.sqlite import StorageBusy, StorageFull

log = logging.getLogger("lobug.access")
errlog = logging.getLogger("lobug.api")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Any other status is `invalid_request`, or `internal` from 500 on.
_HTTP_CODES = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    503: "unavailable",
}


def error_response(error: ApiError) -> web.Response:
    return web.json_response(error.body(), status=error.status)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc)
    except StorageFull as exc:
        errlog.error("storage full while handling %s %s: %s", request.method, request.path, exc)
        return error_response(
            errors.storage_full(
                "the disk holding the database is full; free space and retry. "
                "Nothing already accepted was lost."
            )
        )
    except StorageBusy as exc:
        errlog.warning("database busy while handling %s %s: %s", request.method, request.path, exc)
        return error_response(
            errors.unavailable(
                "the database is busy (another process holds a lock, e.g. a maintenance "
                "command); retry in a few seconds. Nothing already accepted was lost."
            )
        )
    except (web.RequestPayloadError, HttpProcessingError) as exc:
        # A body aiohttp could not decode while the handler read it (a Content-Encoding its
        # bytes do not match, broken chunking): the client's mistake, not ours (issue 38).
        return error_response(
            errors.invalid_request(f"the request body cannot be read: {_payload_problem(exc)}")
        )
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = _HTTP_CODES.get(exc.status, "invalid_request" if exc.status < 500 else "internal")
        message = exc.text or exc.reason
        if exc.status == 404:
            message = f"no route for {request.method} {request.path}"
        elif exc.status == 405:
            message = f"{request.method} is not allowed on {request.path}"
        elif exc.status == 413:
            limit = request.app._client_max_size
            message = f"request body is too large; the limit is {limit} bytes"
        return error_response(ApiError(exc.status, code, message))
    except Exception:
        errlog.exception("unhandled error in %s %s", request.method, request.path)
        return error_response(ApiError(500, "internal", "internal error; see the daemon log"))


def _payload_problem(exc: BaseException) -> str:
    """aiohttp's reason in one line ("Can not decode content-encoding: gzip")."""
    cause = exc.__cause__ if isinstance(exc.__cause__, HttpProcessingError) else exc
    message = getattr(cause, "message", None) or str(cause)
    return " ".join(str(message).split())[:200]


@web.middleware
async def access_log_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Method, path, status and latency; never bodies, tokens or user text."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    finally:
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.info("%s %s %d %.1fms", request.method, request.path, status, elapsed_ms)
