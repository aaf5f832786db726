"""``db.table`` names and globs over them, and the close names an unknown one suggests."""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass

from core.errors import InvalidOptionError

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, order=True)
class Identifier:
    database: str
    table: str

    @classmethod
    def parse(cls, spec: str) -> Identifier:
        """``db.table``; the table part may hold dots (``db.t.x`` is table ``t.x``), as in
        Paimon's Identifier.fromString."""
        db, dot, table = spec.partition(".")
        if not dot or not db or not table or "/" in spec or "\\" in spec:
            raise InvalidOptionError(
                f"{spec!r} is not DB.TABLE",
                hint="with a catalog, TABLE is db.table, or a glob such as 'db.*' or '*.*'",
                param="table",
            )
        return cls(db, table)

    @property
    def is_glob(self) -> bool:
        return bool(_GLOB_CHARS & set(self.database + self.table))

    def matches_database(self, database: str) -> bool:
        return fnmatch.fnmatchcase(database, self.database)

    def matches(self, database: str, table: str) -> bool:
        return self.matches_database(database) and fnmatch.fnmatchcase(table, self.table)

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


def close_names(name: str, known: list[str], limit: int = 3) -> list[str]:
    """The known names closest to a mistyped one (for "did you mean")."""
    return difflib.get_close_matches(name, known, n=limit, cutoff=0.6)
