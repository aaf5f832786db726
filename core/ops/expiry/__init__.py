"""Snapshot, changelog and partition expiry, and what they keep in step."""
