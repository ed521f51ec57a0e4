"""Fixtures shared by the sandbox tests."""

import pytest

from monitor.sandbox.namesrv import NameServer


@pytest.fixture
def ns():
    """A sandbox name server on a free port."""
    server = NameServer().start()
    yield server
    server.stop()
