"""summaries."""
