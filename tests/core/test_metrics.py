"""Prometheus text file: the standard parser reads it, merges keep other tables' series,
and a concurrent reader only ever sees a whole file (atomic replace)."""

from __future__ import annotations

import threading
from pathlib import Path

from support.fixtures import dev_dependency

from core.ops.maintain.metrics import Sample, merge, parse, render, write_metrics

prometheus_parser = dev_dependency("prometheus_client.parser", "prometheus_client")


def families(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name -> {sorted labels: value}, as prometheus_client reads the text."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in prometheus_parser.text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_render_is_standard_text_with_help_type_and_escaped_labels() -> None:
    odd = 'we"ird\\table\nname'
    samples = [
        Sample.of("paimon_maintenance_success", 1, table="db.a"),
        Sample.of("paimon_maintenance_success", 0, table=odd),
        Sample.of("paimon_maintenance_files_deleted", 12, table="db.a", step="expire-snapshots"),
        Sample.of("paimon_table_oldest_snapshot_age_seconds", 3600.5, table="db.a"),
    ]
    text = render(samples)
    assert "# HELP paimon_maintenance_success " in text
    assert "# TYPE paimon_maintenance_success gauge" in text
    got = families(text)
    assert got["paimon_maintenance_success"] == {(("table", "db.a"),): 1.0, (("table", odd),): 0.0}
    assert got["paimon_maintenance_files_deleted"] == {
        (("step", "expire-snapshots"), ("table", "db.a")): 12.0
    }
    assert got["paimon_table_oldest_snapshot_age_seconds"][(("table", "db.a"),)] == 3600.5
    assert sorted(parse(text), key=lambda s: (s.name, s.labels)) == sorted(
        samples, key=lambda s: (s.name, s.labels)
    )


def test_merge_replaces_only_what_this_run_wrote() -> None:
    previous = [
        Sample.of("paimon_maintenance_success", 1, table="db.a"),
        Sample.of("paimon_maintenance_last_success_timestamp_seconds", 100, table="db.a"),
        Sample.of("paimon_maintenance_success", 1, table="db.b"),
        Sample.of("paimon_maintenance_files_deleted", 5, table="db.a", step="expire-tags"),
        Sample.of("paimon_table_total_bytes", 999, table="db.a"),
    ]
    # db.a failed this time: no new last-success time, so the previous one stays.
    current = [
        Sample.of("paimon_maintenance_success", 0, table="db.a"),
        Sample.of("paimon_maintenance_files_deleted", 0, table="db.a", step="expire-snapshots"),
    ]
    merged = {(s.name, s.labels): s.value for s in merge(previous, current)}
    assert merged[("paimon_maintenance_success", (("table", "db.a"),))] == 0
    assert (
        merged[("paimon_maintenance_last_success_timestamp_seconds", (("table", "db.a"),))] == 100
    )
    assert merged[("paimon_maintenance_success", (("table", "db.b"),))] == 1
    assert merged[("paimon_table_total_bytes", (("table", "db.a"),))] == 999
    # The files-deleted family of db.a is this run's: the old step series is gone.
    assert (
        "paimon_maintenance_files_deleted",
        (("step", "expire-tags"), ("table", "db.a")),
    ) not in merged


def test_write_merges_with_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "paimon.prom"
    write_metrics(str(path), [Sample.of("paimon_table_snapshots", 3, table="db.a")])
    write_metrics(str(path), [Sample.of("paimon_table_snapshots", 7, table="db.b")])
    got = families(path.read_text())
    assert got["paimon_table_snapshots"] == {
        (("table", "db.a"),): 3.0,
        (("table", "db.b"),): 7.0,
    }
    assert [p.name for p in tmp_path.iterdir()] == ["paimon.prom"]


def test_a_concurrent_reader_never_sees_half_a_file(tmp_path: Path) -> None:
    path = tmp_path / "paimon.prom"
    write_metrics(str(path), [Sample.of("paimon_table_snapshots", 0, table="t0")])
    stop = threading.Event()
    seen: list[int] = []
    errors: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            text = path.read_text()
            try:
                series = families(text)["paimon_table_snapshots"]
            except (ValueError, KeyError) as exc:
                errors.append(f"{exc}: {text[-200:]!r}")
                continue
            # Writer n writes tables t0..tn, each with value n: a whole file only.
            values = set(series.values())
            if len(values) != 1 or len(series) != int(values.pop()) + 1:
                errors.append(f"mixed file: {sorted(series.items())[:3]}")
            seen.append(len(series))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(1, 60):
            # Big enough that a non-atomic write would be observed half done.
            write_metrics(
                str(path),
                [Sample.of("paimon_table_snapshots", n, table=f"t{k}") for k in range(n + 1)],
            )
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert seen, "the reader never ran"
