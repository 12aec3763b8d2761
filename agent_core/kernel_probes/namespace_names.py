"""The names the kernel's namespace holds (not their values), read silently for the dependency graph:
a cell that reads a name no cell defines shows hidden state only if the kernel still has it."""

from __future__ import annotations

from agent_core.environment import ToolEnvironment, ToolInputError
from agent_core.kernel_probes import probe as kernel_probe
from agent_core.kernel_probes.introspection import KernelBusy, _evaluate

MAX_NAMES = 20_000  # a namespace larger than this is listed in part (the graph then judges no hidden state)
NAMES_TIMEOUT = 3.0

_PROBE = r"""
def names(ns, payload):
    limit = json.loads(payload)["limit"]
    found = []
    for name in list(ns):
        if type(name) is str and not name.startswith("_"):
            found.append(name)
            if len(found) >= limit:
                return json.dumps({"names": found, "cut": True})
    return json.dumps({"names": found, "cut": False})


def defined(ns, payload):
    import builtins

    return json.dumps(sorted({name for name in list(ns) if type(name) is str} | set(dir(builtins))))
"""


async def namespace_names(env: ToolEnvironment | None) -> frozenset[str] | None:
    """The kernel's user names; None when it cannot tell (no kernel, busy, too many names)."""
    try:
        answer = await _evaluate(
            env, kernel_probe.read_only_probe(_PROBE, "names", {"limit": MAX_NAMES}), NAMES_TIMEOUT
        )
    except (KernelBusy, ToolInputError):
        return None
    if not isinstance(answer, dict) or answer.get("cut") or not isinstance(answer.get("names"), list):
        return None
    return frozenset(name for name in answer["names"] if isinstance(name, str))


def defined_names_expression() -> kernel_probe.ReadOnlyExpression:
    """Every name the kernel's code can use, as a sorted JSON list: its namespace's (private ones
    too) and the builtins. Looks up none of them: a user's `sorted` or `set` is never called."""
    return kernel_probe.read_only_probe(_PROBE, "defined", {})
