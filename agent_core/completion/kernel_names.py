"""The kernel's names for a completion prompt: each user variable with its type, a DataFrame's
columns with their dtypes, never a value. One silent probe (agent_core.kernel_probes) per kernel,
cached for a few seconds: a typist asks many times a second, a busy kernel is not asked at all."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from agent_core.deadlines import within
from agent_core.json_types import JsonObject
from agent_core.kernel_probes import probe as kernel_probe
from agent_core.kernel_probes.introspection import _PROBE as SNAPSHOT_PROBE
from agent_core.tools.base import KnowsKernelBusy, ToolEnvironment

NAMES_LIMIT = 60
COLUMNS_LIMIT = 60
BUDGET = 0.2  # seconds the probe may take in the kernel
TIMEOUT = 1.0  # the whole round trip: a completion does not wait longer for its names
FRESH_SECONDS = 3.0  # a cached answer this young is used as is, when the client sends no execution count
SAME_COUNT_SECONDS = 60.0  # with the same execution count (no cell ran since), an answer this young
STALE_SECONDS = 120.0  # an older one still stands in while the kernel is busy

# After the snapshot probe (its helpers: _facts, _libs, _trusted_dtypes, _safe_repr, _is_code):
# names newest first; a frame's column labels (strings as they are, others by the safe repr) and
# dtypes; nothing else of a value.
_NAMES_PROBE = r"""

def _columns(value, kind, libs, limit):
    pd, pl, np = libs
    if pd is not None and kind is pd.DataFrame:
        if not _trusted_dtypes(list(value.dtypes)):
            return None
        labels = value.columns[:limit].to_numpy(dtype=object)
        names = [label[:100] if type(label) is str else _safe_repr(label, 60) for label in labels]
        return [[n, str(d)] for n, d in zip(names, value.dtypes.iloc[:limit])]
    if pl is not None and kind is pl.DataFrame:
        return [[str(n), str(d)] for n, d in list(value.schema.items())[:limit]]
    return None


def completion_names(ns, payload):
    request = json.loads(payload)
    deadline = time.monotonic() + request["budget"]
    libs = _libs()
    found = []
    for name, value in reversed(list(ns.items())[-request["scan"]:]):
        if type(name) is not str or name.startswith("_") or name in _SKIP:
            continue
        if len(found) >= request["limit"] or time.monotonic() > deadline:
            break
        kind = type(value)
        if kind is types.ModuleType:
            found.append({"name": name, "type": "module"})
            continue
        if _is_code(kind):
            found.append({"name": name, "type": "class" if not _one_of(kind, _CODE) else "function"})
            continue
        try:
            type_name, shape, size, dtype = _facts(value, kind, libs)
            columns = _columns(value, kind, libs, request["columns"])
        except Exception:
            type_name, shape, dtype, columns = _class_name(kind), None, None, None
        entry = {"name": name, "type": type_name}
        if shape is not None:
            entry["shape"] = shape
        if dtype is not None:
            entry["dtype"] = dtype
        if columns is not None:
            entry["columns"] = columns
        found.append(entry)
    return json.dumps({"names": found})
"""


def names_expression() -> str:
    payload = {"budget": BUDGET, "scan": 5000, "limit": NAMES_LIMIT, "columns": COLUMNS_LIMIT}
    return kernel_probe.read_only_probe(SNAPSHOT_PROBE + _NAMES_PROBE, "completion_names", payload)


@dataclass
class _Entry:
    names: list[JsonObject]
    at: float
    count: int | None  # the notebook's execution count the client sent with the request that read it

    def fresh(self, now: float, count: int | None) -> bool:
        if count is not None and self.count is not None:
            return count == self.count and now - self.at < SAME_COUNT_SECONDS  # a cell ran: read again
        return now - self.at < FRESH_SECONDS


@dataclass
class KernelNames:
    """The names of each kernel, by a key the caller gives (the kernel id, else the notebook's path)."""

    _cache: dict[str, _Entry] = field(default_factory=dict)
    _pending: dict[str, asyncio.Task[list[JsonObject] | None]] = field(default_factory=dict)

    async def names(self, key: str, env: ToolEnvironment | None, count: int | None = None) -> list[JsonObject]:
        """The kernel's names (empty without a kernel or an answer). A fresh cached answer (no cell ran
        since: the same execution `count`) is used as is; concurrent requests share one probe; a busy
        kernel gets its last answer, not a question."""
        now = time.monotonic()
        entry = self._cache.get(key)
        if entry is not None and entry.fresh(now, count):
            return entry.names
        if env is None:
            return []
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(self._probe(env))
            self._pending[key] = task
            task.add_done_callback(lambda _: self._pending.pop(key, None))
        answer = await asyncio.shield(task)  # a cancelled completion leaves the probe to finish for the next
        if answer is not None:
            self._cache[key] = _Entry(answer, time.monotonic(), count)
            if len(self._cache) > 64:
                self._cache.pop(next(iter(self._cache)))
            return answer
        return entry.names if entry is not None and now - entry.at < STALE_SECONDS else []

    async def _probe(self, env: ToolEnvironment) -> list[JsonObject] | None:
        try:
            if isinstance(env, KnowsKernelBusy) and await env.kernel_busy():
                return None
            async with within(TIMEOUT):  # sent now, not on the loop's next turn (deadlines.py)
                answer = await env.evaluate_json(names_expression())
        except Exception:  # no kernel, a dead one, a time-out: the completion goes without names
            return None
        names = answer.get("names") if isinstance(answer, dict) else None
        return [n for n in names if isinstance(n, dict)] if isinstance(names, list) else None


def format_names(names: list[JsonObject], budget: int) -> str:
    """Python comment lines naming each variable and its type (a frame's columns and dtypes), newest
    first, within `budget` characters."""
    lines: list[str] = []
    used = 0
    for entry in names:
        line = f"# {entry.get('name')}: {entry.get('type')}"
        shape = entry.get("shape")
        if isinstance(shape, list):
            line += " (" + " x ".join(str(n) for n in shape) + ")"
        if entry.get("dtype"):
            line += f" dtype {entry['dtype']}"
        columns = entry.get("columns")
        if isinstance(columns, list) and columns:
            line += ", columns: " + ", ".join(
                f"{c[0]!r} {c[1]}" for c in columns if isinstance(c, list) and len(c) == 2
            )
        line = line.replace("\n", " ")[:1500]
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)
