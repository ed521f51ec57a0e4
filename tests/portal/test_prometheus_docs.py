"""docs/prometheus checked with the real Prometheus tools (Debian's ``prometheus`` package, which ``make sysdeps``
installs): the scrape configuration and the alert rules load, and every alert has a unit test that passes."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from portal.models import WarningKind

DOCS = Path(__file__).resolve().parents[2] / "docs" / "prometheus"


def promtool(*args: str, cwd: Path = DOCS) -> str:
    path = shutil.which("promtool")
    assert path, "promtool is missing: `make sysdeps` installs Debian's prometheus package"
    done = subprocess.run([path, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_scrape_configuration_and_its_rules_load(tmp_path):
    copy = shutil.copytree(DOCS, tmp_path / "prometheus")
    (copy / "mqcloud-scrape-token").write_text("mqm_example\n")  # the credentials file the configuration names
    assert "SUCCESS" in promtool("check", "config", "prometheus.yml", cwd=copy)


def alerts() -> set[str]:
    rules = yaml.safe_load((DOCS / "rules" / "mqcloud-alerts.yml").read_text())
    return {rule["alert"] for group in rules["groups"] for rule in group["rules"]}


def test_the_alert_rules_are_valid():
    assert f"SUCCESS: {len(alerts())} rules found" in promtool("check", "rules", "rules/mqcloud-alerts.yml")


def test_every_portal_warning_type_has_its_alert():
    expected = {"MQCloudWarning" + "".join(part.capitalize() for part in kind.split("_")) for kind in WarningKind}
    assert expected <= alerts()


def test_every_alert_rule_passes_its_unit_tests():
    assert "SUCCESS" in promtool("test", "rules", "mqcloud-alerts-test.yml", cwd=DOCS / "rules")


def test_every_alert_has_a_unit_test_that_expects_it_to_fire():
    tests = yaml.safe_load((DOCS / "rules" / "mqcloud-alerts-test.yml").read_text())
    firing = {
        case["alertname"]
        for test in tests["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert alerts() == firing


def test_every_grafana_panel_queries_prometheus_for_a_family_the_portal_exposes():
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    exposed = (Path(__file__).resolve().parents[2] / "portal" / "services" / "metrics").glob("*.py")
    names = set(re.findall(r'"((?:rocketmq|mqcloud)_[a-z0-9_]+)"', "".join(p.read_text() for p in exposed)))
    for panel in dashboard["panels"]:
        (target,) = panel["targets"]
        used = set(re.findall(r"\b((?:rocketmq|mqcloud)_[a-z0-9_]+)", target["expr"]))
        assert used and all(n in names or n.removesuffix("_bucket") in names for n in used), panel["title"]
