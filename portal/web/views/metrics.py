"""``GET /metrics`` for Prometheus: who may scrape is :mod:`portal.services.metrics.access`'s call, what it gets is
:mod:`portal.services.metrics.exposition`'s."""

from django.http import HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from portal.services.metrics.access import Verdict, judge
from portal.services.metrics.exposition import scrape as render


@never_cache
@require_GET
def scrape(request):
    verdict = judge(request.headers.get("Authorization", ""), request.META.get("REMOTE_ADDR", ""))
    if verdict is Verdict.NO_CREDENTIALS:
        response = HttpResponse(_("A metrics scrape token is required."), status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if verdict is Verdict.REFUSED:
        return HttpResponse(_("This metrics scrape token is not valid."), status=403, content_type="text/plain")
    result = render(request.headers.get("Accept", ""), request.headers.get("Accept-Encoding", ""))
    response = HttpResponse(result.body, content_type=result.content_type)
    if result.content_encoding:
        response["Content-Encoding"] = result.content_encoding
    response["Vary"] = "Accept, Accept-Encoding, Authorization"
    return response
