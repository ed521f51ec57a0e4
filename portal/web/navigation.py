"""Where a page that acted sends the user next."""

from django.http import HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def redirect_back(request, fallback: str):
    """To where the request came from (its ``next`` field or parameter, e.g. a filtered list page), if that is on
    this site; else to ``fallback`` (a URL or a URL name)."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        # ``next`` is a URL, never a URL name: redirect() would try to reverse "1" or "dashboard" (and fail with a 500)
        return HttpResponseRedirect(target)
    return redirect(fallback)
