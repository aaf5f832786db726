"""The commit history of a table as its writers and commands made it, for property tests.

A commit is known by its identity (snapshot id and delta manifest list, which carries a
UUID: a commit that reuses an id after a rollback is another commit), its parent (the
snapshot it was committed on: ``id - 1`` when it was made, as Paimon numbers commits), the
rows it reads, and whether it was acknowledged (a writer's commit returned; a command that
committed exited 0).

What commands were asked to remove is tracked too: the snapshot files they may delete
(expiry: any but the latest; rollback: every snapshot after its target) and the commits they
may undo (rollback only). From that, after any step:

* a snapshot file that disappeared must have been asked to go;
* every acknowledged commit of main that no rollback (or fast-forward) was asked to undo
  must still be the head's ancestor (or the head): its rows still read, through the head;
* a rollback that exited 0 left a head that descends from its target and from none of the
  commits it was asked to undo.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

Row = dict[str, Any]


class Identity(NamedTuple):
    sid: int
    delta: str  # the delta manifest list's name (unique per commit)

    def __str__(self) -> str:
        return f"{self.sid}/{self.delta[-12:]}"


def identity_of(path: Path) -> Identity | None:
    """The identity of a snapshot (or tag) file; None when it is gone or torn."""
    try:
        raw = json.loads(path.read_text())
        return Identity(int(raw["id"]), str(raw["deltaManifestList"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def snapshot_identities(snapshot_dir: Path) -> dict[int, Identity]:
    out = {}
    if snapshot_dir.is_dir():
        for p in snapshot_dir.glob("snapshot-*"):
            if p.name[len("snapshot-") :].isdigit():
                ident = identity_of(p)
                if ident is not None:
                    out[ident.sid] = ident
    return out


def tag_identities(tag_dir: Path) -> dict[str, Identity]:
    out = {}
    if tag_dir.is_dir():
        for p in tag_dir.glob("tag-*"):
            ident = identity_of(p)
            if ident is not None:
                out[p.name[len("tag-") :]] = ident
    return out


@dataclass
class Commit:
    ident: Identity
    parent: Identity | None
    rows: list[Row]
    by: str  # who made it: "pypaimon append", "paimon compact", ...
    acknowledged: bool
    branch: str = "main"  # whose history it is in (fast-forward makes a branch's main's)


Asks = tuple[frozenset[Identity], frozenset[Identity], frozenset[tuple[str, Identity]]]


@dataclass
class Lineage:
    commits: dict[Identity, Commit] = field(default_factory=dict)
    removable_files: set[Identity] = field(default_factory=set)  # snapshot files asked to go
    undone: set[Identity] = field(default_factory=set)  # commits a rollback was asked to undo
    removable_tags: set[tuple[str, Identity]] = field(default_factory=set)

    def add(self, commit: Commit) -> None:
        known = self.commits.get(commit.ident)
        if known is not None:
            known.acknowledged = known.acknowledged or commit.acknowledged
            return
        self.commits[commit.ident] = commit

    def rows(self, ident: Identity) -> list[Row] | None:
        commit = self.commits.get(ident)
        return None if commit is None else commit.rows

    def ancestry(self, ident: Identity) -> list[Identity]:
        """``ident`` and its ancestors, newest first (as far as the history is known)."""
        out: list[Identity] = []
        seen: set[Identity] = set()
        cur: Identity | None = ident
        while cur is not None and cur not in seen:
            out.append(cur)
            seen.add(cur)
            commit = self.commits.get(cur)
            cur = commit.parent if commit else None
        return out

    def asks(self) -> Asks:
        return (
            frozenset(self.removable_files),
            frozenset(self.undone),
            frozenset(self.removable_tags),
        )

    def retract(self, asks: Asks) -> None:
        """Back to ``asks``: a run refused before any change removes nothing, now or later."""
        self.removable_files, self.undone, self.removable_tags = map(set, asks)  # type: ignore[assignment]

    def ask_remove_files(self, idents: Iterable[Identity]) -> None:
        self.removable_files.update(idents)

    def ask_undo(self, idents: Iterable[Identity]) -> None:
        idents = set(idents)
        self.removable_files.update(idents)
        self.undone.update(idents)

    def reappeared(self, idents: Iterable[Identity]) -> None:
        """Snapshots back (restore, rollback to an expired tag): asked to go no longer."""
        idents = set(idents)
        self.removable_files -= idents
        self.undone -= idents

    def adopt(self, head: Identity) -> None:
        """A branch's history, up to ``head``, became main's (fast-forward)."""
        for ident in self.ancestry(head):
            if ident in self.commits:
                self.commits[ident].branch = "main"

    def lost_commits(self, head: Identity | None) -> list[Commit]:
        """Acknowledged commits of main that no rollback (or fast-forward) was asked to undo
        and that the head no longer has."""
        history = set(self.ancestry(head)) if head is not None else set()
        return [
            c
            for c in self.commits.values()
            if c.acknowledged
            and c.branch == "main"
            and c.ident not in self.undone
            and c.ident not in history
        ]
