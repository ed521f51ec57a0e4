"""The state machine every application goes through: submit, approve (claim, act, record), reject, cancel, with
their audit entries and notifications (see the package notes)."""

from __future__ import annotations

import uuid

from django.contrib.auth import get_user_model
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models import Application, ApplicationKind, ApplicationState, TeamRole
from portal.models.applications import CLAIM_TIMEOUT
from portal.services import audit, notifications
from portal.services.applications.kinds import KINDS, target


class InvalidTransition(Exception):
    """The application cannot make this move: it is no longer pending, or an approval of it is under way."""


def _subject(application: Application):
    return format_lazy(
        _("application #{id} ({kind}: {name})"),
        id=application.pk,
        kind=ApplicationKind(application.kind).label,
        name=application.subject_name,
    )


def _notify_deciders(application: Application) -> None:
    """Portal admins decide every application; a topic's team admins also decide associations with their topic."""
    deciders = get_user_model().objects.filter(is_staff=True, is_active=True)
    if application.kind == ApplicationKind.TOPIC_ASSOCIATION and application.topic.team_id is not None:
        deciders = get_user_model().objects.filter(
            Q(is_staff=True) | Q(memberships__team=application.topic.team_id, memberships__role=TeamRole.ADMIN),
            is_active=True,
        )
    title = format_lazy(_("New {subject} by {user}"), subject=_subject(application), user=application.applicant)
    for user in deciders.distinct():
        if user.pk != application.applicant_id:
            notifications.notify(user, title, application.reason, application.get_absolute_url())


def _notify_applicant(application: Application, title, body="") -> None:
    notifications.notify(application.applicant, title, body, application.get_absolute_url())


def submit(
    applicant,
    *,
    kind,
    team,
    cluster,
    payload: dict,
    reason: str = "",
    topic=None,
    consumer_group=None,
    producer_group=None,
) -> Application:
    """File an application for ``team``. Raises ValidationError with a message_dict keyed by payload field (or
    ``kind``, ``team``, ``cluster``, ``topic``, ``__all__``), or PermissionDenied if the applicant may not ask for
    this on the team's behalf (deletions need a team admin)."""
    if kind not in KINDS:
        raise ValidationError({"kind": _("Unknown kind of application.")})
    spec = KINDS[kind]
    if team is None:
        raise ValidationError({"team": _("Choose the team you apply for.")})
    may_apply = access.can_apply_deletion_for if spec.deletion else access.can_apply_for
    if not may_apply(applicant, team):
        raise PermissionDenied
    targets = {"topic": topic, "consumer_group": consumer_group, "producer_group": producer_group}
    target = targets[spec.target] if spec.target else None
    if spec.target and target is None:
        raise ValidationError({spec.target: _("Choose what the application is about.")})
    if target is not None:
        if kind != ApplicationKind.TOPIC_ASSOCIATION:
            if not access.can_change(applicant, target):
                raise PermissionDenied
            if target.team_id != team.pk:
                raise ValidationError({"team": _("%(name)s is owned by another team.") % {"name": target.name}})
        if cluster is None:
            cluster = target.cluster
        elif cluster.pk != target.cluster_id:
            raise ValidationError({"cluster": _("%(name)s is on another cluster.") % {"name": target.name}})
    if cluster is None:
        raise ValidationError({"cluster": _("Choose a cluster.")})
    application = Application(
        kind=kind,
        applicant=applicant,
        team=team,
        cluster=cluster,
        reason=(reason or "").strip(),
        **{name: value for name, value in targets.items() if name == spec.target},
    )
    # Associations are per applicant and role: their clean checks for a pending duplicate.
    if target is not None and kind != ApplicationKind.TOPIC_ASSOCIATION:
        duplicate = Application.objects.filter(kind=kind, state=ApplicationState.PENDING, **{spec.target: target})
        if duplicate.exists():
            raise ValidationError(
                {
                    NON_FIELD_ERRORS: _("An application of this kind for %(name)s is already pending.")
                    % {"name": target.name}
                }
            )
    application.payload = spec.clean(application, dict(payload or {}))
    with transaction.atomic():
        application.save()
        audit.record(applicant, "application.submitted", application, after=audit.snapshot(application))
        _notify_deciders(application)
    return application


def _why_not_pending(application: Application) -> str:
    if application.is_pending:
        return _("Application #%(id)s is being approved right now.") % {"id": application.pk}
    return _("Application #%(id)s is no longer pending (%(state)s).") % {
        "id": application.pk,
        "state": application.get_state_display(),
    }


def _check_open(application: Application) -> None:
    """Refresh the caller's instance and refuse if it is no longer open for a decision."""
    application.refresh_from_db()
    if not application.is_pending or application.is_processing:
        raise InvalidTransition(_why_not_pending(application))


def _unclaimed(now) -> Q:
    return Q(claim_token="") | Q(claimed_at__lt=now - CLAIM_TIMEOUT)


def _claim(application: Application) -> str:
    """Claim the application for this approval; returns the claim's token. Raises InvalidTransition if it is no
    longer pending or another approval holds it. Outside a transaction (how views and tasks call it) the claim is
    committed at once, which is what makes it visible to a concurrent approval."""
    token = uuid.uuid4().hex
    now = timezone.now()
    claimed = Application.objects.filter(_unclaimed(now), pk=application.pk, state=ApplicationState.PENDING).update(
        claim_token=token, claimed_at=now, attempts=F("attempts") + 1, updated_at=now
    )
    if not claimed:
        application.refresh_from_db()
        raise InvalidTransition(_why_not_pending(application))
    return token


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return " ".join(str(message) for message in exc.messages)
    return str(exc) or type(exc).__name__


def _give_back(application: Application, token: str, exc: BaseException, by) -> None:
    """The approval failed: release the claim, keep the error on the application, audit the attempt."""
    error = _error_text(exc)
    with transaction.atomic():
        released = Application.objects.filter(pk=application.pk, claim_token=token).update(
            claim_token="", claimed_at=None, last_error=error, updated_at=timezone.now()
        )
        application.refresh_from_db()
        if released:
            audit.record(by, "application.approval_failed", application, note=error)


def approve(application: Application, *, by, reason: str = "") -> Application:
    """Approve: claim, act on the cluster, record. Raises InvalidTransition (not pending, or being approved),
    PermissionDenied, ValidationError (the request is no longer valid: reject it) or ClusterOperationError (the
    cluster call failed); in the last two cases the application stays pending with ``last_error`` set."""
    _check_open(application)
    if not access.can_decide(by, application):
        raise PermissionDenied
    spec = KINDS[application.kind]
    token = _claim(application)
    try:
        if spec.target and target(application) is None:
            raise ValidationError(
                {NON_FIELD_ERRORS: _("%(name)s no longer exists.") % {"name": application.subject_name}}
            )
        payload = spec.clean(application, dict(application.payload))
        spec.act(application, payload)
        with transaction.atomic():
            _finish_approval(application, token, payload, by, (reason or "").strip())
    except BaseException as exc:
        _give_back(application, token, exc, by)
        raise
    return application


def _finish_approval(application: Application, token: str, payload: dict, by, reason: str) -> None:
    locked = Application.objects.select_for_update().get(pk=application.pk)
    if locked.claim_token != token or locked.state != ApplicationState.PENDING:
        raise InvalidTransition(_("The approval of application #%(id)s was taken over.") % {"id": application.pk})
    before = audit.snapshot(locked)
    KINDS[locked.kind].record(locked, payload, by)
    now = timezone.now()
    locked.payload = payload
    locked.state = ApplicationState.APPROVED
    locked.decided_by = by
    locked.decided_at = now
    locked.decision_reason = reason
    locked.last_error = ""
    locked.claim_token = ""
    locked.claimed_at = None
    locked.save()
    audit.record(by, "application.approved", locked, before=before, after=audit.snapshot(locked), note=reason)
    _notify_applicant(locked, format_lazy(_("Approved: {subject}"), subject=_subject(locked)), reason)
    application.refresh_from_db()


def _close(application: Application, state: str, *, by, reason: str, action: str) -> Application:
    """Reject or cancel: one conditional UPDATE, so it cannot overtake an approval under way."""
    with transaction.atomic():
        before = audit.snapshot(application)
        now = timezone.now()
        closed = Application.objects.filter(_unclaimed(now), pk=application.pk, state=ApplicationState.PENDING).update(
            state=state, decided_by=by, decided_at=now, decision_reason=reason, updated_at=now
        )
        application.refresh_from_db()
        if not closed:
            raise InvalidTransition(_why_not_pending(application))
        audit.record(by, action, application, before=before, after=audit.snapshot(application), note=reason)
    return application


def reject(application: Application, *, by, reason: str) -> Application:
    """Reject with a reason (ValidationError on ``reason`` without one); the applicant is notified."""
    _check_open(application)
    if not access.can_decide(by, application):
        raise PermissionDenied
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": _("Say why the application is rejected.")})
    with transaction.atomic():
        _close(application, ApplicationState.REJECTED, by=by, reason=reason, action="application.rejected")
        _notify_applicant(application, format_lazy(_("Rejected: {subject}"), subject=_subject(application)), reason)
    return application


def cancel(application: Application, *, by) -> Application:
    """The applicant withdraws a pending application; anyone else, a portal admin included, is refused
    (PermissionDenied) and rejects it instead, saying why."""
    _check_open(application)
    if not access.can_cancel(by, application):
        raise PermissionDenied
    return _close(application, ApplicationState.CANCELLED, by=by, reason="", action="application.cancelled")
