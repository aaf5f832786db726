"""Details of the tag commands (create-tag, delete-tag, expire-tags, rename-tag), maintain's
automatic tag creation and consumer expiry."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.runtime.details import Record, json_key


@dataclass(frozen=True, slots=True)
class CreateTagDetails(Record):
    tag: str
    snapshot_id: int
    snapshot_time_ms: int
    replace: bool  # the tag exists and is moved
    time_retained_ms: int | None
    create_time_local: str | None  # tagCreateTime, when the tag has a retention
    # --from-timestamp: the time asked for (the snapshot is the first at or after it)
    from_timestamp_ms: int | None = None
    create_time_ms: int | None = None  # tagCreateTime as an instant


@dataclass(frozen=True, slots=True)
class DeletedTag(Record):
    tag: str
    snapshot_id: int
    snapshot_exists: bool  # then only the tag file goes
    files_freed: int  # files only this tag kept alive
    reason: str
    branches: tuple[str, ...]  # created from it (a deletion --force allowed)


@dataclass(frozen=True, slots=True)
class TagDeletionDetails(Record):
    """delete-tag and expire-tags: the tags deleted, the names not found."""

    tags: tuple[DeletedTag, ...]
    missing: tuple[str, ...]
    forced: bool  # past a branch created from a tag


@dataclass(frozen=True, slots=True)
class RenameTagDetails(Record):
    old: str = field(metadata=json_key("from"))
    new: str = field(metadata=json_key("to"))
    possible: bool  # OLD exists and NEW does not


@dataclass(frozen=True, slots=True)
class AutoTag(Record):
    tag: str
    snapshot_id: int
    snapshot_time_ms: int
    moved_from: int | None  # batch mode: the snapshot the tag was on


@dataclass(frozen=True, slots=True)
class AutoTagsDetails(Record):
    """tag.automatic-creation: the mode, its period and delay, and the tags it creates."""

    mode: str
    period: str | None
    delay_ms: int | None
    time_retained_ms: int | None
    create_time_local: str | None
    create_time_ms: int | None
    tags: tuple[AutoTag, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConsumerState(Record):
    id: str
    next_snapshot: int
    modified_ms: int | None
    expired: bool  # idle past consumer.expiration-time


@dataclass(frozen=True, slots=True)
class ConsumerExpiryDetails(Record):
    expiration_ms: int | None  # consumer.expiration-time (None: consumers never expire)
    cutoff_ms: int | None
    consumers: tuple[ConsumerState, ...]
