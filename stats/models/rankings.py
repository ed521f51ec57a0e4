"""Rankings computed by the Spark rankings job from the daily rollups, per cluster and per closed UTC day.

A row ranks one ``subject`` (a topic, a consumer group or a producer group, per ``kind``) among its cluster for
the window ending at ``window_end``: rank 1 is the top of the list (most traffic, fastest growth, fastest shrink,
worst lag, most failures, most exceptions). Per-team rankings are the same rows filtered to the team's subjects
and re-numbered at display. The job replaces all rows of a (window_end) as a whole, so re-running a day never
doubles them.
"""

from django.db import models
from django.utils.translation import gettext_lazy as _


class RankingKind(models.TextChoices):
    # Messages stored in the topic over the day, and over the 7 days ending with it.
    TOPIC_TRAFFIC_DAY = "topic_traffic_day", _("Topics by traffic (day)")
    TOPIC_TRAFFIC_7D = "topic_traffic_7d", _("Topics by traffic (7 days)")
    # Messages per day: the day's messages less the average day of the 7 days before (growth > 0, shrink < 0;
    # value is the change, detail has both figures and the ratio).
    TOPIC_GROWTH = "topic_growth", _("Fastest-growing topics")
    TOPIC_SHRINK = "topic_shrink", _("Fastest-shrinking topics")
    # Consumer groups: the longest any waiting message had waited (seconds, the day's peak over its topics), and
    # the messages they sent back for a retry (consume failures) over the day.
    CONSUMER_LAG_TIME = "consumer_lag_time", _("Consumers by lag time")
    CONSUMER_FAILURES = "consumer_failures", _("Consumers by failures")
    # Producer groups: failed sends (exceptions) over the day, as the producer SDK reported them.
    PRODUCER_EXCEPTIONS = "producer_exceptions", _("Noisiest producers by exceptions")


# What a ranking's subject is: the registry kind whose name ``subject`` holds.
RANKING_SUBJECT = {
    RankingKind.TOPIC_TRAFFIC_DAY: "topic",
    RankingKind.TOPIC_TRAFFIC_7D: "topic",
    RankingKind.TOPIC_GROWTH: "topic",
    RankingKind.TOPIC_SHRINK: "topic",
    RankingKind.CONSUMER_LAG_TIME: "consumer_group",
    RankingKind.CONSUMER_FAILURES: "consumer_group",
    RankingKind.PRODUCER_EXCEPTIONS: "producer_group",
}


class Ranking(models.Model):
    cluster_id = models.IntegerField()
    kind = models.CharField(max_length=32, choices=RankingKind.choices)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    subject = models.CharField(max_length=255)
    value = models.FloatField()
    rank = models.IntegerField()
    # What the value was computed from (e.g. {"day": n, "baseline": m, "ratio": r}), for the page's tooltips.
    detail = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster_id", "kind", "window_end", "subject"], name="ranking_unique")
        ]
        indexes = [models.Index(fields=["cluster_id", "kind", "window_end", "rank"], name="ranking_list")]
        ordering = ["cluster_id", "kind", "window_end", "rank"]

    def __str__(self) -> str:
        return f"#{self.rank} {self.subject} ({self.kind}, {self.window_end:%Y-%m-%d})"
