from django.http import HttpRequest, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """/favicon.ico: browsers ask for it on pages that link no icon (the browsable API, the API docs) and log a
    console error when it is missing; it is the icon in static/ that the pages link."""
    return HttpResponseRedirect(static("favicon.ico"))
