"""HTTP layer: firmware routes, /v1 memory routes, error middleware."""
