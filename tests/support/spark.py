"""How the tests run Spark."""

LOCAL_MASTER = "local[2]"
# Test sessions are short: the JIT's first tier only and the serial collector start and warm up about twice as fast.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
