"""The one settings module. Everything environment-specific comes from environment variables with working
defaults (SQLite and the secret key under var/), so a fresh clone runs without any configuration."""

import datetime as dt
from pathlib import Path

import dj_database_url

from portal.beat import beat_schedule
from portal.env import env_bool, env_choice, env_int, env_list, env_networks, env_rate, env_str, secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MQCLOUD_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = secret_key(VAR_DIR)
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "portal",
    "monitor",
    "stats",
    "sparkjobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "portal.web.middleware.UserPreferencesMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout answer (portal.web.lockout).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "django.template.context_processors.tz",
                "portal.web.context.portal",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the Celery worker and beat share one file: take the write lock when a transaction starts
    # (no "database is locked" upgrade failures), wait for it rather than fail, and let readers run beside a writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"transaction_mode": "IMMEDIATE", "timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "portal.models.validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "portal" / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "stats.staticfiles.PlotlyFinder",
]
# collectstatic writes here (under var/, like everything a run produces); it exists even before the first
# collectstatic so WhiteNoise starts quietly.
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
# Beat remembers when each periodic task last ran here (under var/, never in the working tree).
CELERY_BEAT_SCHEDULE_FILENAME = env_str("CELERY_BEAT_SCHEDULE_FILENAME", str(VAR_DIR / "celerybeat-schedule"))

# The registry: RocketMQ has no upper bound of its own; this keeps a typo from creating 10,000 queues.
TOPIC_MAX_QUEUE_NUMS = env_int("TOPIC_MAX_QUEUE_NUMS", 256)
# How often the brownfield sync compares each cluster with the registry.
REGISTRY_SYNC_INTERVAL_SECONDS = env_int("REGISTRY_SYNC_INTERVAL_SECONDS", 300)
CELERY_BEAT_SCHEDULE = beat_schedule(registry_sync_seconds=REGISTRY_SYNC_INTERVAL_SECONDS)

# Deployment behind HTTPS (README, "Security settings"). PORTAL_HTTPS=1 makes the cookies Secure, redirects plain
# HTTP to HTTPS and sends HSTS; behind a proxy that terminates TLS, PORTAL_PROXY_SSL_HEADER names the header it sets
# to "https" (e.g. X-Forwarded-Proto), and must be one the proxy always overwrites.
PORTAL_HTTPS = env_bool("PORTAL_HTTPS", False)
SESSION_COOKIE_SECURE = PORTAL_HTTPS
CSRF_COOKIE_SECURE = PORTAL_HTTPS
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = PORTAL_HTTPS
SECURE_HSTS_SECONDS = env_int("PORTAL_HSTS_SECONDS", 31536000 if PORTAL_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("PORTAL_HSTS_INCLUDE_SUBDOMAINS", PORTAL_HTTPS)
SECURE_HSTS_PRELOAD = env_bool("PORTAL_HSTS_PRELOAD", PORTAL_HTTPS)
_proxy_ssl_header = env_str("PORTAL_PROXY_SSL_HEADER", "").strip()
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https") if _proxy_ssl_header else None
)
# Content-Security-Policy (django-csp): scripts and everything else from this site only. Styles allow inline too,
# because plotly.js styles the charts it draws inline. PORTAL_CSP=report-only sends it without enforcing it.
PORTAL_CSP = env_choice("PORTAL_CSP", "enforce", {"enforce", "report-only", "off"})
_csp = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "worker-src": ["'self'", "blob:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
CONTENT_SECURITY_POLICY = _csp if PORTAL_CSP == "enforce" else None
CONTENT_SECURITY_POLICY_REPORT_ONLY = _csp if PORTAL_CSP == "report-only" else None

# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT failed logins for one user name from one address, that
# pair is locked out for LOGIN_LOCKOUT_MINUTES, and every further try during the lockout starts it again (a backoff
# for scripts that keep trying). It covers the login page and POST /api/v1/auth/token/; a success clears the count.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "portal.web.lockout.locked_out"
# Failures and lockouts are still logged; this keeps axes' banner off every manage.py command's output.
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "topic-list"

REST_FRAMEWORK = {
    # Token first: DRF answers a request without credentials with the first authenticator's challenge, so API
    # clients get 401 + "WWW-Authenticate: Token" instead of a bare 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    # Per signed-in user and per anonymous address; over the rate the API answers 429 with Retry-After. Producers'
    # reports (machine credentials) are not counted here (portal/api/throttling.py).
    "DEFAULT_THROTTLE_CLASSES": ["portal.api.throttling.UserRateThrottle", "portal.api.throttling.AnonRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_rate("API_THROTTLE_USER_RATE", "600/minute"),
        "anon": env_rate("API_THROTTLE_ANON_RATE", "120/minute"),
    },
    # JSON bodies: size and depth bounded before parsing (portal/api/parsers.py); forms honour Django's own limits.
    "DEFAULT_PARSER_CLASSES": [
        "portal.api.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # Filters and the text search ``?q=`` are each list's FilterSet in portal/filters.py, shared with the pages.
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MQCloud portal API",
    "DESCRIPTION": "Registry of RocketMQ clusters, topics and groups, and the apply/approve workflow.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No validator badge: Swagger UI would load it from validator.swagger.io (the docs must work offline).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "ENUM_NAME_OVERRIDES": {
        "RegistryStateEnum": "portal.models.RegistryState",
        "ApplicationStateEnum": "portal.models.ApplicationState",
        "ApplicationKindEnum": "portal.models.ApplicationKind",
        "WarningKindEnum": "portal.models.WarningKind",
        "WarningStateEnum": "portal.models.WarningState",
        "ChannelKindEnum": "portal.models.ChannelKind",
        "SearchKindEnum": "portal.models.SearchKind",
        "SearchStateEnum": "portal.models.SearchState",
    },
}

# The wire client: defaults every admin call uses unless a caller says otherwise.
ROCKETMQ_REQUEST_TIMEOUT = float(env_str("ROCKETMQ_REQUEST_TIMEOUT", "5"))
ROCKETMQ_MAX_INFLIGHT_PER_ADDR = env_int("ROCKETMQ_MAX_INFLIGHT_PER_ADDR", 64)

# Per-minute collection (monitor.collect.traffic) and probes (monitor.collect.probe). A collection cycle asks each
# broker at most COLLECT_CONCURRENCY_PER_BROKER requests at a time; single requests time out after
# COLLECT_REQUEST_TIMEOUT seconds, whole-table ones (every group's consume stats) after COLLECT_BULK_TIMEOUT.
COLLECT_REQUEST_TIMEOUT = float(env_str("COLLECT_REQUEST_TIMEOUT", "5"))
COLLECT_BULK_TIMEOUT = float(env_str("COLLECT_BULK_TIMEOUT", "30"))
COLLECT_CONCURRENCY_PER_BROKER = env_int("COLLECT_CONCURRENCY_PER_BROKER", 32)
# Probes: a short timeout and quick retries, so a probe round ends well within its minute.
PROBE_TIMEOUT = float(env_str("PROBE_TIMEOUT", "2"))
PROBE_ATTEMPTS = env_int("PROBE_ATTEMPTS", 3)
# A queue is recorded as blocked when its client has consumed nothing there for this long while messages wait (the
# client_blocked warning default; per-group warning thresholds apply on top and cannot go below it).
CONSUMER_BLOCKED_SECONDS = env_int("CONSUMER_BLOCKED_SECONDS", 10)
# A message's trace marks a send or a consume attempt that took at least this long as slow.
TRACE_SLOW_LEG_MS = env_int("TRACE_SLOW_LEG_MS", 1000)
# Minute data (traffic, consumer progress, clients, probes, offset events) is kept this many days.
MINUTE_RETENTION_DAYS = env_int("MINUTE_RETENTION_DAYS", 7)

# Spark rollups and rankings (sparkjobs): the master (an embedded local Spark by default, or spark://host:port) and
# the Parquet lake the minute data is exported to (a local folder, or any Hadoop-compatible URL such as hdfs://...).
SPARK_MASTER = env_str("SPARK_MASTER", "local[*]")
SPARK_LAKE_URL = env_str("SPARK_LAKE_URL", str(VAR_DIR / "lake"))
# Extra JVM options for Spark's driver and executors, applied when a process starts its JVM (empty by default; the
# tests start JIT-light JVMs).
SPARK_JAVA_OPTIONS = env_str("SPARK_JAVA_OPTIONS", "")
# Retention of the Spark data, in days (sparkjobs.retention, daily); 0 keeps forever. Whatever is set, what a
# scheduled job still reads is kept (e.g. the daily rollups behind the rankings' 7-day baseline).
# 10-minute rollups: charts of ranges from six hours to about three days read them (stats.queries.source).
ROLLUP_10M_RETENTION_DAYS = env_int("ROLLUP_10M_RETENTION_DAYS", 35)
# Hourly rollups: charts of longer ranges (the 7-day range) read them.
ROLLUP_HOURLY_RETENTION_DAYS = env_int("ROLLUP_HOURLY_RETENTION_DAYS", 400)
# Daily rollups: kept forever unless set (one row per subject and day).
ROLLUP_DAILY_RETENTION_DAYS = env_int("ROLLUP_DAILY_RETENTION_DAYS", 0)
# Rankings (by the end of the day they rank).
RANKING_RETENTION_DAYS = env_int("RANKING_RETENTION_DAYS", 400)
# Finished job runs (the admins' job-runs page); running ones are never deleted.
JOB_RUN_RETENTION_DAYS = env_int("JOB_RUN_RETENTION_DAYS", 90)
# The lake's hour partitions: at least as long as the minute data and 8 days, so any window of the past week can be
# run again by hand (the scheduled jobs themselves read none older than about 4 days).
LAKE_RETENTION_DAYS = env_int("LAKE_RETENTION_DAYS", max(MINUTE_RETENTION_DAYS, 8))

# Warnings (portal.services.warnings). E-mail goes through Django's SMTP backend with these settings; links in
# e-mails and webhooks start with PORTAL_BASE_URL. A channel that fails this many times in a row is disabled.
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "MQCloud <mqcloud@localhost>")
PORTAL_BASE_URL = env_str("PORTAL_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
# Seconds one webhook request may take in all (connect, TLS, send, answer).
WARNING_WEBHOOK_TIMEOUT = env_int("WARNING_WEBHOOK_TIMEOUT", 10)
# Webhooks never reach loopback, private, link-local or other internal addresses (portal.services.outbound) except
# in these networks (comma-separated CIDRs), e.g. an in-house chat relay on 10.1.2.0/24.
WEBHOOK_ALLOWED_NETWORKS = env_networks("WEBHOOK_ALLOWED_NETWORKS", [])
# Prometheus servers that may scrape /metrics without a scrape token (comma-separated CIDRs; empty: a token is
# required, portal.services.metrics.access). Issue tokens with `manage.py metricstoken issue`.
METRICS_ALLOWED_NETWORKS = env_networks("METRICS_ALLOWED_NETWORKS", [])
# Channel tests ("send a test" on the channels page and the API) a user may send per minute.
WARNING_CHANNEL_TESTS_PER_MINUTE = env_int("WARNING_CHANNEL_TESTS_PER_MINUTE", 5)
WARNING_CHANNEL_MAX_FAILURES = env_int("WARNING_CHANNEL_MAX_FAILURES", 5)

# Personal API tokens (portal.services.api_tokens) stop working this many days after they were created.
API_TOKEN_TTL_DAYS = env_int("API_TOKEN_TTL_DAYS", 90)
# Where the API throttles count requests: this process's memory by default; with several server processes, a shared
# cache (e.g. redis://127.0.0.1:6379/1) makes the rates hold across them.
_throttle_cache_url = env_str("API_THROTTLE_CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _throttle_cache_url}
        if _throttle_cache_url
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}
    ),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
