"""Users and names for the tests."""

from __future__ import annotations

import itertools
import os

from django.contrib.auth import get_user_model

PASSWORD = "correct-horse-battery"
_names = itertools.count()


def make_user(username: str, *, staff: bool = False, **fields):
    """A user who can sign in with :data:`PASSWORD`; ``staff`` makes a portal admin."""
    return get_user_model().objects.create_user(username=username, password=PASSWORD, is_staff=staff, **fields)


def unique(prefix: str) -> str:
    """A name no other test of this run, nor of a run in parallel, uses (for topics and groups on a shared
    cluster, which outlive a test)."""
    return f"{prefix}{os.getpid()}_{next(_names)}"
