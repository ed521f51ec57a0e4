"""The one way the tests wait: poll a condition until it holds, with a deadline; nothing sleeps a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T],
    timeout: float = 30.0,
    what: str = "condition",
    *,
    state: Callable[[], object] | None = None,
    interval: float = 0.05,
) -> T:
    """Poll ``condition`` every ``interval`` seconds until it returns something true, and return that.

    ``timeout`` guards against hanging; it is not a measure, except where a test passes the bound it asserts. On
    timeout the failure names ``what`` and, if ``state`` is given, what it last returned (the figure the test was
    waiting on, so that a failure says how far it got)."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            last = f" (last: {state()})" if state is not None else ""
            raise AssertionError(f"{what} not reached in {timeout:g} s{last}")
        time.sleep(interval)
