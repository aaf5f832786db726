"""ExecutionReport: what apply() did, per phase."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.runtime.plans import Plan


@dataclass(slots=True)
class PhaseReport:
    name: str
    done: int = 0
    already_absent: int = 0
    skipped: int = 0  # dropped by the re-check (newly protected) or not empty (dirs)
    bytes: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "done": self.done,
            "already_absent": self.already_absent,
            "skipped": self.skipped,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "failures": [{"path": p, "error": e} for p, e in self.failures],
        }


@dataclass(slots=True)
class ExecutionReport:
    phases: list[PhaseReport] = field(default_factory=list)
    seconds: float = 0.0
    resumed_journals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: journals not finished because the table moved: {path, created_ms, reason}
    discarded_journals: list[dict[str, Any]] = field(default_factory=list)
    #: plans of the journals this run finished or discarded (not in the JSON)
    journal_plans: list[Plan[Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(p.failures for p in self.phases)

    @property
    def status(self) -> str:
        return "partial" if self.failed else "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "resumed_journals": self.resumed_journals,
            "discarded_journals": self.discarded_journals,
            "notes": self.notes,
            "phases": [p.to_json() for p in self.phases],
        }
