"""`GET health`'s `sandbox` (issue 37): whether this host can make the explore sandbox (the same
check a kernel makes, run once in a subprocess of this server's Python, never in the server itself)
and whether read-only shell commands can run under bubblewrap. Checked once per server."""

from __future__ import annotations

import asyncio
import json
import sys

from agent_core.config.agent_settings import AgentSettings
from agent_core.json_types import JsonObject
from agent_core.kernel_probes.sandbox_status import OFF_REASON
from agent_core.tools.shell_sandbox import bwrap_status
from agent_core.tools.spawn import start_process

CHECK_SECONDS = 15.0
_CHECK = "from agent_core.kernel_probes.fork_sandbox import sandbox_status; print(sandbox_status(None, ''))"

_host: JsonObject = {}
_lock = asyncio.Lock()


async def _host_status() -> JsonObject:
    async with _lock:
        if not _host:
            try:
                proc = await start_process(
                    sys.executable, "-c", _CHECK, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
                )
                out, _ = await asyncio.wait_for(proc.communicate(), CHECK_SECONDS)
                found = json.loads(out.decode() or "{}")
            except (OSError, ValueError, asyncio.TimeoutError) as exc:
                found = {"available": False, "reason": f"the sandbox check failed ({type(exc).__name__})"}
            _host.update(found if isinstance(found, dict) and "available" in found else {"available": False})
        return dict(_host)


async def sandbox_health(settings: AgentSettings) -> JsonObject:
    """{"available", "mechanism"?, "reason"?, "shell": {...}}: the kernel side as this host allows it
    (a kernel's own answer may differ: CUDA, another host), and the shell."""
    shell = (await bwrap_status()).public()
    if settings.sandbox == "off":
        return {"available": False, "reason": OFF_REASON, "shell": {"available": False, "reason": OFF_REASON}}
    return {**await _host_status(), "shell": shell}
