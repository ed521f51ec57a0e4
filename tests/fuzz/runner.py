"""Runs a strategy of hostile requests against one target (an endpoint, as one actor) and checks each answer with
the oracles. Every example runs in its own rolled-back transaction from the same world, as the same logged-in
client (its cookies restored, so a logout or a language switch in one example does not leak into the next), with
the cache cleared (throttles and lockouts count nothing across examples).

Budgets: ``make test`` runs the bounded profile (:data:`BOUNDED_EXAMPLES` per target, derandomized so a run is
repeatable); ``make fuzz`` sets ``HYPOTHESIS_PROFILE=fuzz`` for :data:`FUZZ_EXAMPLES` per target, random, with
failing examples kept in var/hypothesis to be replayed first next time."""

import copy
import os
from collections import Counter, defaultdict
from pathlib import Path

from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from tests.fuzz import oracles
from tests.fuzz.strategies import FuzzRequest

FUZZING = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
BOUNDED_EXAMPLES = int(os.environ.get("FUZZ_BOUNDED_EXAMPLES", "20"))
FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))
REPORT_FILE = Path(django_settings.VAR_DIR) / "fuzz" / "cases.txt"

CASES: Counter = Counter()
ANSWERS: dict[str, Counter] = defaultdict(Counter)


def examples(scale: float = 1.0) -> int:
    """Examples per target; ``scale`` < 1 for the endpoints whose every answer is expensive (the API schema)."""
    return max(3, round((FUZZ_EXAMPLES if FUZZING else BOUNDED_EXAMPLES) * scale))


def hypothesis_settings(count: int) -> settings:
    return settings(
        max_examples=count,
        deadline=None,
        derandomize=not FUZZING,
        database=DirectoryBasedExampleDatabase(str(Path(django_settings.VAR_DIR) / "hypothesis")) if FUZZING else None,
        suppress_health_check=list(HealthCheck),
        print_blob=FUZZING,
    )


def send(client, request: FuzzRequest):
    return client.generic(
        request.method,
        request.url,
        request.body or b"",
        request.content_type or "application/octet-stream",
        **request.headers,
    )


def fuzz(target: str, client, strategy, baseline: oracles.Baseline, count: int) -> None:
    """Send ``count`` examples of ``strategy`` with ``client``; fails on the first answer the oracles refuse."""
    cookies = copy.deepcopy(client.cookies)

    @hypothesis_settings(count)
    @given(request=strategy)
    def one(request: FuzzRequest):
        CASES[target] += 1
        with transaction.atomic():
            client.cookies = copy.deepcopy(cookies)
            cache.clear()
            with oracles.logged_errors() as errors:
                response = send(client, request)
            found = oracles.problems(request.method, response, errors, baseline)
            transaction.set_rollback(True)
        ANSWERS[target][f"{response.status_code // 100}xx"] += 1
        assert not found, "\n".join(found)

    one()


def report() -> str:
    width = max(len(target) for target in CASES)
    lines = [
        f"{target:<{width}}  {CASES[target]:>6}  " + " ".join(f"{k}={v}" for k, v in sorted(ANSWERS[target].items()))
        for target in sorted(CASES)
    ]
    lines.append(f"{'total':<{width}}  {sum(CASES.values()):>6}  ({len(CASES)} targets)")
    return "\n".join(lines) + "\n"
