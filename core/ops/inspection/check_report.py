"""What ``inspect --check`` reports: each problem (a file missing, of another size than
recorded, or unreadable) with every root that needs it, as runs of roots (``RootSpan``);
what a check covers (``CheckScope``); and the error a failed check raises in ``maintain``.
The check itself is ``core.ops.inspection.check``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core.errors import PaimonError
from core.retention.references import RootKind
from core.runtime.details import Record

#: Problem kinds, in the order reports and metrics list them.
PROBLEM_KINDS = (
    "missing",
    "size-mismatch",
    "unreadable",
    # metastore.partitioned-table: a partition the metastore holds without live data, and
    # a live partition the metastore lacks (core.ops.expiry.metastore_partitions.drift)
    "metastore-extra",
    "metastore-missing",
)
# A problem's summary names this many runs of roots, then "and N more".
_NAMED_SPANS = 3


@dataclass(frozen=True, slots=True)
class RootSpan(Record):
    """Roots of one branch that need a file: the snapshots (or long-lived changelogs)
    ``first..last`` with contiguous ids, or one tag (``tag``; ``first`` = ``last`` = its
    snapshot id)."""

    branch: str
    kind: RootKind
    first: int
    last: int
    tag: str | None = None
    latest: bool = False  # holds the branch's latest snapshot

    @property
    def count(self) -> int:
        return 1 if self.tag is not None else self.last - self.first + 1

    @property
    def label(self) -> str:
        prefix = "" if self.branch == "main" else f"branch {self.branch} "
        if self.tag is not None:
            return f"{prefix}tag {self.tag}"
        ids = str(self.first) if self.first == self.last else f"{self.first}..{self.last}"
        noun = self.kind if self.first == self.last else f"{self.kind}s"
        return f"{prefix}{noun} {ids}" + (" (latest)" if self.latest else "")


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    kind: str  # one of PROBLEM_KINDS
    role: str  # data | extra | changelog | manifest | manifest-list | snapshot | tag | ...
    referenced_by: str  # the first root that needs it: "snapshot 4", "branch b1 tag t1"
    detail: str
    roots: tuple[RootSpan, ...] = ()  # every root that needs it

    @property
    def root_count(self) -> int:
        return sum(span.count for span in self.roots)

    @property
    def needed_by(self) -> str:
        """Every root that needs the file, in a few words: ``snapshots 3..9 (latest), tag
        v10 and 3 more``."""
        if not self.roots:
            return self.referenced_by
        named = self.roots[:_NAMED_SPANS]
        text = ", ".join(span.label for span in named)
        rest = sum(span.count for span in self.roots[_NAMED_SPANS:])
        return f"{text} and {rest} more" if rest else text


@dataclass(frozen=True, slots=True)
class CheckScope(Record):
    """What a check covers: every root of every branch (``all``), or one root of the
    table's branch: its latest snapshot, a snapshot, or a tag."""

    kind: Literal["all", "latest", "snapshot", "tag"] = "all"
    snapshot: int | None = None
    tag: str | None = None

    @classmethod
    def of(cls, *, snapshot: int | Literal["latest"] | None, tag: str | None) -> CheckScope:
        if tag is not None:
            return cls("tag", tag=tag)
        if snapshot == "latest":
            return cls("latest")
        if snapshot is not None:
            return cls("snapshot", snapshot=snapshot)
        return cls()


@dataclass(frozen=True, slots=True)
class CheckReport:
    roots: int
    files_checked: int
    problems: tuple[Problem, ...]
    scope: CheckScope = field(default_factory=CheckScope)

    @property
    def ok(self) -> bool:
        return not self.problems

    def count(self, kind: str) -> int:
        return sum(p.kind == kind for p in self.problems)


class IntegrityError(PaimonError):
    """The check found problems (``maintain``'s check step fails with it)."""

    kind = "integrity_problems"

    def __init__(self, report: CheckReport) -> None:
        first = report.problems[0]
        more = f" and {len(report.problems) - 1} more" if len(report.problems) > 1 else ""
        super().__init__(
            f"{len(report.problems)} integrity problems: {first.role} {first.path} is "
            f"{first.kind} ({first.needed_by}: {first.detail}){more}",
            hint="paimon inspect TABLE --check lists them all",
        )
        self.report = report
