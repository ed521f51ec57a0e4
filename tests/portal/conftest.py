"""Fixtures of the portal tests: the portal's test world (:mod:`tests.support.portal_world`: the five actors of the
authorization matrix, a registered cluster backed by a real sandbox cluster, a topic) and the one Chromium browser
of the page tests."""

from tests.portal.browser import browser  # noqa: F401
from tests.support.portal_world import (  # noqa: F401
    cluster,
    fast_password_hashing,
    member,
    other_team,
    outsider,
    portal_admin,
    sandbox,
    team,
    team_admin,
    topic,
)
