"""RocketMQ's own naming rules for topics and groups, with messages a business user understands.

The rules come from RocketMQ 4.9 (TopicValidator, client Validators, MixAll): names use ``[%|a-zA-Z0-9_-]``,
topics are at most 127 characters and groups at most 255, and a set of names belongs to the system. The portal is
stricter than the broker in one way: ``%`` and ``|`` are refused in new names, because RocketMQ uses ``%`` to build
retry and dead-letter topics (``%RETRY%group``, ``%DLQ%group``) and ``|`` separates names in its own
configuration; names imported from a cluster keep whatever the broker accepted.
"""

import re

from django.conf import settings
from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from stats.keys import DLQ_PREFIX, OFFSET_MOVED_EVENT_TOPIC, RETRY_PREFIX

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        TRACE_TOPIC,
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        OFFSET_MOVED_EVENT_TOPIC,
    }
)
SYSTEM_TOPIC_PREFIXES = ("rmq_sys_", "RMQ_SYS_", RETRY_PREFIX, DLQ_PREFIX)

SYSTEM_GROUPS = frozenset(
    {
        "DEFAULT_PRODUCER",
        "DEFAULT_CONSUMER",
        "TOOLS_CONSUMER",
        "SCHEDULE_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "CLIENT_INNER_PRODUCER",
        "SELF_TEST_P_GROUP",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
        "_TRACE_PRODUCER_GROUP",
    }
)
SYSTEM_GROUP_PREFIXES = ("CID_RMQ_SYS_", RETRY_PREFIX, DLQ_PREFIX)

_BROKER_CHARSET = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_NEW_NAME_CHARSET = re.compile(r"^[a-zA-Z0-9_-]+$")


def is_system_topic(name: str) -> bool:
    """True for topics RocketMQ creates and uses itself; they are never registered, imported or applied for."""
    return name in SYSTEM_TOPICS or name.startswith(SYSTEM_TOPIC_PREFIXES)


def is_system_group(name: str) -> bool:
    return name in SYSTEM_GROUPS or name.startswith(SYSTEM_GROUP_PREFIXES)


def _check_charset(name: str, *, new: bool) -> None:
    if not name or not name.strip():
        raise ValidationError(_("The name must not be blank."), code="blank")
    if new and ("%" in name or "|" in name):
        raise ValidationError(
            _(
                "The characters % and | are reserved by RocketMQ (retry and dead-letter topics); use letters, digits, "
                "'-' and '_'."
            ),
            code="reserved_char",
        )
    pattern = _NEW_NAME_CHARSET if new else _BROKER_CHARSET
    if not pattern.match(name):
        raise ValidationError(
            _("Only letters, digits, '-' and '_' are allowed (RocketMQ accepts ^[%|a-zA-Z0-9_-]+$)."),
            code="charset",
        )


def validate_topic_name(name: str, *, new: bool = True) -> None:
    """Raise ValidationError if RocketMQ (or, for a new name, the portal) would refuse this topic name."""
    _check_charset(name, new=new)
    if len(name) > TOPIC_MAX_LENGTH:
        raise ValidationError(
            _("A topic name is at most %(max)d characters long (this one has %(length)d)."),
            code="max_length",
            params={"max": TOPIC_MAX_LENGTH, "length": len(name)},
        )
    if is_system_topic(name):
        raise ValidationError(
            _("%(name)s is a RocketMQ system topic name and cannot be used."), code="reserved", params={"name": name}
        )


def validate_group_name(name: str, *, new: bool = True) -> None:
    """Raise ValidationError if RocketMQ (or, for a new name, the portal) would refuse this group name."""
    _check_charset(name, new=new)
    if len(name) > GROUP_MAX_LENGTH:
        raise ValidationError(
            _("A group name is at most %(max)d characters long (this one has %(length)d)."),
            code="max_length",
            params={"max": GROUP_MAX_LENGTH, "length": len(name)},
        )
    if is_system_group(name):
        raise ValidationError(
            _("%(name)s is a RocketMQ system group name and cannot be used."), code="reserved", params={"name": name}
        )


def validate_trace_topic_name(name: str) -> None:
    """Raise ValidationError unless ``name`` can be a cluster's trace topic: RocketMQ's default
    RMQ_SYS_TRACE_TOPIC, or a topic name a business topic could have (the custom trace topic clients are given)."""
    if name != TRACE_TOPIC:
        validate_topic_name(name)


def validate_queue_nums(value: int) -> None:
    """Queue counts the portal allows: at least 1 and at most TOPIC_MAX_QUEUE_NUMS (default 256 per broker)."""
    maximum = settings.TOPIC_MAX_QUEUE_NUMS
    if value < 1 or value > maximum:
        raise ValidationError(
            _("The queue count must be between 1 and %(max)d."), code="queue_nums", params={"max": maximum}
        )


def validate_tag_expression(expression: str) -> None:
    """A TAG subscription expression as RocketMQ parses it: ``*`` or tags separated by ``||``."""
    expression = (expression or "").strip()
    if not expression:
        raise ValidationError(_("The tag expression must not be blank; use * for all tags."), code="blank")
    if expression == "*":
        return
    tags = [tag.strip() for tag in expression.split("||")]
    if any(not tag for tag in tags):
        raise ValidationError(_("Separate tags with || and leave no tag empty, e.g. TagA || TagB."), code="tags")
    if any("*" in tag for tag in tags):
        raise ValidationError(_("* stands alone: it means all tags and cannot be mixed with others."), code="tags")


class MinimumLengthValidator(password_validation.MinimumLengthValidator):
    """Django's rule with a message from our own catalog: Django 5.2's reworded message has no Chinese translation
    in Django's catalog yet."""

    def get_error_message(self):
        return ngettext(
            "This password is too short. It must contain at least %(min_length)d character.",
            "This password is too short. It must contain at least %(min_length)d characters.",
            self.min_length,
        ) % {"min_length": self.min_length}

    def get_help_text(self):
        return ngettext(
            "Your password must contain at least %(min_length)d character.",
            "Your password must contain at least %(min_length)d characters.",
            self.min_length,
        ) % {"min_length": self.min_length}
