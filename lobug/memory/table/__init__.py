"""Memory rows and their bookkeeping: rows, history and provenance, counters, text identity (hash,
Jaccard), the change feed behind the delta header.
"""
