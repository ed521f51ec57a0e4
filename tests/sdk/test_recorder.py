"""The per-minute recorder: what is counted where, and what the reporter takes."""

import threading

from monitor.sdk.recorder import MAX_OPEN_MINUTES, Recorder

MINUTE = 29_922_195  # 2026-11-22T07:15Z in epoch minutes


class Clock:
    def __init__(self, seconds: float):
        self.now = seconds

    def __call__(self) -> float:
        return self.now


def summary(taken):
    return {
        (stats.minute, stats.topic, broker): (cell.histogram.count, cell.exceptions)
        for stats in taken
        for broker, cell in stats.brokers.items()
    }


def test_sends_are_counted_per_minute_topic_and_broker_with_exceptions_by_class():
    clock = Clock(MINUTE * 60 + 5)
    recorder = Recorder(clock)
    recorder.record("Orders", "broker-a", 1.5)
    recorder.record("Orders", "broker-a", 1000.0, "ProducerSendSyncFailed")
    recorder.record("Orders", "broker-b", 2.0)
    recorder.record("Payments", "broker-a", 3.0)
    clock.now += 60
    recorder.record("Orders", "broker-a", 4.0)

    assert summary(recorder.take()) == {
        (MINUTE * 60, "Orders", "broker-a"): (2, {"ProducerSendSyncFailed": 1}),
        (MINUTE * 60, "Orders", "broker-b"): (1, {}),
        (MINUTE * 60, "Payments", "broker-a"): (1, {}),
    }
    assert summary(recorder.take(everything=True)) == {((MINUTE + 1) * 60, "Orders", "broker-a"): (1, {})}


def test_the_histogram_holds_every_cost_failed_sends_included():
    recorder = Recorder(Clock(MINUTE * 60))
    for cost in (0.8, 1.2, 950.0):
        recorder.record("Orders", "broker-a", cost, None if cost < 100 else "ProducerSendSyncFailed")
    (stats,) = recorder.take(everything=True)
    histogram = stats.brokers["broker-a"].histogram
    assert (histogram.count, histogram.min_ms, histogram.max_ms) == (3, 0.8, 950.0)


def test_a_minute_is_taken_only_once_it_is_over():
    clock = Clock(MINUTE * 60 + 59)
    recorder = Recorder(clock)
    recorder.record("Orders", "broker-a", 1.0)
    assert recorder.take() == []
    clock.now += 1
    assert [stats.minute for stats in recorder.take()] == [MINUTE * 60]


def test_a_clock_stepping_back_never_adds_to_a_taken_minute():
    clock = Clock((MINUTE + 1) * 60 + 1)
    recorder = Recorder(clock)
    recorder.record("Orders", "broker-a", 1.0)
    recorder.take(everything=True)
    clock.now -= 30  # back into the minute just reported
    assert recorder.record("Orders", "broker-a", 2.0) == (MINUTE + 2) * 60
    assert [stats.minute for stats in recorder.take(everything=True)] == [(MINUTE + 2) * 60]


def test_only_the_latest_minutes_are_kept_when_nobody_takes_them():
    clock = Clock(MINUTE * 60)
    recorder = Recorder(clock)
    for _ in range(MAX_OPEN_MINUTES + 3):
        recorder.record("Orders", "broker-a", 1.0)
        clock.now += 60
    minutes = [stats.minute // 60 for stats in recorder.take()]
    assert minutes == list(range(MINUTE + 3, MINUTE + MAX_OPEN_MINUTES + 3))
    assert recorder.dropped_minutes == 3


def test_concurrent_sends_are_all_counted():
    recorder = Recorder(Clock(MINUTE * 60))
    per_thread, threads = 20_000, 4

    def send_many(index: int) -> None:
        for n in range(per_thread):
            recorder.record("Orders", f"broker-{index % 2}", 0.5 + n % 100)

    workers = [threading.Thread(target=send_many, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    (stats,) = recorder.take(everything=True)
    assert sum(cell.histogram.count for cell in stats.brokers.values()) == per_thread * threads
