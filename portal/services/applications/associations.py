"""Topic associations: a user of another team asks to produce to or consume from a topic; decided by portal admins
or the topic's team admins, recorded in the registry only."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AssociationRole,
    RegistryState,
    TopicAssociation,
)
from portal.services import audit
from portal.services.applications.checks import Errors, reject_unknown_keys


def clean(application: Application, payload: dict) -> dict:
    topic = application.topic
    errors = Errors()
    reject_unknown_keys(payload, {"role", "name"}, errors)
    role = payload.get("role")
    if role not in AssociationRole.values:
        errors.add("role", _("Choose producer or consumer."))
    if topic.state != RegistryState.ACTIVE:
        errors.add("topic", _("Topic %(topic)s is missing from its cluster.") % {"topic": topic.name})
    if topic.team_id is not None and (
        topic.team_id == application.team_id or topic.team_id in access.team_ids(application.applicant)
    ):
        errors.add("topic", _("Your team owns %(topic)s; no association is needed.") % {"topic": topic.name})
    elif role in AssociationRole.values:
        if TopicAssociation.objects.filter(topic=topic, user=application.applicant, role=role).exists():
            errors.add(
                "role",
                _("You are already associated with %(topic)s as %(role)s.")
                % {
                    "topic": topic.name,
                    "role": AssociationRole(role).label,
                },
            )
        elif (
            Application.objects.filter(
                kind=ApplicationKind.TOPIC_ASSOCIATION,
                topic=topic,
                applicant=application.applicant,
                state=ApplicationState.PENDING,
                payload__role=role,
            )
            .exclude(pk=application.pk)
            .exists()
        ):
            errors.add("role", _("An application for this association is already pending."))
    errors.raise_if_any()
    return {"name": topic.name, "role": role}


def record(application: Application, payload: dict, by) -> None:
    association = TopicAssociation.objects.create(
        topic=application.topic, user=application.applicant, role=payload["role"]
    )
    audit.record(by, "topicassociation.created", association, after=audit.snapshot(association))
