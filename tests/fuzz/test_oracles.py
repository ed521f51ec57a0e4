"""The fuzz suite's oracles catch what they are there for: a server error, an error or traceback in the logs, and a
row written by a request that was refused - and let Django's own notes of a refusal pass."""

import logging
from types import SimpleNamespace

from portal.models import Team
from tests.fuzz import oracles


def answer(status: int):
    return SimpleNamespace(status_code=status)


def test_a_server_error_is_a_problem(db):
    baseline = oracles.Baseline.now()
    assert oracles.problems("GET", answer(500), [], baseline) == ["status 500"]
    assert oracles.problems("GET", answer(404), [], baseline) == []


def test_an_error_record_is_a_problem_but_djangos_note_of_a_refusal_is_not(db):
    baseline = oracles.Baseline.now()
    with oracles.logged_errors() as errors:
        logging.getLogger("django.request").warning("Forbidden (Permission denied): /x/", exc_info=(None, None, None))
        logging.getLogger("portal.tasks").error("delivery failed")
    found = oracles.problems("GET", answer(403), errors, baseline)
    assert len(found) == 1 and found[0].startswith("portal.tasks ERROR: delivery failed")


def test_a_refused_write_that_left_a_row_behind_is_a_problem(db):
    baseline = oracles.Baseline.now()
    Team.objects.create(name="half-written")
    assert oracles.problems("POST", answer(400), [], baseline) == [
        "a refused request (400) changed rows: {'portal.Team': '0 -> 1 rows'}"
    ]
    assert oracles.problems("GET", answer(400), [], baseline) == [
        "a refused request (400) changed rows: {'portal.Team': '0 -> 1 rows'}"
    ]
    assert oracles.problems("POST", answer(201), [], baseline) == []


def test_a_refused_write_that_changed_a_row_in_place_is_a_problem(db):
    team = Team.objects.create(name="payments")
    baseline = oracles.Baseline.now()
    Team.objects.filter(pk=team.pk).update(description="changed")
    assert "portal.Team" in oracles.problems("PATCH", answer(400), [], baseline)[0]
