package paimonclitest;

import org.apache.paimon.Changelog;
import org.apache.paimon.Snapshot;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.tag.Tag;
import org.apache.paimon.utils.Pair;
import org.apache.paimon.utils.SnapshotManager;

import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads a table with Apache Paimon (Java) and prints one JSON document of what it sees (the
 * document tests/support/java_paimon.py describes):
 *
 * <ul>
 *   <li>metadata: {@code snapshot_ids}, {@code latest_snapshot_id}, {@code
 *       earliest_snapshot_id}, the hints, {@code changelog_ids} (long-lived changelogs),
 *       {@code tags} (snapshot and time retained of each), {@code consumers} (next snapshot
 *       of each), {@code schema_ids};
 *   <li>the latest snapshot's {@code partitions}, {@code live_files_by_partition} (relative
 *       partition path to {@code bucket-N/file} names) and {@code live_data_files};
 *   <li>{@code entries}: for {@code latest}, {@code snapshot-N} and {@code tag-NAME}, the
 *       number of rows Paimon reads and a checksum of them that ignores their order ({@code
 *       {"error": ...}} when the read fails);
 *   <li>{@code missing_files}: files a snapshot, tag or long-lived changelog references that
 *       do not exist (see {@link ReferencedFiles});
 *   <li>{@code errors}: everything Paimon could not read, by step ({@code open}, {@code
 *       read:latest}, {@code refs:snapshot-3}, ...); {@code ok} when both are empty.
 * </ul>
 *
 * <pre>Verify TABLE_PATH [--no-read] [--branch=NAME]</pre>
 *
 * {@code --no-read} leaves out the row reads (metadata and references only); {@code
 * --branch=NAME} reads that branch instead of main.
 */
public final class Verify {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final String root;
    private final Map<String, String> errors = new TreeMap<>();
    private final Map<String, Object> doc = new LinkedHashMap<>();

    private Verify(String root) {
        this.root = root;
    }

    public static void main(String[] argv) {
        Serve.oneShot(Verify::run, argv);
    }

    private static final String USAGE = "usage: Verify TABLE_PATH [--no-read] [--branch=NAME]";

    public static void run(String[] argv) throws Exception {
        String table = null;
        String branch = null;
        boolean read = true;
        for (String arg : argv) {
            if (arg.equals("--no-read")) {
                read = false;
            } else if (arg.startsWith("--branch=")) {
                branch = arg.substring("--branch=".length());
            } else if (table == null && !arg.startsWith("--")) {
                table = arg;
            } else {
                throw new IllegalArgumentException(USAGE);
            }
        }
        if (table == null) {
            throw new IllegalArgumentException(USAGE);
        }
        String root = Paths.get(table).toAbsolutePath().normalize().toString();
        System.out.println(MAPPER.writeValueAsString(new Verify(root).document(read, branch)));
    }

    private Map<String, Object> document(boolean read, String branch) {
        doc.put("table", root);
        doc.put("branch", branch == null ? "main" : branch);
        FileStoreTable table;
        try {
            table = FileStoreTableFactory.create(LocalFileIO.create(), new Path(root));
            if (branch != null) {
                table = table.switchToBranch(branch);
            }
        } catch (Throwable e) {
            return finish(Collections.emptyMap(), Collections.emptyList(), "open", e);
        }
        List<Snapshot> snapshots = snapshots(table.snapshotManager());
        List<Changelog> changelogs = changelogs(table.snapshotManager());
        List<Pair<Tag, String>> tags = tags(table);
        consumersAndSchemas(table);
        latestFiles(table);
        Map<String, Object> entries = new TreeMap<>();
        if (read) {
            if (!snapshots.isEmpty()) {
                entries.put("latest", readEntry("latest", table));
            }
            for (Snapshot s : snapshots) {
                String key = "snapshot-" + s.id();
                entries.put(key, readEntry(key, at(table, "scan.snapshot-id", "" + s.id())));
            }
            for (Pair<Tag, String> tag : tags) {
                String key = "tag-" + tag.getRight();
                entries.put(key, readEntry(key, at(table, "scan.tag-name", tag.getRight())));
            }
        }
        ReferencedFiles refs = new ReferencedFiles(table, errors);
        for (Snapshot s : snapshots) {
            refs.ofSnapshot("snapshot-" + s.id(), s, true);
        }
        for (Pair<Tag, String> tag : tags) {
            refs.ofSnapshot("tag-" + tag.getRight(), tag.getLeft(), false);
        }
        for (Changelog c : changelogs) {
            refs.ofChangelog("changelog-" + c.id(), c);
        }
        return finish(entries, refs.missing(), null, null);
    }

    private Map<String, Object> finish(
            Map<String, Object> entries, List<String> missing, String step, Throwable failure) {
        if (failure != null) {
            errors.put(step, cause(failure));
        }
        doc.put("entries", entries);
        doc.put("missing_files", missing);
        doc.put("errors", errors);
        doc.put("ok", errors.isEmpty() && missing.isEmpty());
        return doc;
    }

    private List<Snapshot> snapshots(SnapshotManager sm) {
        List<Snapshot> snapshots = new ArrayList<>();
        try {
            snapshots.addAll(sm.safelyGetAllSnapshots());
        } catch (Throwable e) {
            errors.put("list-snapshots", cause(e));
        }
        snapshots.sort((a, b) -> Long.compare(a.id(), b.id()));
        List<Long> ids = new ArrayList<>();
        for (Snapshot s : snapshots) {
            ids.add(s.id());
        }
        doc.put("snapshot_ids", ids);
        doc.put("latest_snapshot_id", attempt("latest-id", sm::latestSnapshotId));
        doc.put("earliest_snapshot_id", attempt("earliest-id", sm::earliestSnapshotId));
        doc.put("hint_earliest", attempt("hint", () -> sm.readHint(SnapshotManager.EARLIEST)));
        doc.put("hint_latest", attempt("hint", () -> sm.readHint(SnapshotManager.LATEST)));
        return snapshots;
    }

    private List<Changelog> changelogs(SnapshotManager sm) {
        List<Changelog> changelogs = new ArrayList<>();
        try {
            changelogs.addAll(sm.safelyGetAllChangelogs());
        } catch (Throwable e) {
            errors.put("list-changelogs", cause(e));
        }
        changelogs.sort((a, b) -> Long.compare(a.id(), b.id()));
        List<Long> ids = new ArrayList<>();
        for (Changelog c : changelogs) {
            ids.add(c.id());
        }
        doc.put("changelog_ids", ids);
        return changelogs;
    }

    private List<Pair<Tag, String>> tags(FileStoreTable table) {
        List<Pair<Tag, String>> tags = new ArrayList<>();
        Map<String, Object> byName = new TreeMap<>();
        try {
            tags.addAll(table.tagManager().tagObjects());
        } catch (Throwable e) {
            errors.put("list-tags", cause(e));
        }
        for (Pair<Tag, String> tag : tags) {
            Map<String, Object> facts = new LinkedHashMap<>();
            facts.put("snapshot", tag.getLeft().id());
            java.time.Duration retained = tag.getLeft().getTagTimeRetained();
            facts.put("time_retained_ms", retained == null ? null : retained.toMillis());
            byName.put(tag.getRight(), facts);
        }
        doc.put("tags", byName);
        return tags;
    }

    private void consumersAndSchemas(FileStoreTable table) {
        Object consumers =
                attempt(
                        "consumers",
                        () ->
                                new TreeMap<>(
                                        new ConsumerManager(table.fileIO(), table.location())
                                                .consumers()));
        if (consumers != null) {
            doc.put("consumers", consumers);
        }
        Object schemas =
                attempt(
                        "schemas",
                        () -> new SchemaManager(table.fileIO(), table.location()).listAllIds());
        if (schemas != null) {
            doc.put("schema_ids", schemas);
        }
    }

    /** Partitions and data files of the latest snapshot, as Paimon's own scan plans them. */
    private void latestFiles(FileStoreTable table) {
        try {
            Map<String, List<String>> byPartition = new TreeMap<>();
            int count = 0;
            if (table.snapshotManager().latestSnapshotId() != null) {
                for (ManifestEntry e : table.store().newScan().plan().files()) {
                    String bucketDir =
                            table.store()
                                    .pathFactory()
                                    .relativePartitionAndBucketPath(e.partition(), e.bucket())
                                    .toString();
                    int cut = bucketDir.lastIndexOf('/');
                    String partition = cut < 0 ? "" : bucketDir.substring(0, cut);
                    byPartition
                            .computeIfAbsent(partition, k -> new ArrayList<>())
                            .add(bucketDir.substring(cut + 1) + "/" + e.file().fileName());
                    count++;
                }
            }
            byPartition.values().forEach(Collections::sort);
            doc.put("partitions", new ArrayList<>(byPartition.keySet()));
            doc.put("live_files_by_partition", byPartition);
            doc.put("live_data_files", count);
        } catch (Throwable e) {
            errors.put("scan-latest", cause(e));
        }
    }

    private static FileStoreTable at(FileStoreTable table, String option, String value) {
        return table.copy(Collections.singletonMap(option, value));
    }

    /**
     * Rows and checksum of one read; the checksum adds up a 128-bit hash of each row's text
     * (row kind and values, DumpRows#line) in two 64-bit halves, so row order does not
     * matter and duplicate rows count.
     */
    private Map<String, Object> readEntry(String key, FileStoreTable table) {
        Map<String, Object> entry = new LinkedHashMap<>();
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            long[] sums = new long[3];
            ReadBuilder rb = table.newReadBuilder();
            try (RecordReader<InternalRow> reader =
                    rb.newRead().createReader(rb.newScan().plan().splits())) {
                reader.forEachRemaining(
                        row -> {
                            byte[] h =
                                    sha.digest(
                                            DumpRows.line(row, table.rowType())
                                                    .getBytes(StandardCharsets.UTF_8));
                            sums[0]++;
                            sums[1] += half(h, 0);
                            sums[2] += half(h, 8);
                        });
            }
            entry.put("rows", sums[0]);
            entry.put("checksum", String.format("%016x%016x", sums[1], sums[2]));
        } catch (Throwable e) {
            entry.put("error", cause(e));
            errors.put("read:" + key, cause(e));
        }
        return entry;
    }

    private static long half(byte[] hash, int from) {
        long v = 0;
        for (int i = from; i < from + 8; i++) {
            v = (v << 8) | (hash[i] & 0xff);
        }
        return v;
    }

    interface Attempt<T> {
        T get() throws Exception;
    }

    private <T> T attempt(String step, Attempt<T> what) {
        try {
            return what.get();
        } catch (Throwable e) {
            errors.put(step, cause(e));
            return null;
        }
    }

    /** The failure and, when it wraps one, its root cause: what a test report needs. */
    static String cause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = root.getClass().getName() + ": " + root.getMessage();
        return root == e ? text : e.getClass().getName() + ": " + e.getMessage() + " <- " + text;
    }
}
