"""``python manage.py serveraccess``: give the server-stats collector its SSH login for a cluster's broker hosts,
show what it uses, and un-pin a host key an administrator has verified as legitimately changed.

    manage.py serveraccess set CLUSTER --user USER [--port 22] --key-file PATH   (or --key-file - for stdin)
    manage.py serveraccess show [CLUSTER]
    manage.py serveraccess remove CLUSTER
    manage.py serveraccess unpin HOST [--port 22]

The private key is validated (no passphrase), stored encrypted and never printed back; ``show`` prints the user,
port and the pinned host keys (trusted on first use; a server showing another key is refused until unpinned).
"""

from __future__ import annotations

import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from monitor.models import PinnedHostKey, ServerAccess
from portal.models import Cluster


def _cluster(name: str) -> Cluster:
    try:
        return Cluster.objects.get(name=name)
    except Cluster.DoesNotExist:
        raise CommandError(f"no cluster named {name!r}") from None


def _read_key(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read the private key from {path}: {exc}") from None


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())


class Command(BaseCommand):
    help = "Set, show or remove the SSH login used to collect server stats; unpin a changed host key."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        set_ = actions.add_parser("set", help="store (or replace) a cluster's SSH login")
        set_.add_argument("cluster")
        set_.add_argument("--user", required=True)
        set_.add_argument("--port", type=int, default=22)
        set_.add_argument("--key-file", required=True, help="private key file, or - to read it from stdin")
        show = actions.add_parser("show", help="print the SSH logins (never the keys) and the pinned host keys")
        show.add_argument("cluster", nargs="?")
        remove = actions.add_parser("remove", help="forget a cluster's SSH login (server stats stop)")
        remove.add_argument("cluster")
        unpin = actions.add_parser("unpin", help="forget a host's pinned key; the next collection pins anew")
        unpin.add_argument("host")
        unpin.add_argument("--port", type=int, default=22)

    def handle(self, *args, action, **options):
        getattr(self, f"_{action}")(**options)

    def _set(self, *, cluster, user, port, key_file, **_):
        target = _cluster(cluster)
        access = ServerAccess.objects.filter(cluster=target).first() or ServerAccess(cluster=target)
        access.username, access.port, access.private_key = user, port, _read_key(key_file)
        try:
            access.full_clean()
        except ValidationError as exc:
            raise CommandError(_errors(exc)) from None
        with transaction.atomic():
            access.save()
        self.stdout.write(f"{target.name}: server stats as {user} on port {port}")

    def _show(self, *, cluster, **_):
        accesses = ServerAccess.objects.select_related("cluster").order_by("cluster__name")
        if cluster:
            accesses = accesses.filter(cluster=_cluster(cluster))
        for access in accesses:
            self.stdout.write(f"{access.cluster.name}: user={access.username} port={access.port}")
        for pin in PinnedHostKey.objects.all():
            self.stdout.write(f"pinned {pin.host}:{pin.port} {pin.key_type} {pin.fingerprint}")

    def _remove(self, *, cluster, **_):
        deleted, _ = ServerAccess.objects.filter(cluster=_cluster(cluster)).delete()
        if not deleted:
            raise CommandError(f"cluster {cluster!r} has no SSH login")
        self.stdout.write(f"{cluster}: SSH login removed")

    def _unpin(self, *, host, port, **_):
        deleted, _ = PinnedHostKey.objects.filter(host=host, port=port).delete()
        if not deleted:
            raise CommandError(f"no key is pinned for {host}:{port}")
        self.stdout.write(f"{host}:{port}: host key unpinned; the next collection pins the key it shows")
