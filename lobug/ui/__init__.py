"""The memory browser at /ui/: server-rendered pages over the /v1 service layer and tokens."""

from lobug.ui.site import setup

__all__ = ["setup"]
