"""Who hears of the warning scenarios' warnings, read from what really arrived (the fixture ``audience`` of
:mod:`tests.monitor.fixtures_warnings` builds it).

The people, each with channels of their own and choices made as on the subscriptions page:

- ``mia``, a member of the team owning the scenarios' groups ("scenarios"), told of every kind by e-mail (her
  account address), a generic JSON webhook and in-app;
- ``ada``, a portal admin, told of the cluster machinery's kinds (name servers, brokers, servers) by e-mail, a Slack
  webhook and in-app; she made no choice for the teams' kinds (an admin hears those only when subscribed to them);
- ``olga``, a member of another team, subscribed to every kind by e-mail, webhook and in-app: she owns nothing here
  and must hear nothing;
- the admin who sets the scenarios' thresholds (``tests.portal.warning_rules.warning_rows.admin_user``), who chose
  no channel for any kind: nothing either.

Every event a reconcile records is delivered by the delivery task's own function
(:func:`portal.services.warnings.delivery.deliver`) through a real SMTP server (aiosmtpd) and a real HTTP server,
both on 127.0.0.1 (:mod:`tests.portal.warning_servers`); :meth:`Audience.heard` reads back what they received, and
the in-app notifications, per person and channel.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

from django.contrib.auth import get_user_model
from django.utils import translation

from portal.models import Cluster, Membership, Notification, Team, TeamRole
from portal.models.warnings import ChannelKind, Delivery, DeliveryStatus, Transition, WarningKind, is_cluster_kind
from portal.services.warnings import subscriptions
from portal.services.warnings.channels import create_channel, default_channels
from portal.services.warnings.delivery import deliver
from portal.services.warnings.lifecycle import Reconciled, reconcile
from portal.services.warnings.rules.conditions import Evaluation
from tests.portal.warning_rules.warning_rows import admin_user
from tests.portal.warning_servers import SmtpServer, WebhookServer

TEAM = "scenarios"
OWNER, ADMIN, OUTSIDER = "mia", "ada", "olga"
CLUSTER_KINDS = [kind for kind in WarningKind.values if is_cluster_kind(kind)]
# A message's title starts "[<headline>] <kind label>: <subject> (<cluster>)" (portal.services.warnings.messages).
HEADLINES = {"Warning": Transition.FIRED, "Still going on": Transition.REPEATED, "Resolved": Transition.RESOLVED}
with translation.override("en"):
    KIND_BY_LABEL = {str(kind.label): kind.value for kind in WarningKind}


class Received(NamedTuple):
    """One message that arrived: to whom through which channel ("mia e-mail"), about what."""

    to: str
    kind: str
    subject: str
    transition: str


def _parse_title(to: str, title: str) -> Received:
    headline, _, rest = title.removeprefix("[").partition("] ")
    label, _, about = rest.partition(": ")
    subject = about.rpartition(" (")[0]
    return Received(to, KIND_BY_LABEL.get(label, f"? {title}"), subject, HEADLINES.get(headline, f"? {headline}"))


@dataclass
class Audience:
    owner: object
    admin: object
    outsider: object
    quiet_admin: object
    smtp: SmtpServer
    hooks: WebhookServer

    def received(self) -> list[Received]:
        """Everything that reached anyone, in the order each channel got it."""
        names = {user.email: user.username for user in (self.owner, self.admin, self.outsider, self.quiet_admin)}
        found = [
            _parse_title(f"{names.get(mail['To'], mail['To'])} e-mail", mail["Subject"]) for mail in self.smtp.messages
        ]
        for request in self.hooks.requests:
            user, _, channel = request.path.strip("/").partition("/")
            if channel == "slack":
                found.append(_parse_title(f"{user} slack", request.json["blocks"][0]["text"]["text"]))
            else:
                document = request.json
                to = f"{user} {channel}"
                if document["recipient"]["username"] != user:  # someone else's warning through this user's hook
                    to += f" (for {document['recipient']['username']})"
                warning, event = document["warning"], document["event"]
                found.append(Received(to, warning["kind"], warning["subject_name"], event["transition"]))
        for note in Notification.objects.select_related("user").order_by("pk"):
            found.append(_parse_title(f"{note.user.username} in-app", note.title))
        return found

    def heard(self, kind: str, subject: str) -> dict[str, list[str]]:
        """What arrived about ``subject``'s warning of ``kind``: per person and channel, the transitions in order."""
        heard = defaultdict(list)
        for message in self.received():
            if (message.kind, message.subject) == (kind, subject):
                heard[message.to].append(message.transition)
        return dict(heard)

    def subscribers(self, kind: str) -> list:
        return [self.admin] if is_cluster_kind(kind) else [self.owner]

    def told(self, kind: str, *transitions: str) -> dict[str, list[str]]:
        """``transitions`` once through each channel of the people who chose to hear of ``kind``."""
        channels = {self.owner: ["e-mail", "webhook", "in-app"], self.admin: ["e-mail", "slack", "in-app"]}
        return {
            f"{user.username} {channel}": list(transitions)
            for user in self.subscribers(kind)
            for channel in channels[user]
        }

    def strangers(self, kind: str) -> list:
        """Whatever reached someone who did not subscribe to ``kind`` (about anything), and any delivery attempt to
        them or one that did not go through."""
        names = {user.username for user in self.subscribers(kind)}
        return [message for message in self.received() if message.to.split()[0] not in names] + list(
            Delivery.objects.exclude(user__username__in=names, status=DeliveryStatus.SENT).values_list(
                "user__username", "channel_kind", "status", "error"
            )
        )


def reconcile_and_deliver(cluster: Cluster, evaluation: Evaluation, now: dt.datetime) -> Reconciled:
    """``reconcile``, then each recorded event delivered as ``portal.tasks.deliver_warning_event`` does (a delivery
    already made, by a task run when the transaction committed, is not made again)."""
    result = reconcile(cluster, evaluation, now)
    for event in result.events:
        deliver(event)
    return result


def _person(username: str, *, staff: bool = False, team: Team | None = None):
    user = get_user_model().objects.create_user(username=username, email=f"{username}@example.com", is_staff=staff)
    if team is not None:
        Membership.objects.create(team=team, user=user, role=TeamRole.MEMBER)
    return user


def _channels(user, hooks: WebhookServer, hook_kind: str) -> list:
    hook = create_channel(
        user, kind=hook_kind, name=hook_kind, config={"url": hooks.url(f"/{user.username}/{hook_kind}")}
    )
    return [*default_channels(user), hook]  # in-app and e-mail to the account address, and the webhook


def make_audience(smtp: SmtpServer, hooks: WebhookServer) -> Audience:
    """The people of the module docstring, with their channels and choices; the servers' past messages forgotten.
    (Django's e-mail settings must point at ``smtp``.)"""
    smtp.messages.clear()
    hooks.requests.clear()
    hooks.answer(f"/{ADMIN}/slack", 200, b"ok")  # what a Slack incoming webhook answers
    team, _ = Team.objects.get_or_create(name=TEAM)
    owner = _person(OWNER, team=team)
    admin = _person(ADMIN, staff=True)
    outsider = _person(OUTSIDER, team=Team.objects.create(name="elsewhere"))
    quiet_admin = admin_user()
    owner_channels = _channels(owner, hooks, ChannelKind.WEBHOOK)
    admin_channels = _channels(admin, hooks, ChannelKind.SLACK)
    outsider_channels = _channels(outsider, hooks, ChannelKind.WEBHOOK)
    for kind in WarningKind.values:
        subscriptions.subscribe(owner, kind, owner_channels)
        if kind in CLUSTER_KINDS:
            subscriptions.subscribe(admin, kind, admin_channels)
        subscriptions.subscribe(outsider, kind, outsider_channels)
        subscriptions.subscribe(quiet_admin, kind, [])
    return Audience(owner, admin, outsider, quiet_admin, smtp, hooks)
