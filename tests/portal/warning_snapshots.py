"""What the warning rules keep of a condition (its ``details``, stored on the warning and in each event's snapshot), one
realistic example per rule family, shaped exactly as ``portal/services/warnings/rules/*.py`` builds them: nested
figures, booleans, missing values (None), lists of queues. The warning page's presenter tests and the layout tests in a
real browser share them; ``test_warning_presenter.py`` also runs the real lag rule so the shapes cannot drift unseen."""

from __future__ import annotations

from portal.models.warnings import SubjectType, WarningKind

GROUP = "GID_PAYMENT_ORDER_SETTLEMENT_RECONCILIATION"
TOPIC = "PAY_ORDER_CREATED_SETTLEMENT_RECONCILIATION_NOTIFICATION_V2"


def _lag_queues(count: int) -> list[dict]:
    return [
        {
            "topic": TOPIC,
            "broker_name": f"broker-{'ab'[n % 2]}",
            "queue_id": n // 2,
            "lag": 6_000 - n * 250,
            "consumer_offset": 1_204_500 + n,
            "broker_offset": 1_210_500 - n * 249,
            "client_id": None if n % 3 else f"10.0.0.{20 + n}@12345#1739261243621",
        }
        for n in range(count)
    ]


CONSUMER_LAG = {
    "minute": "2026-03-02T10:00:00+00:00",
    "state": "falling_behind",
    "lag": 52_000,
    "lag_seconds": 840.0,
    "age_measured": True,
    "broadcasting": False,
    "clients": 2,
    "trend_seconds": 300,
    "consumed_per_second": 3.3333333333,
    "produced_per_second": 13.3333333333,
    "lag_change_per_minute": 600.0,
    "pulled_last_minute": None,
    "thresholds": {"messages": 10_000, "seconds": 300},
    "topics": {
        TOPIC: {"lag": 52_000, "lag_seconds": 840.0, "age_measured": True, "measured_at": "2026-03-02T10:00:00+00:00"}
    },
    "queues": _lag_queues(16),
    "lagging_queues": 16,
}

CLIENT_BLOCKED = {
    "minute": "2026-03-02T10:00:00+00:00",
    "threshold_seconds": 10,
    "clients": 2,
    "queues": [
        {
            "topic": TOPIC,
            "broker_name": "broker-a",
            "queue_id": 3,
            "client_id": "10.0.0.21@12345#1739261243621",
            "blocked_seconds": 95.0,
            "last_consumed_at": "2026-03-02T09:58:25+00:00",
            "cached_messages": 1000,
            "lag": 4_200,
        },
        {
            "topic": TOPIC,
            "broker_name": "broker-b",
            "queue_id": 0,
            "client_id": "10.0.0.22@12345#1739261243622",
            "blocked_seconds": 40.0,
            "last_consumed_at": None,
            "cached_messages": 32,
            "lag": None,
        },
    ],
    "blocked_queues": 2,
}

SUBSCRIPTION_MISMATCH = {
    "minute": "2026-03-02T10:00:00+00:00",
    "clients": [
        {"client_id": "10.0.0.21@12345", "subscription": {TOPIC: "TagA || TagB"}, "error": ""},
        {"client_id": "10.0.0.22@12345", "subscription": {TOPIC: "*", "REFUNDS": "*"}, "error": ""},
        {"client_id": "10.0.0.23@12345", "subscription": {}, "error": "timeout after 3000 ms"},
    ],
}

CONSUME_FAILURES = {
    "minute": "2026-03-02T10:00:00+00:00",
    "sent_back": 1_250,
    "sent_back_latest_minute": 40,
    "minutes_covered": 60,
    "threshold": 100,
    "topics": {TOPIC: 1_200, "REFUNDS": 50},
}

PRODUCE_ERRORS = {
    "window_minutes": 5,
    "since": "2026-03-02T09:55:00+00:00",
    "failed": 42,
    "sent": 12_000,
    "exceptions": {"MQBrokerException": 40, "RemotingTimeoutException": 2},
    "brokers": {"MQBrokerException": ["broker-a"], "RemotingTimeoutException": ["broker-a", "broker-b"]},
    "topics": [TOPIC, "REFUNDS"],
    "clients": ["10.0.0.31@4242", "10.0.0.32@4242"],
    "last_failure_minute": "2026-03-02T09:59:00+00:00",
    "threshold": 1,
}

TRACE_FAILURES = {
    "window_minutes": 5,
    "since": "2026-03-02T09:55:00+00:00",
    "trace_written": 1_800,
    "trace_dropped": 12,
    "trace_failed": 3,
    "losing_clients": [
        {"producer_group": "PID_PAYMENT_ORDER", "client_id": "10.0.0.31@4242", "trace_written": 900,
         "trace_dropped": 12, "trace_failed": 0},
        {"consumer_group": GROUP, "client_id": "10.0.0.21@12345", "trace_written": 900, "trace_dropped": 0,
         "trace_failed": 3},
    ],
    "last_loss_minute": "2026-03-02T09:59:00+00:00",
    "threshold": 1,
}  # fmt: skip

TRAFFIC_DROP = {
    "minute": "2026-03-02T10:00:00+00:00",
    "recent_per_minute": 3.0,
    "recent_minutes": 5,
    "baseline_per_minute": 412.5,
    "baseline_minutes": 60,
    "ratio": 0.00727,
    "thresholds": {"factor": 0.2, "baseline_minutes": 60, "min_baseline_per_minute": 100},
}

BROKER_DOWN = {
    "broker_name": "broker-a",
    "broker_id": 0,
    "address": "10.0.0.5:10911",
    "listed": False,
    "down_since": "2026-03-02T09:52:00+00:00",
    "failed_rounds": 8,
    "attempts": 3,
    "error": "connection refused",
    "latest_probe": "2026-03-02T10:00:00+00:00",
    "grace_seconds": 120,
}

SLAVE_LAG = {
    "behind_bytes": 268_435_456,
    "master_commit_log_max_offset": 9_663_676_416,
    "slave_commit_log_max_offset": 9_395_240_960,
    "change_bytes_per_minute": None,
    "minute": "2026-03-02T10:00:00+00:00",
    "threshold_bytes": 104_857_600,
}

SERVER_CPU = {
    "host": "10.0.0.5",
    "minute": "2026-03-02T10:00:00+00:00",
    "cpu_percent": [97.5, 96.0, 95.25],
    "cpu_iowait_percent": 12.0,
    "threshold_percent": 90,
}

SERVER_DISK = {
    "host": "10.0.0.5",
    "minute": "2026-03-02T10:00:00+00:00",
    "mounts": {
        "/data/rocketmq/store": {"used_percent": 93.4, "used": 934_000_000_000, "available": 66_000_000_000},
        "/": {"used_percent": 91.0, "used": 45_500_000_000, "available": 4_500_000_000},
    },
    "threshold_percent": 90,
}

# kind -> (subject type, subject name, summary, details)
SNAPSHOTS: dict[str, tuple[str, str, str, dict]] = {
    WarningKind.CONSUMER_LAG: (
        SubjectType.CONSUMER_GROUP,
        GROUP,
        f"{GROUP} is 52,000 messages behind on {TOPIC}; the oldest waiting message has waited 14 min.",
        CONSUMER_LAG,
    ),
    WarningKind.CLIENT_BLOCKED: (
        SubjectType.CONSUMER_GROUP,
        GROUP,
        f"2 queues of {GROUP} are blocked.",
        CLIENT_BLOCKED,
    ),
    WarningKind.SUBSCRIPTION_MISMATCH: (
        SubjectType.CONSUMER_GROUP,
        GROUP,
        f"The clients of {GROUP} subscribe differently.",
        SUBSCRIPTION_MISMATCH,
    ),
    WarningKind.CONSUME_FAILURES: (
        SubjectType.CONSUMER_GROUP,
        GROUP,
        f"{GROUP} sent 1,250 messages back for retry in the last hour.",
        CONSUME_FAILURES,
    ),
    WarningKind.PRODUCE_ERRORS: (
        SubjectType.PRODUCER_GROUP,
        "PID_PAYMENT_ORDER",
        "42 sends of PID_PAYMENT_ORDER failed in the last 5 min.",
        PRODUCE_ERRORS,
    ),
    WarningKind.TRACE_FAILURES: (
        SubjectType.TOPIC,
        TOPIC,
        f"15 trace records of {TOPIC} were lost in the last 5 min.",
        TRACE_FAILURES,
    ),
    WarningKind.TRAFFIC_DROP: (
        SubjectType.TOPIC,
        TOPIC,
        f"{TOPIC} is receiving 3 messages a minute, 99% less than its baseline.",
        TRAFFIC_DROP,
    ),
    WarningKind.BROKER_DOWN: (
        SubjectType.BROKER,
        "broker-a@0",
        "broker-a@0 (10.0.0.5:10911) has not answered for 8 min.",
        BROKER_DOWN,
    ),
    WarningKind.SLAVE_LAG: (
        SubjectType.BROKER,
        "broker-a@1",
        "Slave broker-a@1 is 256 MiB of commit log behind its master.",
        SLAVE_LAG,
    ),
    WarningKind.SERVER_CPU: (SubjectType.SERVER, "10.0.0.5", "10.0.0.5: CPU 98% busy.", SERVER_CPU),
    WarningKind.SERVER_DISK: (SubjectType.SERVER, "10.0.0.5", "10.0.0.5: /data/rocketmq/store 93% used.", SERVER_DISK),
}
