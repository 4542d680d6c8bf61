"""`lobug memory …`: the memory's service layer from a shell (see `commands`)."""

from lobug.cli.memory.commands import register

__all__ = ["register"]
