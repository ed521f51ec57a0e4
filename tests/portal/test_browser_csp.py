"""The Content-Security-Policy (on by default, PORTAL_CSP) breaks no page: in headless Chromium the login form logs
in, the charts draw, and the API docs (Swagger UI, ReDoc) render, without a single policy violation reported."""

import pytest
from django.urls import reverse

from tests.portal.browser import browser  # noqa: F401 (the module's Chromium)
from tests.portal.test_browser_charts import logged_in, now, open_charts, world  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


@pytest.fixture
def violations():
    return []


def watch(tab, violations: list) -> None:
    """Chromium reports each blocked script, style, image or connection on the console ("Refused to ...")."""
    tab.on(
        "console",
        lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None,
    )
    tab.on("pageerror", lambda error: violations.append(str(error)))


def test_charts_draw_under_the_policy(browser, live_server, world, violations):  # noqa: F811
    with logged_in(browser, live_server, world["user"]) as tab:
        watch(tab, violations)
        plots = open_charts(tab, live_server.url + reverse("topic-detail", args=[world["topic"].pk]), "csp-topic")
        assert plots and plots[0], "the charts are drawn"
        tab.goto(live_server.url + reverse("cluster-detail", args=[world["cluster"].pk]))
        tab.wait_for_function("[...document.querySelectorAll('[data-chart]')].every(f => f.dataset.drawn === 'true')")
        assert tab.evaluate("document.querySelector('.chart-plot .main-svg') !== null")
    assert violations == []


@pytest.mark.parametrize(
    "page,ready",
    [("api:docs", "#swagger-ui .opblock"), ("api:redoc", "[role=search], .api-content")],
)
def test_the_api_docs_render_under_the_policy(browser, live_server, db, violations, page, ready):  # noqa: F811
    context = browser.new_context()
    try:
        tab = context.new_page()
        watch(tab, violations)
        response = tab.goto(live_server.url + reverse(page))
        assert "script-src 'self'" in response.headers["content-security-policy"]
        tab.wait_for_selector(ready, timeout=30_000)
    finally:
        context.close()
    # ReDoc's footer logo is an image on cdn.redoc.ly: the policy keeps the docs offline, as they are meant to be.
    assert [text for text in violations if "https://cdn.redoc.ly/" not in text] == []
