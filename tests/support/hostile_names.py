"""A corpus of hostile names (Rich markup, emoji codes, backslashes, non-ASCII text, a
space) and a table that holds them everywhere: used wherever output must show user data
as it is (issue 25, bugs 1 and 4)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pyarrow as pa

from support import pypaimon_writer as pw

# Markup, emoji codes, a backslash and non-ASCII text in every kind of name (a closing tag
# "[/]" where the name may hold a slash).
TAG = "[bold]rel:m:1"
TAG2 = "[italic]:smile:ü"
RENAMED = "[red]x:m:[dim]"
BRANCH = "[bold]br:m:"
CONSUMER = "[i]c:m:"
PART = "[red]p:m:\\[/]"
COLUMN = "v[/]:m:"
OPTION = "[bold]o:m:\\"
ORPHAN = "data-[bold]:m:.parquet"
TABLE_DIR = "t [bold]:m: \\ü[dim]"
EMOJI = ("Ⓜ", "😄")  # what :m: and :smile: become when read as emoji codes
ANSI = re.compile(r"\x1b\[[0-9;]*m")
DAY_S = 86_400


def hostile_table(wh: Path) -> Path:
    """A partitioned table in warehouse ``wh`` with hostile names everywhere, at a hostile
    path (read-only: tests copy it)."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), (COLUMN, pa.string())])
    table = pw.create_table(wh, "db.t", schema, partition_keys=("p",), options={"x.custom": OPTION})
    for values in (["10", PART], [PART, "2024-01-01"], ["10"]):
        pw.append(table, [{"id": i, "p": v, COLUMN: f"{v}!"} for i, v in enumerate(values)])
    pw.create_tag(table, TAG2, 1)
    pw.create_branch(table, BRANCH, TAG2)
    root = pw.root_of(table)
    pw.set_consumer(root, CONSUMER, 2)  # keeps snapshots 2.. (expiry names it)
    hostile_root = root.parent / TABLE_DIR
    root.rename(hostile_root)
    bucket = next(hostile_root.glob("p=*/bucket-0"))
    (bucket / ORPHAN).write_bytes(b"not referenced")
    old = time.time() - 3 * DAY_S
    os.utime(bucket / ORPHAN, (old, old))
    return hostile_root
