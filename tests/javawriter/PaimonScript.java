package paimonclitest;

import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Builds a table with Apache Paimon's own Java writer, compaction and commit, from a JSON
 * script, so that tests get tables written by a real Paimon writer (see tests/support/java_writer.py).
 *
 * <pre>
 * {"database": "db", "table": "t",
 *  "schema": {"fields": [{"name": "id", "type": "BIGINT NOT NULL"}, ...],
 *             "primaryKeys": [...], "partitionKeys": [...], "options": {...}},
 *  "steps": [{"op": "write", "rows": [["+I", 1, "a"], ...]},
 *            {"op": "compact"},
 *            {"op": "tag", "name": "t1"}]}
 * </pre>
 *
 * Field types are Paimon schema-file JSON (a string such as "INT NOT NULL", or an object for
 * ARRAY/MAP/MULTISET/ROW). Row values: JSON scalars; DECIMAL as a string; DATE as days;
 * TIMESTAMP as epoch millis; ARRAY as a list; MAP as a list of [key, value] pairs; MULTISET
 * as a list of elements; ROW as a list. Each "write" is one commit; "compact" is Paimon's
 * full compaction of every bucket (primary-key and fixed-bucket tables) or one run of the
 * unaware-bucket compaction coordinator (bucket -1), committed as one snapshot; "tag" tags
 * the latest snapshot. Prints one JSON line per step to stdout.
 */
public final class PaimonScript {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private PaimonScript() {}

    public static void main(String[] argv) {
        Serve.oneShot(PaimonScript::run, argv);
    }

    public static void run(String[] argv) throws Exception {
        if (argv.length != 2) {
            throw new IllegalArgumentException("usage: PaimonScript WAREHOUSE SCRIPT.json");
        }
        run(argv[0], MAPPER.readTree(Files.readAllBytes(Paths.get(argv[1]))));
    }

    static void run(String warehouse, JsonNode script) throws Exception {
        Options options = new Options();
        options.set("warehouse", warehouse);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
        String db = script.path("database").asText("db");
        Identifier id = Identifier.create(db, script.path("table").asText("t"));
        catalog.createDatabase(db, true);
        JsonNode schemaNode = script.get("schema");
        if (schemaNode != null) {
            catalog.createTable(id, schema(schemaNode), false);
        }
        for (JsonNode step : script.path("steps")) {
            FileStoreTable table = (FileStoreTable) catalog.getTable(id);
            String op = step.get("op").asText();
            switch (op) {
                case "write":
                    write(table, step.get("rows"));
                    break;
                case "compact":
                    compact(table);
                    break;
                case "tag":
                    table.createTag(
                            step.get("name").asText(), table.snapshotManager().latestSnapshotId());
                    break;
                default:
                    extension(op).invoke(null, table, step);
            }
            Long latest = table.snapshotManager().latestSnapshotId();
            System.out.println("{\"op\": \"" + op + "\", \"snapshot\": " + latest + "}");
        }
    }

    /**
     * Any other op "some-op" is the static method run(FileStoreTable, JsonNode) of the class
     * paimonclitest.SomeOpStep in its own file of tests/javawriter/, so steps are added
     * without touching this file.
     */
    static java.lang.reflect.Method extension(String op) throws Exception {
        StringBuilder name = new StringBuilder("paimonclitest.");
        for (String part : op.split("-")) {
            if (!part.isEmpty()) {
                name.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
            }
        }
        name.append("Step");
        Class<?> cls;
        try {
            cls = Class.forName(name.toString());
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("unknown step op: " + op + " (no " + name + ")");
        }
        return cls.getMethod("run", FileStoreTable.class, JsonNode.class);
    }

    static Schema schema(JsonNode node) {
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : node.get("fields")) {
            b.column(f.get("name").asText(), parseType(f.get("type")));
        }
        List<String> pk = strings(node.path("primaryKeys"));
        if (!pk.isEmpty()) {
            b.primaryKey(pk);
        }
        b.partitionKeys(strings(node.path("partitionKeys")));
        Iterator<Map.Entry<String, JsonNode>> it = node.path("options").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            b.option(e.getKey(), e.getValue().asText());
        }
        return b.build();
    }

    static DataType parseType(JsonNode node) {
        if (node.isTextual()) {
            return DataTypeJsonParser.parseAtomicTypeSQLString(node.asText());
        }
        return DataTypeJsonParser.parseDataType(node);
    }

    static List<String> strings(JsonNode node) {
        List<String> out = new ArrayList<>();
        for (JsonNode n : node) {
            out.add(n.asText());
        }
        return out;
    }

    static void write(FileStoreTable table, JsonNode rows) throws Exception {
        RowType rowType = table.rowType();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (IOManager io = ioManager();
                BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(io);
                BatchTableCommit commit = builder.newCommit()) {
            for (JsonNode r : rows) {
                write.write(row(rowType, r));
            }
            commit.commit(write.prepareCommit());
        }
    }

    /** ["+I", v1, v2, ...] with one value per field. */
    static GenericRow row(RowType rowType, JsonNode r) {
        List<DataField> fields = rowType.getFields();
        if (r.size() != fields.size() + 1) {
            throw new IllegalArgumentException(
                    "row " + r + " needs a kind and " + fields.size() + " values");
        }
        GenericRow row = new GenericRow(RowKind.fromShortString(r.get(0).asText()), fields.size());
        for (int i = 0; i < fields.size(); i++) {
            row.setField(i, value(fields.get(i).type(), r.get(i + 1)));
        }
        return row;
    }

    static Object value(DataType type, JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) v.asDouble();
            case DOUBLE:
                return v.asDouble();
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return v.asText().getBytes(StandardCharsets.UTF_8);
            case DECIMAL:
                DecimalType dt = (DecimalType) type;
                return Decimal.fromBigDecimal(
                        new BigDecimal(v.asText()), dt.getPrecision(), dt.getScale());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(v.asLong());
            case ARRAY:
                DataType element = ((ArrayType) type).getElementType();
                Object[] items = new Object[v.size()];
                for (int i = 0; i < v.size(); i++) {
                    items[i] = value(element, v.get(i));
                }
                return new GenericArray(items);
            case MAP:
                MapType mt = (MapType) type;
                Map<Object, Object> map = new LinkedHashMap<>();
                for (JsonNode kv : v) {
                    map.put(value(mt.getKeyType(), kv.get(0)), value(mt.getValueType(), kv.get(1)));
                }
                return new GenericMap(map);
            case MULTISET:
                DataType et = ((MultisetType) type).getElementType();
                Map<Object, Object> counts = new LinkedHashMap<>();
                for (JsonNode e : v) {
                    counts.merge(value(et, e), 1, (a, b) -> (Integer) a + (Integer) b);
                }
                return new GenericMap(counts);
            case ROW:
                return row(
                        (RowType) type,
                        rowNode(v));
            default:
                throw new IllegalArgumentException("unsupported type in a script: " + type);
        }
    }

    /** A nested ROW value is a plain list; give it the "+I" kind slot row() expects. */
    private static JsonNode rowNode(JsonNode values) {
        org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode a =
                MAPPER.createArrayNode();
        a.add("+I");
        for (JsonNode v : values) {
            a.add(v);
        }
        return a;
    }

    /**
     * Spill and lookup files (first-row, lookup compaction, deletion vectors) go to tmp; the
     * caller closes it (a warm JVM runs many scripts).
     */
    static IOManager ioManager() {
        return IOManager.create(System.getProperty("java.io.tmpdir"));
    }

    /** Paimon's full compaction of every bucket with files, committed as one snapshot. */
    static void compact(FileStoreTable table) throws Exception {
        // A write-only writer has no compact manager; compaction needs it off.
        Map<String, String> dynamic = new HashMap<>();
        dynamic.put("write-only", "false");
        FileStoreTable t = table.copy(dynamic);
        String user = "paimon-script-compact";
        List<CommitMessage> messages = new ArrayList<>();
        if (t.bucketMode().toString().contains("UNAWARE")
                || t.coreOptions().bucket() == -1 && t.primaryKeys().isEmpty()) {
            UnawareAppendTableCompactionCoordinator coordinator =
                    new UnawareAppendTableCompactionCoordinator(t, false);
            try (IOManager io = ioManager();
                    TableWriteImpl<?> write = t.newWrite(user).withIOManager(io)) {
                AppendOnlyFileStoreWrite store = (AppendOnlyFileStoreWrite) write.getWrite();
                for (UnawareAppendCompactionTask task : coordinator.run()) {
                    messages.add(task.doCompact(t, store));
                }
            }
        } else {
            Set<List<Object>> seen = new LinkedHashSet<>();
            try (IOManager io = ioManager();
                    TableWriteImpl<?> write = t.newWrite(user).withIOManager(io)) {
                for (Split split : t.newSnapshotReader().read().splits()) {
                    DataSplit ds = (DataSplit) split;
                    BinaryRow partition = ds.partition();
                    List<Object> key = new ArrayList<>();
                    key.add(partition);
                    key.add(ds.bucket());
                    if (seen.add(key)) {
                        write.compact(partition, ds.bucket(), true);
                    }
                }
                messages.addAll(write.prepareCommit(true, 1L));
            }
        }
        try (org.apache.paimon.table.sink.TableCommitImpl commit = t.newCommit(user)) {
            commit.commit(1L, messages);
        }
    }
}
