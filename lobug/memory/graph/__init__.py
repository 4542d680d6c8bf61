"""What memories are about and how they tie together: named entities (NER, registry, aliases) and
relation edges between memories.
"""
