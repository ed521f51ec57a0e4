"""Warning rules: every condition the collected data shows for one cluster, as :class:`Condition` rows in an
:class:`Evaluation` (what to do about them is ``portal.services.warnings.lifecycle.reconcile``'s job). They live
beside the vocabulary they speak (kinds, thresholds, lifecycle): ``monitor`` collects, the portal judges.

One module per family of rules, each a function of the evaluation :class:`~.base.Context` that returns its kinds
with their conditions (a kind it could not judge is left out, so it is not "evaluated"): :mod:`.consumers` (lag,
blocked clients, offset errors, subscriptions, retries, dead letters; a package, one module per job),
:mod:`.producers` (send exceptions from the SDK), :mod:`.tracing` (trace records the SDK dropped or could not
write), :mod:`.traffic` (surge and drop), :mod:`.health` (name servers, brokers, slave lag) and :mod:`.servers`.
Every family reads the whole cluster in a few set-based queries, never one per topic or group.
"""

from __future__ import annotations

import datetime as dt
import json

from django.utils import timezone

from portal.models import Cluster
from portal.services.warnings.rules import consumers, health, producers, servers, tracing, traffic
from portal.services.warnings.rules.base import Context
from portal.services.warnings.rules.conditions import Condition, Evaluation, RuleFailure

FAMILIES = (consumers, producers, tracing, traffic, health, servers)

__all__ = ["Condition", "Evaluation", "RuleFailure", "evaluate"]


def evaluate(cluster: Cluster, now: dt.datetime | None = None) -> Evaluation:
    """Evaluate every rule for ``cluster`` at ``now`` (default: the current time).

    Every family, kind and subject is judged under :meth:`Context.judging`: an error is logged with what was being
    judged and counted in ``Evaluation.failures``, and the rest goes on. A family or kind that fails is left out of
    ``evaluated`` (its open warnings stay as they are); a subject that fails is ``unjudged`` (its open warning stays
    as it is); everything else still counts. A condition whose details could not be stored (not JSON, or NaN or
    infinity) is a failure of its subject too, so one odd figure cannot stop the cluster's reconcile.
    """
    ctx = Context.load(cluster, now or timezone.now())
    evaluation = Evaluation()
    for family in FAMILIES:
        with ctx.judging(family.__name__.rpartition(".")[2]):
            found = family.evaluate(ctx)
            for kind, conditions in found.items():
                evaluation.add(kind, [c for c in conditions if _storable(ctx, c)])
    evaluation.failures = ctx.failures
    return evaluation


def _storable(ctx: Context, condition: Condition) -> bool:
    with ctx.judging(condition.kind, condition.subject_type, condition.subject_name):
        json.dumps(condition.details, allow_nan=False)
        return True
    return False
