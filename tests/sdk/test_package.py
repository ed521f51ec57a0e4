"""The SDK and the histogram run in business applications and Spark workers: importing them pulls in no Django and
nothing of the portal."""

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
CHECK = """
import sys
import monitor.sdk, stats.histogram
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"django", "portal", "rest_framework", "celery"})
loaded += sorted(m for m in sys.modules if m.startswith(("stats.", "monitor.")) and not m.startswith(
    ("monitor.sdk", "monitor.remoting", "stats.histogram", "monitor.trace.records")) and m != "monitor.trace")
print(",".join(loaded))
"""


def test_importing_the_sdk_loads_no_django_and_nothing_of_the_portal():
    result = subprocess.run(
        [sys.executable, "-c", CHECK],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        env={"PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert result.stdout.strip() == ""
