"""The cascades: turns → summaries → the base-memory document that is always in the prompt."""
