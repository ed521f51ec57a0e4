"""Every endpoint of the API and every page, as anonymous, a member of the owning team and a portal admin, answers
hostile requests - bodies of any shape and encoding, the project's own query parameters with hostile values, ids no
table holds - with a 2xx, 3xx or 4xx, logs no error or traceback, and when it refuses (4xx) changes no row.

The targets come from the URL resolver (``targets.endpoints``): a new endpoint is fuzzed without being listed here.
Approving an application acts on the sandbox cluster the portal tests use (what it creates there stays: each
example rolls back the database only)."""

import pytest

from tests.fuzz import runner, strategies
from tests.fuzz.targets import ACTORS, endpoints

# The schema and its two viewers build the whole OpenAPI document on every request: a few examples say as much.
EXPENSIVE = {"api:schema": 0.15, "api:docs": 0.15, "api:redoc": 0.15}


@pytest.mark.parametrize("actor", ACTORS)
@pytest.mark.parametrize("endpoint", endpoints(), ids=str)
def test_hostile_requests_get_no_server_error_and_refusals_change_nothing(world, endpoint, actor):
    strategy = strategies.requests(endpoint, ids=world.ids, slugs=world.slugs, pool=world.pool)
    count = runner.examples(EXPENSIVE.get(endpoint.name, 1.0))
    runner.fuzz(f"{endpoint.name} as {actor}", world.clients[actor], strategy, world.baseline, count)
