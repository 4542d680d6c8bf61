"""Extraction: the facts one exchange proposes (LLM and heuristic candidates) and the `extract` job
that reconciles them.
"""
