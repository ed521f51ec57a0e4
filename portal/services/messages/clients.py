"""A consumer client's running info as the group's diagnostics page and the API show it: who the client is, its
thread pool, subscriptions, consume TPS and RT with failures per topic, and the queues it holds with those that
look blocked (messages cached but nothing consumed for a minute), as RocketMQ Dashboard's "consumer detail" and
MQCloud's client page show them. One shape for both, so the page and the API say the same."""

from __future__ import annotations

import datetime as dt

from monitor.messages.diagnostics import ClientDiagnostics

# A held queue with messages cached in the client and nothing consumed for this long looks blocked.
BLOCKED_AFTER_MS = 60_000
# The client's language as RocketMQ's LanguageCode names the C++ client (the Python client is built on it).
CPP = "CPP"
# Running-info properties that say how big the consume thread pool is (Java: the consumer's settings, and
# PROP_THREADPOOL_CORE_SIZE, the pool's size now; the C++ client: its own names).
THREAD_POOL_PROPERTIES = ("consumeThreadMin", "consumeThreadMax", "PROP_THREADPOOL_CORE_SIZE", "consumeThreadCount")


def _moment(millis: int) -> str | None:
    """Epoch milliseconds as ISO 8601; None for none (0) or a value no clock gives (clients report what they like)."""
    try:
        return dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC).isoformat() if millis > 0 else None
    except (OverflowError, OSError, ValueError):
        return None


def describe(client: ClientDiagnostics, *, now_ms: int) -> dict:
    """The client as plain data (JSON-ready): ``running_info`` None when it did not answer (``error`` says why)."""
    described = {
        "client_id": client.client_id,
        "address": client.client_addr,
        "language": client.language,
        "version": client.version,
        "sends_thread_stack": client.language != CPP,
        "error": client.error,
        "running_info": None,
    }
    info = client.running_info
    if info is None:
        return described
    queues = []
    for mq, queue in sorted(
        info.mq_table.items(), key=lambda item: (item[0].topic, item[0].broker_name, item[0].queue_id)
    ):
        last = queue.last_consume_timestamp
        blocked = not queue.dropped and queue.cached_msg_count > 0 and last > 0 and now_ms - last > BLOCKED_AFTER_MS
        queues.append(
            {
                "topic": mq.topic,
                "broker_name": mq.broker_name,
                "queue_id": mq.queue_id,
                "cached_messages": queue.cached_msg_count,
                "commit_offset": queue.commit_offset,
                "last_consumed_at": _moment(last),
                "locked": queue.locked,
                "dropped": queue.dropped,
                "blocked": blocked,
            }
        )
    described["running_info"] = {
        "properties": dict(sorted(info.properties.items())),
        "thread_pool": {name: info.properties[name] for name in THREAD_POOL_PROPERTIES if name in info.properties},
        "subscriptions": [
            {"topic": sub.topic, "expression": sub.sub_string, "expression_type": sub.expression_type}
            for sub in sorted(info.subscription_set, key=lambda sub: sub.topic)
        ],
        "consume_status": [
            {
                "topic": topic,
                "pull_tps": status.pull_tps,
                "pull_rt": status.pull_rt,
                "consume_ok_tps": status.consume_ok_tps,
                "consume_failed_tps": status.consume_failed_tps,
                "consume_rt": status.consume_rt,
                "consume_failed_msgs": status.consume_failed_msgs,
            }
            for topic, status in sorted(info.status_table.items())
        ],
        "queues": queues,
        "blocked_queues": sum(queue["blocked"] for queue in queues),
    }
    return described
