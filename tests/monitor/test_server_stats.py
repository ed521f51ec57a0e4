"""Server stats over SSH: read from a real sshd (tests/monitor/conftest.py) on the host this suite runs on, so the
numbers can be checked against this machine's own /proc; host keys pinned on first contact and a changed key
refused; a fixed command; failures recorded per host; one row per host and five-minute slot."""

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from monitor.collect.procfs import SERVER_COMMAND
from monitor.collect.servers import broker_hosts, collect_server_stats
from monitor.launcher.sshd import SSH_USER, fingerprint, keygen, public_key_line
from monitor.models import PinnedHostKey, ServerAccess
from portal.models import Broker, Cluster
from portal.models.crypto import decrypt
from stats.models import ServerDiskSample, ServerSample
from stats.queries.servers import server_series
from stats.store.servers import DiskUse, ServerStats, store_server_samples

AT = dt.datetime(2026, 3, 2, 10, 7, 30, tzinfo=dt.UTC)  # the run's scheduled time
SLOT = dt.datetime(2026, 3, 2, 10, 5, tzinfo=dt.UTC)  # the five-minute slot it falls in


def register(name: str, hosts: list[str], *, port: int, private_key: Path) -> Cluster:
    """A cluster with one master broker per host (port 10911, as the sandbox's) and SSH access to its hosts."""
    cluster = Cluster.objects.create(name=name)
    for index, host in enumerate(hosts):
        Broker.objects.create(
            cluster=cluster, cluster_name="DefaultCluster", broker_name=f"broker-{index}", broker_id=0,
            address=f"{host}:10911",
        )  # fmt: skip
    access = ServerAccess(cluster=cluster, username=SSH_USER, port=port, private_key=private_key.read_text())
    access.full_clean()
    access.save()
    return cluster


def local_meminfo_bytes(name: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1]) * 1024
    raise KeyError(name)


def sample(host: str = "127.0.0.1") -> ServerSample:
    return ServerSample.objects.get(host=host, minute=SLOT)


def test_stats_are_read_over_ssh_and_agree_with_the_hosts_own_proc(db, sshd, ssh_keys):
    cluster = register("stats", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)

    run = collect_server_stats(cluster, AT)

    assert run.collected == ["127.0.0.1"] and run.errors == {} and run.minute == SLOT
    row = sample()
    assert row.error == ""
    assert row.mem_total == local_meminfo_bytes("MemTotal")
    assert row.swap_total == local_meminfo_bytes("SwapTotal")
    assert 0 < row.mem_used < row.mem_total and 0 <= row.swap_used <= row.swap_total
    assert 0 <= row.cpu_iowait_percent <= row.cpu_iowait_percent + row.cpu_percent <= 100
    assert min(row.load1, row.load5, row.load15) >= 0
    # The collector's own SSH connection is established (both of its ends are on this host) while it reads.
    assert row.tcp_established >= 1 and row.tcp_total >= row.tcp_established
    for rate in ("net_in_bytes_per_s", "net_out_bytes_per_s", "disk_read_bytes_per_s", "disk_write_bytes_per_s"):
        assert getattr(row, rate) >= 0, rate
    assert 0 <= row.disk_busy_percent <= 100
    root = ServerDiskSample.objects.get(host="127.0.0.1", minute=SLOT, mount="/")
    statvfs = os.statvfs("/")
    assert abs(root.size - statvfs.f_blocks * statvfs.f_frsize) < 1024
    assert 0 < root.used < root.size and 0 < root.available < root.size


def test_each_host_is_read_once_however_many_of_the_clusters_brokers_run_on_it(db, sshd, ssh_keys):
    cluster = register("shared-host", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)
    Broker.objects.create(
        cluster=cluster, cluster_name="DefaultCluster", broker_name="broker-0", broker_id=1, address="127.0.0.1:10921"
    )
    Broker.objects.create(
        cluster=cluster, cluster_name="DefaultCluster", broker_name="gone", broker_id=0, address="127.0.0.9:10911",
        present=False,
    )  # fmt: skip

    assert broker_hosts(cluster) == ["127.0.0.1"]
    run = collect_server_stats(cluster, AT)

    assert run.collected == ["127.0.0.1"] and run.errors == {}
    assert list(ServerSample.objects.values_list("host", flat=True)) == ["127.0.0.1"]


def test_the_first_connection_pins_the_host_key(db, sshd, ssh_keys):
    cluster = register("pin", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)
    assert not PinnedHostKey.objects.exists()

    collect_server_stats(cluster, AT)

    pin = PinnedHostKey.objects.get()
    assert (pin.host, pin.port) == ("127.0.0.1", sshd.port)
    key_type, public_key, _comment = public_key_line(ssh_keys.host_a).split()
    assert (pin.key_type, pin.public_key) == (key_type, public_key)
    assert pin.fingerprint == fingerprint(ssh_keys.host_a)


@pytest.mark.parametrize("new_host_key", ["host_b", "host_rsa"], ids=["another-key", "another-key-type"])
def test_a_changed_host_key_is_refused_before_logging_in_and_nothing_is_stored(db, start_sshd, ssh_keys, new_host_key):
    genuine = start_sshd(host_keys=[ssh_keys.host_a])
    cluster = register("changed", ["127.0.0.1"], port=genuine.port, private_key=ssh_keys.client)
    collect_server_stats(cluster, AT)
    assert fingerprint(ssh_keys.client) in genuine.log  # the genuine server saw the login
    genuine.stop()
    ServerSample.objects.all().delete()
    ServerDiskSample.objects.all().delete()
    impostor = start_sshd(host_keys=[getattr(ssh_keys, new_host_key)], port=genuine.port)

    run = collect_server_stats(cluster, AT)

    message = run.errors["127.0.0.1"]
    assert f"host key of 127.0.0.1:{genuine.port} changed" in message
    assert fingerprint(ssh_keys.host_a) in message and fingerprint(getattr(ssh_keys, new_host_key)) in message
    assert run.collected == []
    row = sample()
    assert row.error == message
    assert all(getattr(row, name) is None for name in ("cpu_percent", "mem_total", "load1", "tcp_established"))
    assert not ServerDiskSample.objects.exists()
    assert PinnedHostKey.objects.get().fingerprint == fingerprint(ssh_keys.host_a)
    assert fingerprint(ssh_keys.client) not in impostor.log  # the private key was never offered to it


def test_a_private_key_the_host_refuses_is_recorded_as_an_error(db, sshd, ssh_keys):
    cluster = register("refused", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.stranger)

    run = collect_server_stats(cluster, AT)

    assert run.collected == []
    assert run.errors["127.0.0.1"] == f"127.0.0.1:{sshd.port} refused the private key for user {SSH_USER!r}"
    row = sample()
    assert row.error == run.errors["127.0.0.1"] and row.cpu_percent is None and row.mem_total is None
    assert not ServerDiskSample.objects.exists()


def test_an_unreachable_host_is_recorded_and_the_others_are_still_collected(db, sshd, ssh_keys):
    # sshd listens on 127.0.0.1 only, so 127.0.0.2 (loopback too) refuses the connection.
    cluster = register("partly-down", ["127.0.0.2", "127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)

    run = collect_server_stats(cluster, AT)

    assert run.collected == ["127.0.0.1"]
    assert run.errors["127.0.0.2"].startswith(f"cannot connect to 127.0.0.2:{sshd.port}")
    assert sample("127.0.0.1").error == "" and sample("127.0.0.1").mem_total > 0
    assert sample("127.0.0.2").error == run.errors["127.0.0.2"] and sample("127.0.0.2").mem_total is None
    assert not PinnedHostKey.objects.filter(host="127.0.0.2").exists()


def test_collecting_a_slot_again_keeps_one_row_with_the_newer_reading(db, sshd, ssh_keys):
    cluster = register("again", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)
    collect_server_stats(cluster, AT)
    # Mark the first reading so the second one can be told apart, and add a file system that has gone since.
    ServerSample.objects.update(mem_total=1, cpu_percent=-1.0)
    ServerDiskSample.objects.create(host="127.0.0.1", minute=SLOT, mount="/gone", size=1, used=1, available=0)

    collect_server_stats(cluster, AT + dt.timedelta(minutes=2))

    assert ServerSample.objects.count() == 1
    row = sample()
    assert row.mem_total == local_meminfo_bytes("MemTotal") and row.cpu_percent >= 0
    mounts = list(ServerDiskSample.objects.values_list("mount", flat=True))
    assert "/" in mounts and "/gone" not in mounts and len(mounts) == len(set(mounts))


def test_a_failed_attempt_keeps_the_values_an_earlier_attempt_in_the_slot_read(db, sshd, ssh_keys):
    cluster = register("retry", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)
    collect_server_stats(cluster, AT)
    cluster.server_access.private_key = ssh_keys.stranger.read_text()
    cluster.server_access.save()

    run = collect_server_stats(cluster, AT)

    row = sample()
    assert row.error == run.errors["127.0.0.1"] and "refused the private key" in row.error
    assert row.mem_total == local_meminfo_bytes("MemTotal")
    assert ServerDiskSample.objects.filter(mount="/").exists()


def test_the_command_sent_is_the_fixed_constant_whatever_the_cluster(db, start_sshd, ssh_keys, tmp_path):
    # The server runs only what authorized_keys forces: it records the command the client asked for, then runs it.
    received = tmp_path / "received"
    forced = f'printf \'%s\\n\' \\"$SSH_ORIGINAL_COMMAND\\" >> {received}; eval \\"$SSH_ORIGINAL_COMMAND\\"'
    server = start_sshd(
        host_keys=[ssh_keys.host_a], authorized_keys=f'restrict,command="{forced}" {public_key_line(ssh_keys.client)}'
    )
    first = register("first", ["127.0.0.1"], port=server.port, private_key=ssh_keys.client)
    second = register("second", ["localhost"], port=server.port, private_key=ssh_keys.client)

    assert collect_server_stats(first, AT).collected == ["127.0.0.1"]
    assert collect_server_stats(second, AT + dt.timedelta(days=1)).collected == ["localhost"]

    assert received.read_text().splitlines() == [SERVER_COMMAND, SERVER_COMMAND]


def test_the_private_key_is_encrypted_at_rest(db, sshd, ssh_keys):
    cluster = register("secret", ["127.0.0.1"], port=sshd.port, private_key=ssh_keys.client)

    with connection.cursor() as cursor:
        cursor.execute("SELECT private_key FROM monitor_serveraccess WHERE cluster_id = %s", [cluster.pk])
        (stored,) = cursor.fetchone()

    plaintext = ssh_keys.client.read_text()
    assert "PRIVATE KEY" not in stored and plaintext.splitlines()[1] not in stored
    assert decrypt(stored) == plaintext
    assert ServerAccess.objects.get(cluster=cluster).private_key == plaintext


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not a key", "not an Ed25519, ECDSA or RSA private key"),
        ("public", "not an Ed25519, ECDSA or RSA private key"),
        ("passphrase", "protected by a passphrase"),
    ],
)
def test_server_access_takes_only_a_private_key_without_passphrase(db, ssh_keys, tmp_path, text, message):
    if text == "public":
        text = public_key_line(ssh_keys.client)
    elif text == "passphrase":
        locked = tmp_path / "locked"
        keygen(locked)
        subprocess.run(["ssh-keygen", "-q", "-p", "-P", "", "-N", "secret", "-f", str(locked)], check=True)
        text = locked.read_text()
    access = ServerAccess(cluster=Cluster.objects.create(name="bad-key"), username=SSH_USER, private_key=text)

    with pytest.raises(ValidationError) as raised:
        access.full_clean()

    assert message in raised.value.message_dict["private_key"][0]


def test_a_cluster_without_server_access_is_not_collected(db):
    cluster = Cluster.objects.create(name="no-access")
    Broker.objects.create(
        cluster=cluster, cluster_name="DefaultCluster", broker_name="b", broker_id=0, address="127.0.0.1:10911"
    )

    assert collect_server_stats(cluster, AT) is None
    assert not ServerSample.objects.exists()


def test_server_series_has_one_point_per_slot_and_none_where_nothing_was_read(db):
    slot = dt.timedelta(minutes=5)
    store_server_samples(
        SLOT,
        stats={"10.0.0.1": ServerStats(cpu_percent=12.5, mem_total=8, disks=(DiskUse("/data", 100, 25, 75),))},
        errors={},
    )
    store_server_samples(SLOT + 2 * slot, stats={}, errors={"10.0.0.1": "cannot connect"})
    store_server_samples(SLOT + slot, stats={"10.0.0.2": ServerStats(cpu_percent=99.0)}, errors={})

    series = server_series("10.0.0.1", SLOT - dt.timedelta(minutes=3), SLOT + 3 * slot)

    times = [SLOT, SLOT + slot, SLOT + 2 * slot, SLOT + 3 * slot]
    assert series.metrics["cpu_percent"] == list(zip(times, [12.5, None, None, None], strict=True))
    assert series.metrics["mem_total"] == list(zip(times, [8, None, None, None], strict=True))
    assert series.disk_used_percent == {"/data": list(zip(times, [25.0, None, None, None], strict=True))}
    assert series.errors == [(SLOT + 2 * slot, "cannot connect")]


def test_a_host_that_gains_another_kind_of_host_key_is_still_recognised_by_the_pinned_one(db, start_sshd, ssh_keys):
    # Pinned while the host had only an RSA key; the Ed25519 key added later is one an SSH client would prefer.
    before = start_sshd(host_keys=[ssh_keys.host_rsa])
    cluster = register("new-key-type", ["127.0.0.1"], port=before.port, private_key=ssh_keys.client)
    collect_server_stats(cluster, AT)
    before.stop()
    start_sshd(host_keys=[ssh_keys.host_a, ssh_keys.host_rsa], port=before.port)

    run = collect_server_stats(cluster, AT + dt.timedelta(minutes=5))

    assert run.errors == {} and run.collected == ["127.0.0.1"]
    assert PinnedHostKey.objects.get().fingerprint == fingerprint(ssh_keys.host_rsa)
