"""Benchmarks on a small machine: the server under test on a CPU of its own, the harness (client
and scripted model) on the others. Sharing two CPUs, the harness took CPU time from the server and
the server from the scripted model, whose paced stream then ran 8% slower through the server than
when read directly (bench/token_relay.py): the model's slowness was counted as the relay's."""

from __future__ import annotations

import os

import psutil


def split_cpus(server_pid: int, harness_pids: list[int]) -> str:
    """Pin the server's threads (and so what they start later) to the first CPU, the harness's
    processes to the rest. Says what was done."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return "one CPU: server and harness share it"
    server, harness = {cpus[0]}, set(cpus[1:])
    for thread in psutil.Process(server_pid).threads():
        os.sched_setaffinity(thread.id, server)
    for pid in harness_pids:
        for thread in psutil.Process(pid).threads():
            os.sched_setaffinity(thread.id, harness)
    return f"server on CPU {cpus[0]}, harness on CPU {', '.join(map(str, sorted(harness)))}"
