"""Append to a pypaimon table in a loop from another process (commit race tests).

usage: python partition_writer_loop.py WAREHOUSE DB.TABLE COMMITS DT
Commit ``COMMITS`` times one row ``{id: 10000 + i, dt: DT, hr: "00"}``; print the ids.
"""

from __future__ import annotations

import sys
from pathlib import Path

from support import pypaimon_writer as pw


def main() -> None:
    warehouse, identifier = Path(sys.argv[1]), sys.argv[2]
    commits, day = int(sys.argv[3]), sys.argv[4]
    table = pw.open_table(warehouse, identifier)
    for i in range(commits):
        pw.append(table, [{"id": 10_000 + i, "dt": day, "hr": "00"}])
    print(commits)


if __name__ == "__main__":
    main()
