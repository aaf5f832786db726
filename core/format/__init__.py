"""Paimon's on-disk format: typed metadata models, options, manifests and data files."""
