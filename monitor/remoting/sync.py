"""A synchronous facade over the asynchronous client, for Celery tasks, views and the CLI.

One event loop per process runs in a daemon thread; synchronous callers submit coroutines to it and wait. After
a fork (Celery's prefork pool) the child gets a fresh loop, because the parent's thread does not exist there.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _reset_after_fork() -> None:
    global _loop
    _loop = None


os.register_at_fork(after_in_child=_reset_after_fork)


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's remoting event loop, started on first use."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="rocketmq-remoting", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on the background loop and return its result (or raise its exception).

    Every coroutine submitted here carries its own deadlines (each request has a timeout), so waiting without a
    limit cannot hang; calling this from the loop's own thread would deadlock, so that is refused."""
    loop = background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("run_sync called from the remoting loop itself; await the coroutine instead")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()
