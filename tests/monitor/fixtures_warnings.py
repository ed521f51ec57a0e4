"""Fixtures of the warning delivery tests, used as a plugin (``pytest_plugins = ["tests.monitor.fixtures_warnings"]``):
a real SMTP server and a real HTTP server on 127.0.0.1 per test module (:mod:`tests.portal.warning_servers`), Django's
e-mail sent through the former, and ``audience``: the people of :mod:`tests.monitor.warning_audience`, whose
channels lead to those servers."""

import pytest

from tests.monitor.warning_audience import Audience, make_audience
from tests.portal.warning_servers import LOCAL_RECEIVERS, SmtpServer, WebhookServer


@pytest.fixture(scope="module")
def warning_smtp():
    with SmtpServer() as server:
        yield server


@pytest.fixture(scope="module")
def warning_hooks():
    with WebhookServer() as server:
        yield server


@pytest.fixture
def audience(db, settings, warning_smtp, warning_hooks) -> Audience:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", warning_smtp.port
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    return make_audience(warning_smtp, warning_hooks)
