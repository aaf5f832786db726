"""Data-file and manifest compaction."""
