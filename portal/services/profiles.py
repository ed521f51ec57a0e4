"""Each user's own settings: the interface language and the time zone times are shown in."""

from django.db import transaction

from portal.models import UserProfile


def profile_for(user) -> UserProfile:
    """The user's profile, created with the defaults the first time it is needed (users come from Django's auth,
    which knows nothing of profiles)."""
    profile, _created = UserProfile.objects.get_or_create(user=user)
    return profile


@transaction.atomic
def update_profile(user, *, language: str | None = None, time_zone: str | None = None) -> UserProfile:
    """Change the language and/or the time zone (``None`` keeps the current value); raises ValidationError keyed by
    field for unknown values, and then saves nothing."""
    profile = profile_for(user)
    changed = {name: value for name, value in (("language", language), ("time_zone", time_zone)) if value is not None}
    for name, value in changed.items():
        setattr(profile, name, value)
    profile.full_clean()
    if changed:
        profile.save(update_fields=list(changed))
    return profile
