"""Compaction: planning, rewriting, merge engines and aggregators, as Paimon does."""
