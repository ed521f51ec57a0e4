"""The browsable API: every GET endpoint, found from the URL resolver, renders as HTML for a browser.

A browser asks for ``text/html``, and DRF then renders its browsable API, which reads more of a view than the JSON
renderer does (its queryset for the filter form, its serializer for the forms); a view that only works for JSON
answers a browser with 500. Each endpoint is asked with the arguments of its row in the authorization matrix.
"""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from tests.portal.test_authz_api import CASES, api_endpoints, world  # noqa: F401  (world: the matrix's fixture)

GET_CASES = {case.url_name: case for case in CASES if case.method == "GET"}
BROWSER_ACTORS = ("anonymous", "member", "portal_admin")


def test_every_get_endpoint_has_arguments_in_the_matrix():
    assert {name for name, method in api_endpoints() if method == "GET"} == set(GET_CASES)


@pytest.mark.parametrize("actor", BROWSER_ACTORS)
@pytest.mark.parametrize("url_name", sorted(GET_CASES))
def test_every_api_endpoint_renders_in_the_browser(request, world, url_name, actor):  # noqa: F811
    case = GET_CASES[url_name]
    client = APIClient()
    if actor != "anonymous":
        client.force_login(request.getfixturevalue(actor))
    response = client.get(reverse(url_name, kwargs=case.kwargs(world)), case.data(world), HTTP_ACCEPT="text/html")
    assert response.status_code < 500, response.content[:2000]
    if response.status_code == 200 and url_name != "api:schema":
        assert response["Content-Type"].startswith("text/html")
