"""Webhooks cannot be turned against the portal's own network, and no endpoint can break a delivery.

Against real servers on 127.0.0.1: loopback, private, link-local (cloud metadata) and IPv4-in-IPv6 addresses, in any
spelling, are refused unless ``WEBHOOK_ALLOWED_NETWORKS`` names them; redirects are not followed; what an endpoint
answers never reaches the user (channel, delivery, page, API); one deadline bounds a whole delivery; a truncated,
garbled, oversized or refused answer is a failed delivery with a short reason, never a 500 or a crashed worker;
and the channel test is rate-limited per user.
"""

import ipaddress
import ssl
import subprocess
import time

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.env import ImproperEnvironment, env_networks
from portal.models import Cluster, ConsumerGroup
from portal.models.warnings import Channel, ChannelKind, Delivery, SubjectType, WarningKind
from portal.services.outbound import is_allowed, is_internal
from portal.services.warnings import subscriptions
from portal.services.warnings.channels import create_channel
from portal.services.warnings.delivery import deliver, send_test
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from tests.portal.warning_servers import LOCAL_RECEIVERS, ScriptedServer, WebhookServer, read_request

SECRET = b"AKIA-METADATA-SECRET-4711"
REFUSED = "the host's address is internal, which webhooks may not reach"


@pytest.fixture
def hooks():
    with WebhookServer() as server:
        yield server


@pytest.fixture
def local_allowed(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS


def webhook(user, url: str, kind=ChannelKind.WEBHOOK) -> Channel:
    return create_channel(user, kind=kind, name="hook", config={"url": url})


def scripted(answer: bytes, *, then_wait: float = 0.0):
    """A script answering any request with ``answer`` (raw bytes), then holding the connection ``then_wait`` s."""

    def script(connection):
        read_request(connection)
        connection.sendall(answer)
        time.sleep(then_wait)

    return script


@pytest.fixture
def fired(db, team):
    """A fired consumer-lag event, for deliveries through the worker's path."""
    cluster = Cluster.objects.create(name="prod")
    ConsumerGroup.objects.create(cluster=cluster, team=team, name="order-consumer")
    evaluation = Evaluation()
    condition = Condition(
        kind=WarningKind.CONSUMER_LAG,
        subject_type=SubjectType.CONSUMER_GROUP,
        subject_name="order-consumer",
        summary="order-consumer is behind",
        details={"topic": "orders", "behind": 52_000},
    )
    evaluation.add(WarningKind.CONSUMER_LAG, [condition])
    return reconcile(cluster, evaluation, timezone.now()).fired[0]


# --- which addresses ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # carrier-grade NAT
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fec0::1",
        "fd00::1",
        "ff02::1",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:169.254.169.254",
        "::127.0.0.1",  # IPv4-compatible
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b:1::1",  # local-use NAT64
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    ],
)
def test_internal_addresses_are_refused_unless_allowed(address):
    ip = ipaddress.ip_address(address)

    assert is_internal(ip) and not is_allowed(ip, [])
    assert is_allowed(ip, [ipaddress.ip_network(address)])


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "2606:2800:220:1::", "::ffff:93.184.216.34", "64:ff9b::5db8:d822"]
)
def test_public_addresses_are_allowed(address):
    assert is_allowed(ipaddress.ip_address(address), [])


def test_an_allowed_ipv4_network_covers_its_mapped_ipv6_form():
    assert is_allowed(ipaddress.ip_address("::ffff:10.1.2.3"), [ipaddress.ip_network("10.0.0.0/8")])


def test_the_allow_list_comes_from_the_environment_and_a_bad_network_stops_the_start(monkeypatch):
    monkeypatch.setenv("WEBHOOK_ALLOWED_NETWORKS", "10.1.2.0/24, 127.0.0.1")
    assert env_networks("WEBHOOK_ALLOWED_NETWORKS", []) == ["10.1.2.0/24", "127.0.0.1"]
    monkeypatch.setenv("WEBHOOK_ALLOWED_NETWORKS", "10.1.2.0/33")
    with pytest.raises(ImproperEnvironment, match="WEBHOOK_ALLOWED_NETWORKS"):
        env_networks("WEBHOOK_ALLOWED_NETWORKS", [])


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "0x7f.1", "127.1", "017700000001"])
def test_a_webhook_to_loopback_in_any_spelling_is_refused_and_nothing_is_sent(member, hooks, host):
    port = hooks.url("").rsplit(":", 1)[1]
    channel = webhook(member, f"http://{host}:{port}/hook")

    error = send_test(channel, by=member)

    assert REFUSED in error and hooks.requests == []
    channel.refresh_from_db()
    assert REFUSED in channel.last_error


def test_a_webhook_to_the_metadata_service_is_refused_without_a_connection(member):
    channel = webhook(member, "http://169.254.169.254/latest/meta-data/iam/security-credentials/")

    started = time.monotonic()
    assert REFUSED in send_test(channel, by=member)
    assert time.monotonic() - started < 1  # refused before connecting, not timed out


def test_a_webhook_to_ipv4_mapped_ipv6_loopback_is_refused(member, hooks):
    port = hooks.url("").rsplit(":", 1)[1]
    channel = webhook(member, f"http://[::ffff:127.0.0.1]:{port}/hook")

    assert REFUSED in send_test(channel, by=member) and hooks.requests == []


def test_a_refused_address_disables_the_channel_at_once(member, hooks, fired):
    channel = webhook(member, hooks.url("/hook"))
    subscriptions.subscribe(member, WarningKind.CONSUMER_LAG, [channel])

    report = deliver(fired)

    channel.refresh_from_db()
    assert (report.failed, report.retryable, channel.enabled) == (1, 0, False)
    assert hooks.requests == []


def test_the_allow_list_lets_webhooks_reach_the_networks_it_names(member, hooks, local_allowed):
    port = hooks.url("").rsplit(":", 1)[1]
    channel = webhook(member, f"http://localhost:{port}/hook")

    assert send_test(channel, by=member) == ""
    # The checked address is connected to; the URL's host still names the site.
    assert hooks.requests[0].headers["host"] == f"localhost:{port}"


def test_a_path_with_characters_a_request_line_cannot_carry_is_sent_percent_encoded(member, hooks, local_allowed):
    assert send_test(webhook(member, hooks.url("/hook/ü")), by=member) == ""
    assert hooks.requests[0].path == "/hook/%C3%BC"


def test_https_names_the_host_for_sni_and_the_certificate_while_connecting_to_the_checked_address(
    member, hooks, local_allowed, tmp_path, monkeypatch
):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server_names = []
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    tls.sni_callback = lambda _sock, name, _context: server_names.append(name)
    hooks.httpd.socket = tls.wrap_socket(hooks.httpd.socket, server_side=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the portal trusts this certificate alone
    port = hooks.url("").rsplit(":", 1)[1]

    assert send_test(webhook(member, f"https://localhost:{port}/hook"), by=member) == ""
    assert server_names == ["localhost"] and hooks.requests[0].headers["host"] == f"localhost:{port}"
    # The certificate names localhost, not the address connected to: by address, the check fails.
    assert "TLS certificate rejected" in send_test(webhook(member, f"https://127.0.0.1:{port}/hook"), by=member)


# --- redirects and what endpoints answer --------------------------------------------------------------------------


def test_a_redirect_to_the_metadata_service_is_not_followed(member, local_allowed):
    redirect = b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/latest/meta-data/\r\nContent-Length: 0\r\n\r\n"
    with ScriptedServer(scripted(redirect)) as server:
        channel = webhook(member, server.url("/hook"))

        error = send_test(channel, by=member)

    assert error == "HTTP 302 Found: redirects are not followed; enter the URL it leads to"


def test_a_redirect_to_an_allowed_address_is_not_followed_either(member, hooks, local_allowed):
    redirect = f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {hooks.url('/inside')}\r\nContent-Length: 0\r\n\r\n"
    with ScriptedServer(scripted(redirect.encode())) as server:
        channel = webhook(member, server.url("/hook"))

        assert send_test(channel, by=member).startswith("HTTP 307 Temporary Redirect: redirects are not followed")

    assert hooks.requests == []


@pytest.mark.parametrize(
    ("kind", "status", "answer"),
    [
        (ChannelKind.WEBHOOK, 500, SECRET),
        (ChannelKind.WEBHOOK, 403, SECRET),
        (ChannelKind.SLACK, 200, SECRET),
        (ChannelKind.DINGTALK, 200, SECRET),
        (ChannelKind.DINGTALK, 200, b'{"errcode": 310000, "errmsg": "' + SECRET + b'"}'),
        (ChannelKind.DINGTALK, 200, b'{"errcode": "' + SECRET + b'"}'),
        (ChannelKind.WECOM, 200, b'["' + SECRET + b'"]'),
    ],
)
def test_what_an_endpoint_answers_never_reaches_the_user(member, hooks, local_allowed, fired, kind, status, answer):
    hooks.answer("/hook", status, answer)
    channel = webhook(member, hooks.url("/hook"), kind)
    subscriptions.subscribe(member, WarningKind.CONSUMER_LAG, [channel])
    client = APIClient()
    client.force_authenticate(member)

    tested = client.post(reverse("api:warning-channel-test", args=[channel.pk]))
    deliver(fired)

    channel.refresh_from_db()
    delivery = Delivery.objects.get(channel=channel)
    assert tested.status_code == 200 and tested.data["sent"] is False and tested.data["error"]
    client.force_login(member)
    pages = [client.get(reverse("channel-list")), client.get(reverse("warning-detail", args=[fired.warning.pk]))]
    for text in [tested.data["error"], channel.last_error, delivery.error, *(page.content.decode() for page in pages)]:
        assert SECRET.decode() not in text


# --- one deadline, and every transport failure a failed delivery --------------------------------------------------


def drip(connection):
    """A status line, then one byte of a header every 0.1 s for 6 s: each read is quick, the whole is not."""
    read_request(connection)
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(60):
        connection.sendall(b"X")
        time.sleep(0.1)


def test_a_drip_feeding_endpoint_hits_the_one_deadline_of_the_delivery(member, local_allowed, settings):
    settings.WARNING_WEBHOOK_TIMEOUT = 1
    with ScriptedServer(drip) as server:
        channel = webhook(member, server.url("/hook"))

        started = time.monotonic()
        error = send_test(channel, by=member)
        elapsed = time.monotonic() - started

    assert error.endswith("no complete answer within 1 s")
    assert elapsed < 2.5


def refuse_to_answer(connection):
    read_request(connection)


def tls_to_plain(connection):
    connection.recv(65536)
    connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + SECRET), "the answer ended early"),
        (
            scripted(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n" + SECRET),
            "the answer ended early",
        ),
        (scripted(b"SSH-2.0-OpenSSH " + SECRET + b"\r\n\r\n"), "the answer is not valid HTTP"),
        (scripted(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000 + b"\r\n\r\n"), "the answer is not valid HTTP"),
        (
            scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n" + b"x" * 1048576),
            "the answer is larger than 64 KiB",
        ),
        (refuse_to_answer, "the server closed the connection without answering"),
    ],
    ids=["truncated", "truncated-chunked", "not-http", "header-too-long", "oversized", "no-answer"],
)
def test_a_broken_answer_is_a_failed_delivery_with_a_short_reason(member, local_allowed, fired, script, reason):
    with ScriptedServer(script) as server:
        channel = webhook(member, server.url("/hook"))
        subscriptions.subscribe(member, WarningKind.CONSUMER_LAG, [channel])

        report = deliver(fired)

    delivery = Delivery.objects.get(channel=channel)
    assert (report.failed, report.retryable, delivery.status) == (1, 1, "failed")
    assert delivery.error.endswith(reason) and SECRET.decode() not in delivery.error


def test_tls_to_a_plain_http_port_is_a_failed_delivery(member, local_allowed):
    with ScriptedServer(tls_to_plain) as server:
        channel = webhook(member, server.url("/hook", scheme="https"))

        assert "TLS failed" in send_test(channel, by=member)


def test_a_port_nobody_listens_on_is_a_failed_delivery(member, local_allowed):
    with ScriptedServer(refuse_to_answer) as server:
        url = server.url("/hook")
    channel = webhook(member, url)

    assert send_test(channel, by=member).endswith("connection refused")


def test_a_host_name_that_does_not_resolve_is_a_failed_delivery(member):
    channel = webhook(member, "https://no-such-host.invalid/hook")

    assert send_test(channel, by=member).endswith("cannot resolve the host name")


def test_a_broken_answer_on_the_channels_page_is_a_message_not_a_500(member, local_allowed, client):
    with ScriptedServer(scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")) as server:
        channel = webhook(member, server.url("/hook"))
        client.force_login(member)

        tested = client.post(reverse("channel-test", args=[channel.pk]), follow=True)

    assert tested.status_code == 200 and "The test failed:" in tested.content.decode()
    assert "the answer ended early" in tested.content.decode()


# --- the test button's rate limit ---------------------------------------------------------------------------------


def test_the_channel_test_is_rate_limited_per_user_on_the_api(member, outsider, hooks, local_allowed, settings):
    settings.WARNING_CHANNEL_TESTS_PER_MINUTE = 2
    mine, theirs = webhook(member, hooks.url("/mine")), webhook(outsider, hooks.url("/theirs"))
    client = APIClient()
    client.force_authenticate(member)

    answers = [client.post(reverse("api:warning-channel-test", args=[mine.pk])) for _ in range(3)]

    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert 1 <= int(answers[2]["Retry-After"]) <= 60
    assert len(hooks.on("/mine")) == 2
    client.force_authenticate(outsider)
    assert client.post(reverse("api:warning-channel-test", args=[theirs.pk])).status_code == 200


def test_the_channel_test_is_rate_limited_on_the_page_with_a_clear_message(
    member, hooks, local_allowed, settings, client
):
    settings.WARNING_CHANNEL_TESTS_PER_MINUTE = 1
    channel = webhook(member, hooks.url("/hook"))
    client.force_login(member)

    client.post(reverse("channel-test", args=[channel.pk]))
    limited = client.post(reverse("channel-test", args=[channel.pk]), follow=True)

    assert "Too many channel tests this minute; try again in" in limited.content.decode()
    assert len(hooks.requests) == 1
