"""Suite-wide fixtures."""

import pytest
from django.core.cache import caches


@pytest.fixture(autouse=True)
def fresh_api_throttles():
    """The API's throttles count in a cache that outlives a test; each test starts with none of its requests
    counted, as tests that exercise a throttle expect."""
    caches["throttle"].clear()
    yield
