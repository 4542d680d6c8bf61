"""systemd glue: sd_notify readiness/watchdog and journald-aware logging."""
