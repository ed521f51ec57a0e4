/*
 * Runs the real mqadmin (org.apache.rocketmq.tools.command.MQAdminStartup) of the release on the classpath once for
 * each line of DIR/commands (its arguments separated by tabs), in one JVM, and writes what each run printed to
 * DIR/N.out and DIR/N.err (N counting from 0). Starting a JVM costs seconds; running a subcommand in a warm one costs
 * milliseconds, and MQAdminStartup.main is meant to be called again (every subcommand starts and shuts down its own
 * admin client). A run that failed in transport (mqadmin waits 5 s for each answer, and a loaded machine's servers
 * can be slower or drop a connection) is run again at once, as an operator would, at most RETRIES times.
 * Run in source-file mode: java -cp 'lib/*' MQAdminBatch.java DIR (tests/real/mqadmin_tables.py).
 */

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

import org.apache.rocketmq.tools.command.MQAdminStartup;

public class MQAdminBatch {
    private static final int RETRIES = 2;
    private static final List<String> TRANSPORT_FAILURES = List.of(
        "RemotingTimeoutException", "RemotingSendRequestException", "RemotingConnectException");

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        List<String> commands = Files.readAllLines(dir.resolve("commands"), StandardCharsets.UTF_8);
        for (int i = 0; i < commands.size(); i++) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            for (int attempt = 0; attempt <= RETRIES; attempt++) {
                out.reset();
                err.reset();
                run(commands.get(i).split("\t"), out, err);
                String printed = err.toString("UTF-8");
                if (TRANSPORT_FAILURES.stream().noneMatch(printed::contains)) {
                    break;
                }
            }
            Files.write(dir.resolve(i + ".err"), err.toByteArray());
            Files.write(dir.resolve(i + ".out"), out.toByteArray());
        }
        // The admin clients leave non-daemon threads behind; the batch is over.
        System.exit(0);
    }

    private static void run(String[] command, ByteArrayOutputStream out, ByteArrayOutputStream err) throws Exception {
        PrintStream stdout = System.out;
        PrintStream stderr = System.err;
        System.setOut(new PrintStream(out, true, "UTF-8"));
        System.setErr(new PrintStream(err, true, "UTF-8"));
        try {
            MQAdminStartup.main(command);
        } catch (Throwable t) {
            t.printStackTrace();
        } finally {
            System.out.flush();
            System.err.flush();
            System.setOut(stdout);
            System.setErr(stderr);
        }
    }
}
