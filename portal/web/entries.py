"""The three kinds of registry entry as they appear in page URLs (``<kind>/<pk>/...``), for the pages that treat
topics, consumer groups and producer groups alike (description editing, adoption), and how every page fetches one."""

from django.http import Http404
from django.shortcuts import get_object_or_404

from portal.models import ConsumerGroup, ProducerGroup, Topic

ENTRY_MODELS = {"topic": Topic, "consumer-group": ConsumerGroup, "producer-group": ProducerGroup}
DETAIL_URL_NAMES = {
    Topic: "topic-detail",
    ConsumerGroup: "consumer-group-detail",
    ProducerGroup: "producer-group-detail",
}


def entry_model(kind: str):
    """The model a URL's ``kind`` names; an unknown kind is a page that does not exist."""
    try:
        return ENTRY_MODELS[kind]
    except KeyError:
        raise Http404(kind) from None


def detail_url_name(entry) -> str:
    return DETAIL_URL_NAMES[type(entry)]


def visible_entry(model, user, pk):
    """The entry with its cluster and team, if the user may see it (``visible_to``); else 404."""
    return get_object_or_404(model.objects.visible_to(user).select_related("cluster", "team"), pk=pk)
