/*
 * Runs the real mqadmin (org.apache.rocketmq.tools.command.MQAdminStartup) of the release on the classpath once for
 * each line of DIR/commands (its arguments separated by tabs), in one JVM, and writes what each run printed to
 * DIR/N.out and DIR/N.err (N counting from 0). Starting a JVM costs seconds; running a subcommand in a warm one costs
 * milliseconds, and MQAdminStartup.main is meant to be called again (every subcommand starts and shuts down its own
 * admin client). A run that timed out (mqadmin waits 5 s for each answer; a loaded machine's servers can be slower)
 * is run again at once, as an operator would, at most TIMEOUT_RETRIES times.
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
    private static final int TIMEOUT_RETRIES = 2;

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        List<String> commands = Files.readAllLines(dir.resolve("commands"), StandardCharsets.UTF_8);
        for (int i = 0; i < commands.size(); i++) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            for (int attempt = 0; attempt <= TIMEOUT_RETRIES; attempt++) {
                out.reset();
                err.reset();
                run(commands.get(i).split("\t"), out, err);
                if (!err.toString("UTF-8").contains("RemotingTimeoutException")) {
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
