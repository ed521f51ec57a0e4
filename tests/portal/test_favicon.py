"""The portal's icon: every page links it, and /favicon.ico (which browsers ask for on pages that link none, such
as the browsable API) leads to it, so no page leaves a 404 in the browser's console."""

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.test import RequestFactory
from django.urls import reverse
from django.views.defaults import server_error

from tests.portal.browser import browser  # noqa: F401  (the module's Chromium)

ICO_MAGIC = b"\0\0\1\0"  # ICONDIR: reserved 0, type 1 (icon)


def test_the_icons_are_static_files():
    with open(finders.find("favicon.ico"), "rb") as ico:
        assert ico.read(4) == ICO_MAGIC
    with open(finders.find("favicon.svg"), encoding="utf-8") as svg:
        assert svg.read().startswith("<svg")


def test_favicon_ico_leads_to_the_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == static("favicon.ico")
    assert "max-age=86400" in response["Cache-Control"]


@pytest.mark.django_db
def test_pages_link_the_icon(client, member):
    links = (f'<link rel="icon" href="{static("favicon.ico")}"', f'<link rel="icon" href="{static("favicon.svg")}"')
    for page in (client.get(reverse("login")), client.get(reverse("topic-list"))):
        assert page.status_code == 200
        assert all(link in page.content.decode() for link in links)
    error_page = server_error(RequestFactory().get("/")).content.decode()
    assert all(link in error_page for link in links)


@pytest.mark.django_db
def test_no_page_leaves_a_failed_request_in_the_browser(browser, live_server):  # noqa: F811
    """A real Chromium loads a portal page and the browsable API; every request it makes, icons included,
    succeeds and nothing is logged as an error."""
    context = browser.new_context()
    failed, errors = [], []
    try:
        tab = context.new_page()
        tab.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        for path in (reverse("topic-list"), reverse("api:topic-list"), "/favicon.ico"):
            tab.goto(live_server.url + path)
            tab.wait_for_load_state("networkidle")
    finally:
        context.close()
    assert (failed, errors) == ([], [])
