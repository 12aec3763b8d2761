"""Waiting in a test for a state a process outside the test reaches (a server's thread status, a
file a kernel writes, a gateway kernel's state): polled, with a deadline that names what never came."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], what: str, timeout: float = 60) -> T:
    """`check()`'s first truthy value; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
