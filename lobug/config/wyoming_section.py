"""The [wyoming] config section: Lo-Bug's speech-to-text and conversation agent as a Wyoming
service for Home Assistant Assist (lobug/wyoming_server, docs/wyoming.md)."""

from __future__ import annotations

import ipaddress
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field
from pydantic.dataclasses import dataclass

from lobug.config.fields import SECTION, Names


def _tcp_uri(uri: str) -> str:
    """`tcp://host:port`, what Wyoming services take as --uri (IPv6 as tcp://[::]:10300)."""
    try:
        parts = urlsplit(uri.strip())
        port = parts.port
    except ValueError:
        port, parts = None, None
    if parts is None or parts.scheme != "tcp" or not parts.hostname or not port:
        raise ValueError(f"expected tcp://host:port (e.g. tcp://0.0.0.0:10300), got {uri!r}")
    return uri.strip()


def _networks(hosts: tuple[str, ...]) -> tuple[str, ...]:
    for host in hosts:
        try:
            ipaddress.ip_network(host, strict=False)
        except ValueError:
            raise ValueError(
                f"expected IP addresses or networks (192.168.1.20, 192.168.1.0/24), got {host!r}"
            ) from None
    return hosts


TcpUri = Annotated[str, AfterValidator(_tcp_uri)]
Networks = Annotated[Names, AfterValidator(_networks)]


@dataclass(frozen=True, config=SECTION)
class WyomingConfig:
    """Home Assistant Assist talks to Lo-Bug over the Wyoming protocol: an `asr` service (the
    speech model above) and a `handle` service (the same conversation turn as /chat/text).
    Wyoming has no authentication: see trusted_hosts."""

    enabled: bool = Field(default=True, description="false = no Wyoming port is opened")
    uri: TcpUri = Field(
        default="tcp://0.0.0.0:10300",
        description='where it listens; "tcp://127.0.0.1:10300" = this machine only',
    )
    trusted_hosts: Networks = Field(
        default=(),
        examples=[["192.168.1.20"]],
        description="Addresses or networks (192.168.1.0/24) whose conversation turns may draw"
        " on every memory store, like the owner's device. Loopback is trusted while"
        " api.allow_loopback is on; any other peer is answered at api.unknown_device_trust.",
    )
    # What one LAN peer (no authentication) can make the daemon hold: lobug/wyoming_server.
    max_connections: int = Field(
        default=32,
        ge=1,
        le=1024,
        description="open Wyoming connections at most; a new one past it gets an error and is"
        " closed (Home Assistant opens one per request)",
    )
    idle_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="a connection that sends no whole event (or reads none of the reply) for"
        " this long is closed",
    )
    max_audio_bytes_total: int = Field(
        default=32 * 1024 * 1024,
        ge=64 * 1024,
        le=1024 * 1024 * 1024,
        description="asr audio held at once across every connection; audio past it is refused"
        " with an error (speech.max_audio_bytes still limits each stream)",
    )
