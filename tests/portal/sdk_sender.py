"""A business application for the SDK end-to-end test (test_producer_sdk_live.py), run as its own process: the
producer SDK (``monitor.sdk.Producer``, the real C++ client underneath) sends messages with ``send_sync`` and
reports to the portal; this writes down every attempt the SDK recorded and what each call cost from the outside.

``python -m tests.portal.sdk_sender SPEC_JSON`` with spec keys ``namesrv``, ``portal_url``, ``token``, ``group``,
``topic``, ``sends`` and ``out`` (a JSON file to write). A process of its own, like the sandbox's traffic workers,
because the C++ client keeps threads of its own and logs under ``$HOME``; it imports neither Django nor the portal.

The output: ``attempts`` (one per call into the client, as the SDK measured it around the call: topic, broker,
cost in ms, exception class, minute), ``calls`` (per send_sync: its cost measured around it by this script, and the
indexes of its attempts), ``client_id``, and the reporter's ``delivered``/``dropped`` counts after shutdown.
"""

import json
import sys
import time

from monitor.sdk import Message, Producer, SendRecord


def main(spec: dict) -> None:
    attempts: list[SendRecord] = []
    producer = Producer(spec["group"], portal_url=spec["portal_url"], token=spec["token"], topics=[spec["topic"]])
    producer.set_namesrv_addr(spec["namesrv"])
    producer.add_listener(attempts.append)
    producer.start()
    calls = []
    try:
        for n in range(spec["sends"]):
            message = Message(spec["topic"])
            message.set_body(f"order {n}".encode())
            first = len(attempts)
            started = time.perf_counter()
            try:
                producer.send_sync(message)
                failed = None
            except Exception as error:  # every attempt failed: the application sees the exception
                failed = type(error).__name__
            cost_ms = (time.perf_counter() - started) * 1000
            calls.append({"cost_ms": cost_ms, "attempts": list(range(first, len(attempts))), "failed": failed})
    finally:
        producer.shutdown()  # reports every minute recorded, the current one included
    reporter = producer.reporter
    result = {
        "client_id": producer.client_id,
        "attempts": [
            {
                "topic": a.topic,
                "broker": a.broker_name,
                "cost_ms": a.cost_ms,
                "exception": a.exception,
                "minute": a.minute,
            }
            for a in attempts
        ],
        "calls": calls,
        "delivered": reporter.delivered,
        "dropped": reporter.dropped,
        "backlog": reporter.backlog,
    }
    with open(spec["out"], "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
