"""The tag lifecycle: create, delete, expire and automatic tags."""
