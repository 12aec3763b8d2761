"""Names of processes on the leases they hold, and whether a named process has ended.

A lease names the process that drives a thread. When that process dies (kill -9, a crash, a
machine that lost power) its lease would block the thread until it expires. A process of the
same machine and the same pid namespace can do better: the name carries the pid and the
process's start time, so a reader can see that the holder is gone (a pid reused by a newer
process has another start time) and take the thread over at once. Names from another machine or
container cannot be checked, and their leases expire as before."""

from __future__ import annotations

import hashlib
import os
import uuid
from functools import cache
from pathlib import Path

_SEPARATOR = "/"  # not ':' (PostgreSQL notifications put one between the process and the thread)


def new_process_name() -> str:
    """A name unique to this store of this process: random, then where and which process it is."""
    pid = os.getpid()
    start = _start_ticks(pid)
    place = _place()
    if start is None or place is None:
        return uuid.uuid4().hex
    return _SEPARATOR.join((uuid.uuid4().hex, place, str(pid), start))


def has_ended(name: str) -> bool:
    """True only when `name` is a process of this machine and pid namespace that no longer runs."""
    parts = name.split(_SEPARATOR)
    if len(parts) != 4 or parts[1] != _place() or not parts[2].isdigit():
        return False
    return _start_ticks(int(parts[2])) != parts[3]


@cache
def _place() -> str | None:
    """This boot of this machine and this pid namespace (a container has its own), hashed short."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None  # not Linux: leases expire by time only
    return hashlib.sha256(f"{boot}.{namespace}".encode()).hexdigest()[:16]


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat); None when
    there is no such process, or only its zombie (it ended; its parent has not reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count from its end.
    fields = stat[stat.rindex(")") + 2 :].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]
