"""``python manage.py rocketmq``: run a real Apache RocketMQ cluster (JVMs from Maven Central, see
:mod:`monitor.launcher`) on 127.0.0.1 until SIGINT or SIGTERM, optionally with the sandbox's traffic profiles
(real C++ clients).

``--release 4`` (default) runs 4.9.4: a name server and master/slave broker pairs, ACL on request. ``--release 5``
runs the pinned 5.x: the same layout, or with ``--controller`` one replica group of three brokers in controller
mode (controller embedded in the name server, or ``--controller standalone``) and with ``--proxy`` a proxy in
cluster mode. Like ``manage.py sandbox`` it prints ``namesrv=127.0.0.1:PORT`` first once everything is up, then a
line per broker (and per proxy, controller and traffic), so a script can wait for the first line. Stopping stops
every JVM and client it started.
"""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from monitor.launcher.cluster import RealCluster
from monitor.launcher.controller import CONTROLLER_MODES, ControllerCluster
from monitor.launcher.process import LaunchError
from monitor.launcher.releases import RELEASES, ResolveError
from monitor.remoting.acl import AclCredentials
from monitor.sandbox.traffic import PROFILES, Traffic, TrafficError, TrafficOptions, plan_for

DEFAULT_NAMESRV_PORT = 9876


def _acl(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    access_key, _, secret_key = text.partition(":")
    if not access_key or not secret_key:
        raise CommandError(f"--acl must be ACCESS_KEY:SECRET_KEY, got {text!r}")
    return access_key, secret_key


class Command(BaseCommand):
    help = "Run a real Apache RocketMQ cluster (4.9.4 or 5.x, JVMs) on 127.0.0.1, optionally with traffic."

    def add_arguments(self, parser):
        parser.add_argument("--release", choices=sorted(RELEASES), default="4", help="4 (4.9.4, default) or 5 (5.x)")
        parser.add_argument(
            "--namesrv-port",
            type=int,
            default=DEFAULT_NAMESRV_PORT,
            help=f"name server port on 127.0.0.1, 0 for any free port (default {DEFAULT_NAMESRV_PORT})",
        )
        parser.add_argument("--brokers", type=int, default=1, help="broker names: broker-a, broker-b, ... (default 1)")
        parser.add_argument("--slaves", action="store_true", help="give every master a slave (broker id 1)")
        parser.add_argument("--acl", metavar="ACCESS_KEY:SECRET_KEY", help="brokers require requests signed so")
        parser.add_argument(
            "--controller",
            choices=CONTROLLER_MODES,
            help="5.x only: each broker name is a group of 3 replicas in controller mode, the controller embedded "
            "in the name server or standalone",
        )
        parser.add_argument("--proxy", action="store_true", help="5.x only: a proxy in cluster mode (gRPC, remoting)")
        parser.add_argument("--workdir", help="keep stores and logs here (default: a temporary folder, removed)")
        parser.add_argument("--heap-mb", type=int, default=256, help="heap of each broker JVM (default 256)")
        traffic = parser.add_argument_group("traffic (real C++ clients, one process each)")
        traffic.add_argument("--traffic", metavar="PROFILE", help="run a traffic profile: " + ", ".join(PROFILES))
        traffic.add_argument(
            "--rate", type=float, default=TrafficOptions.rate, help="mean messages per second of the main producers"
        )
        traffic.add_argument(
            "--day-seconds",
            type=float,
            default=TrafficOptions.day_seconds,
            help="length of one day of the producers' daily curve (default: a real day)",
        )
        traffic.add_argument("--traffic-dir", help="keep the clients' HOME folders and logs here (default: temporary)")

    def handle(self, *args, **options):
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        cluster = self._cluster(options)
        plan, traffic_options = self._plan(options)
        try:
            cluster.start()
        except (LaunchError, ResolveError) as exc:
            raise CommandError(f"cannot start RocketMQ {cluster.version}: {exc}") from None
        traffic = None
        try:
            if plan is not None:
                acl = AclCredentials(*cluster.acl) if cluster.acl else None
                traffic = Traffic(
                    cluster.namesrv_addr, plan, options=traffic_options, acl=acl, workdir=options["traffic_dir"]
                ).start()
            self._announce(cluster, traffic, options["traffic"])
            while not stop.wait(1.0):
                dead = [p.name for p in cluster.processes() if not p.alive()]
                if dead:
                    raise CommandError(f"RocketMQ process exited: {', '.join(dead)} (logs in {cluster.workdir})")
        except TrafficError as exc:
            raise CommandError(str(exc)) from None
        finally:
            if traffic is not None:
                traffic.stop()
            cluster.stop()

    @staticmethod
    def _cluster(options: dict) -> RealCluster:
        release, controller, proxy = options["release"], options["controller"], options["proxy"]
        if (controller or proxy) and release != "5":
            raise CommandError("--controller and --proxy need --release 5")
        if controller and options["slaves"]:
            raise CommandError("--controller replaces --slaves: each broker name gets 3 replicas")
        common = {
            "brokers": options["brokers"],
            "acl": _acl(options["acl"]),
            "workdir": options["workdir"],
            "namesrv_port": options["namesrv_port"],
            "heap_mb": options["heap_mb"],
        }
        try:
            if controller or proxy:
                return ControllerCluster(controller=controller, proxy=proxy, slaves=options["slaves"], **common)
            return RealCluster(release, slaves=options["slaves"], **common)
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    @staticmethod
    def _plan(options: dict):
        profile = options["traffic"]
        if profile is None:
            return None, None
        try:
            traffic_options = TrafficOptions(rate=options["rate"], day_seconds=options["day_seconds"])
            plan = plan_for(profile, traffic_options)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if plan.needs_slaves and not (options["slaves"] or options["controller"]):
            raise CommandError(f"traffic profile {profile!r} reads from slaves: add --slaves")
        return plan, traffic_options

    def _announce(self, cluster: RealCluster, traffic: Traffic | None, profile: str | None) -> None:
        lines = [f"namesrv={cluster.namesrv_addr}"]
        for (name, broker_id), node in sorted(cluster.brokers.items()):
            lines.append(f"broker={name} id={broker_id} addr={node.addr} version={cluster.version}")
        lines.extend(cluster.extra_lines())
        if traffic is not None:
            pids = ",".join(str(client.pid) for client in traffic.clients)
            lines.append(f"traffic={profile} clients={len(traffic.clients)} pids={pids}")
        lines.append(f"logs={cluster.workdir}")
        for line in lines:
            self.stdout.write(line)
        self.stdout.flush()
