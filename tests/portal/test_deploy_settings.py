"""Production settings come from environment variables (README, "Security settings"): PORTAL_HTTPS=1 makes the
session and CSRF cookies Secure, redirects HTTP to HTTPS and sends HSTS; PORTAL_PROXY_SSL_HEADER trusts a TLS proxy's
header; a Content-Security-Policy is sent unless PORTAL_CSP says otherwise. With them on, ``manage.py check
--deploy`` finds nothing to say about security. Settings are read once per process, so each case starts one."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

DEPLOYED = {
    "PORTAL_HTTPS": "1",
    "PORTAL_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "DJANGO_DEBUG": "0",
    "DJANGO_ALLOWED_HOSTS": "mqcloud.example.com",
}
SHOWN = [
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SECURE_PROXY_SSL_HEADER",
]


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PORTAL_", "DJANGO_"))}
    environment.update(env, DJANGO_SETTINGS_MODULE="portal.settings", MQCLOUD_VAR_DIR=str(settings.VAR_DIR))
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_under(env: dict[str, str]) -> dict:
    script = (
        "import json; from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {SHOWN!r}}}))"
    )
    done = manage("shell", "-c", script, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def security_findings(env: dict[str, str]) -> list[str]:
    done = manage("check", "--deploy", env=env)
    assert done.returncode == 0, done.stderr  # the checks ran (a crash would find nothing)
    ours = ("?: (security.", "?: (axes.", "?: (csp.")
    return [line for line in (done.stdout + done.stderr).splitlines() if line.startswith(ours)]


def test_check_deploy_has_nothing_to_say_about_security_with_the_production_variables():
    assert security_findings(DEPLOYED) == []


def test_check_deploy_warns_without_them():
    """The check the test above relies on does look: a development start is not a deployment."""
    ids = " ".join(security_findings({}))
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in ids


def test_portal_https_switches_on_secure_cookies_the_redirect_and_hsts():
    assert settings_under(DEPLOYED) == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }


def test_hsts_can_be_tuned_separately():
    tuned = settings_under({**DEPLOYED, "PORTAL_HSTS_SECONDS": "3600", "PORTAL_HSTS_PRELOAD": "0"})
    assert (tuned["SECURE_HSTS_SECONDS"], tuned["SECURE_HSTS_PRELOAD"]) == (3600, False)


@pytest.mark.parametrize("name,value", [("PORTAL_CSP", "sometimes"), ("API_THROTTLE_USER_RATE", "many")])
def test_a_wrong_value_stops_the_start_naming_the_variable(name, value):
    done = manage("check", env={name: value})
    assert done.returncode != 0
    assert name in done.stderr


def test_pages_send_a_content_security_policy_that_allows_only_this_site(client, db):
    policy = client.get(reverse("login"))["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'", "no inline scripts, no eval"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"


def test_no_template_has_a_script_the_policy_would_block():
    """Inline scripts and event-handler attributes would be refused by ``script-src 'self'``: scripts go in static
    files, data for them in ``<script type="application/json">`` (which is not run)."""
    inline_script = re.compile(r"<script(?![^>]*\b(?:src=|type=\"application/json\"))[^>]*>", re.IGNORECASE)
    handler = re.compile(r"\son[a-z]+\s*=|javascript:", re.IGNORECASE)
    found = []
    for template in (Path(settings.BASE_DIR) / "templates").rglob("*.html"):
        text = template.read_text()
        found += [f"{template.name}: {match.group(0)}" for match in inline_script.finditer(text)]
        found += [f"{template.name}: {match.group(0)}" for match in handler.finditer(text)]
    assert found == []
