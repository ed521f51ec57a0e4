"""What topic-traffic warnings say: a topic receiving far more (surge) or far less (drop) than its baseline."""

from __future__ import annotations

from django.utils.translation import gettext as _

from portal.services.warnings.summaries.words import MINUTE, count, counted, duration, join_sentences


def _recent(details: dict) -> dict:
    return {
        "messages": count(round(details["recent_per_minute"])),
        "minutes": counted(MINUTE, details["recent_minutes"]),
        "baseline": count(round(details["baseline_per_minute"])),
        "window": duration(int(details["thresholds"]["baseline_minutes"]) * 60),
    }


def traffic_surge(topic: str, details: dict) -> str:
    values = {"topic": topic, **_recent(details)}
    if details["baseline_per_minute"]:
        first = _(
            "%(topic)s is receiving %(messages)s messages a minute over the last %(minutes)s, %(ratio)s times its "
            "baseline of %(baseline)s a minute over the %(window)s before."
        ) % {**values, "ratio": f"{details['recent_per_minute'] / details['baseline_per_minute']:.1f}"}
    else:
        first = (
            _(
                "%(topic)s is receiving %(messages)s messages a minute over the last %(minutes)s, up from nothing in "
                "the %(window)s before."
            )
            % values
        )
    return join_sentences(
        first, _("Check its producers (a retry storm, a backfill, a loop) and whether its consumers keep up.")
    )


def traffic_drop(topic: str, details: dict) -> str:
    fell = 100 * (1 - details["recent_per_minute"] / details["baseline_per_minute"])
    first = _(
        "%(topic)s is receiving %(messages)s messages a minute over the last %(minutes)s, %(fell)s%% less than its "
        "baseline of %(baseline)s a minute over the %(window)s before."
    ) % {"topic": topic, "fell": f"{fell:.0f}", **_recent(details)}
    return join_sentences(first, _("A producer may have stopped or be failing to send."))
