"""``manage.py metricstoken issue|list|revoke``: the read-only tokens Prometheus scrapes ``/metrics`` with
(:mod:`portal.services.metrics.tokens`). Acts as the portal admin named by ``--by`` (issuing is audited)."""

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError

from portal.models import MetricsScrapeToken
from portal.services.metrics import tokens


class Command(BaseCommand):
    help = "Issue, list or revoke the bearer tokens Prometheus scrapes /metrics with."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        issue = actions.add_parser("issue", help="Issue a token; it is printed once.")
        issue.add_argument("--by", required=True, help="username of the portal admin issuing it")
        issue.add_argument("--label", default="", help="which Prometheus uses it")
        actions.add_parser("list", help="List tokens (prefixes only).")
        revoke = actions.add_parser("revoke", help="Revoke a token by its prefix.")
        revoke.add_argument("prefix")
        revoke.add_argument("--by", required=True, help="username of the portal admin revoking it")

    def handle(self, *args, action, **options):
        if action == "list":
            for token in MetricsScrapeToken.objects.all():
                state = "active" if token.is_active else f"revoked {token.revoked_at:%Y-%m-%d %H:%M}"
                used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
                self.stdout.write(f"{token.prefix}\t{state}\tlast used {used}\t{token.label}")
            return
        by = get_user_model().objects.filter(username=options["by"]).first()
        if by is None:
            raise CommandError(f"no user {options['by']!r}")
        try:
            if action == "issue":
                self.stdout.write(tokens.issue(by=by, label=options["label"]).secret)
                return
            token = MetricsScrapeToken.objects.filter(prefix=options["prefix"]).first()
            if token is None:
                raise CommandError(f"no token with prefix {options['prefix']!r}")
            tokens.revoke(token, by=by)
        except PermissionDenied:
            raise CommandError(f"{by.username} is not a portal admin") from None
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
