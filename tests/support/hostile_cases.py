"""Hostile and broken input (issue 8): the case table.

Each :class:`Case` damages a COPY of a pypaimon-written table (or builds the situation)
and says, per command, what must happen: the exit code and a phrase stderr must contain
(the culprit: a file name, a path or an option). ``test_hostile.py`` runs every case with
every command it lists and checks the invariants common to all of them (no traceback, a
short message naming the culprit, nothing deleted or written when the run fails, nothing
outside the table ever touched).

Commands (``COMMANDS``): ``inspect`` (summary), ``check`` (``inspect --check``),
``expire`` (``expire-snapshots`` with flags that really expire something) and
``orphans`` (``delete-orphan-files`` with a cut-off of now). A case may override the command
line of a key (absurd flags) or add keys of its own (``orphans-json``).

Placeholders in command lines and phrases: ``{root}`` (the damaged copy), ``{wh}`` (its
warehouse), ``{tmp}`` (scratch dir), ``{outside}`` (a directory outside the table whose
content must survive every run) and whatever the damage function put in ``ctx.values``.

Expectations are decided from README.md, docs/ and DECISIONS.md; where the engine disagrees the
row carries ``xfail`` with the reason (the engine is not changed here).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro

from core.runtime.plans import PLAN_FORMAT

INSPECT = ("inspect", "{root}")
CHECK = ("inspect", "{root}", "--check")
DAMAGED = 3  # --check ran and found problems (README "Exit codes")
EXPIRE = ("expire-snapshots", "{root}", "--retain-min", "1", "--older-than", "0 ms")
ORPHANS = ("delete-orphan-files", "{root}", "--older-than", "0 ms", "--allow-recent")
COMMANDS: dict[str, tuple[str, ...]] = {
    "inspect": INSPECT,
    "check": CHECK,
    "expire": EXPIRE,
    "orphans": ORPHANS,
}
#: keys whose command may legitimately delete or write inside the table
DESTRUCTIVE = frozenset({"expire", "orphans", "orphans-json"})

AP = "append_partitioned"  # 6 snapshots, partitions dt/hr, tag mid@3, consumer reader@4
MC = "many_commits"  # 30 snapshots, unpartitioned, whole-table overwrite at 15
DV = "append_deletion_vectors"  # 4 snapshots, DV index files + index manifests


@dataclass
class Ctx:
    """What a damage function gets, and what it leaves for the test to check."""

    root: Path  # the table copy (may not exist for cases without a table)
    tmp: Path  # per-test scratch directory (outside the warehouse)
    outside: Path  # directory outside the table; its tree must never change
    wh: Path
    scenarios: Mapping[str, Any]
    base_root: Path | None = None  # the undamaged scenario table the copy came from
    writable: bool = True  # False: root is a session table that no run may change
    values: dict[str, str] = field(default_factory=dict)
    #: paths (and their bytes / link targets) that must be exactly as before every run
    protect: list[Path] = field(default_factory=list)
    #: extra trees (inside the table, e.g. a nested table) that must stay identical
    watch: list[Path] = field(default_factory=list)
    #: simulated permission-denied directories (FileIO behaves as on a chmod 000 dir)
    deny: list[Path] = field(default_factory=list)
    #: cleanup callbacks run after the test (chmod back)
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    def fill(self, text: str) -> str:
        return text.format(
            root=self.root, wh=self.wh, tmp=self.tmp, outside=self.outside, **self.values
        )


@dataclass(frozen=True)
class Expect:
    code: int
    phrase: str | None = None  # must appear on stderr (failing runs) — placeholders allowed
    xfail: str | None = None  # the engine is wrong: reason (strict xfail)


#: verify(ctx, key, command template, invoke) — extra checks of a successful run;
#: ``invoke(argv)`` runs the CLI in-process like the test does.
Verify = Callable[[Ctx, str, tuple[str, ...], Callable[[list[str]], Any]], None]


@dataclass(frozen=True)
class Case:
    id: str
    base: str | None  # scenario copied as the table; None: no table copy
    damage: Callable[[Ctx], None]
    expect: Mapping[str, Expect]
    argv: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    verify: Verify | None = None  # extra checks of a successful run
    # Why the case cannot apply on this machine (it is then not collected), or None.
    inapplicable: Callable[[], str | None] | None = None
    note: str = ""

    def command(self, key: str) -> tuple[str, ...]:
        return self.argv.get(key) or COMMANDS[key]


# =============================================================================================
# Damage helpers
# =============================================================================================

OLD = 3 * 86_400  # planted files are aged by three days (orphan cut-off tests need old files)


def age(path: Path, seconds: float = OLD) -> Path:
    t = time.time() - seconds
    os.utime(path, (t, t), follow_symlinks=False)
    return path


def plant(path: Path, data: bytes = b"junk", *, old: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return age(path) if old else path


def snapshot_path(root: Path, sid: int | None = None) -> Path:
    ids = sorted(int(p.name[9:]) for p in (root / "snapshot").glob("snapshot-*"))
    return root / "snapshot" / f"snapshot-{ids[-1] if sid is None else sid}"


def snapshot_json(root: Path, sid: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(snapshot_path(root, sid).read_text())
    return data


def edit_json(path: Path, edit: Callable[[dict[str, Any]], Any]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2))


def read_avro(path: Path) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    with path.open("rb") as fh:
        reader = fastavro.reader(fh)
        schema, codec = reader.writer_schema, reader.codec
        rows = list(reader)
    assert isinstance(schema, dict)
    return schema, codec, rows  # type: ignore[return-value]


def write_avro(path: Path, schema: dict[str, Any], codec: str, rows: list[dict[str, Any]]) -> None:
    with path.open("wb") as fh:
        fastavro.writer(fh, schema, rows, codec=codec)


def manifests_in(root: Path, list_name: str) -> list[str]:
    return [r["_FILE_NAME"] for r in read_avro(root / "manifest" / list_name)[2]]


def delta_manifest(root: Path, sid: int) -> str:
    """The first manifest a snapshot's delta list names (added by that snapshot)."""
    return manifests_in(root, snapshot_json(root, sid)["deltaManifestList"])[0]


def _metadata_files(root: Path, prefix: str) -> Iterator[Path]:
    for p in sorted((root / "manifest").iterdir()):
        if p.name.startswith(prefix) and not (
            prefix == "manifest-" and p.name.startswith("manifest-list-")
        ):
            yield p


def _roots(root: Path) -> Iterator[Path]:
    for pattern in ("snapshot/snapshot-*", "tag/tag-*", "branch/*/snapshot/snapshot-*"):
        yield from root.glob(pattern)
    yield from root.glob("branch/*/tag/tag-*")


def rewrite_rows(
    root: Path, prefix: str, edit: Callable[[dict[str, Any]], bool], only: str | None = None
) -> list[str]:
    """Rewrite metadata rows (``prefix`` manifest-/manifest-list-/index-manifest-) where
    ``edit`` returns True, then fix the recorded sizes up the chain (lists, snapshots, tags)
    so that only the intended damage differs. Returns the rewritten file names."""
    changed: dict[str, int] = {}
    for path in _metadata_files(root, prefix):
        if only is not None and path.name != only:
            continue
        schema, codec, rows = read_avro(path)
        hits = [edit(r) for r in rows]
        if any(hits):
            write_avro(path, schema, codec, rows)
            changed[path.name] = path.stat().st_size
    assert changed, f"no {prefix} row matched in {root}"
    if prefix == "manifest-":
        lists: dict[str, int] = {}
        for path in _metadata_files(root, "manifest-list-"):
            schema, codec, rows = read_avro(path)
            touched = False
            for r in rows:
                if r["_FILE_NAME"] in changed:
                    r["_FILE_SIZE"] = changed[r["_FILE_NAME"]]
                    touched = True
            if touched:
                write_avro(path, schema, codec, rows)
                lists[path.name] = path.stat().st_size
        changed_lists = lists
    else:
        changed_lists = changed if prefix == "manifest-list-" else {}
    keys = (
        ("baseManifestList", "baseManifestListSize"),
        ("deltaManifestList", "deltaManifestListSize"),
        ("changelogManifestList", "changelogManifestListSize"),
    )
    for snap in _roots(root):
        data = json.loads(snap.read_text())
        touched = False
        for name_key, size_key in keys:
            if data.get(name_key) in changed_lists and size_key in data:
                data[size_key] = changed_lists[data[name_key]]
                touched = True
        if touched:
            snap.write_text(json.dumps(data, indent=2))
    return sorted(changed)


def set_entry_file(root: Path, file_name: str, **fields: Any) -> list[str]:
    """Change ``_FILE`` fields of every manifest entry (ADD and DELETE) of ``file_name``;
    returns the manifests rewritten."""

    def edit(row: dict[str, Any]) -> bool:
        if row["_FILE"]["_FILE_NAME"] != file_name:
            return False
        row["_FILE"].update(fields)
        return True

    return rewrite_rows(root, "manifest-", edit)


def first_entry_file(root: Path, manifest: str) -> str:
    name: str = read_avro(root / "manifest" / manifest)[2][0]["_FILE"]["_FILE_NAME"]
    return name


def lone_entry_file(root: Path, manifest: str) -> str:
    """A data file of ``manifest`` that no other manifest names (no DELETE entry elsewhere),
    so the manifest that becomes corrupt is exactly this one."""
    seen: dict[str, int] = {}
    for path in _metadata_files(root, "manifest-"):
        for row in read_avro(path)[2]:
            seen[row["_FILE"]["_FILE_NAME"]] = seen.get(row["_FILE"]["_FILE_NAME"], 0) + 1
    rows = read_avro(root / "manifest" / manifest)[2]
    return next(r["_FILE"]["_FILE_NAME"] for r in rows if seen[r["_FILE"]["_FILE_NAME"]] == 1)


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("data-*") if p.is_file() and "manifest" not in p.parts)


# =============================================================================================
# Damage functions
# =============================================================================================


def _latest_snapshot_bytes(data: bytes | Callable[[bytes], bytes]) -> Callable[[Ctx], None]:
    def damage(ctx: Ctx) -> None:
        path = snapshot_path(ctx.root)
        path.write_bytes(data(path.read_bytes()) if callable(data) else data)
        ctx.values["culprit"] = path.name

    return damage


def _snapshot_edit(edit: Callable[[dict[str, Any]], Any], sid: int | None = None) -> Any:
    def damage(ctx: Ctx) -> None:
        path = snapshot_path(ctx.root, sid)
        edit_json(path, edit)
        ctx.values["culprit"] = path.name

    return damage


def corrupt_earliest_snapshot(ctx: Ctx) -> None:
    path = snapshot_path(ctx.root, 1)
    path.write_bytes(b'{"version": 3, "id": 1, "schemaId": 0, "baseManifestList": ')
    ctx.values["culprit"] = path.name


def _manifest_bytes(damage_bytes: Callable[[bytes], bytes]) -> Callable[[Ctx], None]:
    def damage(ctx: Ctx) -> None:
        name = delta_manifest(ctx.root, 2)  # in the base of every later snapshot and the tag
        path = ctx.root / "manifest" / name
        path.write_bytes(damage_bytes(path.read_bytes()))
        ctx.values["culprit"] = name

    return damage


def manifest_version_1(ctx: Ctx) -> None:
    name = delta_manifest(ctx.root, 2)

    def edit(row: dict[str, Any]) -> bool:
        row["_VERSION"] = 1
        return True

    rewrite_rows(ctx.root, "manifest-", edit, only=name)
    ctx.values["culprit"] = name


def manifest_list_garbage(ctx: Ctx) -> None:
    name = snapshot_json(ctx.root)["baseManifestList"]
    (ctx.root / "manifest" / name).write_bytes(b"Obj\x01" + b"\x00garbage\xff" * 40)
    ctx.values["culprit"] = name


def manifest_list_missing(ctx: Ctx) -> None:
    name = snapshot_json(ctx.root)["baseManifestList"]
    (ctx.root / "manifest" / name).unlink()
    ctx.values["culprit"] = name


def manifest_list_of_expired_missing(ctx: Ctx) -> None:
    name = snapshot_json(ctx.root, 2)["deltaManifestList"]
    (ctx.root / "manifest" / name).unlink()
    ctx.values["culprit"] = name


def manifest_list_entry_dotdot(ctx: Ctx) -> None:
    name = snapshot_json(ctx.root)["deltaManifestList"]
    victim = plant(ctx.outside / "manifest-victim", b"precious")
    ctx.protect.append(victim)

    def edit(row: dict[str, Any]) -> bool:
        row["_FILE_NAME"] = "../../../../../outside/manifest-victim"
        return True

    rewrite_rows(ctx.root, "manifest-list-", edit, only=name)
    ctx.values["culprit"] = name


def snapshot_list_name_dotdot(ctx: Ctx) -> None:
    victim = plant(ctx.outside / "list-victim", b"precious")
    ctx.protect.append(victim)
    rel = os.path.relpath(victim, ctx.root / "manifest")
    path = snapshot_path(ctx.root, 1)
    edit_json(path, lambda d: d.update(deltaManifestList=rel))
    ctx.values["culprit"] = path.name


def index_manifest_missing(ctx: Ctx) -> None:
    name = snapshot_json(ctx.root)["indexManifest"]
    (ctx.root / "manifest" / name).unlink()
    ctx.values["culprit"] = name
    # the deletion-vector files the missing index manifest named must survive
    ctx.protect.extend(sorted((ctx.root / "index").iterdir()))


def index_entry_dotdot(ctx: Ctx) -> None:
    name = snapshot_json(ctx.root)["indexManifest"]
    victim = plant(ctx.outside / "index-victim", b"precious")
    ctx.protect.append(victim)

    def edit(row: dict[str, Any]) -> bool:
        row["_FILE_NAME"] = "../../outside/index-victim"
        return True

    rewrite_rows(ctx.root, name, edit, only=name)
    ctx.values["culprit"] = name


def tag_corrupt(ctx: Ctx) -> None:
    path = ctx.root / "tag" / "tag-mid"
    path.write_bytes(path.read_bytes()[:40])
    ctx.values["culprit"] = path.name


def consumer_corrupt(ctx: Ctx) -> None:
    path = ctx.root / "consumer" / "consumer-reader"
    path.write_bytes(b'{"nextSnapshot": ')
    ctx.values["culprit"] = path.name


def consumer_non_integer(ctx: Ctx) -> None:
    path = ctx.root / "consumer" / "consumer-reader"
    path.write_text('{"nextSnapshot": "four"}')
    ctx.values["culprit"] = path.name


def schema_corrupt(ctx: Ctx) -> None:
    path = ctx.root / "schema" / "schema-0"
    path.write_bytes(b"\x00\x01 not a schema")
    ctx.values["culprit"] = path.name


def schema_missing_fields(ctx: Ctx) -> None:
    path = ctx.root / "schema" / "schema-0"
    edit_json(path, lambda d: d.pop("fields"))
    ctx.values["culprit"] = path.name


def no_schema(ctx: Ctx) -> None:
    shutil.rmtree(ctx.root / "schema")


def _entry_name(make: Callable[[Ctx, str], str]) -> Callable[[Ctx], None]:
    """Give the first entry of a manifest every later snapshot and the tag read a hostile
    ``_FILE_NAME`` (ADD and DELETE entries alike)."""

    def damage(ctx: Ctx) -> None:
        manifest = delta_manifest(ctx.root, 2)
        file_name = lone_entry_file(ctx.root, manifest)
        hostile = make(ctx, file_name)
        assert set_entry_file(ctx.root, file_name, _FILE_NAME=hostile) == [manifest]
        ctx.values["culprit"] = manifest

    return damage


def _dotdot(ctx: Ctx, _name: str) -> str:
    victim = plant(ctx.wh / "db.db" / "victim.parquet", b"precious")
    ctx.protect.append(victim)
    return "../../../../victim.parquet"  # from <root>/dt=/hr=/bucket-0 to <wh>/db.db


def _slash(ctx: Ctx, _name: str) -> str:
    other = data_files(ctx.root)[-1]
    ctx.protect.append(other)
    return str(other.relative_to(ctx.root))  # dt=../hr=../bucket-0/data-....parquet


def _absolute(ctx: Ctx, _name: str) -> str:
    victim = plant(ctx.outside / "victim.parquet", b"precious")
    ctx.protect.append(victim)
    return str(victim)


def extra_file_dotdot(ctx: Ctx) -> None:
    manifest = delta_manifest(ctx.root, 2)
    file_name = lone_entry_file(ctx.root, manifest)
    victim = plant(ctx.wh / "db.db" / "victim.index", b"precious")
    ctx.protect.append(victim)
    assert set_entry_file(ctx.root, file_name, _EXTRA_FILES=["../../../../victim.index"]) == [
        manifest
    ]
    ctx.values["culprit"] = manifest


def _external(make: Callable[[Ctx], str]) -> Callable[[Ctx], None]:
    """many_commits: the file added by snapshot 1 is DELETEd by the overwrite at 15, so an
    expiry with --retain-min 1 would delete it; give it a hostile ``_EXTERNAL_PATH``."""

    def damage(ctx: Ctx) -> None:
        file_name = first_entry_file(ctx.root, delta_manifest(ctx.root, 1))
        target = make(ctx)
        set_entry_file(ctx.root, file_name, _EXTERNAL_PATH=target)
        ctx.values["culprit"] = target

    return damage


def _ext_absolute(ctx: Ctx) -> str:
    victim = plant(ctx.outside / "ext-victim.parquet", b"precious data outside the table")
    ctx.protect.append(victim)
    return str(victim)


def _ext_s3(_ctx: Ctx) -> str:
    return "s3://evil-bucket/wh/victim.parquet"


def _ext_etc_passwd(ctx: Ctx) -> str:
    ctx.protect.append(Path("/etc/passwd"))
    return "file:/etc/passwd"


def _bucket(root: Path) -> Path:
    return root / "dt=2024-01-01" / "hr=0" / "bucket-0"


def symlink_file_in_bucket(ctx: Ctx) -> None:
    target = plant(ctx.outside / "target.parquet", b"precious")
    target2 = plant(ctx.outside / "target-manifest", b"precious")
    links = [
        _bucket(ctx.root) / "data-0000-link.parquet",
        ctx.root / "manifest" / "manifest-link-0",
        _bucket(ctx.root) / "data-dangling-link.parquet",
    ]
    links[0].symlink_to(target)
    links[1].symlink_to(target2)
    links[2].symlink_to(ctx.outside / "does-not-exist")
    for link in links:
        age(link)
    ctx.protect += [target, target2, *links]


def symlink_dir_in_partition_tree(ctx: Ctx) -> None:
    """A partition dir and a bucket dir that are symlinks to directories outside."""
    part = ctx.outside / "part"
    plant(part / "hr=0" / "bucket-0" / "data-outside-0.parquet", b"precious")
    plant(ctx.outside / "bucket" / "data-outside-1.parquet", b"precious")
    (ctx.root / "dt=2024-01-09").symlink_to(part, target_is_directory=True)
    (_bucket(ctx.root).parent / "bucket-7").symlink_to(ctx.outside / "bucket")
    age(ctx.root / "dt=2024-01-09")
    age(_bucket(ctx.root).parent / "bucket-7")


def symlinked_metadata_dir(ctx: Ctx) -> None:
    """``index/`` and ``statistics/`` (absent in this table) are symlinks to outside dirs
    full of old files: listing them through the link would make outside files 'orphans'."""
    for name in ("index", "statistics"):
        plant(ctx.outside / name / f"{name}-outside-0", b"precious")
        (ctx.root / name).symlink_to(ctx.outside / name, target_is_directory=True)


def non_utf8_names(ctx: Ctx) -> None:
    bucket = os.fsencode(_bucket(ctx.root))
    manifest = os.fsencode(ctx.root / "manifest")
    names = [
        os.path.join(bucket, b"junk-\xff\xfe.parquet"),
        os.path.join(manifest, b"manifest-\xff\xfe-0"),
        os.path.join(os.fsencode(ctx.root), b"dt=\xff", b"hr=0", b"bucket-0", b"data-\xfe.parquet"),
    ]
    for raw in names:
        os.makedirs(os.path.dirname(raw), exist_ok=True)
        with open(raw, "wb") as fh:
            fh.write(b"junk")
        t = time.time() - OLD
        os.utime(raw, (t, t))


def zero_byte_files(ctx: Ctx) -> None:
    planted = [
        plant(_bucket(ctx.root) / "data-zero-0.parquet", b""),
        plant(ctx.root / "manifest" / "manifest-zero-0", b""),
    ]
    (ctx.root / "snapshot" / "EARLIEST").write_bytes(b"")
    ctx.values["planted"] = json.dumps([str(p) for p in planted])


def _zero_byte_orphans_deleted(ctx: Ctx, key: str, _argv: Any, _invoke: Any) -> None:
    if key.startswith("orphans"):
        for p in json.loads(ctx.values["planted"]):
            assert not os.path.lexists(p), f"zero-byte orphan {p} was not deleted"


def data_file_zero_bytes(ctx: Ctx) -> None:
    live = first_entry_file(ctx.root, delta_manifest(ctx.root, 6))
    path = next(p for p in data_files(ctx.root) if p.name == live)
    path.write_bytes(b"")
    ctx.values["culprit"] = live
    ctx.protect.append(path)


def _deny(rel: Callable[[Path], Path]) -> Callable[[Ctx], None]:
    def damage(ctx: Ctx) -> None:
        path = rel(ctx.root)
        ctx.deny.append(path)
        ctx.values["culprit"] = path.name

    return damage


def chmod_000_bucket(ctx: Ctx) -> None:
    path = _bucket(ctx.root)
    plant(path / "data-orphan-0.parquet")
    os.chmod(path, 0)
    ctx.cleanup.append(lambda: os.chmod(path, 0o755))
    ctx.values["culprit"] = str(path.relative_to(ctx.root))


def _running_as_root() -> str | None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "runs as root: chmod 000 does not deny root (see the *_simulated case)"
    return None


def _nest(base: str) -> Callable[[Ctx], None]:
    def damage(ctx: Ctx) -> None:
        nested = ctx.root / "sub.db" / "t"
        shutil.copytree(ctx.scenarios[base].root, nested, symlinks=True)
        for dirpath, dirs, files in os.walk(nested):
            for name in files + dirs:
                age(Path(dirpath) / name)
        ctx.watch.append(nested)

    return damage


def _journal(content: Callable[[Ctx], bytes]) -> Callable[[Ctx], None]:
    def damage(ctx: Ctx) -> None:
        path = ctx.root / ".paimon-cli" / "journal" / "expire-snapshots-1-0123456789ab.json"
        path.parent.mkdir(parents=True)
        path.write_bytes(content(ctx))
        ctx.values["culprit"] = path.name

    return damage


def _plan(ctx: Ctx, command: str, victim: Path) -> bytes:
    plan = {
        "format": PLAN_FORMAT,
        "command": command,
        "table": str(ctx.root),
        "branch": "main",
        "created_ms": 1,
        "details": {},
        "requirements": {"latest_snapshot": 6, "expire_end": 2, "tags": {}, "branches": []},
        "phases": [
            {
                "name": "snapshots",
                "sequential": True,
                "actions": [{"op": "delete", "path": str(victim), "kind": "snapshot"}],
            }
        ],
    }
    return json.dumps(plan).encode()


def _journal_unknown(ctx: Ctx) -> bytes:
    victim = snapshot_path(ctx.root, 6)  # the latest snapshot: deleting it loses data
    ctx.protect.append(victim)
    return _plan(ctx, "frobnicate", victim)


def _journal_outside(ctx: Ctx) -> bytes:
    victim = plant(ctx.outside / "journal-victim", b"precious")
    ctx.protect.append(victim)
    return _plan(ctx, "expire-snapshots", victim)


def _hint(name: str, data: bytes | None) -> Callable[[Ctx], None]:
    def damage(ctx: Ctx) -> None:
        path = ctx.root / "snapshot" / name
        if data is None:
            path.unlink(missing_ok=True)
            path.mkdir()
        else:
            path.write_bytes(data)

    return damage


def snapshot_dir_junk(ctx: Ctx) -> None:
    for name in ("snapshot-7.tmp", ".snapshot-7.crc", "garbage.txt", "snapshot-x"):
        plant(ctx.root / "snapshot" / name, b"junk")


def branch_without_schema(ctx: Ctx) -> None:
    """A branch with a snapshot (main's latest) but no schema: its roots cannot be read."""
    snapshots = ctx.root / "branch" / "branch-ghost" / "snapshot"
    snapshots.mkdir(parents=True)
    latest = max(ctx.root.glob("snapshot/snapshot-*"), key=lambda p: int(p.name[9:]))
    shutil.copy(latest, snapshots / latest.name)
    ctx.values["culprit"] = "ghost"


def empty_branch_directory(ctx: Ctx) -> None:
    """What a delete-branch stopped right after its schemas went leaves (its journal removes
    it): no schema, snapshot or tag file, so no branch, and nothing in it to protect."""
    (ctx.root / "branch" / "branch-ghost" / "schema").mkdir(parents=True)


def table_is_file(ctx: Ctx) -> None:
    path = ctx.tmp / "not-a-table"
    path.write_text("hello")
    ctx.values["file"] = str(path)


def nothing(_ctx: Ctx) -> None:
    pass


# =============================================================================================
# Verification of successful runs
# =============================================================================================


def same_as_pristine(
    ctx: Ctx, key: str, template: tuple[str, ...], invoke: Callable[[list[str]], Any]
) -> None:
    """The run on the damaged table has the result of the same run on an undamaged copy:
    same snapshots, latest snapshot and retention (inspect), same problems (check), same
    files left (expire, orphans). Hint files are hints: their content is not compared."""
    assert ctx.base_root is not None
    base = ctx.tmp / "pristine" / "db.db" / ctx.root.name
    if not base.exists():  # read-only commands of a case share one
        shutil.copytree(ctx.base_root, base, symlinks=True)
    pristine = Ctx(base, ctx.tmp, ctx.outside, base.parents[1], ctx.scenarios)
    if key in ("inspect", "check"):
        # Re-run both as JSON (the test's own run was human output).
        mine = invoke([ctx.fill(a) for a in template] + ["--json"])
        theirs = invoke([pristine.fill(a) for a in template] + ["--json"])
        assert mine.exit_code == theirs.exit_code == 0, mine.stderr
        a, b = json.loads(mine.stdout), json.loads(theirs.stdout)
        if key == "inspect":
            for k in ("snapshots", "latest_snapshot", "live", "retention"):
                assert a["summary"][k] == b["summary"][k], k
        else:
            assert a["check"]["problems"] == b["check"]["problems"] == []
            assert a["check"]["files_checked"] == b["check"]["files_checked"]
        return
    result = invoke([pristine.fill(a) for a in template])
    assert result.exit_code == 0, result.stderr

    def files(root: Path) -> set[str]:
        out = set()
        for dirpath, _dirs, names in os.walk(root):
            for n in names:
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                if n not in ("EARLIEST", "LATEST") and not rel.startswith(".paimon-cli"):
                    out.add(rel)
        return out

    assert files(ctx.root) == files(base)


# =============================================================================================
# The corpus
# =============================================================================================


def fail_all(
    phrase: str = "{culprit}", check_code: int = DAMAGED, **xfails: str
) -> dict[str, Expect]:
    """Every command fails naming the culprit; --check reports it as damage (exit 3), or,
    ``check_code`` 1, cannot check at all (the table does not open, storage refuses)."""
    return {k: Expect(check_code if k == "check" else 1, phrase, xfails.get(k)) for k in COMMANDS}


def ok_all(*keys: str, **xfails: str) -> dict[str, Expect]:
    return {k: Expect(0, None, xfails.get(k)) for k in (keys or tuple(COMMANDS))}


def latest_broken(**over: Expect) -> dict[str, Expect]:
    """The latest snapshot's own metadata is broken: every command fails, expire-snapshots
    too (it checks every kept snapshot before deleting anything)."""
    return {**fail_all(), **over}


def summary_ok(**over: Expect) -> dict[str, Expect]:
    """Broken metadata the summary does not need (an old snapshot, index manifests): the
    summary (read-only) still shows; every other command fails naming it."""
    return {**fail_all(), "inspect": Expect(0), **over}


def _with(base: tuple[str, ...], *extra: str) -> tuple[str, ...]:
    return (*base, *extra)


CASES: list[Case] = [
    # -- snapshot JSON ------------------------------------------------------------------------
    Case("snapshot_garbage", AP, _latest_snapshot_bytes(b"{not json at all"), latest_broken()),
    Case(
        "snapshot_truncated",
        AP,
        _latest_snapshot_bytes(lambda b: b[: len(b) // 2]),
        latest_broken(),
    ),
    Case("snapshot_empty", AP, _latest_snapshot_bytes(b""), latest_broken()),
    Case("snapshot_non_utf8", AP, _latest_snapshot_bytes(b'{"id": "\xff\xfe"}'), latest_broken()),
    Case("snapshot_non_object", AP, _latest_snapshot_bytes(b"[1, 2, 3]"), latest_broken()),
    Case(
        "snapshot_missing_fields",
        AP,
        _snapshot_edit(lambda d: d.pop("baseManifestList")),
        latest_broken(),
    ),
    Case(
        "snapshot_version_99", AP, _snapshot_edit(lambda d: d.update(version=99)), latest_broken()
    ),
    Case("snapshot_id_mismatch", AP, _snapshot_edit(lambda d: d.update(id=7)), latest_broken()),
    Case(
        "snapshot_unknown_commit_kind",
        AP,
        _snapshot_edit(lambda d: d.update(commitKind="MERGE")),
        latest_broken(),
    ),
    Case(
        "snapshot_earliest_corrupt",
        AP,
        corrupt_earliest_snapshot,
        summary_ok(),
        note="the snapshot expire-snapshots would delete is the unreadable one",
    ),
    Case(
        "snapshot_list_name_dotdot",
        AP,
        snapshot_list_name_dotdot,
        summary_ok(),
        note="deltaManifestList of snapshot-1 is ../../outside/list-victim",
    ),
    Case("snapshot_dir_junk", AP, snapshot_dir_junk, ok_all()),
    # -- manifests and lists ------------------------------------------------------------------
    Case(
        "manifest_garbage",
        AP,
        _manifest_bytes(lambda _b: b"\x00garbage" * 50),
        fail_all(),
    ),
    Case(
        "manifest_truncated",
        AP,
        _manifest_bytes(lambda b: b[: len(b) // 2]),
        fail_all(),
    ),
    Case("manifest_zero_bytes", AP, _manifest_bytes(lambda _b: b""), fail_all()),
    Case("manifest_version_1", AP, manifest_version_1, fail_all()),
    Case("manifest_list_garbage", AP, manifest_list_garbage, latest_broken()),
    Case("manifest_list_missing", AP, manifest_list_missing, latest_broken()),
    Case(
        "manifest_list_of_expired_snapshot_missing",
        AP,
        manifest_list_of_expired_missing,
        summary_ok(),
        note="snapshot-2's delta list: what the expiry of 1..3 must read",
    ),
    Case("manifest_list_entry_dotdot", AP, manifest_list_entry_dotdot, latest_broken()),
    Case(
        "index_manifest_missing",
        DV,
        index_manifest_missing,
        summary_ok(orphans=Expect(1, "{culprit}")),
    ),
    Case("index_manifest_entry_dotdot", DV, index_entry_dotdot, summary_ok()),
    # -- tags, consumers, schemas, branches ----------------------------------------------------
    Case("tag_corrupt", AP, tag_corrupt, fail_all()),
    Case(
        "consumer_corrupt",
        AP,
        consumer_corrupt,
        {
            "inspect": Expect(1, "{culprit}"),
            "check": Expect(0),  # --check verifies referenced files; consumers reference none
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(0),  # orphan cleaning does not depend on consumers
        },
    ),
    Case(
        "consumer_non_integer",
        AP,
        consumer_non_integer,
        {
            "inspect": Expect(1, "{culprit}"),
            "check": Expect(0),
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(0),
        },
    ),
    Case("schema_corrupt", AP, schema_corrupt, fail_all(check_code=1)),
    Case("schema_missing_fields", AP, schema_missing_fields, fail_all(check_code=1)),
    Case("no_schema", AP, no_schema, fail_all("not a Paimon table", check_code=1)),
    Case(
        "branch_without_schema",
        AP,
        branch_without_schema,
        {
            "inspect": Expect(0),  # the summary only counts branch directories
            "check": Expect(1, "{culprit}"),
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(1, "{culprit}"),
        },
        note="branch/branch-ghost/ holds a snapshot but no schema: its roots cannot be read",
    ),
    Case(
        "empty_branch_directory",
        AP,
        empty_branch_directory,
        ok_all(),
        note="branch/branch-ghost/ holds no file: not a branch (Paimon's orphan clean would "
        "stop on it)",
    ),
    # -- hostile file names and paths ----------------------------------------------------------
    Case("entry_file_name_dotdot", AP, _entry_name(_dotdot), fail_all()),
    Case("entry_file_name_slash", AP, _entry_name(_slash), fail_all()),
    Case("entry_file_name_absolute", AP, _entry_name(_absolute), fail_all()),
    Case("entry_extra_file_dotdot", AP, extra_file_dotdot, fail_all()),
    Case(
        "external_path_absolute_outside",
        MC,
        _external(_ext_absolute),
        {
            "inspect": Expect(0),
            "check": Expect(DAMAGED, "{culprit}"),
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(0),
        },
        note="never deleted: the path lock refuses the expiry; orphans match names only",
    ),
    Case(
        "external_path_other_scheme",
        MC,
        _external(_ext_s3),
        {
            "inspect": Expect(0),
            "check": Expect(1, "{culprit}"),
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(0),
        },
    ),
    Case(
        "external_path_file_etc_passwd",
        MC,
        _external(_ext_etc_passwd),
        {
            "inspect": Expect(0),
            "check": Expect(DAMAGED, "/etc/passwd"),
            "expire": Expect(1, "/etc/passwd"),
            "orphans": Expect(0),
        },
    ),
    Case("symlink_file_in_bucket", AP, symlink_file_in_bucket, ok_all()),
    Case("symlink_dir_in_partition_tree", AP, symlink_dir_in_partition_tree, ok_all()),
    Case(
        "symlinked_metadata_dir",
        AP,
        symlinked_metadata_dir,
        ok_all(),
    ),
    Case(
        "non_utf8_file_names",
        AP,
        non_utf8_names,
        {**ok_all(), "orphans-json": Expect(0)},
        argv={"orphans-json": _with(ORPHANS, "--json")},
    ),
    Case(
        "zero_byte_files",
        AP,
        zero_byte_files,
        ok_all(),
        verify=_zero_byte_orphans_deleted,
        note="zero-byte orphans in a bucket dir and manifest/, an empty EARLIEST hint",
    ),
    Case(
        "data_file_zero_bytes",
        AP,
        data_file_zero_bytes,
        {
            "inspect": Expect(0),
            "check": Expect(DAMAGED, "{culprit}"),
            "expire": Expect(0),
            "orphans": Expect(0),
        },
    ),
    # -- permissions -----------------------------------------------------------------------------
    Case(
        "permission_denied_bucket_chmod",
        AP,
        chmod_000_bucket,
        {
            "inspect": Expect(1, "{culprit}"),
            "check": Expect(DAMAGED, "{culprit}"),
            "expire": Expect(0),
            "orphans": Expect(1, "{culprit}"),
        },
        inapplicable=_running_as_root,
    ),
    Case(
        "permission_denied_bucket_simulated",
        AP,
        _deny(_bucket),
        {
            "inspect": Expect(1, "{culprit}"),
            "check": Expect(1, "{culprit}"),
            "expire": Expect(0),
            "orphans": Expect(1, "{culprit}"),
        },
        note="FileIO answers as on a chmod 000 directory (tests run as root)",
    ),
    Case(
        "permission_denied_manifest_dir_simulated",
        AP,
        _deny(lambda r: r / "manifest"),
        fail_all(check_code=1),
    ),
    # -- a second table inside the table -------------------------------------------------------
    Case("nested_table_in_partitioned", AP, _nest(MC), ok_all()),
    Case("nested_table_in_unpartitioned", MC, _nest(AP), ok_all()),
    # -- journals ------------------------------------------------------------------------------
    Case(
        "journal_unreadable",
        AP,
        _journal(lambda _c: b'{"format": 1, "command": "expire-snap'),
        {
            "inspect": Expect(0),
            "check": Expect(0),
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(1, "{culprit}"),
        },
    ),
    Case(
        "journal_not_a_plan",
        AP,
        _journal(lambda _c: b'{"command": "expire-snapshots"}'),
        {
            "inspect": Expect(0),
            "check": Expect(0),
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(1, "{culprit}"),
        },
    ),
    Case(
        "journal_unknown_command",
        AP,
        _journal(_journal_unknown),
        {
            "inspect": Expect(0),
            "check": Expect(0),
            "expire": Expect(1, "{culprit}"),
            "orphans": Expect(1, "{culprit}"),
        },
        note="the unknown journal would delete the latest snapshot",
    ),
    Case(
        "journal_deletes_outside",
        AP,
        _journal(_journal_outside),
        {
            "inspect": Expect(0),
            "check": Expect(0),
            "expire": Expect(1, "journal-victim"),
            "orphans": Expect(1, "journal-victim"),
        },
    ),
    # -- hints are hints -----------------------------------------------------------------------
    Case("hint_latest_abc", AP, _hint("LATEST", b"abc"), ok_all(), verify=same_as_pristine),
    Case("hint_earliest_minus5", AP, _hint("EARLIEST", b"-5"), ok_all(), verify=same_as_pristine),
    Case("hint_latest_99", AP, _hint("LATEST", b"99"), ok_all(), verify=same_as_pristine),
    Case(
        "hint_latest_non_utf8", AP, _hint("LATEST", b"\xff\xfe6"), ok_all(), verify=same_as_pristine
    ),
    Case("hint_latest_is_directory", AP, _hint("LATEST", None), ok_all(), verify=same_as_pristine),
]

# -- absurd options and table arguments (usage errors are exit 2) -----------------------------
_P0 = {k: _with(v, "--parallelism", "0") for k, v in COMMANDS.items()}
_PBIG = {k: _with(v, "--parallelism", "100000") for k, v in COMMANDS.items()}
_TZ = {k: _with(v, "--timezone", "Bogus/Zone") for k, v in COMMANDS.items()}


def _table_arg(arg: str, *extra: str) -> dict[str, tuple[str, ...]]:
    return {k: (v[0], arg, *v[2:], *extra) for k, v in COMMANDS.items()}


CASES += [
    Case("parallelism_zero", AP, nothing, {k: Expect(2, "--parallelism") for k in _P0}, _P0),
    Case("parallelism_huge", AP, nothing, {k: Expect(2, "--parallelism") for k in _PBIG}, _PBIG),
    Case("timezone_bogus", AP, nothing, {k: Expect(2, "Bogus/Zone") for k in _TZ}, _TZ),
    Case(
        "retain_min_huge",
        AP,
        nothing,
        {"expire": Expect(2, "retain-min")},
        {"expire": _with(EXPIRE[:2], "--retain-min", str(10**12), "--older-than", "0 ms")},
    ),
    Case(
        "retain_min_above_retain_max",
        AP,
        nothing,
        {"expire": Expect(2, "--retain-max")},
        {"expire": _with(EXPIRE, "--retain-max", "0")},
    ),
    Case(
        "max_deletes_negative",
        AP,
        nothing,
        {"expire": Expect(2, "--max-deletes")},
        {"expire": _with(EXPIRE, "--max-deletes", "-1")},
    ),
    Case(
        "older_than_year_9999",
        AP,
        nothing,
        {"expire": Expect(2, "future"), "orphans": Expect(2, "future")},
        {
            "expire": _with(EXPIRE[:4], "--older-than", "9999-12-31 23:59:59"),
            "orphans": _with(ORPHANS[:2], "--older-than", "9999-12-31 23:59:59", "--allow-recent"),
        },
        note="a cut-off in the future is a usage error (it would make everything written "
        "until then look old enough)",
    ),
    Case(
        "older_than_overflow",
        AP,
        nothing,
        {"expire": Expect(2, "ambiguous"), "orphans": Expect(2, "ambiguous")},
        {
            "expire": _with(EXPIRE[:4], "--older-than", "99999999999999999999"),
            "orphans": _with(ORPHANS[:2], "--older-than", "99999999999999999999", "--allow-recent"),
        },
    ),
    Case(
        "older_than_empty",
        AP,
        nothing,
        {"expire": Expect(2, "--older-than"), "orphans": Expect(2, "--older-than")},
        {
            "expire": _with(EXPIRE[:4], "--older-than", ""),
            "orphans": _with(ORPHANS[:2], "--older-than", "", "--allow-recent"),
        },
    ),
    Case(
        "options_not_key_value",
        AP,
        nothing,
        {"expire": Expect(2, "--options")},
        {"expire": _with(EXPIRE, "--options", "snapshot.num-retained.min")},
    ),
    Case(
        "empty_table_argument",
        None,
        nothing,
        {k: Expect(2, "''") for k in COMMANDS},
        _table_arg(""),
    ),
    Case(
        "table_argument_is_a_file",
        None,
        table_is_file,
        {k: Expect(1, "not a directory") for k in COMMANDS},
        _table_arg("{file}"),
    ),
    Case(
        "table_missing",
        None,
        nothing,
        {k: Expect(1, "does not exist") for k in COMMANDS},
        _table_arg("{tmp}/no/such/table"),
    ),
    Case(
        "db_table_without_warehouse",
        None,
        nothing,
        {k: Expect(2, "--warehouse") for k in COMMANDS},
        _table_arg("db.t"),
    ),
    Case(
        "glob_matches_nothing",
        AP,
        nothing,
        {k: Expect(1, "nomatch.*") for k in COMMANDS},
        _table_arg("nomatch.*", "--warehouse", "{wh}"),
    ),
    Case(
        "branch_missing",
        AP,
        nothing,
        {k: Expect(1, "nope") for k in ("inspect", "check", "expire")},
        {k: _with(COMMANDS[k], "--branch", "nope") for k in ("inspect", "check", "expire")},
    ),
]
