"""Forgetting and keeping: status changes, decay, promotion, archive, TTL, purge, and the GC pass
that runs them.
"""
