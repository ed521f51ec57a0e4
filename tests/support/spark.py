"""How the tests run Spark."""

LOCAL_MASTER = "local[2]"
# Test sessions are short: the JIT's first tier only and the serial collector start and warm up about twice as fast.
# With the first tier only the JVM reserves 48 MB of code cache, which the Spark tests filled in one CI run (the
# compiler then stops and the JVM crawls until the gateway fails): 240 MB, the tiered default, holds it.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC"
