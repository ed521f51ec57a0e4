"""A name server or broker whose answer cannot be decoded costs only its own reading: the probe round goes on, the
node's row says why, and the other nodes are probed as usual (issue 15, finding 4)."""

import logging

from monitor.collect.probe import probe_cluster
from monitor.remoting.codes import RequestCode
from stats.models import BrokerProbe, NameServerProbe

pytest_plugins = ["tests.monitor.fixtures_traffic"]

# Latin-1 bytes where a broker or name server must send UTF-8 Properties text.
NOT_UTF8_CONFIG = b"brokerName=br\xf6ker\nbrokerRole=ASYNC_MASTER\n"


def broker_rows(cluster) -> dict[tuple[str, int], BrokerProbe]:
    return {(p.broker_name, p.broker_id): p for p in BrokerProbe.objects.filter(cluster_id=cluster.pk)}


def test_a_name_server_answering_config_that_is_not_utf8_is_down_with_the_reason(registered, traffic_sandbox):
    traffic_sandbox.corrupt_answers("namesrv", RequestCode.GET_NAMESRV_CONFIG, NOT_UTF8_CONFIG)
    try:
        probe_cluster(registered)
    finally:
        traffic_sandbox.heal()

    (namesrv,) = NameServerProbe.objects.filter(cluster_id=registered.pk)
    assert not namesrv.ok
    assert traffic_sandbox.namesrv_addr in namesrv.error and "not UTF-8" in namesrv.error
    rows = broker_rows(registered)
    assert set(rows) == {("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)}
    assert all(row.ok and row.runtime_seconds is not None for row in rows.values())


def test_a_broker_answering_config_that_is_not_utf8_keeps_its_figures_and_warns(registered, traffic_sandbox, caplog):
    addr = traffic_sandbox.broker("broker-a").addr
    traffic_sandbox.corrupt_answers("broker-a", RequestCode.GET_BROKER_CONFIG, NOT_UTF8_CONFIG)
    try:
        with caplog.at_level(logging.WARNING, logger="monitor.collect.probe"):
            probe_cluster(registered)
    finally:
        traffic_sandbox.heal()

    rows = broker_rows(registered)
    assert all(row.ok for row in rows.values())
    assert rows["broker-a", 0].role == "" and rows["broker-a", 0].runtime_seconds is not None  # figures kept
    assert rows["broker-b", 0].role == "ASYNC_MASTER" and rows["broker-a", 1].role == "SLAVE"
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert addr in warning and "not UTF-8" in warning


def test_a_broker_reporting_an_unknown_role_or_an_overlong_version_is_stored_within_bounds(
    registered, traffic_sandbox, caplog
):
    # Columns are bounded (PostgreSQL refuses longer text): one broker's oddity must not fail the round's write.
    traffic_sandbox.corrupt_answers("broker-b", RequestCode.GET_BROKER_CONFIG, b"brokerRole=" + b"R" * 300 + b"\n")
    runtime_info = b'{"table":{"brokerVersionDesc":"' + b"V" * 300 + b'","runtime":"[ ' + b"9" * 400 + b' days ]"}}'
    traffic_sandbox.corrupt_answers("broker-b:1", RequestCode.GET_BROKER_RUNTIME_INFO, runtime_info)
    try:
        with caplog.at_level(logging.WARNING, logger="monitor.collect.probe"):
            probe_cluster(registered)
    finally:
        traffic_sandbox.heal()

    rows = broker_rows(registered)
    assert rows["broker-b", 0].ok and rows["broker-b", 0].role == ""
    assert any("unknown brokerRole" in r.getMessage() for r in caplog.records)
    slave = rows["broker-b", 1]
    assert slave.ok and slave.version == "V" * 64 and slave.runtime_seconds is None and slave.put_tps is None
