"""ApiError: the one error type every layer raises and the middleware turns into a JSON body."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error with an HTTP status, a stable machine code and a human message (CONTRACT.md)."""

    def __init__(
        self, status: int, code: str, message: str, *, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.code!r}, {self.message!r})"


def invalid_request(message: str, **details: Any) -> ApiError:
    return ApiError(400, "invalid_request", message, details=details or None)


def invalid_json(message: str) -> ApiError:
    return ApiError(400, "invalid_json", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "forbidden", message)


def not_found(message: str) -> ApiError:
    return ApiError(404, "not_found", message)


def conflict(message: str) -> ApiError:
    return ApiError(409, "conflict", message)


def payload_too_large(message: str) -> ApiError:
    return ApiError(413, "payload_too_large", message)


def unsupported_media_type(message: str) -> ApiError:
    return ApiError(415, "unsupported_media_type", message)


def unprocessable(message: str) -> ApiError:
    return ApiError(422, "unprocessable", message)


def unavailable(message: str) -> ApiError:
    return ApiError(503, "unavailable", message)


def storage_full(message: str) -> ApiError:
    return ApiError(503, "storage_full", message)
