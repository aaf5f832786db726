"""Restore and quarantine moves on S3 while a writer commits (issue 33, defect 7), through
the fault proxy in front of moto.

On an object store a move is a copy, then a delete: a restore that copied ``snapshot-5``
back unconditionally replaced the snapshot a writer committed (create-only-if-absent) while
the copy was in flight. Files a writer can create are put back with the commit path's
create-if-absent now, and a writer that got there first stops the restore.

The writer is real: its commits are pypaimon's, made on local copies of the table on each
snapshot it may find as its latest, and put on S3 as Paimon commits (data and manifests,
then ``snapshot-<latest+1>`` only if absent, then ``LATEST``) at the moment the test says,
on the latest snapshot it finds there then.

The fault model draws, for a write of the run, whether the store keeps it and what the
client hears for it and its retries (500, 503, a dropped connection, a lying 412, a delay),
and where in the run the writer commits; after each draw nothing committed is lost, every
root is whole, and once the faults stop a restore brings back everything no writer took.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import pypaimon_writer as pw
from support.fault_proxy import ANSWERS, FaultProxy, Rule
from support.fixtures import Run
from support.invariants import assert_no_dangling_references
from support.java_paimon import assert_java_ok

from core.io.fileio import FileIO

pytestmark = pytest.mark.s3

NAME = "races"


@dataclass(frozen=True)
class Made:
    """A pypaimon table of ``snapshots`` commits, and a writer's next commit (files, snapshot
    file, its row) on each snapshot from ``target`` (what the rollback keeps) on."""

    source: Path
    snapshots: int
    target: int
    commits: dict[int, tuple[dict[str, bytes], bytes, dict[str, Any]]]


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".paimon-cli" not in p.parts
    }


@dataclass
class Writer:
    """A pypaimon writer's next commit on each snapshot it may find as its latest: the
    files it writes first (data, manifests) and its snapshot file."""

    s3: Any
    uri: str
    commits: dict[int, tuple[dict[str, bytes], bytes, dict[str, Any]]]  # parent -> commit
    acknowledged: list[tuple[int, bytes, dict[str, Any]]] = field(default_factory=list)
    refused: int = 0

    def commit(self, _client: object = None) -> None:
        """Commit now, on the latest snapshot on S3 (by listing, as pypaimon finds it when
        the LATEST hint is stale), with a create-only-if-absent PUT."""
        fileio = FileIO(self.s3.fs_options)
        ids = [
            int(n.rsplit("-", 1)[1])
            for n in self.s3.files(self.uri)
            if re.fullmatch(r"snapshot/snapshot-\d+", n)
        ]
        parent = max(ids, default=0)
        if parent not in self.commits:
            self.refused += 1
            return
        files, snapshot, row = self.commits[parent]
        for rel, data in files.items():
            fileio.write_bytes(f"{self.uri}/{rel}", data)
        sid = parent + 1
        if fileio.write_if_absent(f"{self.uri}/snapshot/snapshot-{sid}", snapshot):
            fileio.write_bytes(f"{self.uri}/snapshot/LATEST", str(sid).encode())
            self.acknowledged.append((sid, snapshot, row))
        else:
            self.refused += 1


def _made(tmp: Path, snapshots: int, target: int) -> Made:
    wh = tmp / "src"
    table = pw.create_table(wh, f"db.{NAME}", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    for i in range(1, snapshots + 1):
        pw.append(table, [{"id": i, "v": f"c{i}"}])
    source = pw.table_root(wh, f"db.{NAME}")
    return Made(source, snapshots, target, _writer_commits(source, tmp, snapshots, target))


def _writer_commits(
    source: Path, tmp: Path, snapshots: int, target: int
) -> dict[int, tuple[dict[str, bytes], bytes, dict[str, Any]]]:
    """pypaimon's next commit on each snapshot from the rollback's target on, each made on
    its own copy of ``source``."""
    out = {}
    before = _files(source)
    for parent in range(target, snapshots + 1):
        wh = tmp / f"writer-{parent}"
        root = wh / "db.db" / NAME
        shutil.copytree(source, root)
        if parent < snapshots:
            pw.open_table(wh, f"db.{NAME}").rollback_to(parent)
        row = {"id": 900 + parent, "v": f"writer on {parent}"}
        sid = pw.append(pw.open_table(wh, f"db.{NAME}"), [row])
        assert sid == parent + 1
        after = _files(root)
        snapshot = after.pop(f"snapshot/snapshot-{sid}")
        new = {
            rel: data
            for rel, data in after.items()
            if rel not in before and not rel.startswith("snapshot/")
        }
        out[parent] = (new, snapshot, row)
    return out


@pytest.fixture(scope="module")
def issue_table(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """The issue's: snapshots 1..6, rolled back to 4."""
    return _made(tmp_path_factory.mktemp("restore-race"), 6, 4)


@pytest.fixture(scope="module")
def small_table(tmp_path_factory: pytest.TempPathFactory) -> Made:
    """Snapshots 1..4, rolled back to 2: the fewest requests per drawn sequence."""
    return _made(tmp_path_factory.mktemp("restore-races"), 4, 2)


def _upload(s3: Any, source: Path) -> str:
    return s3.upload(source, f"wh-{uuid.uuid4().hex[:8]}/db.db/{NAME}")


def _table_path(uri: str) -> str:
    return re.escape("/" + uri.removeprefix("s3://"))


def _download(s3: Any, uri: str, dest: Path) -> Path:
    root = dest / "wh" / "db.db" / NAME
    if root.exists():
        shutil.rmtree(root)
    return s3.download(uri, root)


def _quarantined(root: Path) -> dict[str, set[bytes]]:
    """Every file in the table's quarantine, by its path in the table."""
    out: dict[str, set[bytes]] = {}
    base = root / ".paimon-cli" / "quarantine"
    for run_dir in (p for p in base.glob("*") if p.is_dir()):
        for p in run_dir.rglob("*"):
            if p.is_file():
                out.setdefault(str(p.relative_to(run_dir)), set()).add(p.read_bytes())
    return out


def _assert_nothing_lost(root: Path, made: Made, writer: Writer, *, restored_fully: bool) -> None:
    """Every commit of the table and every one the writer was told it made is at its place
    or in the quarantine; every root is whole; the writer's rows read where its commits
    are; with no writer's commit, the table is whole again once a restore ran clean."""
    assert_no_dangling_references(root)
    here, held = _files(root), _quarantined(root)
    source = made.source
    commits = {
        f"snapshot/snapshot-{i}": (source / f"snapshot/snapshot-{i}").read_bytes()
        for i in range(1, made.snapshots + 1)
    }
    for sid, snapshot, _row in writer.acknowledged:
        path = f"snapshot/snapshot-{sid}"
        if here.get(path) != snapshot:  # the writer's then: a later run may have moved it
            assert snapshot in held.get(path, set()), f"the writer's snapshot {sid} is lost"
    for path, data in commits.items():  # a writer reusing the id: ours is in the quarantine
        assert here.get(path) == data or data in held.get(path, set()), f"{path} is lost"
    wh = root.parent.parent
    for sid, snapshot, row in writer.acknowledged:
        if here.get(f"snapshot/snapshot-{sid}") == snapshot:
            assert row in pw.read_rows(wh, f"db.{NAME}", snapshot_id=sid)
    if restored_fully and not writer.acknowledged:
        for path, data in commits.items():
            assert here.get(path) == data, f"{path} did not come back"
        assert pw.read_rows(wh, f"db.{NAME}") == pw.read_rows_at_root(source)


def _assert_commits_kept(s3: Any, uri: str, made: Made, writer: Writer) -> None:
    """Right after the faulted run, by reading only snapshot files on S3: every commit is
    at its place or in the quarantine."""
    fs, prefix = s3.fs(), uri.removeprefix("s3://")
    here: dict[str, bytes] = {}
    held: dict[str, set[bytes]] = {}
    for key in fs.find(prefix):
        rel = key[len(prefix) + 1 :]
        parts = rel.split("/")
        if parts[:2] == [".paimon-cli", "quarantine"] and parts[-2:-1] == ["snapshot"]:
            held.setdefault("/".join(parts[3:]), set()).add(fs.cat_file(key))
        elif parts[0] == "snapshot" and parts[-1].startswith("snapshot-"):
            here[rel] = fs.cat_file(key)
    wanted = [
        (f"snapshot/snapshot-{i}", (made.source / f"snapshot/snapshot-{i}").read_bytes())
        for i in range(1, made.snapshots + 1)
    ] + [(f"snapshot/snapshot-{sid}", data) for sid, data, _row in writer.acknowledged]
    for path, data in wanted:
        assert here.get(path) == data or data in held.get(path, set()), f"{path} is lost"


# -- the sequence of the issue ------------------------------------------------------------------
@pytest.mark.java
def test_restore_never_replaces_a_snapshot_a_writer_committed_during_its_copy(
    run: Run,
    s3_server: Any,
    faulty_s3: Any,
    faults: FaultProxy,
    issue_table: Made,
    tmp_path: Path,
    java: Any,
) -> None:
    made = issue_table
    uri = _upload(s3_server, made.source)
    rolled = run("rollback", uri, "--to-snapshot", 4, "--quarantine", *s3_server.cli_options())
    assert rolled.exit_code == 0, rolled.stderr
    writer = Writer(s3_server, uri, made.commits)
    # the writer commits snapshot-5 while the restore's request for it is in flight
    put_back = faults.add(
        Rule("PUT", _table_path(uri) + r"/snapshot/snapshot-5$", "call", callback=writer.commit)
    )
    result = run("restore", uri, "--last", *faulty_s3.cli_options())
    assert put_back.hits == 1 and len(writer.acknowledged) == 1
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "was created by another writer while the restore ran" in result.stderr
    root = _download(s3_server, uri, tmp_path)
    assert (root / "snapshot" / "snapshot-5").read_bytes() == writer.acknowledged[0][1]
    assert writer.acknowledged[0][2] in pw.read_rows(root.parent.parent, f"db.{NAME}")
    _assert_nothing_lost(root, made, writer, restored_fully=False)
    doc = java.verify(root)
    assert_java_ok(doc)
    assert doc["latest_snapshot_id"] == 5
    # the next restore names the conflict; the writer's commit stays
    faults.clear()
    again = run("restore", uri, "--last", *s3_server.cli_options())
    assert again.exit_code == 1 and "snapshot 5" in again.stderr, again.stderr
    root = _download(s3_server, uri, tmp_path)
    assert (root / "snapshot" / "snapshot-5").read_bytes() == writer.acknowledged[0][1]
    _assert_nothing_lost(root, made, writer, restored_fully=False)


# -- the fault model ----------------------------------------------------------------------------
# where the writer commits: weighted toward the puts and deletes of snapshot files, the
# window the class of issue 33's defect 7 lives in
_METHODS = st.sampled_from(["PUT", "PUT", "PUT", "DELETE"])
_UNDER = st.sampled_from(["/", "/snapshot/", "/snapshot/"])  # any request, or a snapshot's
_WRITER = st.tuples(_METHODS, _UNDER, st.integers(0, 8))
_FIRST = sorted(ANSWERS)  # the first try: stored or lost, and what the client hears
_RETRY = ["lost-500", "lost-503", "lost-drop", "lost-412", "stored-500", "delay", "ok"]


@st.composite
def _scripts(draw: st.DrawFn) -> list[tuple[str, int, tuple[str, ...]]]:
    """Up to three writes of the run (method, which one of that method) and the answers to
    it and its retries."""
    out = []
    for _ in range(draw(st.integers(0, 3))):
        method = draw(st.sampled_from(["PUT", "DELETE", "HEAD", "GET"]))
        nth = draw(st.integers(0, 12))
        first = draw(st.sampled_from(_FIRST))
        retries = draw(st.lists(st.sampled_from(_RETRY), max_size=3))
        out.append((method, nth, (first, *retries)))
    return out


# The same sequences every run (about 20 s each on moto): a regression fails alike everywhere;
# more with PAIMON_CLI_S3_EXAMPLES=N (then drawn afresh).
_EXAMPLES = int(os.environ.get("PAIMON_CLI_S3_EXAMPLES", "0"))


@settings(
    max_examples=_EXAMPLES or 8,
    derandomize=not _EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(
    stage=st.sampled_from(["rollback", "restore"]),
    scripts=_scripts(),
    writer_at=st.one_of(st.none(), _WRITER, _WRITER, _WRITER),
    delay=st.sampled_from([0.0, 0.3]),
)
def test_quarantine_moves_and_restores_under_drawn_faults_and_a_writer(
    run: Run,
    s3_server: Any,
    faulty_s3: Any,
    faults: FaultProxy,
    small_table: Made,
    tmp_path: Path,
    stage: str,
    scripts: list[tuple[str, int, tuple[str, ...]]],
    writer_at: tuple[str, str, int] | None,
    delay: float,
) -> None:
    made = small_table
    faults.clear()
    uri = _upload(s3_server, made.source)
    writer = Writer(s3_server, uri, made.commits)
    table = _table_path(uri)

    def arm() -> None:
        if writer_at is not None:  # first: a rule's skip counts only requests it sees
            method, under, nth = writer_at  # any request of the run, or one on snapshot/
            skip = nth if under == "/" else nth % 2
            faults.add(
                Rule(method, table + under, "call", callback=writer.commit, skip=skip, delay=delay)
            )
        for method, nth, answers in scripts:
            faults.add(Rule(method, table + "/", "script", skip=nth, answers=answers))

    rollback = ("rollback", uri, "--to-snapshot", made.target, "--quarantine")
    if stage == "rollback":
        arm()
    first = run(*rollback, *(faulty_s3 if stage == "rollback" else s3_server).cli_options())
    assert first.exit_code in (0, 1) and "Traceback" not in first.stderr, first.stderr
    faults.clear()
    if stage == "restore":
        arm()
        restored = run("restore", uri, "--last", *faulty_s3.cli_options())
        assert restored.exit_code in (0, 1), restored.stdout + restored.stderr
        assert "Traceback" not in restored.stderr, restored.stderr
        faults.clear()
    _assert_commits_kept(s3_server, uri, made, writer)
    # faults over: any command finishes or discards what a stopped run left; a restore then
    # brings back all no writer took (or names what is in its way)
    final = run("restore", uri, "--last", *s3_server.cli_options())
    assert final.exit_code in (0, 1) and "Traceback" not in final.stderr, final.stderr
    root = _download(s3_server, uri, tmp_path)
    ids = sorted(int(p.name.split("-")[1]) for p in (root / "snapshot").glob("snapshot-*"))
    assert ids == list(range(ids[0], ids[-1] + 1)), f"a gap in {ids}"
    _assert_nothing_lost(root, made, writer, restored_fully=True)
