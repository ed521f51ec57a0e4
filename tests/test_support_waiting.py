"""tests.support.waiting.wait_for, the one wait of the suite: it returns what the condition returned once true, and
on timeout fails naming what it waited for and, if asked, the last state seen."""

import itertools
import time

import pytest

from tests.support.waiting import wait_for


def test_returns_the_first_true_value_of_the_condition():
    answers = iter([None, 0, [], {"sent": 3}])
    assert wait_for(lambda: next(answers), timeout=5, interval=0.001) == {"sent": 3}


def test_a_condition_true_at_once_is_not_waited_for():
    started = time.monotonic()
    wait_for(lambda: True, timeout=5, interval=10)
    assert time.monotonic() - started < 1


def test_a_timeout_fails_naming_what_and_the_last_state():
    polls = itertools.count(1)
    with pytest.raises(AssertionError, match=r"^the consumer caught up not reached in 0\.2 s \(last: lag 7\)$"):
        wait_for(lambda: next(polls) < 0, 0.2, "the consumer caught up", state=lambda: "lag 7", interval=0.01)
    assert next(polls) > 2  # it polled until the deadline, not once


def test_without_state_the_failure_names_only_what():
    with pytest.raises(AssertionError, match=r"^condition not reached in 0\.05 s$"):
        wait_for(lambda: False, timeout=0.05, interval=0.01)
