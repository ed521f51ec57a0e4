"""``python manage.py demo`` (``make demo``): the whole product on 127.0.0.1, until Ctrl-C.

Starts, as child processes watched by :class:`~portal.management.supervisor.Supervisor`: Redis on a private port
(data in ``var/demo/``), a RocketMQ cluster with the ``demo`` traffic profile (``DEMO_CLUSTER``: ``sandbox``, the
default, needs no Java; ``real`` runs Apache RocketMQ 4.9.4, two master/slave pairs; ``real5`` runs the pinned 5.x
with a controller embedded in the name server, three replicas in controller mode and a proxy), a Celery worker and beat
(pointed at that Redis), and the web server (gunicorn, static files served by WhiteNoise). In between it applies
the migrations, creates or resets a demo portal admin and a demo business user (member of a demo team),
registers the cluster (once per kind; a restart reuses it and follows the name server's new address) and syncs
it, so the demo topics and groups are in the registry, unowned and ready to adopt. The demo traffic's producers
report their sends through the producer SDK (:mod:`monitor.sdk`): their producer groups are registered for
their topics and get a fresh token each start (the previous demo tokens are revoked), written to
``var/demo/producer-tokens/<group>.token``, where the traffic workers read them (MQCLOUD_PRODUCER_TOKEN_DIR and
MQCLOUD_PORTAL_URL in the sandbox's environment). So that every page has content from the first minutes, it also
writes a week of generated minute history for the demo topics and groups (:mod:`portal.services.demo_history`;
labelled "demo history" on the charts and in the rankings API, and never mixed with measured minutes), asks the
worker to run the Spark rollups and rankings of that week (``sparkjobs.tasks.catch_up``; the beat runs them on
schedule afterwards), and starts a private OpenSSH server on 127.0.0.1 (:mod:`monitor.launcher.sshd`, keys in
``var/demo/ssh/``) that the cluster's server access logs in to, reading the server stats once at start (the beat
reads them every five minutes). Then it prints the URL and the credentials. Every child gets
PORTAL_BASE_URL set to the demo's own URL (:func:`portal_url`), so the links in warning notifications point at the
port the demo really serves.

Ctrl-C (SIGINT) or SIGTERM stops everything it started, last started first; a child that dies on its own is
reported with the end of its log, and stops the demo. Ports come from DEMO_PORT (web, default 8000),
DEMO_REDIS_PORT, DEMO_NAMESRV_PORT and DEMO_SSH_PORT (sshd, default 2022); logs are in ``var/demo/logs/`` (a real
cluster's server logs and stores in ``var/demo/rocketmq-<kind>/``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis
from celery import Celery
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from monitor.collect.servers import collect_server_stats
from monitor.launcher import sshd
from monitor.models import PinnedHostKey, ServerAccess
from portal.env import env_int
from portal.management.supervisor import Child, Supervisor
from portal.models import ApplicationKind, Cluster, ConsumerGroup, ProducerGroup, Team, TeamRole, Topic
from portal.services import applications, demo_history, producer_tokens, registry
from portal.services.demo_history import Behaviour, DemoGroup, DemoTopic, DemoTraffic
from portal.services.sync import sync_cluster
from sparkjobs.tasks import catch_up

HOST = "127.0.0.1"
DEFAULT_WEB_PORT = 8000
DEFAULT_REDIS_PORT = 6390
DEFAULT_NAMESRV_PORT = 9876
DEFAULT_SSH_PORT = 2022

# DEMO_CLUSTER -> (registry name, what it is, the command that runs it with the demo traffic, start deadline).
# A real cluster's brokers flush and unregister on SIGTERM: they get REAL_STOP_SECONDS before being killed.
REAL_STOP_SECONDS = 90.0
DEMO_CLUSTERS = {
    "sandbox": ("sandbox", "the sandbox cluster", ["sandbox", "--brokers", "2", "--slaves"], 60.0),
    "real": (
        "rocketmq-4.9.4",
        "Apache RocketMQ 4.9.4",
        ["rocketmq", "--release", "4", "--brokers", "2", "--slaves"],
        600.0,
    ),
    "real5": (
        "rocketmq-5",
        "Apache RocketMQ 5 (controller mode, proxy)",
        ["rocketmq", "--release", "5", "--brokers", "1", "--controller", "embedded", "--proxy"],
        600.0,
    ),
}
TEAM_NAME = "demo-team"
ADMIN = ("admin", "mqcloud-admin")
USER = ("demo", "mqcloud-demo")
START_DEADLINE = 60.0
# The demo traffic's producers that report through the SDK, with their topic (the "demo" profile in
# monitor/sandbox/traffic/profiles.py; its failing producer sends to a system topic, which no group can be
# registered for). tests/sdk/test_demo_traffic.py keeps the two in step.
DEMO_PRODUCERS = {"pg_orders": "TopicOrders", "pg_payments": "TopicPayments"}
TOKEN_LABEL = "demo traffic"
# The demo traffic's topics and consumer groups as its generated history plays them (the same rates, message sizes
# and behaviours as the "demo" profile; tests/portal/test_demo_history.py keeps the two in step). The growth over
# the week gives the growth and shrink rankings something to rank.
DEMO_TRAFFIC = DemoTraffic(
    topics={
        "TopicOrders": DemoTopic(rate=10.0, body_bytes=1024, weekly_growth=0.3),
        "TopicPayments": DemoTopic(rate=5.0, body_bytes=512, weekly_growth=-0.2),
    },
    groups={
        "cg_orders_fulfil": DemoGroup("TopicOrders", Behaviour.KEEPS_UP),
        "cg_orders_audit": DemoGroup("TopicOrders", Behaviour.FALLS_BEHIND),
        "cg_payments_ledger": DemoGroup("TopicPayments", Behaviour.FAILS_SOME),
        "cg_payments_notify": DemoGroup("TopicPayments", Behaviour.HANGS),
    },
)
# The Spark jobs run once the history is written, each over every window of its lookback (hours) without a
# successful run: the daily rollups of the week, the rankings of the last closed day (which read them), and the
# last two hours' 10-minute and hourly rollups. Charts read the minute data where no rollup is written yet.
CATCH_UP_HOURS = {"daily": 7 * 24, "rankings": 24, "hourly": 2}
# The demo's Spark work is small and short: JVMs with the JIT's first tier only warm up about twice as fast.
DEMO_SPARK_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC"
NAMESRV_LINE = re.compile(rf"^namesrv=({re.escape(HOST)}:\d+)$", re.MULTILINE)


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while the demo was starting or running."""


class Command(BaseCommand):
    help = "Run the portal with Redis, a sandbox cluster with traffic, a Celery worker and beat; Ctrl-C stops all."

    def handle(self, *args, **options):
        self.stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: self.stop.set())
        demo_dir = Path(settings.VAR_DIR) / "demo"
        self.supervisor = Supervisor(demo_dir / "logs")
        try:
            self._run(demo_dir)
        except Interrupted:
            self.stdout.write("stopping...")
        finally:
            for line in self.supervisor.stop_all():
                self.stdout.write(f"  {line}")
        self.stdout.write("demo stopped")

    def _run(self, demo_dir: Path) -> None:
        web_port = env_int("DEMO_PORT", DEFAULT_WEB_PORT)
        redis_port = env_int("DEMO_REDIS_PORT", DEFAULT_REDIS_PORT)
        namesrv_port = env_int("DEMO_NAMESRV_PORT", DEFAULT_NAMESRV_PORT)
        ssh_port = env_int("DEMO_SSH_PORT", DEFAULT_SSH_PORT)
        redis_url = f"redis://{HOST}:{redis_port}/0"
        kind = os.environ.get("DEMO_CLUSTER", "sandbox").strip() or "sandbox"
        if kind not in DEMO_CLUSTERS:
            raise CommandError(f"DEMO_CLUSTER must be one of {', '.join(DEMO_CLUSTERS)}, got {kind!r}")
        cluster_name, cluster_label, cluster_command, cluster_deadline = DEMO_CLUSTERS[kind]
        if kind != "sandbox":
            cluster_command = [*cluster_command, "--workdir", str(demo_dir / f"rocketmq-{kind}")]
        env = child_environment(web_port, redis_url)
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        celery = [sys.executable, "-m", "celery", "-A", "portal"]

        # Tokens of an earlier run are revoked below: workers must not report with them meanwhile.
        token_dir = demo_dir / "producer-tokens"
        shutil.rmtree(token_dir, ignore_errors=True)
        token_dir.mkdir(parents=True)
        reporting = {"MQCLOUD_PORTAL_URL": portal_url(web_port), "MQCLOUD_PRODUCER_TOKEN_DIR": str(token_dir)}

        self._say(f"starting Redis on {HOST}:{redis_port} and {cluster_label}; logs in {self.supervisor.log_dir}")
        self._start("redis", [
            "redis-server", "--bind", HOST, "--port", str(redis_port), "--daemonize", "no",
            "--save", "", "--appendonly", "no", "--dir", str(demo_dir),
        ], env)  # fmt: skip
        rocketmq = self._start("rocketmq" if kind != "sandbox" else "sandbox", [
            *manage, *cluster_command, "--skip-checks", "--traffic", "demo",
            "--namesrv-port", str(namesrv_port), "--traffic-dir", str(demo_dir / "traffic"),
        ], {**env, **reporting}, None if kind == "sandbox" else REAL_STOP_SECONDS)  # fmt: skip
        ssh_keys = demo_ssh_keys(demo_dir / "ssh")
        self._start("sshd", sshd.sshd_command(sshd.write_config(
            demo_dir / "ssh", port=ssh_port, host_keys=[ssh_keys.host], authorized_keys=ssh_keys.authorized,
        )), env)  # fmt: skip
        self._wait("Redis", lambda: _redis_answers(redis_url))
        # While the cluster starts: the schema and the static files, then the processes that need them.
        self._say("applying migrations, starting the Celery worker and beat and the web server")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        # A thread pool: the demo's tasks wait on the network, and it starts and stops in half the time of prefork.
        self._start("celery-worker", [
            *celery, "worker", "--loglevel", "INFO", "--pool", "threads", "--concurrency", "4",
            "--without-mingle", "--without-gossip",
        ], env)  # fmt: skip
        self._start("celery-beat", [
            *celery, "beat", "--loglevel", "INFO", "--schedule", str(demo_dir / "celerybeat-schedule"),
        ], env)  # fmt: skip
        self._start("web", [
            sys.executable, "-m", "gunicorn", "portal.wsgi:application", "--bind", f"{HOST}:{web_port}",
            "--workers", "2", "--access-logfile", "-", "--no-control-socket",
        ], env)  # fmt: skip
        namesrv = self._wait(cluster_label, lambda: _namesrv_line(rocketmq), cluster_deadline)

        self._say(f"registering {cluster_label} ({namesrv}) as {cluster_name} and syncing it")
        admin, team = self._ensure_people()
        try:
            cluster = self._ensure_cluster(cluster_name, cluster_label, namesrv, admin)
        except ValidationError as exc:
            raise CommandError(f"cannot register {cluster_label}: {'; '.join(exc.messages)}") from None
        report = sync_cluster(cluster)
        for error in report.errors:
            self.stderr.write(f"  sync: {error}")
        self._say(
            f"  {report.brokers} brokers; imported {len(report.imported_topics)} topics and "
            f"{len(report.imported_groups)} consumer groups"
        )
        adopted = self._adopt_unowned(cluster, team, admin)
        if adopted:
            self._say(f"  {adopted} imported topics and groups given to {TEAM_NAME}")
        reporting_groups = self._issue_producer_tokens(cluster, team, admin, token_dir)
        self._say(f"  producer groups reporting their sends through the SDK: {', '.join(reporting_groups) or 'none'}")
        self._wait("sshd", lambda: sshd.answers(ssh_port))
        self._read_server_stats(cluster, ssh_keys, ssh_port)
        self._write_history(cluster, redis_url)
        url = portal_url(web_port) + "/"
        self._wait("the web server", lambda: _http_ok(url + "healthz"))
        self._banner(url, cluster_label, namesrv, redis_url, ssh_port)
        while not self.stop.wait(0.5):
            self._check_children()
        raise Interrupted

    # --- people and the cluster ----------------------------------------------------------------------------------

    @transaction.atomic
    def _ensure_people(self):
        """The demo admin and business user with the printed passwords (reset on every start), and the team."""
        users = get_user_model().objects
        admin, _ = users.update_or_create(username=ADMIN[0], defaults={"is_staff": True, "is_active": True})
        admin.set_password(ADMIN[1])
        admin.save()
        user, _ = users.update_or_create(username=USER[0], defaults={"is_staff": False, "is_active": True})
        user.set_password(USER[1])
        user.save()
        team = Team.objects.filter(name=TEAM_NAME).first() or registry.create_team(
            name=TEAM_NAME, description="The demo business team.", by=admin
        )
        if not team.memberships.filter(user=user).exists():
            registry.add_member(team, user, TeamRole.MEMBER, by=admin)
        return admin, team

    def _adopt_unowned(self, cluster: Cluster, team: Team, admin) -> int:
        """The demo traffic's topics and groups belong to the demo team, so the business user's dashboard shows
        them (as an admin would do after a real cluster's first sync)."""
        entries = [
            *Topic.objects.filter(cluster=cluster, team=None),
            *ConsumerGroup.objects.filter(cluster=cluster, team=None),
        ]
        for entry in entries:
            registry.adopt(entry, team=team, by=admin)
        return len(entries)

    def _issue_producer_tokens(self, cluster: Cluster, team: Team, admin, token_dir: Path) -> list[str]:
        """Register each demo producer group for its topic (applied for by the demo user, approved by the admin,
        once), revoke its earlier demo tokens, issue a new one and write it where the traffic workers read it."""
        user = get_user_model().objects.get(username=USER[0])
        issued = []
        for group_name, topic_name in DEMO_PRODUCERS.items():
            topic = Topic.objects.filter(cluster=cluster, name=topic_name).first()
            if topic is None:
                self.stderr.write(f"  no topic {topic_name} in the registry: {group_name} does not report its sends")
                continue
            group = ProducerGroup.objects.filter(cluster=cluster, name=group_name).first()
            if group is None:
                application = applications.submit(
                    user,
                    kind=ApplicationKind.PRODUCER_GROUP_CREATE,
                    team=team,
                    cluster=cluster,
                    payload={"name": group_name, "description": "A demo traffic producer.", "topic_ids": [topic.pk]},
                )
                group = applications.approve(application, by=admin).producer_group
            for old in group.tokens.active().filter(label=TOKEN_LABEL):
                producer_tokens.revoke(old, by=admin)
            secret = producer_tokens.issue(group, by=admin, label=TOKEN_LABEL).secret
            written = token_dir / f"{group_name}.token.new"
            with os.fdopen(os.open(written, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
                file.write(secret + "\n")
            written.replace(token_dir / f"{group_name}.token")  # a worker never reads half a token
            issued.append(group_name)
        return issued

    def _ensure_cluster(self, name: str, label: str, namesrv: str, admin) -> Cluster:
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            return registry.register_cluster(
                name=name,
                namesrv_addrs=[namesrv],
                by=admin,
                description=f"{label} started by manage.py demo, with demo traffic.",
            )
        if cluster.namesrv_addr != namesrv:
            cluster = registry.update_cluster(cluster, by=admin, namesrv_addrs=[namesrv])
        return cluster

    # --- what every page shows from the start ----------------------------------------------------------------------

    def _read_server_stats(self, cluster: Cluster, keys: DemoSshKeys, port: int) -> None:
        """Give the cluster SSH access to the demo's own sshd and read its brokers' hosts now (then every five
        minutes, on the beat's schedule). A pin of another host key on that port is the demo's own sshd with keys
        made anew (``var/demo/ssh/`` removed): it is replaced."""
        access = ServerAccess.objects.filter(cluster=cluster).first() or ServerAccess(cluster=cluster)
        access.username, access.port, access.private_key = sshd.SSH_USER, port, keys.client.read_text()
        access.full_clean()
        access.save()
        PinnedHostKey.objects.filter(host=sshd.HOST, port=port).exclude(public_key=keys.host_public_key).delete()
        run = collect_server_stats(cluster, timezone.now())
        for host, error in run.errors.items():
            self.stderr.write(f"  server stats of {host}: {error}")
        self._say(f"  server stats read over SSH ({sshd.HOST}:{port}) from {', '.join(run.collected) or 'no host'}")

    def _write_history(self, cluster: Cluster, redis_url: str) -> None:
        """The week of generated history, then the Spark jobs over it, on the worker (they take a minute or two)."""
        written = demo_history.backfill(cluster, DEMO_TRAFFIC, timezone.now())
        self._say(f"  {written} minutes of demo history written (labelled as such; measured minutes are kept)")
        if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
            self.stderr.write("  no Java (JAVA_HOME or java on the PATH): the Spark rollups and rankings cannot run")
            return
        with Celery(broker=redis_url) as app:
            app.send_task(catch_up.name, args=[CATCH_UP_HOURS])
        self._say("  the Spark rollups and rankings of the week are running on the worker (see Job runs)")

    # --- children ------------------------------------------------------------------------------------------------

    def _start(self, name: str, argv: list[str], env: dict[str, str], stop_timeout: float | None = None) -> Child:
        self._check_children()
        try:
            return self.supervisor.start(name, argv, env=env, stop_timeout=stop_timeout)
        except OSError as exc:
            raise CommandError(f"cannot start {name} ({argv[0]}): {exc}") from None

    def _check_children(self) -> None:
        if self.stop.is_set():
            raise Interrupted
        child = self.supervisor.exited()
        if child is not None:
            raise CommandError(
                f"{child.name} exited unexpectedly with code {child.process.returncode}; the end of "
                f"{child.log_path}:\n{child.log_tail()}"
            )

    def _wait(self, what: str, ready: Callable[[], object], seconds: float = START_DEADLINE):
        """Poll ``ready`` until it returns something true; a dead child, a signal or the deadline end the wait."""
        deadline = time.monotonic() + seconds
        while True:
            self._check_children()
            result = ready()
            if result:
                return result
            if time.monotonic() > deadline:
                raise CommandError(f"{what} did not become ready within {seconds:g}s")
            self.stop.wait(0.1)

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    def _banner(self, url: str, cluster_label: str, namesrv: str, redis_url: str, ssh_port: int) -> None:
        self._say(
            "\n".join(
                [
                    "",
                    f"MQCloud demo running at {url}",
                    f"  portal admin:  {ADMIN[0]} / {ADMIN[1]}",
                    f"  business user: {USER[0]} / {USER[1]} (team {TEAM_NAME})",
                    f"  {cluster_label}, name server {namesrv}   Redis: {redis_url}",
                    f"  server stats over SSH: sshd on {sshd.HOST}:{ssh_port} (user {sshd.SSH_USER})",
                    f"  logs: {self.supervisor.log_dir}",
                    "Press Ctrl-C to stop everything.",
                ]
            )
        )


@dataclass(frozen=True)
class DemoSshKeys:
    """The demo sshd's host key and the key the collector logs in with (private key files; ``.pub`` beside)."""

    host: Path
    client: Path

    @property
    def authorized(self) -> str:
        return sshd.public_key_line(self.client)

    @property
    def host_public_key(self) -> str:
        """The host key's base64 blob, as a pin stores it."""
        return sshd.public_key_line(self.host).split()[1]


def demo_ssh_keys(folder: Path) -> DemoSshKeys:
    """The keys in ``folder``, made on the first start and kept (so the pinned host key stays valid)."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = DemoSshKeys(host=folder / "host_ed25519", client=folder / "client_ed25519")
    for key in (keys.host, keys.client):
        if not key.exists():
            sshd.keygen(key, comment="mqcloud-demo")
    return keys


def portal_url(web_port: int) -> str:
    """The demo portal's base URL: where its web server listens."""
    return f"http://{HOST}:{web_port}"


def child_environment(web_port: int, redis_url: str) -> dict[str, str]:
    """The environment of every process the demo starts. PORTAL_BASE_URL is the demo's own URL whatever the shell
    says: the worker writes it into warning notifications' links, and the demo serves only ``HOST:web_port``."""
    return {
        **os.environ,
        "REDIS_URL": redis_url,
        "MQCLOUD_VAR_DIR": str(settings.VAR_DIR),
        "PORTAL_BASE_URL": portal_url(web_port),
        "PYTHONUNBUFFERED": "1",
        "SPARK_JAVA_OPTIONS": os.environ.get("SPARK_JAVA_OPTIONS") or DEMO_SPARK_JAVA_OPTIONS,
    }


def _redis_answers(url: str) -> bool:
    try:
        with redis.Redis.from_url(url, socket_timeout=1) as client:
            return bool(client.ping())
    except redis.RedisError:
        return False


def _namesrv_line(child: Child) -> str | None:
    match = NAMESRV_LINE.search(child.log_path.read_text(errors="replace"))
    return match.group(1) if match else None


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False
