"""The OpenAPI schema generates and validates without a single warning, and the interactive docs are served offline:
every asset they load is one of our static files, and nothing on the page points at another host."""

import re

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient


def test_the_schema_generates_and_validates_without_warnings(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    assert "/api/v1/applications/{id}/approve/:" in target.read_text()


def test_the_schema_is_served_and_describes_the_api(db):
    response = APIClient().get(reverse("api:schema"), {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in ("/api/v1/topics/", "/api/v1/applications/", "/api/v1/auth/token/", "/api/v1/audit-log/"):
        assert path in paths
    cluster_fields = schema["components"]["schemas"]["Cluster"]["properties"]
    assert "acl_enabled" in cluster_fields
    assert not {"acl_access_key", "acl_secret_key"} & set(cluster_fields)
    assert set(schema["components"]["securitySchemes"]) == {
        "tokenAuth",
        "cookieAuth",
        "producerTokenAuth",
        "consumerTokenAuth",
    }


@pytest.mark.parametrize("page", ["api:docs", "api:redoc"])
def test_the_interactive_docs_load_only_local_static_assets(db, page):
    response = APIClient().get(reverse(page))
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"https?://", html), "the docs page must not point at another host"
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(asset.endswith(".js") for asset in assets)
    for asset in assets:
        if asset.startswith(reverse(page) + "?"):
            continue  # the page's own script (Swagger UI's settings, kept out of the page for the CSP)
        assert asset.startswith("/static/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not among the static files"


def test_swagger_ui_shows_no_online_validator_badge(db):
    """Swagger UI would otherwise load a badge image from validator.swagger.io, sending it the schema's URL."""
    script = APIClient().get(reverse("api:docs") + "?script").content.decode()
    assert '"validatorUrl": null' in script


@pytest.mark.parametrize("page", ["api:docs", "api:redoc"])
def test_the_interactive_docs_answer_options_with_405_not_a_server_error(db, page):
    client = APIClient(raise_request_exception=False)
    response = client.options(reverse(page))
    assert response.status_code == 405
