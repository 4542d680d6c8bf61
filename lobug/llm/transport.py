"""An httpx transport on aiohttp, so `ollama.AsyncClient` skips httpcore's costly pool (~70 % of
the daemon's CPU when profiled: docs/architecture.md, "Decisions"). The ollama client stays the
API we program against (request shapes, response models, errors); only the bytes travel over
aiohttp's connection pool, which the daemon already runs on."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx
import ollama

_HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection"}
CHAT_PATHS = ("/api/chat", "/api/generate")


@contextlib.contextmanager
def _httpx_errors(request: httpx.Request) -> Iterator[None]:
    """aiohttp's failures as the httpx errors the ollama client understands."""
    try:
        yield
    except TimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc
    except aiohttp.ClientError as exc:
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc


class LazySession:
    """An aiohttp session made on first use, inside the running loop (a session is bound to its
    loop); call it for the session."""

    def __init__(self, limit: int = 100, **options: Any) -> None:
        self._limit = limit  # connections in the pool
        self._options = options
        self._session: aiohttp.ClientSession | None = None

    def __call__(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._limit)
            self._session = aiohttp.ClientSession(connector=connector, **self._options)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Hands the body on as it arrives (Ollama's NDJSON reply, chunk by chunk); httpx reads a
    plain reply whole from the same stream, so one transport serves every call."""

    def __init__(self, max_reply_bytes: int | None = None) -> None:
        # auto_decompress off: httpx decodes by the headers it sees.
        self._client = LazySession(64, auto_decompress=False, trust_env=False)
        self._max_reply_bytes = max_reply_bytes  # a chat reply's body, at most

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=timeouts.get("connect"),
            sock_read=timeouts.get("read"),
        )
        headers = [
            (k, v) for k, v in request.headers.multi_items() if k.lower() not in _HOP_HEADERS
        ]
        body = await request.aread()
        with _httpx_errors(request):
            resp = await self._client().request(
                request.method,
                str(request.url),
                headers=headers,
                data=body or None,
                timeout=timeout,
                allow_redirects=False,
            )
        return httpx.Response(
            status_code=resp.status,
            headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers],
            stream=_BodyStream(resp, request, self._limit(request)),
            request=request,
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _limit(self, request: httpx.Request) -> int | None:
        """A chat reply's bound, per line (embeddings answer our own batches: not bounded)."""
        return self._max_reply_bytes if request.url.path.endswith(CHAT_PATHS) else None


class ReplyTooLarge(ValueError):
    """A chat reply's body went past its bound (a server that ignores max_tokens)."""


class _BodyStream(httpx.AsyncByteStream):
    """An aiohttp response body as httpx's byte stream; a cut connection is httpx's error."""

    def __init__(
        self, resp: aiohttp.ClientResponse, request: httpx.Request, limit: int | None
    ) -> None:
        self._resp = resp
        self._request = request
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # Bounded per line: a plain reply is one JSON line, a streamed one a short line a
        # token (its length is the client's to cut, `LLMClient.stream`).
        line = 0
        with _httpx_errors(self._request):
            async for chunk in self._resp.content.iter_any():
                end = chunk.rfind(b"\n")
                line = line + len(chunk) if end < 0 else len(chunk) - end - 1
                if self._limit is not None and line > self._limit:
                    raise ReplyTooLarge(f"the reply is over {self._limit} bytes")
                yield chunk

    async def aclose(self) -> None:
        if self._resp.content.at_eof():
            self._resp.release()  # back to the pool
        else:
            self._resp.close()  # a half-read body: the connection cannot be reused


def ollama_client(host: str, *, max_reply_bytes: int | None = None) -> ollama.AsyncClient:
    """An Ollama client on this transport, with no client-wide timeout: every call bounds
    itself (`asyncio.wait_for`), so the chat, memory work, the health probe and the embedder
    can share one client and its connection pool; a chat reply's body is bounded by
    `max_reply_bytes`. Closed with `await client.close()`."""
    # No redirects (the ollama client follows them by default): a prompt goes to ollama.host
    # or nowhere, never re-sent to whatever origin a 307 names (issue 38).
    transport = AiohttpTransport(max_reply_bytes)
    return ollama.AsyncClient(host=host, timeout=None, transport=transport, follow_redirects=False)
