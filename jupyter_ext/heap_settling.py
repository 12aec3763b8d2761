"""The server's heap, settled once: a second after a run ends with no other run active, what is
alive is collected and then frozen (gc.freeze). The modules, classes and models a run imports are
the bulk of a Jupyter server's heap and live as long as it does; frozen, they are out of the
collector's reach, so a full collection walks only what later runs create. On this machine a full
collection during a hundred streaming threads paused the event loop ~180 ms before, ~40 ms after
(bench/many_threads.py; every token in flight waited for it)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

SETTLE_DELAY_SECONDS = 1.0  # after a run's end: its readers get its last events first

_settled = False  # per process: the collector is


def settle_soon(busy: Callable[[], bool]) -> None:
    """Settle the heap shortly, unless a run is active by then (the next run's end tries again)."""
    if not _settled:
        asyncio.get_running_loop().call_later(SETTLE_DELAY_SECONDS, _settle, busy)


def _settle(busy: Callable[[], bool]) -> None:
    global _settled
    if _settled or busy():
        return
    _settled = True
    gc.collect()  # what is garbage now is not frozen with the rest
    gc.freeze()
