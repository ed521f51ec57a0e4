"""One page size and one way to cut a list page into pages."""

from django.core.paginator import Page, Paginator

PAGE_SIZE = 50


def paginate(request, queryset) -> Page:
    """The page the ``page`` query parameter asks for (the last one if it is past the end, the first if garbage)."""
    return Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
