"""Fixtures of the /metrics tests, used as a plugin (``pytest_plugins = ["tests.portal.metrics_fixtures"]``): a
registered cluster with a master and a slave (no live cluster behind it: a scrape reads stored rows only, so one
that asked a broker would fail), and a scrape token issued by a portal admin."""

import pytest

from portal.models import Broker, Cluster
from portal.services.metrics import tokens


@pytest.fixture
def prod(db):
    cluster = Cluster.objects.create(name="prod")
    Broker.objects.create(
        cluster=cluster,
        cluster_name="DefaultCluster",
        broker_name="broker-a",
        broker_id=0,
        address="10.0.0.5:10911",
        role="ASYNC_MASTER",
        version="V4_9_4",
    )
    Broker.objects.create(
        cluster=cluster,
        cluster_name="DefaultCluster",
        broker_name="broker-a",
        broker_id=1,
        address="10.0.0.5:10921",
        role="SLAVE",
        version="V4_9_4",
    )
    return cluster


@pytest.fixture
def scrape_token(portal_admin) -> str:
    return tokens.issue(by=portal_admin, label="prometheus").secret
