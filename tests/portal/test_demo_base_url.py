"""Issue 16, point 4: the demo on another port than 8000 sent warning notifications linking to
http://127.0.0.1:8000/. The processes it starts (the Celery worker writes the notifications) get PORTAL_BASE_URL
from the demo's own port, whatever the shell had."""

import subprocess
import sys

from django.contrib.auth import get_user_model

from portal.management.commands.demo import child_environment
from portal.services.warnings import messages

PORT = 8765
PRINT_BASE_URL = "import django; django.setup(); from django.conf import settings; print(settings.PORTAL_BASE_URL)"


def base_url_of_a_child(env: dict[str, str]) -> str:
    """PORTAL_BASE_URL as the portal's settings read it in a process started with ``env``."""
    done = subprocess.run(
        [sys.executable, "-c", PRINT_BASE_URL], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_notifications_from_the_demos_processes_link_to_the_port_it_serves(db, settings, monkeypatch):
    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "portal.settings")
    monkeypatch.setenv("PORTAL_BASE_URL", "http://127.0.0.1:8000")  # a shell's leftover: not where the demo runs

    settings.PORTAL_BASE_URL = base_url_of_a_child(child_environment(PORT, "redis://127.0.0.1:6390/0"))

    user = get_user_model().objects.create_user("ops")
    assert messages.test_message(user).link == f"http://127.0.0.1:{PORT}/"
