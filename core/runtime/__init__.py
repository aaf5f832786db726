"""Running plans: plans, the lifecycle, journals, run records, quarantine, executors."""
