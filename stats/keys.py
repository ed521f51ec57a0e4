"""RocketMQ's statistics names and key formats: the one place that knows them.

A 4.9 broker counts traffic in ``BrokerStatsManager`` (org.apache.rocketmq.store.stats): one stats name per kind
of counter, one stats key per thing counted. VIEW_BROKER_STATS_DATA asks for one (name, key) at a time and answers
the key's last minute, hour and day; a key that has not been counted since the broker started is a SYSTEM_ERROR
"The stats <NAME> <KEY> not exist" (:func:`is_missing_stats_remark`).

Key formats (``buildStatsKey`` joins with ``@``; note that the topic comes FIRST in group keys although the Java
increment methods take the group first):

* TOPIC_PUT_NUMS, TOPIC_PUT_SIZE: ``topic`` (messages stored for the topic, and the bytes written for them);
* GROUP_GET_NUMS, GROUP_GET_SIZE: ``topic@group`` (messages a group's pulls returned, counted by the broker that
  served the pull: a master, or its slave when the master sent the consumer there);
* SNDBCK_PUT_NUMS: ``topic@group`` with the message's original topic (a consumer sending a message back for a
  retry, or to the dead-letter queue once retried enough).

Retry and dead-letter topics are named after the group: ``%RETRY%group`` and ``%DLQ%group``.
"""

from __future__ import annotations

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
# The topic a broker writes an event to when a consumer asked for an offset outside a queue (a message per event,
# tag and key = the group; body = OffsetMovedEvent).
OFFSET_MOVED_EVENT_TOPIC = "OFFSET_MOVED_EVENT"

_MISSING_REMARK_PREFIX = "The stats <"
_MISSING_REMARK_SUFFIX = "> not exist"


def topic_key(topic: str) -> str:
    """The key of TOPIC_PUT_NUMS / TOPIC_PUT_SIZE."""
    return topic


def group_key(topic: str, group: str) -> str:
    """The key of GROUP_GET_NUMS / GROUP_GET_SIZE / SNDBCK_PUT_NUMS: ``topic@group``."""
    return f"{topic}@{group}"


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


def is_group_topic(topic: str) -> bool:
    """A retry or dead-letter topic: it belongs to a consumer group, not to an application."""
    return topic.startswith((RETRY_PREFIX, DLQ_PREFIX))


def is_missing_stats_remark(remark: str | None) -> bool:
    """Whether a SYSTEM_ERROR remark is the broker saying the stats key does not exist (yet)."""
    remark = (remark or "").strip()
    return remark.startswith(_MISSING_REMARK_PREFIX) and remark.endswith(_MISSING_REMARK_SUFFIX)
