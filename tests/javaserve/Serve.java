package paimonclitest;

import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One warm JVM for the tests' Java programs (see tests/support/java_toolchain.py): starting a JVM and
 * loading Paimon costs seconds, running a program in a warm one a fraction of that.
 *
 * <p>Reads one JSON request per line on stdin, {"program": "paimonclitest.Verify", "args":
 * [...]}, calls that class's static {@code run(String[])} with System.out and System.err
 * captured, and answers one JSON line on the original stdout: {"ok": true|false, "stdout":
 * ..., "stderr": ...} (a failed program's stack trace ends its stderr). Requests run one at a
 * time; the JVM exits when stdin closes.
 *
 * <p>Every program also has a {@code main} for a JVM of its own; both paths run the same
 * {@code run}, which never exits the JVM.
 */
public final class Serve {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Serve() {}

    public static void main(String[] argv) throws Exception {
        PrintStream channel =
                new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        BufferedReader requests =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = requests.readLine()) != null) {
            if (!line.trim().isEmpty()) {
                channel.println(MAPPER.writeValueAsString(answer(MAPPER.readTree(line))));
            }
        }
        // Paimon keeps non-daemon pools alive; exit explicitly.
        System.exit(0);
    }

    private static ObjectNode answer(JsonNode request) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        boolean ok = true;
        try (PrintStream capturedOut = new PrintStream(out, true, "UTF-8");
                PrintStream capturedErr = new PrintStream(err, true, "UTF-8")) {
            System.setOut(capturedOut);
            System.setErr(capturedErr);
            try {
                List<String> args = new ArrayList<>();
                for (JsonNode a : request.path("args")) {
                    args.add(a.asText());
                }
                entry(request.path("program").asText()).invoke(null, (Object) args.toArray(new String[0]));
            } catch (InvocationTargetException e) {
                ok = false;
                capturedErr.print(stackTrace(e.getCause()));
            } catch (Throwable e) {
                ok = false;
                capturedErr.print(stackTrace(e));
            }
        } catch (java.io.UnsupportedEncodingException e) {
            throw new IllegalStateException(e);
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
        ObjectNode response = MAPPER.createObjectNode();
        response.put("ok", ok);
        response.put("stdout", new String(out.toByteArray(), StandardCharsets.UTF_8));
        response.put("stderr", new String(err.toByteArray(), StandardCharsets.UTF_8));
        return response;
    }

    private static Method entry(String program) throws Exception {
        return Class.forName(program).getMethod("run", String[].class);
    }

    private static String stackTrace(Throwable e) {
        StringWriter text = new StringWriter();
        e.printStackTrace(new PrintWriter(text));
        return text.toString();
    }

    /** A program's own JVM: run it, print a failure's stack trace, exit 0 or 1. */
    static void oneShot(Program program, String[] argv) {
        int rc = 0;
        try {
            program.run(argv);
        } catch (Throwable e) {
            e.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        // Paimon keeps non-daemon pools alive; exit explicitly.
        System.exit(rc);
    }

    /** The static run(String[]) of a program, for oneShot. */
    interface Program {
        void run(String[] argv) throws Exception;
    }
}
