"""Lo-Bug: an offline, memory-keeping voice assistant daemon for the M5Stack device."""

__version__ = "0.1.0"
