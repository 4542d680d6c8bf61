"""Writing a memory: reconciliation (repeat, merge, supersede, add), explicit edits, and the checks
and tags a memory gets (validator, fact keys, PII).
"""
