package paimonclitest;

import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.io.IndexIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.reader.RecordReaderIterator;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.TableRead;


import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Step "dv-delete": deletes the rows of an append table (deletion-vectors.enabled) whose
 * field {@code "field"} has one of {@code "values"} (compared as text), the way Paimon's own
 * row-level deletes do it: a vector per touched data file, handed to
 * AppendDeletionFileMaintainer (forUnawareAppend / forBucketedAppend, which merges it with the
 * file's previous vector and rewrites the touched index files), persisted, and committed as
 * an IndexIncrement of one commit message per partition and bucket.
 */
public final class DvDeleteStep {
    private DvDeleteStep() {}

    public static void run(FileStoreTable table, JsonNode step) throws Exception {
        String field = step.get("field").asText();
        Set<String> values = new HashSet<>();
        for (JsonNode v : step.get("values")) {
            values.add(v.asText());
        }
        int index = table.rowType().getFieldNames().indexOf(field);
        if (index < 0) {
            throw new IllegalArgumentException("no field " + field);
        }
        InternalRow.FieldGetter getter =
                InternalRow.createFieldGetter(table.rowType().getTypeAt(index), index);
        Long snapshot = table.snapshotManager().latestSnapshotId();
        IndexFileHandler handler = table.store().newIndexFileHandler();
        boolean unaware = table.coreOptions().bucket() == -1;
        Map<List<Object>, AppendDeletionFileMaintainer> maintainers = new LinkedHashMap<>();
        TableRead read = table.newRead();
        for (Split split : table.newSnapshotReader().read().splits()) {
            DataSplit ds = (DataSplit) split;
            for (DataFileMeta file : ds.dataFiles()) {
                // The file alone and without its vector: positions are raw row numbers.
                DataSplit one =
                        DataSplit.builder()
                                .withSnapshot(ds.snapshotId())
                                .withPartition(ds.partition())
                                .withBucket(ds.bucket())
                                .withBucketPath(ds.bucketPath())
                                .withDataFiles(Collections.singletonList(file))
                                .rawConvertible(true)
                                .build();
                BitmapDeletionVector vector = new BitmapDeletionVector();
                long position = 0;
                try (RecordReader<InternalRow> reader = read.createReader(one);
                        RecordReaderIterator<InternalRow> it = new RecordReaderIterator<>(reader)) {
                    while (it.hasNext()) {
                        Object v = getter.getFieldOrNull(it.next());
                        if (v != null && values.contains(v.toString())) {
                            vector.delete(position);
                        }
                        position++;
                    }
                }
                if (vector.isEmpty()) {
                    continue;
                }
                BinaryRow partition = ds.partition();
                List<Object> key = new ArrayList<>();
                key.add(partition);
                key.add(ds.bucket());
                AppendDeletionFileMaintainer maintainer = maintainers.get(key);
                if (maintainer == null) {
                    maintainer =
                            unaware
                                    ? AppendDeletionFileMaintainer.forUnawareAppend(
                                            handler, snapshot, partition)
                                    : AppendDeletionFileMaintainer.forBucketedAppend(
                                            handler, snapshot, partition, ds.bucket());
                    maintainers.put(key, maintainer);
                }
                maintainer.notifyNewDeletionVector(file.fileName(), vector);
            }
        }
        List<CommitMessage> messages = new ArrayList<>();
        for (AppendDeletionFileMaintainer maintainer : maintainers.values()) {
            List<IndexFileMeta> added = new ArrayList<>();
            List<IndexFileMeta> deleted = new ArrayList<>();
            for (IndexManifestEntry entry : maintainer.persist()) {
                if (entry.kind() == FileKind.ADD) {
                    added.add(entry.indexFile());
                } else {
                    deleted.add(entry.indexFile());
                }
            }
            messages.add(
                    new CommitMessageImpl(
                            maintainer.getPartition(),
                            maintainer.getBucket(),
                            DataIncrement.emptyIncrement(),
                            CompactIncrement.emptyIncrement(),
                            new IndexIncrement(added, deleted)));
        }
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
    }
}
