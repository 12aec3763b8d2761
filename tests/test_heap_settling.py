"""The server settles its heap once, after a run, when no run is active (jupyter_ext/heap_settling.py):
what is alive is collected and frozen, so later full collections walk only what runs create."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text
from jupyter_ext import heap_settling
from tests.conftest import Api


@pytest.fixture
def unsettled(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a fresh server: nothing frozen yet (the tests share one process)."""
    gc.unfreeze()
    monkeypatch.setattr(heap_settling, "_settled", False)


async def _frozen_within(seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while gc.get_freeze_count() == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return gc.get_freeze_count() > 0


async def test_a_finished_run_settles_the_heap(unsettled: None, api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(text("done"))
    thread = await api.new_thread()
    await api.run(thread, "hi")
    await api.until_finished(thread)
    assert await _frozen_within(heap_settling.SETTLE_DELAY_SECONDS + 3)


def test_no_settling_while_a_run_is_active(unsettled: None) -> None:
    heap_settling._settle(lambda: True)
    assert gc.get_freeze_count() == 0 and not heap_settling._settled
    heap_settling._settle(lambda: False)
    assert gc.get_freeze_count() > 0 and heap_settling._settled


async def test_settling_waits_for_the_runs_readers(unsettled: Any) -> None:
    heap_settling.settle_soon(lambda: False)
    assert gc.get_freeze_count() == 0  # not in the run's last turn of the loop: its readers go first
    assert await _frozen_within(heap_settling.SETTLE_DELAY_SECONDS + 2)
