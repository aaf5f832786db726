"""Undo and repair: rollback, restore, purge-quarantine, remove-unexisting-files."""
