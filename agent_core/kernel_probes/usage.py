"""CPU and memory of a kernel's process tree (the kernel and everything it started: a DataLoader's
workers, a subprocess), read with psutil from the server side, and GPU memory when NVML is there.

psutil is imported here only, on the first reading: the server's start-up does not pay for it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agent_core.environment import HasKernelProcess
from agent_core.workspace import human_size

CPU_SAMPLE_SECONDS = 0.25  # cpu_percent needs two readings; long enough to mean something, short for a route
MAX_PROCESSES = 256  # a fork bomb in the kernel must not make one reading walk forever


def _tree(pid: int) -> list[Any]:
    import psutil

    root = psutil.Process(pid)
    try:
        children = root.children(recursive=True)[: MAX_PROCESSES - 1]
    except psutil.Error:
        children = []
    return [root, *children]


def _cpu_seconds(process: Any) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _gpu_memory(pids: set[int]) -> int | None:
    """Bytes of GPU memory the processes hold, when NVML (pynvml) and a GPU are present; else None."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no GPU
        return None
    try:
        used = 0
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            for getter in (pynvml.nvmlDeviceGetComputeRunningProcesses, pynvml.nvmlDeviceGetGraphicsRunningProcesses):
                for proc in getter(handle):
                    if proc.pid in pids and proc.usedGpuMemory:
                        used += int(proc.usedGpuMemory)
        return used
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def process_tree_usage(pid: int, sample_seconds: float = CPU_SAMPLE_SECONDS) -> dict[str, Any]:
    """{"cpu_percent", "memory_bytes", "gpu_memory_bytes"?} of `pid` and its descendants, or
    {"error"} when the process is gone. Blocking (it sleeps `sample_seconds`): call it in a thread.
    cpu_percent is of one core, so 250 means two and a half cores busy, as `top` shows it."""
    import psutil

    try:
        processes = _tree(pid)
    except psutil.Error as exc:
        return {"error": f"the kernel's process {pid} cannot be read: {type(exc).__name__}"}
    before: dict[int, float] = {}
    for process in processes:
        try:
            before[process.pid] = _cpu_seconds(process)
        except psutil.Error:
            continue
    started = time.monotonic()
    time.sleep(sample_seconds)
    elapsed = max(time.monotonic() - started, 1e-6)
    cpu = 0.0
    memory = 0
    for process in processes:
        try:
            with process.oneshot():
                memory += int(process.memory_info().rss)
                if process.pid in before:
                    cpu += max(_cpu_seconds(process) - before[process.pid], 0.0)
        except psutil.Error:  # a child that ended meanwhile
            continue
    usage: dict[str, Any] = {"cpu_percent": round(100.0 * cpu / elapsed, 1), "memory_bytes": memory}
    gpu = _gpu_memory({process.pid for process in processes})
    if gpu is not None:
        usage["gpu_memory_bytes"] = gpu
    return usage


async def kernel_usage(env: object) -> dict[str, Any] | None:
    """The usage of the environment's kernel; None when the environment cannot name a kernel process
    (the `%agent` magic's own kernel included: it has no `kernel_pid`)."""
    if not isinstance(env, HasKernelProcess):
        return None
    kernel_pid = env.kernel_pid
    try:
        pid = await kernel_pid()
    except Exception as exc:  # no kernel for the notebook: said in the entry, not a failed request
        return {"error": str(exc) or type(exc).__name__}
    if pid is None:
        return {"error": "the kernel's process is not local (a remote or gateway kernel): its usage cannot be read"}
    return await asyncio.to_thread(process_tree_usage, pid)


def format_usage(usage: dict[str, Any]) -> str:
    if "error" in usage:
        return f"Kernel: usage unknown ({usage['error']})"
    text = (
        f"Kernel (process tree): CPU {usage['cpu_percent']:g}% of one core, memory {human_size(usage['memory_bytes'])}"
    )
    if "gpu_memory_bytes" in usage:
        text += f", GPU memory {human_size(usage['gpu_memory_bytes'])}"
    return text
