"""The sandbox settings of `c.Cellwright` (issue 37): whether `explore` and read-only shell commands
may run sandboxed without approval, and the bounds of one sandboxed exploration. Operator
settings: not changed at run time."""

from __future__ import annotations

from typing import Any

from traitlets import Dict, Enum, HasTraits, TraitError, validate

from agent_core.config.agent_settings import AgentSettings

_AGENT = AgentSettings()
# The kernel waits for an exploration (it runs one request at a time): its wall time stays well
# below the server's 30 s bound on a kernel evaluation (jupyter_ext.kernel_evaluations).
MAX_WALL_S = 25.0
_BOUNDS = {"cpu_s": (1, 600), "wall_s": (1, MAX_WALL_S), "memory_mb": (64, 1 << 20), "processes": (1, 4096)}


class SandboxSettings(HasTraits):
    sandbox = Enum(
        ["auto", "off"],
        _AGENT.sandbox,
        help="auto: explore and read-only shell commands run without approval inside a sandbox (a copy-on-write fork "
        "of the kernel, or bubblewrap for the shell: no network, no writes but a scratch /tmp, hidden files masked, no "
        "signals to other processes, bounded resources) wherever one can be made; elsewhere they ask as run_cell and "
        "execute_command do. off: every such step asks for approval.",
    ).tag(config=True)
    sandbox_limits = Dict(
        default_value=dict(_AGENT.sandbox_limits),
        help="Bounds of one sandboxed step: cpu_s (CPU seconds, default 10), wall_s (seconds before it is killed, "
        "default 20, at most 25), memory_mb (memory beyond the kernel's own, default 2048) and processes (default 32). "
        "Give any of them; the others keep their defaults.",
    ).tag(config=True)

    @validate("sandbox_limits")
    def _valid_limits(self, proposal: Any) -> dict[str, float]:
        given = dict(proposal.value)
        unknown = sorted(set(given) - set(_BOUNDS))
        if unknown:
            raise TraitError(f"sandbox_limits has unknown keys {unknown}; it takes {sorted(_BOUNDS)}.")
        limits = {**_AGENT.sandbox_limits, **given}
        for name, (low, high) in _BOUNDS.items():
            value = limits[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise TraitError(f"sandbox_limits[{name!r}] must be a number from {low:g} to {high:g}, not {value!r}.")
        return {name: float(limits[name]) for name in _BOUNDS}
