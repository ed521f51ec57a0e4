"""The client SDK installs on its own: the wheel built from monitor/sdk/pyproject.toml (what `make sdk` builds) holds
the SDK and the modules it imports and nothing else of the repository, installs into a fresh virtualenv with only
the C++ client binding beside it, and there sends a message through a sandbox cluster and reports it to the portal.

The wheel and the virtualenv are built once per session (about 10 s, most of it creating the virtualenv and pip
installing rocketmq, from PyPI or pip's cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from monitor.remoting.admin import MQAdmin
from tests.support.factories import unique

pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[2]
SDK = PROJECT / "monitor" / "sdk"
TOKEN = "mqp_wheel_test_token"


def repository_files(*patterns: str) -> set[str]:
    return {str(path.relative_to(PROJECT)) for pattern in patterns for path in PROJECT.glob(pattern)}


# What the wheel must hold: the SDK, the wire client it reads routes with, the histogram, and their package markers.
SDK_FILES = repository_files(
    "monitor/__init__.py",
    "monitor/sdk/*.py",
    "monitor/remoting/**/*.py",
    "monitor/trace/__init__.py",
    "monitor/trace/records.py",
    "stats/__init__.py",
    "stats/histogram.py",
)


def run(*command: str | Path, cwd: Path | None = None) -> str:
    """Run a command with this process's environment (pip's index settings, HOME for the C++ client's logs) but no
    PYTHONPATH, so that nothing of the checkout can be imported by accident; fail with its output."""
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    result = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, cwd=cwd, env=env, timeout=240
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="session")
def sdk_wheel(tmp_path_factory) -> Path:
    """The wheel, built as `make sdk` builds it."""
    dist = tmp_path_factory.mktemp("sdk-dist")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", dist, SDK)
    (wheel,) = dist.glob("mqcloud_sdk-*.whl")
    return wheel


@pytest.fixture(scope="session")
def sdk_python(sdk_wheel, tmp_path_factory) -> Path:
    """The python of a fresh virtualenv (no system site-packages) where only the wheel was pip-installed."""
    venv = tmp_path_factory.mktemp("sdk-venv")
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", sdk_wheel)
    return python


def run_in_venv(python: Path, script: str, *args: str) -> dict:
    """Run ``script`` with the virtualenv's python from a folder outside the checkout; it prints one JSON object."""
    folder = python.parents[1]
    path = folder / "script.py"
    path.write_text(textwrap.dedent(script))
    return json.loads(run(python, path, *args, cwd=folder))


def test_the_wheel_holds_the_sdk_and_the_modules_it_imports_and_nothing_else(sdk_wheel):
    with zipfile.ZipFile(sdk_wheel) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(name for name in names if name.endswith(".dist-info/METADATA"))).decode()

    assert {name for name in names if ".dist-info/" not in name} == SDK_FILES
    assert [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")] == [
        "Requires-Dist: rocketmq==0.4.4"
    ]


INSPECT = """
    import importlib.metadata, json, sys
    import monitor.sdk
    try:
        import django
        django_found = True
    except ModuleNotFoundError:
        django_found = False
    print(json.dumps({
        "distributions": sorted(d.metadata["Name"] for d in importlib.metadata.distributions()),
        "files": sorted(str(f) for f in importlib.metadata.files("mqcloud-sdk") if f.suffix == ".py"),
        "loaded": sorted(m.__file__ for name, m in sys.modules.items() if name.split(".")[0] in {"monitor", "stats"}),
        "site_packages": [p for p in sys.path if p.endswith("site-packages")],
        "django": django_found,
    }))
"""


def test_the_installed_sdk_brings_only_the_cpp_client_along(sdk_python):
    found = run_in_venv(sdk_python, INSPECT)

    assert set(found["distributions"]) - {"pip", "setuptools"} == {"mqcloud-sdk", "rocketmq"}
    assert not found["django"]
    assert set(found["files"]) == SDK_FILES
    (site_packages,) = found["site_packages"]
    assert all(path.startswith(site_packages) for path in found["loaded"]), "the SDK came from outside the venv"


SEND = """
    import json, sys
    from monitor.sdk import Message, Producer

    namesrv, group, topic = sys.argv[1:]
    producer = Producer(group, timeout=3000, topics=[topic])  # the portal's URL and token from the environment
    producer.set_namesrv_addr(namesrv)
    records = []
    producer.add_listener(records.append)
    producer.start()
    message = Message(topic)
    message.set_keys("order-4711")
    message.set_body(b"sent from the wheel")
    result = producer.send_sync(message)
    producer.shutdown()  # reports the current minute before returning
    print(json.dumps({
        "status": result.status.name,
        "msg_id": result.msg_id,
        "records": [[r.topic, r.broker_name, r.exception] for r in records],
        "delivered": producer.reporter.delivered,
    }))
"""


def test_the_installed_sdk_sends_through_a_sandbox_and_reports_the_send(
    sdk_python, cluster, make_topic, portal, monkeypatch
):
    topic = make_topic({"broker-a": 2})
    group = unique("pg_wheel")
    monkeypatch.setenv("MQCLOUD_PORTAL_URL", portal.url)
    monkeypatch.setenv("MQCLOUD_PRODUCER_TOKEN", TOKEN)

    sent = run_in_venv(sdk_python, SEND, cluster.namesrv_addr, group, topic)

    assert sent["status"] == "OK"
    assert sent["records"] == [[topic, "broker-a", None]]
    with MQAdmin(cluster.namesrv_addr) as admin:
        (stored,) = admin.query_message_by_uniq_key(topic, sent["msg_id"])
    assert stored.body == b"sent from the wheel"
    assert sent["delivered"] == 1
    (report,) = portal.reports()
    assert (report["producer_group"], report["topic"]) == (group, topic)
    (broker,) = report["brokers"]
    assert (broker["broker_name"], broker["count"], broker["exceptions"]) == ("broker-a", 1, {})
    assert sum(broker["histogram"]["counts"].values()) == 1
    assert all(post.headers["Authorization"] == f"Producer {TOKEN}" for post in portal.posts())


CONSUME = """
    import json, sys, threading
    from monitor.sdk import ListenerContainer, Producer, ProducerTemplate, Settings
    from monitor.sdk.listeners import Registry

    portal_url, group, topic = sys.argv[1:]
    registry, received = Registry(), threading.Event()

    @registry.listener(topic, group, tags="TagA")
    def handle(message):
        received.set()

    # The name servers come from the portal's bootstrap answer; the token from the settings.
    settings = Settings.from_mapping({"portal_url": portal_url, "groups": {group: {"token": "mqc_wheel"}}})
    container = ListenerContainer(settings, registry, stop_at_exit=False)
    container.start()
    producer = Producer("pg_wheel_template", portal_url=portal_url, token="mqp_wheel")  # name servers from the portal
    producer.start()
    result = ProducerTemplate(producer).send(topic, {"order": 4711}, tags="TagA")
    producer.shutdown()
    got = received.wait(30)
    consumer = container.consumers[group]
    container.stop()  # reports the last minute
    print(json.dumps({"status": result.status.name, "received": got, "delivered": consumer.reporter.delivered}))
"""


def test_the_installed_sdk_consumes_with_a_listener_container_bootstrapped_from_the_portal(
    sdk_python, cluster, make_topic, portal
):
    topic = make_topic({"broker-a": 2})
    group = unique("cg_wheel")
    portal.bootstrap = {
        "cluster": "sandbox",
        "namesrv_addr": cluster.namesrv_addr,
        "group": group,
        "subscriptions": [{"topic": topic, "tag_expression": "TagA"}],
        "throttle_tps": None,
        "client_throttle_tps": None,
    }

    consumed = run_in_venv(sdk_python, CONSUME, portal.url, group, topic)

    assert consumed == {"status": "OK", "received": True, "delivered": 1}
    (report,) = [report for report in portal.reports() if report.get("consumer_group") == group]
    assert (report["topic"], report["count"], report["failures"]) == (topic, 1, {})
