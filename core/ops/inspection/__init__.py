"""inspect and --check: what a table holds, where its bytes are, what is damaged."""
