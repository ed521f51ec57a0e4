"""Spark for the sparkjobs tests: one local session shared by the whole test session (started on first use, about
5 s), a lake per test under its tmp_path. The standalone-cluster test replaces the session with one on its cluster
and stops it; the next test to ask gets a local one again."""

import pytest

from sparkjobs.config import SparkConfig
from sparkjobs.session import spark_session
from tests.support.spark import LOCAL_MASTER, QUICK_JVM


@pytest.fixture(scope="session", autouse=True)
def _stop_spark_at_the_end():
    yield
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture
def config(tmp_path) -> SparkConfig:
    return SparkConfig(master=LOCAL_MASTER, lake_url=str(tmp_path / "lake"), java_options=QUICK_JVM)


@pytest.fixture
def spark(config):
    return spark_session(config)
