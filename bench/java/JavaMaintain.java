package paimonbench;

import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.operation.OrphanFilesClean;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.types.DataTypes;

import java.time.Duration;
import java.util.Collections;

/**
 * Apache Paimon 0.9's own writer and maintenance on a local table, for bench/bench_java.py:
 *
 * <ul>
 *   <li>{@code write TABLE SNAPSHOTS PARTITIONS BUCKETS FILES_PER_COMMIT}: creates an append
 *       table {@code (id BIGINT, p INT, v STRING)} partitioned by p with BUCKETS buckets and
 *       commits through one streaming writer until the table has SNAPSHOTS snapshots; each
 *       commit writes one row into each of FILES_PER_COMMIT partitions (round-robin), so one
 *       file each. Paimon's own defaults do the rest: manifest merging at commit, the
 *       writer's bucket compaction (COMPACT snapshots), no expiry while writing.
 *   <li>{@code expire TABLE RETAIN_MAX}: ExpireSnapshots keeping exactly RETAIN_MAX, no
 *       expire limit;
 *   <li>{@code orphans TABLE 'yyyy-MM-dd HH:mm:ss'}: OrphanFilesClean, local mode.
 * </ul>
 *
 * Prints the number of snapshots written or expired, or files deleted.
 */
public final class JavaMaintain {
    public static void main(String[] argv) throws Exception {
        Path path = new Path(argv[1]);
        if (argv[0].equals("write")) {
            System.out.println(
                    write(
                            path,
                            Long.parseLong(argv[2]),
                            Integer.parseInt(argv[3]),
                            Integer.parseInt(argv[4]),
                            Integer.parseInt(argv[5])));
            System.exit(0);
        }
        FileStoreTable table = FileStoreTableFactory.create(LocalFileIO.create(), path);
        if (argv[0].equals("expire")) {
            ExpireConfig config =
                    ExpireConfig.builder()
                            .snapshotRetainMax(Integer.parseInt(argv[2]))
                            .snapshotRetainMin(Integer.parseInt(argv[2]))
                            .snapshotTimeRetain(Duration.ZERO)
                            .snapshotMaxDeletes(Integer.MAX_VALUE)
                            .build();
            System.out.println(table.newExpireSnapshots().config(config).expire());
        } else {
            System.out.println(new OrphanFilesClean(table).olderThan(argv[2]).clean().size());
        }
        System.exit(0);
    }

    private static long write(
            Path path, long snapshots, int partitions, int buckets, int filesPerCommit)
            throws Exception {
        LocalFileIO fileIO = LocalFileIO.create();
        Schema schema =
                Schema.newBuilder()
                        .column("id", DataTypes.BIGINT())
                        .column("p", DataTypes.INT())
                        .column("v", DataTypes.STRING())
                        .partitionKeys("p")
                        .option("bucket", Integer.toString(buckets))
                        .option("bucket-key", "id")
                        .option("file.format", "parquet")
                        .build();
        new SchemaManager(fileIO, path).createTable(schema);
        // Written within minutes: a commit's own expiry (1 h by default) would keep all of
        // them anyway; the option is this writer's only, not the table's.
        FileStoreTable table =
                FileStoreTableFactory.create(fileIO, path)
                        .copy(Collections.singletonMap("snapshot.time-retained", "36500 d"));
        StreamWriteBuilder builder = table.newStreamWriteBuilder();
        long id = 0;
        long latest = 0;
        try (StreamTableWrite write = builder.newWrite();
                StreamTableCommit commit = builder.newCommit()) {
            for (long identifier = 0; latest < snapshots; identifier++) {
                for (int j = 0; j < filesPerCommit; j++) {
                    int p = (int) ((identifier * filesPerCommit + j) % partitions);
                    write.write(GenericRow.of(id, p, BinaryString.fromString("v" + id)));
                    id++;
                }
                commit.commit(identifier, write.prepareCommit(false, identifier));
                Long last = table.snapshotManager().latestSnapshotId();
                latest = last == null ? 0 : last;
            }
        }
        return latest;
    }
}
