# The two commands a fresh machine needs: `make demo` runs the product, `make test` runs the tests.
# Both install what they need themselves: the venv with the pinned requirements, and Debian packages.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements.stamp
# Debian packages the suite and the demo use (installed only when missing): Redis for Celery, PostgreSQL for the
# suite's second run (tests/pg.py starts a throwaway server; the package also creates the `postgres` user), gettext
# for `make messages` and the catalog completeness test, OpenSSH's server for the server-stats tests (the fixture
# runs its own sshd as a plain process; on a machine run by systemd the package also starts the system's sshd),
# Chromium for the page tests in a real browser (Playwright drives /usr/bin/chromium; never `playwright install`).
# Java 17 with javac and Maven run the real RocketMQ servers (`make rocketmq`) and the Java side of the benchmarks.
# Prometheus gives promtool (docs/prometheus checks) and the server the /metrics integration test runs as a process.
# Alertmanager is the real one the Alertmanager warning channel's test posts to (run as a plain process).
DEBIAN_PACKAGES := redis-server postgresql gettext openssh-server chromium openjdk-17-jdk-headless maven python3.11-venv prometheus \
	prometheus-alertmanager
# The Python the venv is built from: the first of these that has the standard modules the project needs (a
# Python built without sqlite3 or ssl, as some pyenv builds are, is skipped for Debian's python3.11).
VENV_PYTHON := $(shell for p in python3.11 python3 /usr/bin/python3.11; do \
  command -v $$p >/dev/null 2>&1 && $$p -c 'import sqlite3, ssl, ctypes, lzma, bz2, venv' 2>/dev/null && { echo $$p; break; }; done)
ONLY ?=

.PHONY: venv sysdeps rocketmq test fuzz lint format bench demo sdk messages clean

$(STAMP): requirements.txt
	@test -n "$(VENV_PYTHON)" || { echo "no Python 3.11 with sqlite3 and ssl: run 'make sysdeps' first"; exit 1; }
	@test -x $(PY) || $(VENV_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

venv: $(STAMP)

sysdeps:
	@missing=""; for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# The pinned Apache RocketMQ releases (4.9.4 and 5.x) from Maven Central into var/rocketmq/VERSION/lib, once.
rocketmq: venv sysdeps
	$(PY) -m monitor.launcher.releases

# The PostgreSQL run is about the database (types, locking, constraints, the rules' set-based queries): the tests
# whose point is a browser or another server (the demo, Prometheus, Alertmanager, the SDK's live clients) run once,
# on SQLite, where they check the same pages and answers.
PG_SKIP := --ignore=tests/portal/test_demo.py --ignore-glob='tests/portal/test_browser_*' \
	--ignore=tests/portal/test_prometheus_live.py --ignore=tests/portal/test_alertmanager_channel.py \
	--ignore-glob='tests/portal/test_*_live.py'

test: venv sysdeps rocketmq
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) -m pytest
	$(PY) -m tests.pg -- tests/portal tests/sparkjobs $(PG_SKIP)

# The HTTP fuzz suite (tests/fuzz) with its big budget, on SQLite then on PostgreSQL: HYPOTHESIS_PROFILE=fuzz gives
# each target (endpoint x actor) FUZZ_EXAMPLES random examples (default 200; `make test` runs the same tests with 20,
# derandomized) and keeps failing examples in var/hypothesis to replay first. Cases tried per target of the last
# run: var/fuzz/cases.txt.
fuzz: venv sysdeps
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest tests/fuzz -p no:logging
	HYPOTHESIS_PROFILE=fuzz $(PY) -m tests.pg -- tests/fuzz -p no:logging

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: venv sysdeps rocketmq
	$(PY) -m tests.bench $(ONLY)

demo: venv sysdeps
	$(PY) manage.py demo

# The client SDK as its own wheel (monitor/sdk/pyproject.toml) into var/dist/, for business applications to
# `pip install` (docs/sdk.md); tests/sdk/test_wheel.py builds it the same way and installs it into a fresh venv.
sdk: venv
	$(PY) -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir var/dist ./monitor/sdk
	@ls var/dist/mqcloud_sdk-*.whl

# The translation catalogs (portal/locale): re-extract every string of portal/, stats/ (chart ranges) and templates/
# into the English and Simplified Chinese .po files, then compile the .mo files (both are committed, so a fresh clone
# needs no gettext).
# Translate what makemessages added (msgstr "") in portal/locale/zh_Hans before committing; tests/portal/test_i18n.py
# fails on any untranslated string. References name files only (no line numbers), so moved code changes nothing.
I18N_IGNORE := $(addprefix --ignore=,.venv var static tests monitor sparkjobs docs)

messages: venv
	$(PY) manage.py makemessages -l zh_Hans -l en --no-obsolete --add-location=file $(I18N_IGNORE)
	$(PY) manage.py compilemessages -l zh_Hans -l en $(I18N_IGNORE)

clean:
	rm -rf $(VENV) var
