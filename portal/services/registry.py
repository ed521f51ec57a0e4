"""Registry changes that are not applications: registering and editing clusters, adopting unowned entries,
descriptions, teams and their members, and the portal's users.

Each function checks the actor's right through ``portal.access`` (PermissionDenied), validates (ValidationError
keyed by field, nothing written), changes the rows in one transaction and writes the audit entry with the object
before and after. Topics and groups themselves only change through applications (``portal.services.applications``).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from monitor.remoting.client import split_addr
from monitor.remoting.errors import RemotingConnectError
from portal import access
from portal.models import Cluster, Membership, NameServer, Team, TeamRole
from portal.services import audit, cluster_ops

# What update_cluster may change; ``namesrv_addrs`` replaces the name-server list.
CLUSTER_FIELDS = frozenset({"name", "description", "acl_access_key", "acl_secret_key", "trace_topic", "namesrv_addrs"})


def _require(allowed: bool) -> None:
    if not allowed:
        raise PermissionDenied


# --- clusters ---------------------------------------------------------------------------------------------------


def _clean_addresses(namesrv_addrs) -> list[str]:
    """``host:port`` addresses, each once, in the order given."""
    if isinstance(namesrv_addrs, str):
        namesrv_addrs = namesrv_addrs.split(";")
    addresses = list(dict.fromkeys(str(addr).strip() for addr in namesrv_addrs or () if str(addr).strip()))
    if not addresses:
        raise ValidationError({"namesrv_addrs": _("Give at least one name-server address (host:port).")})
    bad = []
    for addr in addresses:
        try:
            split_addr(addr)
        except RemotingConnectError:
            bad.append(addr)
        else:
            if any(char.isspace() for char in addr):
                bad.append(addr)
    if bad:
        raise ValidationError(
            {"namesrv_addrs": _("Not a host:port address: %(addresses)s") % {"addresses": ", ".join(bad)}}
        )
    return addresses


def _clean_cluster(cluster: Cluster) -> None:
    """Model validation plus the ACL pair: an access key needs its secret, a secret needs its access key."""
    errors = {}
    try:
        cluster.full_clean()
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if cluster.acl_access_key and not cluster.acl_secret_key:
        errors.setdefault("acl_secret_key", []).append(_("An ACL access key needs its secret key."))
    if cluster.acl_secret_key and not cluster.acl_access_key:
        errors.setdefault("acl_access_key", []).append(_("An ACL secret key needs its access key."))
    if errors:
        raise ValidationError(errors)


def _set_name_servers_and_discover(cluster: Cluster, addresses: list[str]) -> None:
    """Replace the cluster's name servers and discover its brokers through them; called inside the transaction, so
    a cluster whose name servers do not answer (or whose brokers refuse the credentials) is not saved."""
    cluster.name_servers.all().delete()
    NameServer.objects.bulk_create([NameServer(cluster=cluster, address=addr) for addr in addresses])
    try:
        cluster_ops.discover_brokers(cluster)
    except cluster_ops.NameServerUnreachable as exc:
        raise ValidationError({"namesrv_addrs": str(exc)}) from exc
    except cluster_ops.ClusterOperationError as exc:
        raise ValidationError({NON_FIELD_ERRORS: str(exc)}) from exc


def register_cluster(
    *, name, namesrv_addrs, by, description="", acl_access_key="", acl_secret_key="", trace_topic=None
) -> Cluster:
    """Register a cluster: validate, check that its name servers answer, and discover its brokers. If no name server
    answers: ValidationError on ``namesrv_addrs`` and nothing is saved."""
    _require(access.can_administer(by))
    cluster = Cluster(
        name=(name or "").strip(),
        description=description,
        acl_access_key=acl_access_key.strip(),
        acl_secret_key=acl_secret_key,
    )
    if trace_topic:
        cluster.trace_topic = trace_topic
    errors = {}
    try:
        _clean_cluster(cluster)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    try:
        addresses = _clean_addresses(namesrv_addrs)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        cluster.save()
        _set_name_servers_and_discover(cluster, addresses)
        audit.record(by, "cluster.registered", cluster, after=_cluster_snapshot(cluster))
    return cluster


def _cluster_snapshot(cluster: Cluster) -> dict:
    return {**audit.snapshot(cluster), "namesrv_addrs": [ns.address for ns in cluster.name_servers.all()]}


def update_cluster(cluster: Cluster, *, by, **fields) -> Cluster:
    """Change a cluster's settings. Omitting ``acl_secret_key`` keeps the stored secret (it is never shown back, so
    forms leave it blank); clearing ``acl_access_key`` clears the secret too. New name servers or credentials are
    checked by discovering the brokers again (ValidationError, nothing saved, if that fails)."""
    _require(access.can_administer(by))
    unknown = set(fields) - CLUSTER_FIELDS
    if unknown:
        raise TypeError(f"update_cluster() got unexpected fields: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().get(pk=cluster.pk)
        before = _cluster_snapshot(cluster)
        old_addresses = [ns.address for ns in cluster.name_servers.all()]
        old_credentials = (cluster.acl_access_key, cluster.acl_secret_key)
        addresses = old_addresses
        errors = {}
        if "namesrv_addrs" in fields:
            try:
                addresses = _clean_addresses(fields.pop("namesrv_addrs"))
            except ValidationError as exc:
                errors.update(exc.message_dict)
        for field, value in fields.items():
            setattr(cluster, field, value.strip() if field in ("name", "acl_access_key") else value)
        if not cluster.acl_access_key:
            cluster.acl_secret_key = ""
        try:
            _clean_cluster(cluster)
        except ValidationError as exc:
            errors.update(exc.message_dict)
        if errors:
            raise ValidationError(errors)
        cluster.save()
        if addresses != old_addresses or (cluster.acl_access_key, cluster.acl_secret_key) != old_credentials:
            _set_name_servers_and_discover(cluster, addresses)
        after = _cluster_snapshot(cluster)
        if after != before:
            audit.record(by, "cluster.updated", cluster, before=before, after=after)
    return cluster


# --- registry entries -------------------------------------------------------------------------------------------


def adopt(entry, *, team: Team, by):
    """A portal admin gives an unowned (imported) topic or group a team."""
    _require(access.can_administer(by))
    if team is None:
        raise ValidationError({"team": _("Choose the team that will own it.")})
    with transaction.atomic():
        entry = type(entry).objects.select_for_update().get(pk=entry.pk)
        if entry.team_id is not None:
            raise ValidationError(
                {"team": _("%(name)s is already owned by %(team)s.") % {"name": entry, "team": entry.team}}
            )
        before = audit.snapshot(entry)
        entry.team = team
        entry.save(update_fields=["team", "updated_at"])
        audit.record(by, f"{entry._meta.model_name}.adopted", entry, before=before, after=audit.snapshot(entry))
    return entry


def update_description(entry, description: str, *, by):
    """Edit the portal-only description of a topic or group (the owning team or a portal admin)."""
    _require(access.can_change(by, entry))
    with transaction.atomic():
        entry = type(entry).objects.select_for_update().get(pk=entry.pk)
        before = audit.snapshot(entry)
        entry.description = (description or "").strip()
        entry.save(update_fields=["description", "updated_at"])
        if entry.description != before["description"]:
            audit.record(
                by, f"{entry._meta.model_name}.description_changed", entry, before=before, after=audit.snapshot(entry)
            )
    return entry


# --- teams ------------------------------------------------------------------------------------------------------


def create_team(*, name, description="", by) -> Team:
    _require(access.can_administer(by))
    team = Team(name=(name or "").strip(), description=description)
    team.full_clean()
    with transaction.atomic():
        team.save()
        audit.record(by, "team.created", team, after=audit.snapshot(team))
    return team


def add_member(team: Team, user, role, *, by) -> Membership:
    """Add ``user`` to the team with ``role``, or change the role of a member."""
    _require(access.can_manage_team(by, team))
    if role not in TeamRole.values:
        raise ValidationError({"role": _("Choose member or team admin.")})
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
        if membership is None:
            membership = Membership.objects.create(team=team, user=user, role=role)
            audit.record(by, "membership.created", membership, after=audit.snapshot(membership))
        elif membership.role != role:
            before = audit.snapshot(membership)
            membership.role = role
            membership.save(update_fields=["role"])
            audit.record(by, "membership.changed", membership, before=before, after=audit.snapshot(membership))
    return membership


def remove_member(team: Team, user, *, by) -> None:
    _require(access.can_manage_team(by, team))
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
        if membership is None:
            raise ValidationError({"user": _("%(user)s is not a member of %(team)s.") % {"user": user, "team": team}})
        before = audit.snapshot(membership)
        audit.record(by, "membership.deleted", membership, before=before)
        membership.delete()


# --- users ------------------------------------------------------------------------------------------------------
# Portal admins create the portal's users and decide who else is one (``is_staff``). Snapshots mask the password
# hash (``audit.snapshot`` masks every ``password`` field).


def _validated_password(password, user) -> None:
    """Django's password validators (settings.AUTH_PASSWORD_VALIDATORS), their errors on ``password``."""
    if not password:
        raise ValidationError({"password": _("Give a password.")})
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise ValidationError({"password": exc.error_list}) from exc


def create_user(*, username, email="", password, is_portal_admin=False, by):
    """A new active user who can log in with ``password``; a portal admin too if ``is_portal_admin``. Usernames are
    unique whatever their case (as Django's own user creation form has it), so "Alice" cannot pose as "alice"."""
    _require(access.can_administer(by))
    user_model = get_user_model()
    user = user_model(
        username=user_model.normalize_username((username or "").strip()),
        email=user_model.objects.normalize_email((email or "").strip()),
        is_staff=bool(is_portal_admin),
    )
    errors = {}
    try:
        _validated_password(password, user)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    user.set_password(password)
    try:
        user.full_clean()
    except ValidationError as exc:
        for field, messages in exc.message_dict.items():
            errors.setdefault(field, []).extend(messages)
    if "username" not in errors and user_model.objects.filter(username__iexact=user.username).exists():
        errors["username"] = [_("A user with that username already exists.")]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        user.save()
        audit.record(by, "user.created", user, after=audit.snapshot(user))
    return user


def update_user(user, *, by, email=None, is_portal_admin=None, is_active=None):
    """Change a user's email, portal admin flag or active flag (``None`` keeps the current value). A deactivated user
    can no longer log in. Portal admins may not take away their own admin flag or deactivate themselves: that is how
    the portal always keeps an admin who can undo a change."""
    _require(access.can_administer(by))
    errors = {}
    if user.pk == by.pk and is_portal_admin is False:
        errors["is_portal_admin"] = [_("You cannot remove your own portal admin rights; ask another portal admin.")]
    if user.pk == by.pk and is_active is False:
        errors["is_active"] = [_("You cannot deactivate yourself; ask another portal admin.")]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        user = type(user).objects.select_for_update().get(pk=user.pk)
        before = audit.snapshot(user)
        if email is not None:
            user.email = type(user).objects.normalize_email(email.strip())
        if is_portal_admin is not None:
            user.is_staff = bool(is_portal_admin)
        if is_active is not None:
            user.is_active = bool(is_active)
        user.full_clean()
        user.save(update_fields=["email", "is_staff", "is_active"])
        after = audit.snapshot(user)
        if after != before:
            audit.record(by, "user.changed", user, before=before, after=after)
    return user


def set_password(user, password, *, by):
    """Give a user a new password (Django's validators apply). Their web sessions end, as Django ends every session
    whose password changed, and their API token is revoked (portal/services/api_tokens.py). The audit entry says
    that it changed, never what to."""
    _require(access.can_administer(by))
    with transaction.atomic():
        user = type(user).objects.select_for_update().get(pk=user.pk)
        _validated_password(password, user)
        user.set_password(password)
        user.save(update_fields=["password"])
        audit.record(by, "user.password_changed", user)
    return user
