"""The one headless Chromium for page tests: Debian's chromium driven by Playwright (never ``playwright install``),
and where screenshots go (``test-artifacts/``, kept by CI).

The fixture is module-scoped on purpose: Playwright's sync API keeps an asyncio loop running on the test thread
while it is open, and tests elsewhere that call ``asyncio.run`` must not meet it. Django refuses ORM calls from a
thread with a running loop unless DJANGO_ALLOW_ASYNC_UNSAFE is set, so it is set only while the browser is open."""

import os
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import sync_playwright

ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous
