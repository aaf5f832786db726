"""Orphan file cleaning: used names, listing, bounded sets, local and Spark runs."""
