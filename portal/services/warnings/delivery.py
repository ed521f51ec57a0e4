"""Deliver a warning event: tell each recipient through each of their channels, one ``Delivery`` row per attempt.

An attempt first inserts a ``sending`` row; the unique index over (event, user, channel) for sending/sent rows is
the claim, so a task retried after a partial failure, or run twice, sends through each channel at most once (a
worker dying between claim and send leaves the row ``sending``: that notification is lost rather than sent twice).
Failed attempts do not block a retry. A disabled channel gets one ``skipped`` row. Each transport failure is kept on
the channel and may disable it (``channels.record_failure``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math
import time

from django.conf import settings
from django.core.cache import caches
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _g

from portal.models.warnings import Channel, Delivery, DeliveryStatus, WarningEvent
from portal.services.warnings import channels
from portal.services.warnings.channels import MAX_ERROR_CHARS, TransportError
from portal.services.warnings.messages import render, test_message
from portal.services.warnings.recipients import recipients

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class DeliveryReport:
    sent: int = 0
    failed: int = 0
    skipped: int = 0
    # Failed attempts worth trying again later (transient errors); the task retries while there are any.
    retryable: int = 0

    def counts(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def _skip(event: WarningEvent, user, channel: Channel, now: dt.datetime, reason: str) -> bool:
    if Delivery.objects.filter(event=event, user=user, channel=channel).exists():
        return False
    Delivery.objects.create(
        event=event,
        user=user,
        channel=channel,
        channel_kind=channel.kind,
        status=DeliveryStatus.SKIPPED,
        error=reason,
        attempted_at=now,
    )
    return True


def _claim(event: WarningEvent, user, channel: Channel, now: dt.datetime) -> Delivery | None:
    try:
        with transaction.atomic():
            return Delivery.objects.create(
                event=event,
                user=user,
                channel=channel,
                channel_kind=channel.kind,
                status=DeliveryStatus.SENDING,
                attempted_at=now,
            )
    except IntegrityError:  # already sent (or being sent) through this channel
        return None


def _finish(delivery: Delivery, status: str, error: str = "") -> None:
    Delivery.objects.filter(pk=delivery.pk).update(status=status, error=error[:MAX_ERROR_CHARS])


def deliver(event: WarningEvent, now: dt.datetime | None = None) -> DeliveryReport:
    """Send ``event`` to everyone who should hear of it, through their channels; safe to call again."""
    now = now or timezone.now()
    report = DeliveryReport()
    for recipient in recipients(event.warning, now):
        message = None
        for channel in recipient.channels:
            if not channel.enabled:
                report.skipped += _skip(event, recipient.user, channel, now, _g("The channel is disabled."))
                continue
            delivery = _claim(event, recipient.user, channel, now)
            if delivery is None:
                continue
            message = message or render(event, recipient.user)
            try:
                channels.send(channel, message)
            except TransportError as error:
                _finish(delivery, DeliveryStatus.FAILED, error.message)
                channels.record_failure(channel, error)
                report.failed += 1
                report.retryable += not error.permanent
                continue
            except Exception as error:  # a transport's bug must not keep the other recipients uninformed
                logger.exception("delivery %s through channel %s failed", delivery.pk, channel.pk)
                # The type only: the exception's text may quote what an endpoint answered (the log has it all).
                _finish(
                    delivery, DeliveryStatus.FAILED, _g("Internal error (%(type)s).") % {"type": type(error).__name__}
                )
                report.failed += 1
                continue
            _finish(delivery, DeliveryStatus.SENT)
            channels.record_success(channel)
            report.sent += 1
    return report


class TooManyTests(Exception):
    """The user sent ``WARNING_CHANNEL_TESTS_PER_MINUTE`` channel tests this minute; ``retry_after``: seconds until
    the next minute starts."""

    def __init__(self, retry_after: int):
        super().__init__(retry_after)
        self.retry_after = retry_after


def _count_test(user) -> None:
    """Count one channel test of ``user`` in this clock minute, in the API throttles' cache (shared by the server
    processes once ``API_THROTTLE_CACHE_URL`` is set); TooManyTests past the limit. Each test makes the portal send a
    request where the user says: without a limit, the button is a request cannon at any endpoint."""
    cache = caches["throttle"]
    now = time.time()
    minute = int(now // 60)
    key = f"warning-channel-tests:{user.pk}:{minute}"
    cache.add(key, 0, timeout=61)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=61)
        count = 1
    if count > settings.WARNING_CHANNEL_TESTS_PER_MINUTE:
        raise TooManyTests(retry_after=max(1, math.ceil((minute + 1) * 60 - now)))


def send_test(channel: Channel, *, by) -> str:
    """Send a test message through ``channel`` (the channels page's "test" button); returns "" on success or the
    error. The outcome is kept on the channel like a delivery's, without disabling it. TooManyTests when ``by``
    sent too many tests this minute."""
    channels.check_owner(channel, by)
    _count_test(by)
    try:
        channels.send(channel, test_message(by))
    except TransportError as error:
        Channel.objects.filter(pk=channel.pk).update(
            last_error=error.message[:MAX_ERROR_CHARS], last_error_at=timezone.now()
        )
        return error.message
    channels.record_success(channel)
    return ""
