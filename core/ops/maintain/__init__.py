"""maintain: every step over many tables, and its metrics."""
