"""Commit to a pypaimon table in a loop (run as a separate process by race tests).

usage: python writer_loop.py WAREHOUSE DB.TABLE SECONDS
Appends one small batch per commit until SECONDS have passed; prints the commit count.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from support import pypaimon_writer as pw


def main() -> None:
    warehouse, identifier, seconds = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    table = pw.open_table(warehouse, identifier)
    schema = pw.arrow_schema(table)
    deadline = time.monotonic() + seconds
    commits = 0
    while time.monotonic() < deadline:
        row = {f.name: None for f in schema}
        first = schema[0]
        row[first.name] = commits if str(first.type).startswith("int") else str(commits)
        pw.append(table, [row])
        commits += 1
    print(commits)


if __name__ == "__main__":
    main()
