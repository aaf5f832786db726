package paimonclitest;

import org.apache.paimon.CoreOptions.ChangelogProducer;
import org.apache.paimon.Snapshot;
import org.apache.paimon.fs.FileIO;
import org.apache.paimon.fs.Path;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.manifest.FileEntry;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.FileSource;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.manifest.ManifestFile;
import org.apache.paimon.manifest.ManifestFileMeta;
import org.apache.paimon.manifest.ManifestList;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.utils.FileStorePathFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Walks what a snapshot, a tag or a long-lived changelog references, as Paimon's path factory
 * places it, and collects every file that does not exist: "REL_PATH (KIND, needed by OWNER)",
 * each path once (its first owner). A manifest list or manifest that is missing is reported
 * and the files only it would name are not looked for; a read that fails is an error of the
 * owner ({@code refs:OWNER}).
 */
final class ReferencedFiles {
    private final FileStoreTable table;
    private final FileIO io;
    private final FileStorePathFactory paths;
    private final ManifestList manifestLists;
    private final ManifestFile manifests;
    private final IndexFileHandler indexes;
    private final boolean producesChangelog;
    private final Map<String, String> errors;
    private final Map<String, Boolean> exists = new HashMap<>();
    private final Set<String> missing = new LinkedHashSet<>();
    private final Set<String> reportedPaths = new LinkedHashSet<>();

    ReferencedFiles(FileStoreTable table, Map<String, String> errors) {
        this.table = table;
        this.io = table.fileIO();
        this.paths = table.store().pathFactory();
        this.manifestLists = table.store().manifestListFactory().create();
        this.manifests = table.store().manifestFileFactory().create();
        this.indexes = table.store().newIndexFileHandler();
        this.producesChangelog = table.coreOptions().changelogProducer() != ChangelogProducer.NONE;
        this.errors = errors;
    }

    List<String> missing() {
        return new ArrayList<>(missing);
    }

    /** Data (with extra files), index files, statistics; changelog files of a snapshot. */
    void ofSnapshot(String owner, Snapshot s, boolean withChangelog) {
        try {
            List<ManifestEntry> entries = new ArrayList<>();
            entries.addAll(entriesOf(owner, s.baseManifestList()));
            entries.addAll(entriesOf(owner, s.deltaManifestList()));
            for (ManifestEntry e : FileEntry.mergeEntries(entries)) {
                if (e.kind() == FileKind.ADD) {
                    dataFile(owner, "data-file", e);
                }
            }
            if (withChangelog && s.changelogManifestList() != null) {
                added(owner, "changelog-file", entriesOf(owner, s.changelogManifestList()));
            }
            if (s.indexManifest() != null) {
                Path manifest = paths.indexManifestFileFactory().toPath(s.indexManifest());
                if (need(owner, "index-manifest", manifest)) {
                    for (IndexManifestEntry e : indexes.readManifest(s.indexManifest())) {
                        if (e.kind() == FileKind.ADD) {
                            need(owner, "index-file", indexes.filePath(e.indexFile()));
                        }
                    }
                }
            }
            if (s.statistics() != null) {
                need(owner, "statistics", paths.statsFileFactory().toPath(s.statistics()));
            }
        } catch (Throwable e) {
            errors.put("refs:" + owner, Verify.cause(e));
        }
    }

    /**
     * A long-lived changelog keeps its changelog files when the table has a changelog
     * producer, else the files its delta appended (the input a streaming reader replays).
     */
    void ofChangelog(String owner, Snapshot c) {
        try {
            if (producesChangelog) {
                if (c.changelogManifestList() != null) {
                    added(owner, "changelog-file", entriesOf(owner, c.changelogManifestList()));
                }
                return;
            }
            for (ManifestEntry e : entriesOf(owner, c.deltaManifestList())) {
                FileSource source = e.file().fileSource().orElse(FileSource.APPEND);
                if (e.kind() == FileKind.ADD && source == FileSource.APPEND) {
                    dataFile(owner, "delta-file", e);
                }
            }
        } catch (Throwable e) {
            errors.put("refs:" + owner, Verify.cause(e));
        }
    }

    private void added(String owner, String kind, List<ManifestEntry> entries) {
        for (ManifestEntry e : entries) {
            if (e.kind() == FileKind.ADD) {
                dataFile(owner, kind, e);
            }
        }
    }

    /** The entries of a manifest list's manifests that exist (missing ones are reported). */
    private List<ManifestEntry> entriesOf(String owner, String manifestList) throws IOException {
        List<ManifestEntry> entries = new ArrayList<>();
        if (!need(owner, "manifest-list", paths.toManifestListPath(manifestList))) {
            return entries;
        }
        for (ManifestFileMeta meta : manifestLists.read(manifestList)) {
            if (need(owner, "manifest", paths.toManifestFilePath(meta.fileName()))) {
                entries.addAll(manifests.read(meta.fileName()));
            }
        }
        return entries;
    }

    private void dataFile(String owner, String kind, ManifestEntry e) {
        Path bucket = paths.bucketPath(e.partition(), e.bucket());
        need(owner, kind, new Path(bucket, e.file().fileName()));
        for (String extra : e.file().extraFiles()) {
            need(owner, kind + "-extra", new Path(bucket, extra));
        }
    }

    /** Whether the file exists; records it as missing (with its kind and owner) if not. */
    private boolean need(String owner, String kind, Path file) {
        boolean present =
                exists.computeIfAbsent(
                        file.toString(),
                        k -> {
                            try {
                                return io.exists(file);
                            } catch (IOException e) {
                                return false;
                            }
                        });
        if (!present) {
            String rel = table.location().toUri().relativize(file.toUri()).getPath();
            if (reportedPaths.add(rel)) {
                missing.add(rel + " (" + kind + ", needed by " + owner + ")");
            }
        }
        return present;
    }
}
