"""Parameters of the warning rules: built-in defaults, the defaults portal admins set, and the overrides an owning team
sets for one topic, consumer group or producer group.

The rules (``rules/``) ask ``thresholds_for(cluster).get(kind, subject_type, subject_name)`` for every
subject they judge; everything is loaded in two queries up front so evaluating 10,000 groups costs no query each.
Precedence, lowest first: ``BUILTIN`` < the admin's default row < the subject's override row; each row holds only
the keys it changes.

The parameters themselves (names, built-in defaults, ranges and their validation) are vocabulary the model validates
with, so they live in ``portal/models/warning_params.py``; this module loads and saves the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q

from portal import access
from portal.models import Cluster
from portal.models.warning_params import BUILTIN, PARAMS, SCOPE_OF_MODEL, TARGET_FIELD, validate_params
from portal.models.warnings import KIND_SUBJECT, ThresholdScope, WarningThreshold
from portal.services import audit

logger = logging.getLogger(__name__)


class Thresholds:
    """The effective parameters of every rule for one cluster (see the module docstring for the precedence)."""

    def __init__(self, defaults: dict[str, dict], overrides: dict[tuple[str, str, str], dict]):
        self._defaults = defaults
        self._overrides = overrides

    def get(self, kind: str, subject_type: str | None = None, subject_name: str | None = None) -> dict:
        """The parameters for ``kind`` on the subject (the defaults when no subject is given); a fresh dict."""
        params = {**BUILTIN[kind], **self._defaults.get(kind, {})}
        if subject_type is not None:
            params.update(self._overrides.get((kind, subject_type, subject_name), {}))
        return params

    def default(self, kind: str) -> dict:
        return self.get(kind)


def _rows_params(rows: Iterable[WarningThreshold]) -> Iterable[tuple[WarningThreshold, dict]]:
    """Each row with its params, leaving out what no longer validates: a row of a kind this version does not know,
    and any stored value out of its parameter's range (renamed, its bounds tightened in a later version, or written
    before the bounds existed). Such a value must not break evaluation: the rule uses the inherited value instead,
    the log says so, and the pages show the row for correction."""
    for row in rows:
        if row.kind not in PARAMS:
            logger.warning("ignoring warning threshold %s: unknown kind %r", row.pk, row.kind)
            continue
        params = row.params if isinstance(row.params, dict) else {}
        kept = {}
        for name, value in params.items():
            try:
                kept.update(validate_params(row.kind, {name: value}))
            except ValidationError as error:
                logger.warning(
                    "ignoring warning threshold %s (%s, %s) %s=%.100r: %s",
                    row.pk,
                    row.kind,
                    row.scope,
                    name,
                    value,
                    "; ".join(error.messages),
                )
        yield row, kept


def thresholds_for(cluster: Cluster) -> Thresholds:
    """All thresholds that apply to ``cluster``'s subjects, in two queries (defaults, then this cluster's
    overrides with their subjects' names)."""
    defaults = {
        row.kind: params for row, params in _rows_params(WarningThreshold.objects.filter(scope=ThresholdScope.DEFAULT))
    }
    rows = WarningThreshold.objects.filter(
        Q(topic__cluster=cluster) | Q(consumer_group__cluster=cluster) | Q(producer_group__cluster=cluster)
    ).select_related("topic", "consumer_group", "producer_group")
    overrides = {}
    for row, params in _rows_params(rows):
        target = row.target
        if target is None:  # a scope that does not match the subject set (written around validation)
            continue
        subject_type = KIND_SUBJECT[row.kind]
        overrides[(row.kind, subject_type, target.name)] = params
    return Thresholds(defaults, overrides)


def set_default(kind: str, params: dict, *, by) -> WarningThreshold:
    """Portal admins set the default parameters of ``kind`` for every subject (replacing the previous default)."""
    if not access.can_administer(by):
        raise PermissionDenied
    return _save(WarningThreshold(kind=kind, scope=ThresholdScope.DEFAULT), params, by=by, cluster=None)


def set_override(kind: str, entry, params: dict, *, by) -> WarningThreshold:
    """The owning team (or a portal admin) sets ``kind``'s parameters for one topic/consumer group/producer group;
    an empty ``params`` removes the override."""
    if not access.can_change(by, entry):
        raise PermissionDenied
    scope = SCOPE_OF_MODEL[type(entry)]
    threshold = WarningThreshold(kind=kind, scope=scope, **{TARGET_FIELD[scope]: entry})
    return _save(threshold, params, by=by, cluster=entry.cluster)


def _existing(threshold: WarningThreshold):
    lookup = {"kind": threshold.kind, "scope": threshold.scope}
    if threshold.scope != ThresholdScope.DEFAULT:
        field = TARGET_FIELD[threshold.scope]
        lookup[f"{field}_id"] = getattr(threshold, f"{field}_id")
    return WarningThreshold.objects.select_for_update().filter(**lookup).first()


def _save(threshold: WarningThreshold, params: dict, *, by, cluster) -> WarningThreshold:
    threshold.params = params
    threshold.updated_by = by
    threshold.full_clean(validate_unique=False, validate_constraints=False)
    with transaction.atomic():
        existing = _existing(threshold)
        before = audit.snapshot(existing) if existing else None
        if existing is not None:
            if not threshold.params and threshold.scope != ThresholdScope.DEFAULT:
                audit.record(by, "warningthreshold.deleted", existing, before=before, cluster=cluster)
                existing.delete()
                return existing
            existing.params = threshold.params
            existing.updated_by = by
            existing.save(update_fields=["params", "updated_by", "updated_at"])
            threshold = existing
        else:
            threshold.save()
        audit.record(
            by,
            "warningthreshold.updated" if before else "warningthreshold.created",
            threshold,
            before=before,
            after=audit.snapshot(threshold),
            cluster=cluster,
        )
    return threshold
