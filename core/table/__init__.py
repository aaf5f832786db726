"""A Paimon table and its managers: snapshots, tags, consumers, schemas, branches, paths."""
