package paimonclitest;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.table.FileStoreTable;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * Step "write-with": {"op": "write-with", "options": {...}, "rows": [...]} is a "write" by a
 * writer with dynamic options, e.g. {"write-only": "false"} so that Paimon compacts while
 * writing (lookup compaction, intermediate levels) on a table created write-only.
 */
public final class WriteWithStep {
    private WriteWithStep() {}

    public static void run(FileStoreTable table, JsonNode step) throws Exception {
        Map<String, String> dynamic = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = step.path("options").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            dynamic.put(e.getKey(), e.getValue().asText());
        }
        PaimonScript.write(table.copy(dynamic), step.get("rows"));
    }
}
