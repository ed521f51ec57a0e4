"""``python manage.py sandbox``: run a sandbox RocketMQ cluster on 127.0.0.1 until SIGINT or SIGTERM.

For demos and for trying the portal and the monitor without a real cluster: a name server and brokers speaking
RocketMQ 4.9.4's wire protocol (:mod:`monitor.sandbox`), optionally with slaves, ACL, traffic from real C++
clients (:mod:`monitor.sandbox.traffic`) and faults to watch the monitor react to. Once everything is up it
prints ``namesrv=127.0.0.1:PORT`` as its first line, then ``broker=NAME id=ID addr=HOST:PORT`` per broker (and a
``traffic=`` line when traffic runs), so a script can wait for the first line and read the addresses. A bad
argument or a port already taken is one line on stderr and a non-zero exit, before anything is left running.
"""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from monitor.remoting.acl import AclCredentials
from monitor.sandbox.cluster import NAMESRV, SandboxCluster
from monitor.sandbox.traffic import PROFILES, Traffic, TrafficError, TrafficOptions, plan_for

DEFAULT_NAMESRV_PORT = 9876
# A broker sends a consumer to the slave once it lags this many commit-log bytes. 4.9.4 uses 40% of the
# machine's RAM, which no demo consumer would ever reach; with this, consumers catching up on the demo's backlog
# (even spread over several brokers) and its slow consumers are sent to the slaves.
DEFAULT_SUGGEST_SLAVE_BEHIND_BYTES = 64 * 1024
ALL, BROKERS = "all", "brokers"


def _acl(text: str | None) -> AclCredentials | None:
    if text is None:
        return None
    access_key, _, secret_key = text.partition(":")
    if not access_key or not secret_key:
        raise CommandError(f"--acl must be ACCESS_KEY:SECRET_KEY, got {text!r}")
    return AclCredentials(access_key, secret_key)


def _fault_targets(cluster: SandboxCluster, target: str) -> list[str]:
    """``all``, ``brokers``, ``namesrv``, a broker name (its master) or ``NAME:ID``, as server targets."""
    brokers = [f"{name}:{broker_id}" for name, broker_id in cluster.brokers]
    if target == ALL:
        return [NAMESRV, *brokers]
    if target == BROKERS:
        return brokers
    try:
        cluster.server(target)
    except KeyError:
        known = ", ".join([ALL, BROKERS, NAMESRV, *brokers])
        raise CommandError(f"unknown --fault-target {target!r} (known: {known})") from None
    return [target]


class Command(BaseCommand):
    help = "Run a sandbox RocketMQ cluster (name server, brokers, optional slaves, ACL, traffic, faults) until stopped."

    def add_arguments(self, parser):
        parser.add_argument(
            "--namesrv-port",
            type=int,
            default=DEFAULT_NAMESRV_PORT,
            help=f"name server port on 127.0.0.1, 0 for any free port (default {DEFAULT_NAMESRV_PORT})",
        )
        parser.add_argument("--brokers", type=int, default=1, help="broker names: broker-a, broker-b, ... (default 1)")
        parser.add_argument("--slaves", action="store_true", help="give every master a slave (broker id 1)")
        parser.add_argument(
            "--acl", metavar="ACCESS_KEY:SECRET_KEY", help="brokers require requests signed with this account"
        )
        parser.add_argument(
            "--suggest-slave-behind-bytes",
            type=int,
            default=DEFAULT_SUGGEST_SLAVE_BEHIND_BYTES,
            help="commit-log bytes a consumer may lag before the master sends it to the slave "
            f"(default {DEFAULT_SUGGEST_SLAVE_BEHIND_BYTES})",
        )
        traffic = parser.add_argument_group("traffic (real C++ clients, one process each)")
        traffic.add_argument("--traffic", metavar="PROFILE", help="run a traffic profile: " + ", ".join(PROFILES))
        traffic.add_argument(
            "--rate", type=float, default=TrafficOptions.rate, help="mean messages per second of the main producers"
        )
        traffic.add_argument(
            "--day-seconds",
            type=float,
            default=TrafficOptions.day_seconds,
            help="length of one day of the producers' daily curve (default: a real day; 600 shows it in 10 min)",
        )
        traffic.add_argument("--traffic-dir", help="keep the clients' HOME folders and logs here (default: temporary)")
        faults = parser.add_argument_group("faults")
        faults.add_argument(
            "--namesrv-hang", action="store_true", help="the name server accepts connections and never answers"
        )
        faults.add_argument("--delay", type=float, default=0.0, help="hold every answer back SECONDS")
        faults.add_argument("--drop-ratio", type=float, default=0.0, help="silently drop this share (0..1) of answers")
        faults.add_argument(
            "--fault-target",
            default=ALL,
            help="where --delay and --drop-ratio apply: all (default), brokers, namesrv, a broker name or NAME:ID",
        )

    def handle(self, *args, **options):
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        acl = _acl(options["acl"])
        if options["delay"] < 0:
            raise CommandError("--delay must not be negative")
        if not 0 <= options["drop_ratio"] <= 1:
            raise CommandError("--drop-ratio must be between 0 and 1")
        profile, plan, traffic_options = options["traffic"], None, None
        if profile is not None:
            try:
                traffic_options = TrafficOptions(rate=options["rate"], day_seconds=options["day_seconds"])
                plan = plan_for(profile, traffic_options)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            if plan.needs_slaves and not options["slaves"]:
                raise CommandError(f"traffic profile {profile!r} reads from slaves: add --slaves")
        try:
            cluster = SandboxCluster(
                options["brokers"],
                options["slaves"],
                {acl.access_key: acl.secret_key} if acl else None,
                namesrv_port=options["namesrv_port"],
                suggest_slave_behind_bytes=options["suggest_slave_behind_bytes"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        targets = _fault_targets(cluster, options["fault_target"])
        try:
            cluster.start()
        except OSError as exc:
            # Brokers take free ports: a port that is taken can only be the name server's.
            port = options["namesrv_port"]
            raise CommandError(f"cannot start the name server on 127.0.0.1:{port}: {exc.strerror or exc}") from None
        traffic = None
        try:
            if plan is not None:
                traffic = Traffic(
                    cluster.namesrv_addr, plan, options=traffic_options, acl=acl, workdir=options["traffic_dir"]
                ).start()
            self._inject_faults(cluster, targets, options)
            self._announce(cluster, traffic, profile)
            while not stop.wait(1.0):
                pass
        except TrafficError as exc:
            raise CommandError(str(exc)) from None
        finally:
            if traffic is not None:
                traffic.stop()
            cluster.stop()

    @staticmethod
    def _inject_faults(cluster: SandboxCluster, targets: list[str], options: dict) -> None:
        """After the traffic is set up: the clients have their topics and groups, then the trouble starts."""
        for target in targets:
            if options["delay"]:
                cluster.slow_down(target, options["delay"])
            if options["drop_ratio"]:
                cluster.drop_responses(target, options["drop_ratio"])
        if options["namesrv_hang"]:
            cluster.hang(NAMESRV)

    def _announce(self, cluster: SandboxCluster, traffic: Traffic | None, profile: str | None) -> None:
        lines = [f"namesrv={cluster.namesrv_addr}"]
        for (name, broker_id), broker in sorted(cluster.brokers.items()):
            lines.append(f"broker={name} id={broker_id} addr={broker.addr}")
        if traffic is not None:
            pids = ",".join(str(client.pid) for client in traffic.clients)
            lines.append(f"traffic={profile} clients={len(traffic.clients)} pids={pids}")
        for line in lines:
            self.stdout.write(line)
        self.stdout.flush()
