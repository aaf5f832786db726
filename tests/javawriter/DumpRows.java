package paimonclitest;

import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowType;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Prints the rows Apache Paimon (Java) reads from a table, one per line, sorted: the row kind
 * then each value (nested values walked with their types), tab separated.
 *
 * <pre>DumpRows TABLE_PATH [snapshot-id | tag:NAME]</pre>
 */
public final class DumpRows {
    private DumpRows() {}

    public static void main(String[] argv) {
        Serve.oneShot(DumpRows::run, argv);
    }

    public static void run(String[] argv) throws Exception {
        Map<String, String> dynamic = new HashMap<>();
        if (argv.length > 1) {
            if (argv[1].startsWith("tag:")) {
                dynamic.put("scan.tag-name", argv[1].substring(4));
            } else {
                dynamic.put("scan.snapshot-id", argv[1]);
            }
        }
        FileStoreTable table =
                FileStoreTableFactory.create(LocalFileIO.create(), new Path(argv[0]))
                        .copy(dynamic);
        ReadBuilder rb = table.newReadBuilder();
        RowType rowType = table.rowType();
        List<String> lines = new ArrayList<>();
        try (RecordReader<InternalRow> reader =
                rb.newRead().createReader(rb.newScan().plan().splits())) {
            reader.forEachRemaining(row -> lines.add(line(row, rowType)));
        }
        Collections.sort(lines);
        StringBuilder out = new StringBuilder();
        for (String l : lines) {
            out.append(l).append('\n');
        }
        System.out.print(out);
    }

    static String line(InternalRow row, RowType type) {
        StringBuilder sb = new StringBuilder(row.getRowKind().shortString());
        for (int i = 0; i < type.getFieldCount(); i++) {
            sb.append('\t');
            value(sb, InternalRow.createFieldGetter(type.getTypeAt(i), i).getFieldOrNull(row),
                    type.getTypeAt(i));
        }
        return sb.toString();
    }

    static void value(StringBuilder sb, Object o, DataType type) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof InternalArray && type instanceof ArrayType) {
            DataType et = ((ArrayType) type).getElementType();
            InternalArray a = (InternalArray) o;
            InternalArray.ElementGetter g = InternalArray.createElementGetter(et);
            sb.append('[');
            for (int i = 0; i < a.size(); i++) {
                if (i > 0) {
                    sb.append(", ");
                }
                value(sb, g.getElementOrNull(a, i), et);
            }
            sb.append(']');
        } else if (o instanceof InternalMap) {
            DataType kt;
            DataType vt;
            if (type instanceof MapType) {
                kt = ((MapType) type).getKeyType();
                vt = ((MapType) type).getValueType();
            } else {
                kt = ((MultisetType) type).getElementType();
                vt = new org.apache.paimon.types.IntType();
            }
            InternalMap m = (InternalMap) o;
            InternalArray.ElementGetter kg = InternalArray.createElementGetter(kt);
            InternalArray.ElementGetter vg = InternalArray.createElementGetter(vt);
            sb.append('{');
            for (int i = 0; i < m.size(); i++) {
                if (i > 0) {
                    sb.append(", ");
                }
                value(sb, kg.getElementOrNull(m.keyArray(), i), kt);
                sb.append('=');
                value(sb, vg.getElementOrNull(m.valueArray(), i), vt);
            }
            sb.append('}');
        } else if (o instanceof InternalRow && type instanceof RowType) {
            sb.append('(').append(line((InternalRow) o, (RowType) type)).append(')');
        } else if (o instanceof byte[]) {
            sb.append("0x");
            for (byte b : (byte[]) o) {
                sb.append(String.format("%02x", b));
            }
        } else {
            sb.append(o);
        }
    }
}
