import shutil

from django.apps import AppConfig
from django.conf import settings
from django.core import checks


class SparkJobsConfig(AppConfig):
    name = "sparkjobs"
    verbose_name = "Spark jobs"

    def ready(self) -> None:
        checks.register(check_spark, "sparkjobs")


def check_spark(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """The Spark jobs need a valid master URL, and Java to start Spark's JVM."""
    from sparkjobs.config import check_master

    problems: list[checks.CheckMessage] = []
    try:
        check_master(settings.SPARK_MASTER)
    except ValueError as error:
        problems.append(
            checks.Error(str(error), hint="Set SPARK_MASTER to local[*] or spark://host:port.", id="sparkjobs.E001")
        )
    if shutil.which("java") is None:
        problems.append(
            checks.Warning(
                "java is not on the PATH: the Spark jobs cannot start.",
                hint="Install a Java 17 runtime (Debian: openjdk-17-jre-headless).",
                id="sparkjobs.W001",
            )
        )
    return problems
