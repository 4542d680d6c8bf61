"""Background thinking over what memory holds: weekly reflection, theory-of-mind insights."""
