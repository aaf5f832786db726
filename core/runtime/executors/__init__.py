"""Executors: where fanned-out work runs (local thread pool or Spark)."""
