"""Real Apache RocketMQ servers for the tests (monitor/launcher): one 4.9.4 cluster and one 5.x cluster per test
session, each a name server with a master/slave pair of broker-a, in the session's temporary folder (their logs
are there: ``<basetemp>/rocketmq4*/``). Tests share them, so each test uses topic and group names of its own.
"""

import pytest

from monitor.launcher.cluster import RealCluster


def _cluster(tmp_path_factory, line: str, **kwargs):
    cluster = RealCluster(line, brokers=1, slaves=True, workdir=tmp_path_factory.mktemp(f"rocketmq{line}"), **kwargs)
    cluster.start()
    return cluster


@pytest.fixture(scope="session")
def rocketmq4(tmp_path_factory):
    """A real RocketMQ 4.9.4 cluster: name server, broker-a master (id 0) and slave (id 1)."""
    cluster = _cluster(tmp_path_factory, "4")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def rocketmq5(tmp_path_factory):
    """A real RocketMQ 5.x cluster (the pinned 5.x release), same layout as rocketmq4, no controller."""
    cluster = _cluster(tmp_path_factory, "5")
    yield cluster
    cluster.stop()
