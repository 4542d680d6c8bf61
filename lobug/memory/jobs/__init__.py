"""The memory's background jobs: their kinds and enqueue helpers (inside the data's transaction)
and their handlers.
"""
