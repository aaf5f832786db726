"""The operations behind each command: one module per operation, planners and appliers."""
