"""Warning rules: every condition the collected data shows for one cluster, as :class:`Condition` rows in an
:class:`Evaluation` (what to do about them is ``portal.services.warnings.reconcile``'s job).

One module per family of rules, each a function of the evaluation :class:`~monitor.warnings.base.Context` that
returns its kinds with their conditions (a kind it could not judge is left out, so it is not "evaluated"):
:mod:`~monitor.warnings.consumers` (lag, blocked clients, offset errors, subscriptions, retries, dead letters),
:mod:`~monitor.warnings.producers` (send exceptions from the SDK), :mod:`~monitor.warnings.traffic` (surge and
drop), :mod:`~monitor.warnings.health` (name servers, brokers, slave lag) and :mod:`~monitor.warnings.servers`.
Every family reads the whole cluster in a few set-based queries, never one per topic or group.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.utils import timezone

from monitor.warnings import consumers, health, producers, servers, traffic
from monitor.warnings.base import Context
from monitor.warnings.conditions import Condition, Evaluation
from portal.models import Cluster

logger = logging.getLogger(__name__)

FAMILIES = (consumers, producers, traffic, health, servers)

__all__ = ["Condition", "Evaluation", "evaluate"]


def evaluate(cluster: Cluster, now: dt.datetime | None = None) -> Evaluation:
    """Evaluate every rule for ``cluster`` at ``now`` (default: the current time).

    A family that fails (a bug, the database gone mid-way) is logged with its traceback and its kinds are left out
    of ``evaluated``: their open warnings stay as they are, and the other families' results still count.
    """
    ctx = Context.load(cluster, now or timezone.now())
    evaluation = Evaluation()
    for family in FAMILIES:
        try:
            found = family.evaluate(ctx)
        except Exception:
            logger.exception("warning rules %s failed for cluster %s", family.__name__, cluster.name)
            continue
        for kind, conditions in found.items():
            evaluation.add(kind, conditions)
    return evaluation
