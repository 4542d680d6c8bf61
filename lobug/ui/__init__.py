"""The memory browser at /ui/: server-rendered pages over the /v1 service layer and tokens."""

from lobug.ui.site import create_ui_app, setup

__all__ = ["create_ui_app", "setup"]
