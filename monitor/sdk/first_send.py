"""How the SDK producer picks each send's queue and guards a topic's first send.

The client's queue selectors note which queue they returned (:class:`Selection`), so a send's broker is known; a
failed attempt is retried on another broker's queue (:func:`other_broker`); the first call into the client for a
topic, when the client fetches the route itself and may wait a minute on a name server that does not answer, runs
under a deadline (:class:`FirstSendGuard`)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from monitor.sdk.routes import QueueBrokers


class Stuck(Exception):
    """The client did not return from a first send to a topic in time."""


class Selection:
    """What a queue selector chose during one client call: the client's queue count and the index."""

    __slots__ = ("index", "size")

    def __init__(self) -> None:
        self.size: int | None = None
        self.index = 0


def make_selector(selection: Selection, pick) -> Callable:
    """A queue selector for the client that notes the queue count and the index it returns."""

    def select(size: int, message, arg) -> int:
        index = pick(size, message, arg) if callable(pick) else pick
        selection.size, selection.index = size, index
        return index if 0 <= index < size else index % size

    return select


class FirstSendGuard:
    """Which topics the client has returned from a call for (it has their route), and which first calls are still
    running; ``deadline`` gives the seconds a first call may take."""

    def __init__(self, deadline: Callable[[], float]) -> None:
        self._deadline = deadline
        self._warm: set[str] = set()
        self._first_sends: set[str] = set()
        self._guard_lock = threading.Lock()

    def run(self, topic: str, call: Callable, selection: Selection):
        """Run ``call``; the first call for a topic runs in a helper thread with a deadline, because that is when
        the client fetches the topic's route and may wait about a minute on a name server that does not answer.
        Until that call returns, further sends to the topic fail at once instead of piling up behind it."""
        if topic in self._warm:
            return call()
        with self._guard_lock:
            if topic in self._first_sends:
                raise Stuck(f"the first send to {topic} has not returned yet; not sending more until it does")
            self._first_sends.add(topic)
        outcome: dict = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["result"] = call()
            except BaseException as error:  # handed to the waiting caller below
                outcome["error"] = error
            finally:
                with self._guard_lock:
                    self._first_sends.discard(topic)
                    if selection.size is not None:  # the client had the route
                        self._warm.add(topic)
                done.set()

        threading.Thread(target=run, name="mqcloud-sdk-first-send", daemon=True).start()
        deadline = self._deadline()
        if not done.wait(deadline):
            raise Stuck(
                f"the RocketMQ client did not return within {deadline:g} s from the first send to {topic} "
                "(a name server or broker that accepts connections but does not answer?)"
            )
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("result")


def other_broker(brokers: QueueBrokers, index: int) -> int | None:
    """The next queue after ``index`` on another broker, as the client picks a retry's queue; None if none."""
    size = len(brokers)
    for step in range(1, size):
        candidate = (index + step) % size
        if brokers[candidate] != brokers[index % size]:
            return candidate
    return None
