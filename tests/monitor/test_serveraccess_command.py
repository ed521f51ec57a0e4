"""``manage.py serveraccess``: how an administrator gives the server-stats collector its SSH login, checks it and
un-pins a host key after verifying a legitimate change. Keys are real ``ssh-keygen`` keys."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from monitor.models import PinnedHostKey, ServerAccess
from portal.models import Cluster
from portal.models.crypto import decrypt


@pytest.fixture
def prod(db):
    return Cluster.objects.create(name="prod")


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("serveraccess", *args, stdout=out)
    return out.getvalue()


def test_setting_a_login_stores_the_key_encrypted_and_never_prints_it(prod, ssh_keys):
    key_text = ssh_keys.client.read_text()

    run("set", "prod", "--user", "collector", "--port", "2222", "--key-file", str(ssh_keys.client))

    access = ServerAccess.objects.get(cluster=prod)
    assert (access.username, access.port, access.private_key) == ("collector", 2222, key_text)
    with connection.cursor() as cursor:  # the column itself, below the field's decryption
        cursor.execute("SELECT private_key FROM monitor_serveraccess WHERE id = %s", [access.pk])
        (column,) = cursor.fetchone()
    assert "PRIVATE KEY" not in column and decrypt(column) == key_text
    shown = run("show")
    assert "prod: user=collector port=2222" in shown and "PRIVATE KEY" not in shown


def test_setting_again_replaces_the_login(prod, ssh_keys):
    run("set", "prod", "--user", "first", "--key-file", str(ssh_keys.client))
    run("set", "prod", "--user", "second", "--key-file", str(ssh_keys.stranger))

    access = ServerAccess.objects.get(cluster=prod)
    assert (access.username, access.private_key) == ("second", ssh_keys.stranger.read_text())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["set", "nowhere", "--user", "u", "--key-file", "{key}"], "no cluster named 'nowhere'"),
        (["set", "prod", "--user", "bad user", "--key-file", "{key}"], "username: Enter a valid user name."),
        (["set", "prod", "--user", "u", "--port", "70000", "--key-file", "{key}"], "port:"),
        (["set", "prod", "--user", "u", "--key-file", "{pub}"], "private_key: not an Ed25519, ECDSA or RSA"),
        (["set", "prod", "--user", "u", "--key-file", "/nonexistent/key"], "cannot read the private key"),
        (["remove", "prod"], "cluster 'prod' has no SSH login"),
        (["unpin", "10.0.0.9"], "no key is pinned for 10.0.0.9:22"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message_and_nothing_stored(prod, ssh_keys, args, message):
    args = [a.format(key=ssh_keys.client, pub=f"{ssh_keys.client}.pub") for a in args]

    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        run(*args)

    assert not ServerAccess.objects.exists()


def test_removing_a_login_stops_server_stats_for_the_cluster(prod, ssh_keys):
    run("set", "prod", "--user", "collector", "--key-file", str(ssh_keys.client))

    assert "SSH login removed" in run("remove", "prod")
    assert not ServerAccess.objects.exists()


def test_unpinning_a_host_forgets_only_that_hosts_key(db):
    for host in ("10.0.0.5", "10.0.0.6"):
        PinnedHostKey.objects.create(host=host, port=22, key_type="ssh-ed25519", public_key="AAAA", fingerprint="x")

    run("unpin", "10.0.0.5")

    assert list(PinnedHostKey.objects.values_list("host", flat=True)) == ["10.0.0.6"]
