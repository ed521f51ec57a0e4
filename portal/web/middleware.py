"""Shows each signed-in user the portal in their own language and time zone (anonymous visitors keep what
LocaleMiddleware negotiated from the cookie or the browser, and UTC)."""

from django.utils import timezone, translation

from portal.services.profiles import profile_for


class UserPreferencesMiddleware:
    """Must come after AuthenticationMiddleware and LocaleMiddleware, whose language choice it overrides."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return self.get_response(request)
        profile = profile_for(user)
        # override/deactivate, not a bare activate: the thread serves other users (and, in tests, other code)
        # after this request, and must not keep this user's language or zone.
        with translation.override(profile.language):
            request.LANGUAGE_CODE = translation.get_language()
            timezone.activate(profile.time_zone)
            try:
                response = self.get_response(request)
            finally:
                timezone.deactivate()
        # LocaleMiddleware only sets the header when it is missing, and would name its own negotiated language.
        response.headers.setdefault("Content-Language", request.LANGUAGE_CODE)
        return response
