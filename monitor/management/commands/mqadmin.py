"""``python manage.py mqadmin SUBCOMMAND -n HOST:PORT [options] [--json]``: Apache RocketMQ's mqadmin, same
subcommand names and options, speaking the remoting protocol directly (no JVM).

This module only parses the command line, builds the admin client and turns failures into one line on stderr and
a non-zero exit; the subcommands live in :mod:`monitor.mqadmin`.
"""

from __future__ import annotations

import argparse
import os

from django.core.management.base import BaseCommand, CommandError

from monitor.mqadmin import COMMANDS
from monitor.mqadmin.common import MQAdminError, PartialFailure, SubCommand
from monitor.mqadmin.output import to_json
from monitor.remoting.acl import AclCredentials
from monitor.remoting.admin import MQAdmin
from monitor.remoting.errors import RemotingClientError

DEFAULT_TIMEOUT = 5.0  # seconds; DefaultMQAdminExt's timeoutMillis
USAGE_ERROR = 2  # argparse's exit status for a bad command line


def _one_line(error: Exception | str) -> str:
    """Broker remarks carry newlines (TOPIC_NOT_EXIST adds a FAQ link on a second line); stderr gets one line."""
    return " ".join(str(error).split())


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _global_options() -> argparse.ArgumentParser:
    """Options every subcommand takes, accepted after the subcommand name as mqadmin accepts them."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        "-n",
        "--namesrvAddr",
        dest="namesrv_addr",
        default=os.environ.get("NAMESRV_ADDR"),
        metavar="HOST:PORT[;HOST:PORT...]",
        help="name server address list, e.g. 192.168.0.1:9876;192.168.0.2:9876 (default: $NAMESRV_ADDR)",
    )
    parser.add_argument(
        "--access-key",
        dest="access_key",
        default=os.environ.get("ROCKETMQ_ACCESS_KEY"),
        help="ACL access key (default: $ROCKETMQ_ACCESS_KEY)",
    )
    parser.add_argument(
        "--secret-key",
        dest="secret_key",
        default=os.environ.get("ROCKETMQ_SECRET_KEY"),
        help="ACL secret key (default: $ROCKETMQ_SECRET_KEY)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=DEFAULT_TIMEOUT,
        help=f"seconds to wait for each answer (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    return parser


class Command(BaseCommand):
    help = "RocketMQ's mqadmin: " + ", ".join(COMMANDS) + ". See 'mqadmin SUBCOMMAND -h'."

    def add_arguments(self, parser):
        common = _global_options()
        subparsers = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        for spec in COMMANDS.values():
            sub = subparsers.add_parser(spec.name, help=spec.help, description=spec.help, parents=[common])
            if spec.arguments is not None:
                spec.arguments(sub)

    def handle(self, *args, **options):
        spec = COMMANDS[options["subcommand"]]
        ns = argparse.Namespace(**options)
        if bool(ns.access_key) != bool(ns.secret_key):
            raise CommandError("--access-key and --secret-key must be given together", returncode=USAGE_ERROR)
        acl = AclCredentials(ns.access_key, ns.secret_key) if ns.access_key else None
        timeout = spec.timeout(ns) if spec.timeout is not None else ns.timeout
        with MQAdmin(ns.namesrv_addr or (), acl=acl, timeout=timeout) as admin:
            try:
                result = spec.run(admin, ns)
            except PartialFailure as failure:
                self._print(spec, failure.result, ns)
                raise CommandError(f"{spec.name}: {_one_line(failure)}") from None
            except (RemotingClientError, MQAdminError, ValueError) as exc:
                raise CommandError(f"{spec.name}: {_one_line(exc)}") from None
        self._print(spec, result, ns)

    def _print(self, spec: SubCommand, result, ns: argparse.Namespace) -> None:
        text = to_json(result) if ns.json else spec.render(result, ns)
        if text:
            self.stdout.write(text)
