"""Background work: the durable job queue, its workers and the periodic scheduler."""
