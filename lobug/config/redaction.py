"""How a server address and a server's own words are shown: credentials in a URL and the keys
a model server may echo back (a 401 quoting the key) never leave the daemon (issue 38)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

HIDDEN = "***"
# Shorter "secrets" are not masked in free text: "***" for every "a" would garble it, and a
# key that short protects nothing anyway.
MIN_SECRET_CHARS = 4
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#@\s]*@")
# An Authorization value: a scheme, then a credential (long: "basic setup" is not one).
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[^\s,;\"']{8,}")


def redact_url(url: str) -> str:
    """The URL with its user/password and every query value hidden:
    `https://u:p@host/v1?key=k` → `https://***@host/v1?key=***`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rpartition('@')[2]}"
    query = "&".join(f"{quote(name, safe='')}={HIDDEN}" for name, _ in parse_qsl(parts.query, True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def url_secrets(url: str) -> list[str]:
    """What a URL carries that must not be shown: its user, password and query values, as
    written and decoded."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found: list[str] = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        found += [userinfo, *userinfo.split(":", 1)]
        found += [p for p in (parts.username, parts.password) if p]
    for _, value in parse_qsl(parts.query, True):
        found += [value, quote(value, safe="")]
    return found


class Redactor:
    """Masks known secrets, URL credentials and Authorization values in free text (a server's
    error message, an exception's text) before it is logged or shown."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        kept = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}
        self.secrets = sorted(kept, key=len, reverse=True)  # a secret before its own parts

    @classmethod
    def of_server(cls, url: str, api_key: str | None = None) -> Redactor:
        return cls([api_key, *url_secrets(url)])

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        text = _USERINFO.sub(rf"\1{HIDDEN}@", text)
        return _BEARER.sub(rf"\1 {HIDDEN}", text)
