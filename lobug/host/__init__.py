"""The host process: systemd notify (readiness, watchdog), journald-aware logging, the
event-loop lag monitor and the connection limits in front of aiohttp."""
