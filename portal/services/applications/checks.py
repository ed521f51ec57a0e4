"""Checks every kind of application shares: field errors collected so one submission reports them all, keys a
payload may not set, topic ids, and tag expressions."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from portal.inputs import MAX_ID
from portal.models import Application, RegistryState, Topic
from portal.models.validation import validate_tag_expression


class Errors:
    """Collects field errors so that one submission reports every problem at once."""

    def __init__(self):
        self.errors: dict[str, list] = {}

    def add(self, field: str, message) -> None:
        self.errors.setdefault(field, []).append(message)

    def check(self, field: str, check: Callable[[], object]):
        """Run ``check``; a ValidationError it raises is filed under ``field`` (or under its own keys)."""
        try:
            return check()
        except ValidationError as exc:
            if hasattr(exc, "error_dict"):
                for key, messages in exc.message_dict.items():
                    for message in messages:
                        self.add(key, message)
            else:
                for message in exc.messages:
                    self.add(field, message)
            return None

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationError(self.errors)


def reject_unknown_keys(payload: dict, allowed: set[str], errors: Errors) -> None:
    for key in sorted(set(payload) - allowed):
        errors.add(key, _("This cannot be set here."))


def check_active_topics(application: Application, ids, field: str, errors: Errors) -> None:
    """Every id must be an active topic of the application's cluster (any team's); others are errors on ``field``."""
    found = set(
        Topic.objects.filter(pk__in=ids, cluster=application.cluster, state=RegistryState.ACTIVE).values_list(
            "pk", flat=True
        )
    )
    for topic_id in ids:
        if topic_id not in found:
            errors.add(
                field,
                _("There is no active topic with id %(id)s on cluster %(cluster)s.")
                % {"id": topic_id, "cluster": application.cluster},
            )


def clean_topic_id(value, field: str, errors: Errors) -> int | None:
    """A topic id as a positive integer the database can hold (a bigger one would overflow the query)."""
    try:
        topic_id = int(value) if not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        topic_id = 0
    if not 0 < topic_id <= MAX_ID:
        errors.add(field, _("%(value)r is not a topic id.") % {"value": value})
        return None
    return topic_id


def clean_tag_expression(value, field: str, errors: Errors) -> str:
    """A subscription's tag expression; none given means every tag (``*``)."""
    expression = str(value or "*").strip()
    errors.check(field, lambda: validate_tag_expression(expression))
    return expression
