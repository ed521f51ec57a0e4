"""What a locked-out login gets (django-axes' AXES_LOCKOUT_CALLABLE): 429 with Retry-After, and a message saying
what happened and when to try again; the login page shown again, or JSON for the API's token endpoint."""

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _


def locked_out(request, original_response=None, credentials=None):
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    message = _(
        "Too many failed logins. Logging in as this user from your address is blocked for %(minutes)s minutes; "
        "every further try starts the wait again."
    ) % {"minutes": seconds // 60}
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=429)
    else:
        # An unbound form: validating the posted one would try to authenticate again.
        form = AuthenticationForm(request, initial={"username": request.POST.get("username", "")})
        context = {"form": form, "locked_out": message, "next": request.POST.get("next", "")}
        response = render(request, "portal/login.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
