"""The portal's test world as fixtures: the five actors of the authorization matrix, a registered cluster backed by
a real sandbox cluster, and a topic. A package's ``conftest.py`` imports the fixtures it offers its tests."""

import pytest

from monitor.sandbox.cluster import SandboxCluster
from portal.models import Cluster, Membership, NameServer, Team, TeamRole, Topic
from tests.support.factories import make_user


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Logins in tests need no protection against brute force; Django's default hasher costs ~0.3 s a login."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def team(db):
    return Team.objects.create(name="payments")


@pytest.fixture
def other_team(db):
    return Team.objects.create(name="logistics")


@pytest.fixture
def member(team):
    user = make_user("mia")
    Membership.objects.create(team=team, user=user, role=TeamRole.MEMBER)
    return user


@pytest.fixture
def team_admin(team):
    user = make_user("tom")
    Membership.objects.create(team=team, user=user, role=TeamRole.ADMIN)
    return user


@pytest.fixture
def outsider(other_team):
    user = make_user("olga")
    Membership.objects.create(team=other_team, user=user, role=TeamRole.MEMBER)
    return user


@pytest.fixture
def portal_admin(db):
    return make_user("ada", staff=True)


@pytest.fixture(scope="session")
def sandbox():
    """One real sandbox cluster (two broker names, master+slave each) for the session; tests use distinct names."""
    with SandboxCluster(brokers=2, slaves=True) as cluster:
        yield cluster


@pytest.fixture
def cluster(db, sandbox):
    """The sandbox registered in the portal (name servers only; brokers are discovered by the services)."""
    registered = Cluster.objects.create(name="sandbox")
    NameServer.objects.create(cluster=registered, address=sandbox.namesrv_addr)
    return registered


@pytest.fixture
def topic(cluster, team):
    return Topic.objects.create(cluster=cluster, team=team, name="PAY_ORDER_CREATED", queue_nums=8)
