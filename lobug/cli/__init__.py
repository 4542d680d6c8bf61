"""The lobug command line."""
