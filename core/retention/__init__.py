"""Retention rules: which snapshots expire, what each root references, periods."""
