package paimonbench;

import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.operation.OrphanFilesClean;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;

import java.time.Duration;

/**
 * Apache Paimon 0.9's own maintenance on a local table, for bench/bench_java.py:
 * {@code expire TABLE RETAIN_MAX} (ExpireSnapshots keeping exactly RETAIN_MAX, no expire limit) and
 * {@code orphans TABLE 'yyyy-MM-dd HH:mm:ss'} (OrphanFilesClean, local mode). Prints the
 * number of snapshots expired or files deleted.
 */
public final class JavaMaintain {
    public static void main(String[] argv) throws Exception {
        FileStoreTable table =
                FileStoreTableFactory.create(LocalFileIO.create(), new Path(argv[1]));
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
}
