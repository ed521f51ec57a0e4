"""The one place that decides who may see or change what. Views, API viewsets, forms and templates all ask here.

Actors: anonymous; an *outsider* (logged in, not in the owning team); a team *member*; a *team admin*; a *portal
admin* (``user.is_staff``). Rules:

- Public topic information (the topic list and a topic's page) is visible to everyone, anonymous included.
  Groups, applications of one's teams, clusters and brokers need a login, and so does monitoring: a topic's
  traffic, consumer lag, probe history and server stats (how much a business sends is not public).
  "Who is lagging now" shows portal admins every group and everyone else their teams' groups. The audit log,
  the approval queue and cluster management are for portal admins only.
- Only the owning team changes its own topics and groups (through applications); members may apply for creations,
  changes and associations, deletions need a team admin. Portal admins may do everything and decide applications;
  a team admin of a topic's owning team may also decide associations with that topic.
- A producer group's owning team (and portal admins) issues and revokes the tokens its clients report sends
  with; a token authenticates only its group's reports (``portal/api/authentication.py``), never a user.
- Warnings are seen by the people they concern: a topic's or group's by its owning team (a topic's also by the users
  associated with it), the cluster machinery's (name servers, brokers, servers) by every signed-in user; portal
  admins see all. The owning team (portal admins for the machinery) acknowledges them. Warning channels,
  subscriptions and mutes are personal.

The querysets behind ``visible_to``/``editable_by`` (``RegistryQuerySet``, ``ApplicationQuerySet``) live with their
models and ask :func:`~portal.models.people.is_portal_admin` and :func:`~portal.models.people.team_ids`, so this
module imports the models and no model imports it.
"""

from __future__ import annotations

from django.db.models import Q

from portal.models import ConsumerGroup, Subscription, TopicAssociation
from portal.models.people import is_portal_admin, team_ids
from portal.models.warnings import CLUSTER_SUBJECT_TYPES, SubjectType, Warning


def can_see_monitoring(user) -> bool:
    """Traffic and lag charts, probe history and server stats, of any cluster (like groups and clusters: any
    signed-in user)."""
    return bool(user and user.is_authenticated and user.is_active)


def lag_watch(user, team=None):
    """The consumer groups whose lag "who is lagging now" shows the user, optionally narrowed to ``team``: None
    means every group of every cluster, registered or not (portal admins, unnarrowed); else a queryset of
    registered groups (their teams' groups; another team's are none)."""
    if is_portal_admin(user):
        return None if team is None else ConsumerGroup.objects.filter(team=team)
    groups = ConsumerGroup.objects.owned_by(user)
    return groups if team is None else groups.filter(team=team)


def can_apply_for(user, team) -> bool:
    """Submit creations, changes and associations on behalf of ``team``."""
    return is_portal_admin(user) or (team is not None and team.pk in team_ids(user))


def can_apply_deletion_for(user, team) -> bool:
    return is_portal_admin(user) or (team is not None and team.pk in team_ids(user, admin_only=True))


def can_change(user, entry) -> bool:
    """Edit a registry entry's portal-only fields (description) and apply for its change or deletion."""
    return is_portal_admin(user) or (entry.team_id is not None and entry.team_id in team_ids(user))


def can_manage_client_tokens(user, group) -> bool:
    """Issue and revoke the tokens a producer or consumer group's SDK clients talk to the portal with, and see the
    list of them: the group's owning team (any member) and portal admins."""
    return can_change(user, group)


def can_see_message_bodies(user, entry) -> bool:
    """Read the bodies of a topic's messages (everyone signed in sees their metadata). ``entry`` is a Topic, or the
    ConsumerGroup whose %RETRY%/%DLQ% topic holds the messages. A topic's bodies are for portal admins, its owning
    team, and those associated with it: users with an approved association, and the teams whose consumer groups are
    registered as subscribed to it. A group's retry and dead-letter bodies are its owning team's (and admins')."""
    if is_portal_admin(user):
        return True
    if not (user and user.is_authenticated and user.is_active) or entry is None:
        return False
    teams = team_ids(user)
    if entry.team_id is not None and entry.team_id in teams:
        return True
    if isinstance(entry, ConsumerGroup):
        return False
    return (
        TopicAssociation.objects.filter(topic=entry, user=user).exists()
        or Subscription.objects.filter(topic=entry, consumer_group__team_id__in=teams).exists()
    )


def can_decide(user, application) -> bool:
    return application.is_pending and type(application).objects.decidable_by(user).filter(pk=application.pk).exists()


def can_cancel(user, application) -> bool:
    """Only the applicant withdraws an application; whoever decides it (a portal admin included) rejects it, with a
    reason the applicant is told."""
    return application.is_pending and application.applicant_id == user.pk


def can_manage_team(user, team) -> bool:
    return is_portal_admin(user) or team.pk in team_ids(user, admin_only=True)


def can_administer(user) -> bool:
    """Clusters, adoption of unowned entries, the audit log, new teams and user accounts."""
    return is_portal_admin(user)


def can_open_approval_queue(user) -> bool:
    """Portal admins, and team admins, who decide associations with their team's topics; which applications the
    queue shows each of them is ``Application.objects.decidable_by``."""
    return is_portal_admin(user) or bool(team_ids(user, admin_only=True))


def _warnings_heard_by(user, teams):
    """Whose warnings a (non-admin) user hears as an owner: their teams' topics and groups, and the topics they
    are associated with."""
    associated = TopicAssociation.objects.filter(user=user).values("topic_id")
    return (
        Q(subject_type=SubjectType.TOPIC, topic__team_id__in=teams)
        | Q(subject_type=SubjectType.TOPIC, topic_id__in=associated)
        | Q(subject_type=SubjectType.CONSUMER_GROUP, consumer_group__team_id__in=teams)
        | Q(subject_type=SubjectType.PRODUCER_GROUP, producer_group__team_id__in=teams)
    )


def visible_warnings(user, warnings=None):
    """The warnings (of ``warnings``, a ``Warning`` queryset, or all) the user may see: portal admins every one;
    other signed-in users those of the cluster machinery (name servers, brokers, servers: like the broker and server
    pages, for every signed-in user) and their own (:func:`own_warnings`); anonymous visitors none. A warning on a
    topic or group the registry does not hold (no owner to hear it) is an admin's."""
    warnings = Warning.objects.all() if warnings is None else warnings
    if is_portal_admin(user):
        return warnings
    if not (user and user.is_authenticated and user.is_active):
        return warnings.none()
    return warnings.filter(Q(subject_type__in=CLUSTER_SUBJECT_TYPES) | _warnings_heard_by(user, team_ids(user)))


def own_warnings(user, warnings=None):
    """The warnings addressed to the user (the lists' "mine"): those of the topics and groups their teams own and of
    the topics they are associated with; for portal admins also the cluster machinery's, which they look after."""
    warnings = Warning.objects.all() if warnings is None else warnings
    if not (user and user.is_authenticated and user.is_active):
        return warnings.none()
    mine = _warnings_heard_by(user, team_ids(user))
    if is_portal_admin(user):
        mine |= Q(subject_type__in=CLUSTER_SUBJECT_TYPES)
    return warnings.filter(mine)


WARNING_ENTRY_FIELDS = frozenset({"topic", "consumer_group", "producer_group"})


def warning_entry(warning):
    """The registry entry (topic or group) a warning is about, or None (cluster machinery, or not registered). A
    group's warning may also link the topic it concerns; the subject is the group."""
    return getattr(warning, warning.subject_type, None) if warning.subject_type in WARNING_ENTRY_FIELDS else None


def can_acknowledge(user, warning) -> bool:
    """Say "we are on it" for a warning (while it is open: the lifecycle's business): the owning team of its topic
    or group, and portal admins (who look after the cluster machinery's warnings)."""
    entry = warning_entry(warning)
    return is_portal_admin(user) or (entry is not None and entry.team_id in team_ids(user))


def can_manage_channel(user, channel) -> bool:
    """Warning channels are personal: only their owner configures, tests, enables or deletes one."""
    return bool(user and user.is_authenticated and channel.owner_id == user.pk)


def can_see_all_deliveries(user) -> bool:
    """A warning's page shows each user the deliveries made to them; portal admins see everyone's (to find a
    failing channel)."""
    return is_portal_admin(user)
