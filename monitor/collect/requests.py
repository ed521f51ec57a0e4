"""How one collection cycle talks to a cluster: many requests at once, a bounded number per broker, counted.

Each address has its own gate (an asyncio semaphore): a request waits for a free slot first and only then starts
its deadline, so thousands of queued requests never time out while waiting their turn, and a broker's small admin
thread pool is never flooded. Work for one broker runs as a fixed set of workers taking jobs from a shared iterator
(:meth:`Requests.map`), so memory stays flat however many stats keys a cluster has.

A broker that stops answering mid-cycle must not cost a timeout per remaining request: after a few connection-level
failures in a row (refused, timed out, closed) it is marked down and its remaining requests fail at once with
:class:`BrokerDown`. Refusals (a RocketMQ error code) say the broker is alive and never count against it, nor do
requests the broker relays to a client (a consumer's running info), whose slowness is the client's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from monitor.remoting.errors import (
    ProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
)

T = TypeVar("T")
J = TypeVar("J")

UNREACHABLE = (RemotingConnectError, RemotingTimeoutError, RemotingClosedError, TimeoutError)


class BrokerDown(Exception):
    """The address was marked down earlier in this cycle; the request was not sent."""

    def __init__(self, addr: str, reason: str):
        self.addr = addr
        self.reason = reason
        super().__init__(f"{addr} is down: {reason}")


# Whatever a request of a cycle can fail with: an error code, an answer that cannot be read, a broker marked down or
# one that does not answer.
FAILED = (RemotingError, ProtocolError, BrokerDown, *UNREACHABLE)


class Requests:
    """Gated, counted requests of one cycle. ``per_address`` bounds the requests in flight to one address;
    ``trip_after`` consecutive connection-level failures mark the address down for the rest of the cycle."""

    def __init__(self, *, per_address: int, trip_after: int):
        self.per_address = per_address
        self.trip_after = trip_after
        self.count = 0
        self.down: dict[str, str] = {}
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._strikes: dict[str, int] = {}

    def mark_down(self, addr: str, reason: str) -> None:
        self.down.setdefault(addr, reason)

    async def send(
        self, addr: str, call: Callable[[], Awaitable[T]], *, timeout: float | None = None, strike: bool = True
    ) -> T:
        """Run ``call()`` (one request to ``addr``) once a slot of the address is free, within ``timeout``
        seconds if given (TimeoutError). ``strike=False``: a failure does not count towards marking it down."""
        gate = self._gates.get(addr)
        if gate is None:
            gate = self._gates[addr] = asyncio.Semaphore(self.per_address)
        async with gate:
            if addr in self.down:
                raise BrokerDown(addr, self.down[addr])
            self.count += 1
            try:
                async with asyncio.timeout(timeout):
                    result = await call()
            except UNREACHABLE as exc:
                if strike:
                    strikes = self._strikes[addr] = self._strikes.get(addr, 0) + 1
                    if strikes >= self.trip_after:
                        self.mark_down(addr, str(exc) or type(exc).__name__)
                raise
            if strike:
                self._strikes[addr] = 0
            return result

    async def map(self, addr: str, jobs: Iterable[J], work: Callable[[J], Awaitable[None]]) -> None:
        """Run ``work(job)`` for every job with as many workers as the address has slots. ``work`` handles its own
        request errors; whatever it raises ends the whole map."""
        pending = iter(jobs)

        async def worker() -> None:
            for job in pending:
                await work(job)

        await asyncio.gather(*(worker() for _ in range(self.per_address)))
