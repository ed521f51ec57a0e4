"""The secrets the portal generates for itself on a fresh install (the encryption key of stored secrets in
portal/models/crypto.py, the session-signing key in portal/env.py) are created exactly once, even when the web server,
the Celery worker and beat start at the same moment: every process ends up with the same key, none fails."""

import multiprocessing
import os
import stat

import pytest

from portal.env import ImproperEnvironment, read_or_create_secret, secret_key
from portal.models import crypto

STARTING_PROCESSES = 12


def _start_and_load_the_encryption_key(barrier, results) -> None:
    barrier.wait()
    try:
        results.put(("key", crypto._load_keys()[0].decode()))
    except Exception as error:  # reported to the test, which names it
        results.put(("error", repr(error)))


def _race(target, *args) -> list[tuple[str, str]]:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(STARTING_PROCESSES)
    results = context.Queue()
    processes = [context.Process(target=target, args=(barrier, results, *args)) for _ in range(STARTING_PROCESSES)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    return outcomes


@pytest.fixture
def fresh_var_dir(settings, tmp_path, monkeypatch):
    monkeypatch.delenv("FIELD_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_processes_starting_together_create_one_encryption_key(fresh_var_dir):
    for attempt in range(5):  # a race: run it a few times over
        (fresh_var_dir / "field_encryption_key").unlink(missing_ok=True)
        outcomes = _race(_start_and_load_the_encryption_key)
        assert [kind for kind, _ in outcomes] == ["key"] * STARTING_PROCESSES, outcomes
        keys = {key for _, key in outcomes}
        assert keys == {(fresh_var_dir / "field_encryption_key").read_text()}, f"attempt {attempt}: {keys}"
    assert sorted(os.listdir(fresh_var_dir)) == ["field_encryption_key"], "no temporary files are left behind"


def test_the_generated_encryption_key_is_readable_by_its_owner_only_and_reused(fresh_var_dir):
    first = crypto._load_keys()
    path = fresh_var_dir / "field_encryption_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert crypto._load_keys() == first


def _start_and_load_the_secret_key(barrier, results, var_dir) -> None:
    barrier.wait()
    try:
        results.put(("key", secret_key(var_dir)))
    except Exception as error:
        results.put(("error", repr(error)))


def test_processes_starting_together_create_one_session_signing_key(fresh_var_dir):
    outcomes = _race(_start_and_load_the_secret_key, fresh_var_dir)
    assert len({key for _, key in outcomes}) == 1, outcomes
    assert outcomes[0] == ("key", (fresh_var_dir / "secret_key").read_text())


def test_an_empty_secret_file_is_refused_by_name_not_replaced(tmp_path):
    """An empty file is what a crash of the old, non-atomic writer left: replacing it silently could give two
    processes two different keys, so the operator is told which file to delete."""
    (tmp_path / "field_encryption_key").write_text("")
    with pytest.raises(ImproperEnvironment, match="field_encryption_key is empty"):
        read_or_create_secret(tmp_path / "field_encryption_key", lambda: "new")
