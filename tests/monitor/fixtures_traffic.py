"""Fixtures of the collection tests, used as a plugin (``pytest_plugins = ["tests.monitor.fixtures_traffic"]``):
a real sandbox cluster (two broker names, master + slave each) per test module, its brokers' stats sampled by
hand (:class:`~tests.monitor.traffic_helpers.ManualStats`), and the cluster registered in the portal."""

from collections.abc import Iterator

import pytest

from monitor.sandbox.cluster import SandboxCluster
from portal.models import Cluster, NameServer
from portal.services.cluster_ops import discover_brokers
from tests.monitor.traffic_helpers import SLAVE_BEHIND_BYTES, ManualStats


@pytest.fixture(scope="module")
def traffic_sandbox() -> Iterator[SandboxCluster]:
    with SandboxCluster(
        brokers=2, slaves=True, slave_sync_interval=0.2, suggest_slave_behind_bytes=SLAVE_BEHIND_BYTES
    ) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def manual_stats(traffic_sandbox) -> ManualStats:
    return ManualStats(traffic_sandbox)


@pytest.fixture
def registered(db, traffic_sandbox, manual_stats) -> Cluster:
    """The sandbox registered in the portal, its brokers discovered as the registry sync would."""
    cluster = Cluster.objects.create(name="collected")
    NameServer.objects.create(cluster=cluster, address=traffic_sandbox.namesrv_addr)
    discover_brokers(cluster)
    return cluster
