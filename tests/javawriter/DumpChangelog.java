package paimonclitest;

import org.apache.paimon.data.InternalRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.RowType;

import java.util.HashMap;
import java.util.Map;

/**
 * Prints the changelog a streaming reader of Apache Paimon (Java) reads for one snapshot, as a
 * Flink job consuming the table does: a stream scan from that snapshot, whose follow-up scanner
 * reads the snapshot's changelog files (for changelog-producer full-compaction / lookup: the
 * changelog of COMPACT snapshots). Per split a line "# partition=P bucket=B", then its records
 * in read order: row kind and values (DumpRows#line), tab separated.
 *
 * <pre>DumpChangelog TABLE_PATH SNAPSHOT_ID</pre>
 */
public final class DumpChangelog {
    private DumpChangelog() {}

    public static void main(String[] argv) {
        Serve.oneShot(DumpChangelog::run, argv);
    }

    public static void run(String[] argv) throws Exception {
        long snapshot = Long.parseLong(argv[1]);
        Map<String, String> dynamic = new HashMap<>();
        dynamic.put("scan.mode", "from-snapshot");
        dynamic.put("scan.snapshot-id", argv[1]);
        FileStoreTable table =
                FileStoreTableFactory.create(LocalFileIO.create(), new Path(argv[0]))
                        .copy(dynamic);
        ReadBuilder rb = table.newReadBuilder();
        StreamTableScan scan = rb.newStreamScan();
        TableRead read = rb.newRead();
        RowType rowType = table.rowType();
        StringBuilder out = new StringBuilder();
        // The first plan only positions the scan; later ones read one snapshot each.
        for (int i = 0; i < 1000; i++) {
            TableScan.Plan plan = scan.plan();
            Long next = scan.checkpoint();
            for (Split split : plan.splits()) {
                DataSplit ds = (DataSplit) split;
                if (ds.snapshotId() != snapshot) {
                    continue;
                }
                out.append("# partition=")
                        .append(ds.partition().hashCode())
                        .append(" bucket=")
                        .append(ds.bucket())
                        .append('\n');
                try (RecordReader<InternalRow> reader = read.createReader(split)) {
                    reader.forEachRemaining(
                            row -> out.append(DumpRows.line(row, rowType)).append('\n'));
                }
            }
            if (next == null || next > snapshot) {
                break;
            }
        }
        System.out.print(out);
    }
}
