import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The Java side of tests/bench/bench_real_admin.py: RocketMQ's own admin client (DefaultMQAdminExt, rocketmq-tools)
 * making a fixed mix of admin calls from a set of threads, timed. The Python side makes the same calls with this
 * project's AsyncMQAdmin, so the two rates compare the clients and nothing else.
 *
 * <p>Usage: {@code java -cp RELEASE_LIB/*:DIR AdminBench NAMESRV MIX_FILE}. The mix file holds one call per line,
 * fields separated by tabs, made in file order and cycled:
 * <pre>
 *   topicStats    TOPIC                   examineTopicStats (route from the name server, then each master)
 *   statsData     BROKER  NAME  KEY       viewBrokerStatsData
 *   consumeStats  GROUP                   examineConsumeStats (route of the group's retry topic, then each master)
 *   runtime       BROKER                  fetchBrokerRuntimeStats
 * </pre>
 * The program stays up, so its JIT stays warm between measurements, and reads commands on stdin:
 * {@code run REQUESTS THREADS} makes REQUESTS calls, THREADS at a time (each thread takes the next call as soon as
 * its last one answered), and answers {@code result requests=N errors=E seconds=S rps=R cpu=C} (C: the CPU seconds
 * the whole JVM used meanwhile), with the first failure and its causes as {@code error=...} when there was one;
 * {@code quit} or the end of stdin shuts the client down. It says {@code ready} once the client has started and
 * made each call of the mix once. The libraries log to stdout, so stdout is handed to stderr and only these answers
 * are printed on the real stdout.
 */
public final class AdminBench {
    /** One admin call of the mix. */
    private interface Call {
        Object call(DefaultMQAdminExt admin) throws Exception;
    }

    private static final long PRIME_TIMEOUT_NANOS = 60_000_000_000L;
    /** The whole process's CPU time: the calling threads, Netty's I/O thread, the JIT compiler and the GC. */
    private static final com.sun.management.OperatingSystemMXBean CPU =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private AdminBench() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = System.out;
        System.setOut(System.err);
        if (args.length != 2) {
            answers.println("usage: AdminBench NAMESRV MIX_FILE");
            System.exit(2);
        }
        Call[] mix = readMix(args[1]);
        DefaultMQAdminExt admin = new DefaultMQAdminExt(30_000L);
        admin.setNamesrvAddr(args[0]);
        admin.setInstanceName("AdminBench-" + ProcessHandle.current().pid());
        admin.start();
        try {
            prime(admin, mix, System.nanoTime() + PRIME_TIMEOUT_NANOS);
            answers.println("ready");
            answers.flush();
            BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = commands.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                if (words[0].equals("run") && words.length == 3) {
                    answers.println(run(admin, mix, Integer.parseInt(words[1]), Integer.parseInt(words[2])));
                } else if (words[0].equals("quit")) {
                    break;
                } else {
                    answers.println("error=unknown command: " + line);
                }
                answers.flush();
            }
        } finally {
            admin.shutdown();
        }
        System.exit(0);  // the client leaves non-daemon threads behind
    }

    /**
     * Each call of the mix once, each until it succeeds: the client connects to the name server and the broker here,
     * as the Python side does while it prepares, and not in the first measured round (the Java client gives up a
     * connect after 3 s, which a JVM that has just started on a busy machine can need).
     */
    private static void prime(DefaultMQAdminExt admin, Call[] mix, long deadline) throws Exception {
        for (Call call : mix) {
            while (true) {
                try {
                    call.call(admin);
                    break;
                } catch (Exception e) {
                    if (System.nanoTime() > deadline) {
                        throw e;
                    }
                    Thread.sleep(50);
                }
            }
        }
    }

    private static Call[] readMix(String path) throws Exception {
        List<Call> calls = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split("\t");
            switch (f[0]) {
                case "topicStats":
                    calls.add(admin -> admin.examineTopicStats(f[1]));
                    break;
                case "statsData":
                    calls.add(admin -> admin.viewBrokerStatsData(f[1], f[2], f[3]));
                    break;
                case "consumeStats":
                    calls.add(admin -> admin.examineConsumeStats(f[1]));
                    break;
                case "runtime":
                    calls.add(admin -> admin.fetchBrokerRuntimeStats(f[1]));
                    break;
                default:
                    throw new IllegalArgumentException("unknown call in the mix: " + line);
            }
        }
        if (calls.isEmpty()) {
            throw new IllegalArgumentException("empty mix: " + path);
        }
        return calls.toArray(new Call[0]);
    }

    /** REQUESTS calls of the mix from THREADS threads; the threads are started before the clock is. */
    private static String run(DefaultMQAdminExt admin, Call[] mix, int requests, int threads) throws Exception {
        AtomicInteger next = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        CountDownLatch go = new CountDownLatch(1);
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int k = next.getAndIncrement(); k < requests; k = next.getAndIncrement()) {
                    try {
                        mix[k % mix.length].call(admin);
                    } catch (Throwable e) {
                        errors.incrementAndGet();
                        firstError.compareAndSet(null, e);
                    }
                }
            }, "bench-" + i);
            workers[i].start();
        }
        long cpuStarted = CPU.getProcessCpuTime();
        long started = System.nanoTime();
        go.countDown();
        for (Thread worker : workers) {
            worker.join();
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        double cpu = (CPU.getProcessCpuTime() - cpuStarted) / 1e9;
        String result = String.format(
            "result requests=%d errors=%d seconds=%.6f rps=%.3f cpu=%.6f",
            requests, errors.get(), seconds, requests / seconds, cpu);
        StringBuilder error = new StringBuilder();
        for (Throwable e = firstError.get(); e != null; e = e.getCause() == e ? null : e.getCause()) {
            error.append(error.length() == 0 ? " error=" : " caused by ").append(e);
        }
        return result + error.toString().replaceAll("\\s+", " ");
    }
}
