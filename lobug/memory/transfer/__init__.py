"""Moving memory in and out: JSONL conversation import, export of everything a user owns, and its
lossless re-import.
"""
