"""Long-term memory: store, retrieval, extraction, reconciliation, cascades and lifecycle."""
