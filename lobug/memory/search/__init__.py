"""Search: one request run against turns and memories (ranked lists, fusion, re-score, filters,
budget), the prompt's search, explain, and retrieval hits.
"""
