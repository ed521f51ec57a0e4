"""Users, teams and roles.

Roles: a *member* of a team applies for and looks after the team's topics and groups; a *team admin* also manages
the team's membership and may apply for deletions; a *portal admin* (Django's ``is_staff``) runs the clusters,
approves applications and sees everything. Users are Django's own; the profile holds what the portal adds.
"""

import zoneinfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _


class Team(models.Model):
    name = models.CharField(_("name"), max_length=64, unique=True)
    description = models.TextField(_("description"), blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("team")
        verbose_name_plural = _("teams")

    def __str__(self) -> str:
        return self.name


class TeamRole(models.TextChoices):
    MEMBER = "member", _("member")
    ADMIN = "admin", _("team admin")


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(_("role"), max_length=16, choices=TeamRole.choices, default=TeamRole.MEMBER)
    joined_at = models.DateTimeField(_("joined at"), auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


def validate_time_zone(value: str) -> None:
    if value not in zoneinfo.available_timezones():
        raise ValidationError(_("%(value)s is not a known time zone."), code="time_zone", params={"value": value})


class UserProfile(models.Model):
    """What each user picks for themselves: the interface language and the time zone times are shown in (times are
    stored in UTC)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    language = models.CharField(_("language"), max_length=16, choices=settings.LANGUAGES, default="en")
    time_zone = models.CharField(_("time zone"), max_length=64, default="UTC", validators=[validate_time_zone])

    class Meta:
        verbose_name = _("user profile")
        verbose_name_plural = _("user profiles")

    def __str__(self) -> str:
        return f"profile of {self.user}"


# Who a user is to the gate (portal/access.py) and to the models' querysets, which share these two answers.


def is_portal_admin(user) -> bool:
    return bool(user and user.is_authenticated and user.is_active and user.is_staff)


def team_ids(user, *, admin_only: bool = False) -> frozenset[int]:
    """Ids of the teams the user belongs to (or administers), cached on the user object for the request."""
    if not (user and user.is_authenticated and user.is_active):
        return frozenset()
    cache_attr = "_portal_admin_team_ids" if admin_only else "_portal_team_ids"
    cached = getattr(user, cache_attr, None)
    if cached is None:
        memberships = user.memberships.all()
        if admin_only:
            memberships = memberships.filter(role=TeamRole.ADMIN)
        cached = frozenset(memberships.values_list("team_id", flat=True))
        setattr(user, cache_attr, cached)
    return cached
