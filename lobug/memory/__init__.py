"""Long-term memory: the names the rest of the daemon uses.

`MemoryService` is the chat's memory (prompt sections, turn hooks, jobs, GC); `Records` and
`Recall` are the /v1 service layer that HTTP, MCP and the CLI share, built by `lobug.parts`. The
subpackages are the concepts behind them (docs/memory.md has the map).
"""

from lobug.memory.records.recall import Recall
from lobug.memory.records.service import Records
from lobug.memory.service import MemoryService

__all__ = ["MemoryService", "Recall", "Records"]
