"""`within(seconds)`: a time limit on awaits run in the caller's own task. asyncio.wait_for (before
Python 3.12) runs its awaitable in a task of its own, which starts only on the loop's next turn, after
whatever else is ready: on a hot path (a run's kernel probes, its model request) that turn cost
~0.5 ms of the first token (issue 41). On expiry it raises asyncio.TimeoutError."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from asyncio import timeout as within
else:  # the backport, which aiohttp (openai[aiohttp]) needs on 3.10 as well
    from async_timeout import timeout as within

__all__ = ["within"]
