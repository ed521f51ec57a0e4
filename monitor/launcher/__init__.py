"""Real Apache RocketMQ servers from Maven Central, started as plain processes on 127.0.0.1 for the tests and the
demo: the pinned releases and their resolution (``releases.py``, ``pom.xml``), one JVM process (``process.py``),
its ROCKETMQ_HOME and config files (``home.py``), a name server with master/slave broker pairs (``cluster.py``),
RocketMQ 5 in controller mode with its proxy (``controller.py``) and the real mqadmin (``mqadmin.py``).

Not production code: the portal manages clusters it does not start. It imports only :mod:`monitor.remoting` (to
see brokers register) and the standard library.
"""
