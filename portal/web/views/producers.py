"""What the producer-group page adds about the group's producers: their reported sends (latency, exceptions,
clients; :func:`portal.web.monitoring.producer_group_monitoring`), and the tokens they report with, which the owning
team issues and revokes here (:mod:`portal.web.views.client_tokens`)."""

from django.contrib.auth.decorators import login_required
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from portal.models import ProducerGroup
from portal.services import producer_tokens
from portal.web import monitoring
from portal.web.views import client_tokens

TOKEN_PAGES = client_tokens.TokenPages(
    producer_tokens.KIND, ProducerGroup, "producer-group-detail", "producer-tokens", "Producer"
)


def group_page_context(request, group) -> dict:
    """The producer-group page's charts, clients and exceptions, and (for those who manage them) its tokens."""
    window = monitoring.requested_window(request)
    producers = monitoring.producer_group_monitoring(
        group, window, client=request.GET.get("client", ""), broker=request.GET.get("broker", "")
    )
    return {
        "window": window,
        "charts": producers.charts,
        "producers": producers,
        **client_tokens.tokens_context(request.user, group),
    }


@never_cache  # the answer holds the full token
@login_required
@require_POST
def producer_token_issue(request, pk):
    return client_tokens.issue(request, TOKEN_PAGES, pk)


@login_required
@require_POST
def producer_token_revoke(request, pk, token_pk):
    return client_tokens.revoke(request, TOKEN_PAGES, pk, token_pk)
