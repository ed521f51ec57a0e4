"""One page size, one way to cut a list page into pages, and one way to filter it first."""

from django.core.paginator import Page, Paginator

PAGE_SIZE = 50


def paginate(request, queryset) -> Page:
    """The page the ``page`` query parameter asks for (the last one if it is past the end, the first if garbage)."""
    return Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))


def filtered_page(request, filterset_class, queryset, **options) -> dict:
    """A filtered list's template context: ``filter`` (a ``portal.filters`` set, whose form the page shows above the
    list; ``options`` go to it) and ``page``, the requested page of what it lets through."""
    filterset = filterset_class(request.GET, queryset=queryset, request=request, **options)
    return {"filter": filterset, "page": paginate(request, filterset.qs)}
