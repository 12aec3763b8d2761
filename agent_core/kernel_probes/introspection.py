"""What the agent may know of the user's kernel without running the user's code: a namespace
snapshot (names, types, shapes) and summaries of mentioned variables (DataFrames, arrays, plain
values). Both are one silent evaluation of a probe (agent_core.kernel_probes.probe) under a time limit in
the kernel and a timeout here; a busy kernel is not asked at all."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from agent_core.deadlines import within
from agent_core.environment import KnowsKernelBusy, ToolEnvironment, ToolInputError
from agent_core.json_types import JsonObject, json_items
from agent_core.kernel_probes import probe as kernel_probe
from agent_core.kernel_probes.probe import is_variable_name

SNAPSHOT_LIMIT = 40
SNAPSHOT_BUDGET = 0.5  # seconds the probe may take in the kernel before it stops listing
SUMMARY_BUDGET = 2.0
TIMEOUT_MARGIN = 3.0  # the reply's way back, on top of the kernel's own budget
MAX_SCANNED = 5000  # names of a huge namespace past this are not looked at
BUSY_NOTE = "kernel busy: no snapshot"

# After kernel_probe.HELPERS. Besides what HELPERS says: no __repr__ but the interpreter's own (plain
# values; containers are walked here), pandas' formatting only of rows whose values are all plain,
# and no statistics over data of a dtype from outside numpy and pandas.
_PROBE = r'''
import time

_SKIP = frozenset(("In", "Out", "exit", "quit", "get_ipython"))
_CODE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
         types.BuiltinMethodType, types.WrapperDescriptorType, types.MethodWrapperType)
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_dict_of = type.__dict__["__dict__"].__get__


def _one_of(kind, kinds):
    for k in kinds:
        if kind is k:
            return True
    return False


def _is_code(kind):
    if _one_of(kind, _CODE):
        return True
    for k in _mro_of(kind):  # a class (its metaclass derives from type)
        if k is type:
            return True
    return False


def _libs():
    return _library("pandas"), _library("polars"), _library("numpy")


def _trusted_dtypes(dtypes):
    for dtype in dtypes:
        if _module_of(type(dtype)).split(".")[0] not in ("numpy", "pandas"):
            return False
    return True


def _facts(value, kind, libs):
    """type name, shape (or None) and bytes (0 when only the object's own code could tell)."""
    pd, pl, np = libs
    if np is not None and kind is np.ndarray:
        return "numpy.ndarray", list(value.shape), int(value.nbytes), str(value.dtype)
    if pd is not None and kind is pd.DataFrame:
        size = int(value.memory_usage(deep=False, index=True).sum()) if _trusted_dtypes(value.dtypes) else 0
        return "pandas.DataFrame", list(value.shape), size, None
    if pd is not None and kind is pd.Series:
        size = int(value.memory_usage(deep=False, index=True)) if _trusted_dtypes([value.dtype]) else 0
        return "pandas.Series", list(value.shape), size, str(value.dtype)
    if pl is not None and kind is pl.DataFrame:
        return "polars.DataFrame", list(value.shape), int(value.estimated_size()), None
    if pl is not None and kind is pl.Series:
        return "polars.Series", [len(value)], int(value.estimated_size()), str(value.dtype)
    if _one_of(kind, _SIZED):
        return _qualname_of(kind), [len(value)], sys.getsizeof(value), None
    if id(kind) in _plain_types():
        return _qualname_of(kind), None, sys.getsizeof(value), None
    return _class_name(kind), None, 0, None


def snapshot(ns, payload):
    request = json.loads(payload)
    deadline = time.monotonic() + request["budget"]
    libs = _libs()
    found, total, cut = [], 0, False
    for position, (name, value) in enumerate(list(ns.items())[-request["scan"]:]):
        if type(name) is not str or name.startswith("_") or name in _SKIP:
            continue
        kind = type(value)
        if _is_code(kind):
            continue
        total += 1
        if time.monotonic() > deadline:
            cut = True
            continue
        try:
            type_name, shape, size, dtype = _facts(value, kind, libs)
        except Exception:
            type_name, shape, size, dtype = _class_name(kind), None, 0, None
        entry = {"name": name, "type": type_name, "bytes": size, "order": position}
        if shape is not None:
            entry["shape"] = shape
        if dtype is not None:
            entry["dtype"] = dtype
        found.append(entry)
    found.sort(key=lambda e: (-e["bytes"], -e["order"]))
    return json.dumps({"variables": found[:request["limit"]], "total": total, "cut": cut})


def _repr_owner(kind):
    for k in _mro_of(kind):
        if "__repr__" in _dict_of(k):
            return k
    return object


def _safe_repr(value, limit, depth=0):
    """A bounded repr that calls no __repr__ but the interpreter's own."""
    kind = type(value)
    if id(kind) in _plain_types():
        if (kind is str or kind is bytes) and len(value) > limit:
            value = value[:limit]
        return repr(value)[:limit]
    opener = {list: "[]", tuple: "()", set: "{}", frozenset: "{}", dict: "{}"}
    for container, marks in opener.items():
        if kind is container:
            if depth >= 3:
                return marks[0] + "..." + marks[1]
            parts, used = [], 2
            items = [v for _, v in zip(range(20), value.items() if kind is dict else value)]
            for item in items:
                if kind is dict:
                    text = _safe_repr(item[0], limit, depth + 1) + ": " + _safe_repr(item[1], limit, depth + 1)
                else:
                    text = _safe_repr(item, limit, depth + 1)
                used += len(text) + 2
                if used > limit:
                    break
                parts.append(text)
            more = ", ..." if len(parts) < len(value) else ""
            return marks[0] + ", ".join(parts) + more + marks[1]
    if _repr_owner(kind) is object:
        return "<%s object>" % _class_name(kind)
    return "<%s object: its own __repr__ is not called>" % _class_name(kind)


def _frame_head(pd, frame, rows):
    head = frame.head(rows)
    if pd.get_option("display.float_format") is not None:
        return None  # a user's formatting function
    cells = [head.index.to_numpy(dtype=object), head.columns.to_numpy(dtype=object)]
    for position in range(head.shape[1]):
        if head.dtypes.iloc[position].kind == "O":
            cells.append(head.iloc[:, position].to_numpy(dtype=object))
    if not all(_all_plain(values) for values in cells):
        return None
    return head.to_string(max_cols=20, max_colwidth=40)


def _pandas_frame(pd, frame, limits):
    rows, columns = frame.shape
    out = {"kind": "pandas.DataFrame", "shape": [int(rows), int(columns)]}
    labels = frame.columns[: limits["columns"]]
    dtypes = frame.dtypes.iloc[: limits["columns"]]
    if not _trusted_dtypes(list(frame.dtypes)) or not _trusted_dtypes([frame.index.dtype]):
        out["note"] = "holds data of a dtype from outside numpy and pandas: only its shape is read"
        return out
    names = [_safe_repr(label, 60) for label in labels.to_numpy(dtype=object)]
    nulls = [int(n) for n in frame.iloc[:, : limits["columns"]].isna().sum().to_numpy()]
    out["columns"] = [{"name": n, "dtype": str(d), "nulls": k} for n, d, k in zip(names, dtypes, nulls)]
    out["more_columns"] = max(0, int(columns) - len(names))
    out["bytes"] = int(frame.memory_usage(deep=False, index=True).sum())
    head = _frame_head(pd, frame, limits["rows"])
    out["head"] = head if head is not None else "(rows not shown: they hold objects only their own code could print)"
    return out


def _polars_frame(pl, frame, limits):
    out = {"kind": "polars.DataFrame", "shape": [int(frame.height), int(frame.width)]}
    schema = list(frame.schema.items())[: limits["columns"]]
    nulls = frame.null_count().row(0)
    out["columns"] = [{"name": str(n), "dtype": str(d), "nulls": int(k)} for (n, d), k in zip(schema, nulls)]
    out["more_columns"] = max(0, frame.width - len(schema))
    out["bytes"] = int(frame.estimated_size())
    if all(type(d) is not pl.Object and d is not pl.Object for _, d in schema):
        out["head"] = str(frame.head(limits["rows"]))
    return out


def _array(np, value):
    out = {"kind": "numpy.ndarray", "shape": list(value.shape), "dtype": str(value.dtype), "bytes": int(value.nbytes)}
    if value.dtype.kind in "biuf" and value.size:
        low, high = (np.fmin, np.fmax) if value.dtype.kind == "f" else (np.minimum, np.maximum)
        out["min"], out["max"] = low.reduce(value, axis=None).item(), high.reduce(value, axis=None).item()
    return out


def summarize(ns, name, limits):
    if name not in ns:
        return {"error": "no variable named %s in the kernel" % name}
    value = ns[name]
    kind = type(value)
    pd, pl, np = _libs()
    if pd is not None and kind is pd.DataFrame:
        return _pandas_frame(pd, value, limits)
    if pl is not None and kind is pl.DataFrame:
        return _polars_frame(pl, value, limits)
    if np is not None and kind is np.ndarray:
        return _array(np, value)
    type_name, shape, size, dtype = _facts(value, kind, (pd, pl, np))
    out = {"kind": type_name, "repr": _safe_repr(value, limits["repr"])}
    if shape is not None:
        out["shape"] = shape
    if dtype is not None:
        out["dtype"] = dtype
    return out


def summaries(ns, payload):
    request = json.loads(payload)
    deadline = time.monotonic() + request["budget"]
    out = {}
    for name in request["names"]:
        if time.monotonic() > deadline:
            out[name] = {"error": "not read: the time limit for kernel summaries ran out"}
            continue
        try:
            out[name] = summarize(ns, name, request["limits"])
        except Exception as exc:
            out[name] = {"error": "reading it failed: %s" % _describe(exc)}
    return json.dumps(out)
'''

LIMITS = {"columns": 40, "rows": 5, "repr": 400}


@dataclass
class Snapshot:
    variables: list[JsonObject] = field(default_factory=list)
    total: int = 0
    note: str = ""  # why there is no (full) snapshot


def snapshot_expression(limit: int = SNAPSHOT_LIMIT, budget: float = SNAPSHOT_BUDGET) -> str:
    return kernel_probe.read_only_probe(_PROBE, "snapshot", {"limit": limit, "budget": budget, "scan": MAX_SCANNED})


def summaries_expression(names: list[str], budget: float = SUMMARY_BUDGET) -> str:
    bad = [name for name in names if not is_variable_name(name)]
    if bad:
        raise ValueError(f"not variable names: {bad!r}")
    return kernel_probe.read_only_probe(_PROBE, "summaries", {"names": names, "budget": budget, "limits": LIMITS})


class KernelBusy(ToolInputError):
    pass


async def _evaluate(env: ToolEnvironment | None, expression: str, timeout: float) -> Any:
    """The probe's answer; raises ToolInputError saying why there is none. A busy kernel is not
    asked: the request would wait behind the user's cell."""
    if env is None:
        raise ToolInputError("no kernel")
    if (
        isinstance(env, KnowsKernelBusy) and await env.kernel_busy()
    ):  # after a short grace: see KernelEnvironment.kernel_busy
        raise KernelBusy("kernel busy")
    try:
        # within, not wait_for: sent now, not on the loop's next turn after a POST's answer (deadlines.py)
        async with within(timeout):
            return await env.evaluate_json(expression)
    except asyncio.TimeoutError:
        raise ToolInputError(f"the kernel did not answer within {timeout:g} s") from None
    except ToolInputError:
        raise
    except Exception as exc:  # a dead kernel, a protocol error
        raise ToolInputError(f"the kernel could not be reached ({type(exc).__name__})") from None


async def namespace_snapshot(env: ToolEnvironment | None, limit: int = SNAPSHOT_LIMIT) -> Snapshot:
    try:
        answer = await _evaluate(env, snapshot_expression(limit), SNAPSHOT_BUDGET + TIMEOUT_MARGIN)
    except KernelBusy:
        return Snapshot(note=BUSY_NOTE)
    except ToolInputError as exc:
        return Snapshot(note=f"no snapshot: {exc}")
    if not isinstance(answer, dict) or not isinstance(answer.get("variables"), list):
        return Snapshot(note="no snapshot: the kernel's answer was not understood")
    note = "listing cut short by its time limit" if answer.get("cut") else ""
    return Snapshot([v for v in answer["variables"] if isinstance(v, dict)], int(answer.get("total") or 0), note)


async def variable_summaries(env: ToolEnvironment | None, names: list[str]) -> dict[str, JsonObject]:
    """A summary (or {"error": ...}) per name; a name that is not an identifier is refused here."""
    result: dict[str, JsonObject] = {
        name: {"error": "not a variable name"} for name in names if not is_variable_name(name)
    }
    valid = [name for name in names if name not in result]
    if valid:
        try:
            answer = await _evaluate(env, summaries_expression(valid), SUMMARY_BUDGET + TIMEOUT_MARGIN)
        except KernelBusy:
            answer = {name: {"error": "the kernel is busy running a cell: not read"} for name in valid}
        except ToolInputError as exc:
            answer = {name: {"error": str(exc)} for name in valid}
        for name in valid:
            entry = answer.get(name) if isinstance(answer, dict) else None
            result[name] = entry if isinstance(entry, dict) else {"error": "the kernel gave no answer for it"}
    return {name: result[name] for name in names}


def _shape(entry: JsonObject) -> str:
    shape = entry.get("shape")
    return " x ".join(str(n) for n in shape) if isinstance(shape, list) else ""


def format_snapshot(snapshot: Snapshot) -> str:
    if not snapshot.variables:
        return snapshot.note or "The kernel's namespace holds no user variables."
    lines = [f"{snapshot.total} user variables in the kernel (largest and most recent first):"]
    for entry in snapshot.variables:
        shape = _shape(entry)
        dtype = f", {entry['dtype']}" if entry.get("dtype") else ""
        lines.append(f"- {entry.get('name')}: {entry.get('type')}{f' ({shape}{dtype})' if shape else dtype}")
    if snapshot.total > len(snapshot.variables):
        lines.append(f"(and {snapshot.total - len(snapshot.variables)} more)")
    if snapshot.note:
        lines.append(f"({snapshot.note})")
    return "\n".join(lines)


def format_summary(name: str, entry: JsonObject) -> str:
    if "error" in entry:
        return f"@{name}: not available: {entry['error']}"
    head = f"@{name}: {entry.get('kind')}"
    if _shape(entry):
        head += f", shape {_shape(entry)}"
    if entry.get("dtype"):
        head += f", dtype {entry['dtype']}"
    if entry.get("bytes") is not None:
        head += f", {entry['bytes']} bytes in memory"
    lines = [head]
    if "min" in entry:
        lines.append(f"min {entry['min']}, max {entry['max']}")
    if entry.get("columns"):
        lines.append("columns (name: dtype, nulls):")
        columns = [c for c in json_items(entry["columns"]) if isinstance(c, dict)]
        lines += [f"  {c.get('name')}: {c.get('dtype')}, {c.get('nulls')} null" for c in columns]
        if entry.get("more_columns"):
            lines.append(f"  (and {entry['more_columns']} more columns)")
    if entry.get("head"):
        lines.append("first rows:\n" + str(entry["head"]))
    if entry.get("repr"):
        lines.append(f"value: {entry['repr']}")
    if entry.get("note"):
        lines.append(f"({entry['note']})")
    return "\n".join(lines)
