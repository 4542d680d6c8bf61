"""Background upkeep of the memory: consolidation, session facts, entities, operational events."""
