"""check_resource: file sizes, DataFrame memory in the notebook's kernel, system memory and GPUs.

`check_resources` gives the exact shape of API.md's `POST resources`; the tool formats the same
data as text for the model. Per-item problems (a missing file, a name that is not a DataFrame, no
kernel) are `{"error": "..."}` entries, never a failure of the whole call; a path outside the root
is (WorkspaceError: a 400 on the route, an error result for the model)."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from agent_core.deadlines import within
from agent_core.json_types import JsonObject
from agent_core.kernel_probes import probe as kernel_probe
from agent_core.kernel_probes.probe import is_variable_name
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolEnvironment, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.spawn import start_process
from agent_core.workspace import Workspace, WorkspaceError, human_size, resolve_in_root, workspace_of

MAX_WALK_ENTRIES = 200_000
MAX_WALK_SECONDS = 5.0
KERNEL_TIMEOUT = 15.0
GPU_TIMEOUT = 5.0
MAX_ITEMS = 100
MAX_ITEM_CHARS = 4096
DEEP_MEMORY_ROWS = 2_000_000  # beyond this, pandas' deep memory count (which walks every string) is skipped

# Runs in the kernel after kernel_probe.HELPERS (see there for what a probe may not do). pandas'
# deep count, which calls __sizeof__ on every object in an object column, runs only when those
# objects are of built-in types.
_PROBE = r"""
def probe(ns, payload):
    request = json.loads(payload)
    out = {}
    for name in request["names"]:
        try:
            out[name] = measure(ns, name, request["deep_rows"])
        except Exception as exc:
            out[name] = {"error": "measuring it failed: %s" % _describe(exc)}
    return json.dumps(out)


def measure(ns, name, deep_rows):
    if name not in ns:
        return {"error": "no variable named %r in the kernel" % name}
    value = ns[name]
    kind = type(value)
    pd, pl = _library("pandas"), _library("polars")
    if pd is not None and kind is pd.__dict__.get("DataFrame"):
        return _pandas_frame(pd, value, name, deep_rows)
    if pl is not None and kind is pl.__dict__.get("DataFrame"):
        return {"bytes": int(value.estimated_size()), "rows": int(value.height), "columns": int(value.width), "library": "polars"}
    if pl is not None and kind is pl.__dict__.get("LazyFrame"):
        return {"error": "%s is a polars LazyFrame: it holds no data until collected" % name}
    if pd is not None and kind is pd.__dict__.get("Series"):
        return {"error": "%s is a pandas Series, not a DataFrame (%d rows)" % (name, len(value))}
    return {"error": "%s is a %s, not a pandas or polars DataFrame" % (name, _class_name(kind))}


def _pandas_frame(pd, frame, name, deep_rows):
    rows, columns = frame.shape
    arrays = []  # arrays of Python objects the deep count would size one by one
    index = frame.index
    levels = list(index.levels) if type(index) is pd.MultiIndex else [index]
    for dtype in [*frame.dtypes, *(level.dtype for level in levels)]:
        library = _module_of(type(dtype)).split(".")[0]
        if library not in ("numpy", "pandas"):
            # Its array's size would be asked of that library's (or the user's) own code.
            return {"error": "%s holds data of dtype %s (from %s): only numpy and pandas data is measured"
                             % (name, _qualname_of(type(dtype)), library)}
    for position, dtype in enumerate(frame.dtypes):
        if type(dtype) is pd.CategoricalDtype:
            if dtype.categories.dtype == object:
                arrays.append(dtype.categories.to_numpy())
        elif dtype.kind == "O":
            arrays.append(frame.iloc[:, position].to_numpy(dtype=object))
    for level in levels:
        if level.dtype == object:
            arrays.append(level.to_numpy())
    small = rows <= deep_rows
    deep = small and all(_all_plain(values) for values in arrays)
    used = int(frame.memory_usage(deep=deep, index=True).sum())
    entry = {"bytes": used, "rows": int(rows), "columns": int(columns), "library": "pandas", "deep": deep}
    if not deep:
        entry["note"] = ("strings and other objects not counted: too many rows for a deep count" if not small else
                         "objects not counted: some are of types whose size only their own code could tell")
    return entry
"""


def probe_expression(names: list[str]) -> str:
    """The expression that measures `names` in the kernel (see kernel_probe.probe_expression)."""
    bad = [name for name in names if not is_variable_name(name)]
    if bad:
        raise ValueError(f"not variable names: {bad!r}")
    return kernel_probe.probe_expression(_PROBE, "probe", {"names": names, "deep_rows": DEEP_MEMORY_ROWS})


def _walk_size(path: Path) -> tuple[int, int, bool]:
    """Bytes and file count under `path` (symlinks not followed), and whether the walk was cut short."""
    total = files = seen = 0
    deadline = time.monotonic() + MAX_WALK_SECONDS
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_WALK_ENTRIES or (seen % 1000 == 0 and time.monotonic() > deadline):
                        return total, files, True
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(Path(entry.path))
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                            files += 1
                    except OSError:
                        continue
        except OSError:
            continue
    return total, files, False


def _size_entry(path: Path) -> JsonObject:
    if not path.exists():
        return {"error": "no such file or directory"}
    if path.is_dir():
        size, files, partial = _walk_size(path)
        entry: JsonObject = {"bytes": size, "human": human_size(size), "type": "directory", "files": files}
        if partial:
            entry.update(partial=True, human=f"more than {human_size(size)}")
        return entry
    size = path.stat().st_size
    return {"bytes": size, "human": human_size(size), "type": "file"}


_JSON_NAMES = {
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    dict: "an object",
    list: "a list",
}


def _json_kind(value: object) -> str:
    return "null" if value is None else _JSON_NAMES.get(type(value), type(value).__name__)


def _items(raw: object, what: str) -> list[str]:
    """The request's list of paths or names, checked: a caller gets a message it can act on, never a crash."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ToolInputError(f'{what} must be a list of strings, like ["a"], not {_json_kind(raw)}')
    if len(raw) > MAX_ITEMS:
        raise ToolInputError(f"{what} may hold at most {MAX_ITEMS} entries, not {len(raw)}")
    for position, item in enumerate(raw):
        if not isinstance(item, str):
            raise ToolInputError(f"{what} must be a list of strings; entry {position} is {_json_kind(item)}")
        if len(item) > MAX_ITEM_CHARS:
            raise ToolInputError(f"{what}: entry {position} is longer than {MAX_ITEM_CHARS} characters")
    return list(dict.fromkeys(raw))


def file_sizes(root: Path | Workspace, paths: list[str]) -> dict[str, JsonObject]:
    """Sizes by path as given; raises WorkspaceError first when any path leaves the root."""
    resolved = {path: resolve_in_root(root, path) for path in paths}
    return {path: _size_entry(target) for path, target in resolved.items()}


async def dataframe_sizes(
    env: ToolEnvironment | None, names: list[str], timeout: float = KERNEL_TIMEOUT
) -> dict[str, JsonObject]:
    """Memory, rows and columns of DataFrames in the notebook's kernel, read without a trace."""
    result: dict[str, JsonObject] = {}
    valid = []
    for name in names:
        if is_variable_name(name):
            valid.append(name)
        else:
            result[name] = {
                "error": f"{name!r} is not a variable name: give a plain name like df (attributes such as obj.frame "
                "are not read, as reading one can run code; assign it to a variable first)"
            }
    if not valid:
        return result
    if env is None:
        return {**result, **{name: {"error": "no kernel: send the notebook's kernel_id"} for name in valid}}
    try:
        async with within(timeout):  # sent now, not on the loop's next turn (deadlines.py)
            measured = await env.evaluate_json(probe_expression(valid))
    except asyncio.TimeoutError:
        problem = (
            f"the kernel did not answer within {timeout:g} s (it may be busy running a cell); try again when it is idle"
        )
        measured = {name: {"error": problem} for name in valid}
    except ToolInputError as exc:  # no kernel, evaluation failed
        measured = {name: {"error": str(exc)} for name in valid}
    except Exception as exc:  # a dead kernel (jupyter-client raises RuntimeError), a protocol error
        problem = f"the kernel could not be reached ({type(exc).__name__}: {exc}); restart it and try again"
        measured = {name: {"error": problem} for name in valid}
    for name in valid:
        entry = measured.get(name) if isinstance(measured, dict) else None
        result[name] = entry if isinstance(entry, dict) else {"error": "the kernel gave no answer for it"}
    return {name: result[name] for name in names}


def system_memory() -> dict[str, int | None]:
    values: dict[str, int | None] = {"mem_total": None, "mem_available": None}
    keys = {"MemTotal": "mem_total", "MemAvailable": "mem_available"}
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                name, _, rest = line.partition(":")
                if name in keys:
                    number, *unit = rest.split()
                    values[keys[name]] = int(number) * (1024 if unit and unit[0].lower() == "kb" else 1)
    except (OSError, ValueError):
        pass
    return values


async def gpus() -> tuple[list[JsonObject], str]:
    """GPUs from nvidia-smi (bytes), and an error text when it is there but fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [], ""
    try:
        proc = await start_process(
            smi,
            "--query-gpu=index,name,memory.total,memory.used",
            "--format=csv,noheader,nounits",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return [], f"nvidia-smi could not run: {exc}"
    try:
        out, err = await asyncio.wait_for(proc.communicate(), GPU_TIMEOUT)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return [], f"nvidia-smi did not answer within {GPU_TIMEOUT:g} s"
    if proc.returncode != 0:
        return [], f"nvidia-smi failed: {err.decode(errors='replace').strip()[:300]}"
    found = []
    for line in out.decode(errors="replace").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        index, name, total, used = parts[0], ", ".join(parts[1:-2]), parts[-2], parts[-1]
        try:
            total_bytes, used_bytes = int(float(total) * 2**20), int(float(used) * 2**20)  # nvidia-smi gives MiB
            found.append({"index": int(index), "name": name, "memory_total": total_bytes, "memory_used": used_bytes})
        except ValueError:
            continue
    return found, ""


async def check_resources(
    root: Path | Workspace, env: ToolEnvironment | None, files: object = None, dataframes: object = None
) -> JsonObject:
    """The `POST resources` answer. Raises WorkspaceError for a path outside the root,
    ToolInputError for malformed lists."""
    paths = _items(files, "files")
    names = _items(dataframes, "dataframes")
    sizes = await asyncio.to_thread(file_sizes, root, paths) if paths else {}
    frames = await dataframe_sizes(env, names) if names else {}
    gpu_list, gpu_error = await gpus()
    system: JsonObject = {**system_memory(), "gpus": gpu_list}
    if gpu_error:
        system["gpu_error"] = gpu_error
    answer: JsonObject = {"files": sizes, "dataframes": frames, "system": system}
    if env is not None:
        # kernel_probes.usage (psutil) loads on first use: %load_ext agent_core loads the tools without it
        from agent_core.kernel_probes.usage import kernel_usage

        usage = await kernel_usage(env)
        if usage is not None:
            answer["kernel"] = usage
    return answer


def format_resources(data: dict[str, Any]) -> str:  # resources()'s answer, walked to its leaves
    lines = []
    if data["files"]:
        lines.append("Files:")
        for path, entry in data["files"].items():
            if "error" in entry:
                lines.append(f"  {path}: error: {entry['error']}")
            else:
                extra = f", {entry['files']} files" if entry.get("type") == "directory" else ""
                lines.append(f"  {path}: {entry['human']} ({entry['bytes']} bytes{extra})")
    if data["dataframes"]:
        lines.append("DataFrames (in the kernel's memory):")
        for name, entry in data["dataframes"].items():
            if "error" in entry:
                lines.append(f"  {name}: error: {entry['error']}")
            else:
                approx = (
                    ""
                    if entry.get("deep", True)
                    else f" ({entry.get('note') or 'strings not counted: too many rows for a deep count'})"
                )
                shape = f"{entry['rows']} rows x {entry['columns']} columns"
                lines.append(f"  {name}: {shape}, {human_size(entry['bytes'])}{approx} ({entry.get('library', '')})")
    if data.get("kernel"):
        from agent_core.kernel_probes.usage import format_usage

        lines.append(format_usage(data["kernel"]))
    system = data["system"]
    total, available = system.get("mem_total"), system.get("mem_available")
    if total:
        lines.append(f"System memory: {human_size(total)} total, {human_size(available or 0)} available")
    else:
        lines.append("System memory: unknown (no /proc/meminfo)")
    gpu_list = system.get("gpus") or []
    if gpu_list:
        lines += [
            f"GPU {g['index']}: {g['name']}, {human_size(g['memory_used'])} used of {human_size(g['memory_total'])}"
            for g in gpu_list
        ]
    else:
        lines.append("GPUs: none" + (f" ({system['gpu_error']})" if system.get("gpu_error") else ""))
    return "\n".join(lines)


class CheckResourceArgs(ToolArgs):
    files: list[str] | None = Field(default=None, max_length=MAX_ITEMS, description="Files or folders to size.")
    dataframes: list[str] | None = Field(
        default=None,
        max_length=MAX_ITEMS,
        description="Variable names of DataFrames in the kernel: plain names like df, no attributes (obj.df).",
    )


async def check_resource(args: CheckResourceArgs, ctx: ToolContext) -> ToolOutcome:
    try:
        data = await check_resources(workspace_of(ctx.env), ctx.env, args.files, args.dataframes)
    except WorkspaceError as exc:
        raise ToolInputError(exc.message) from None
    return ToolOutcome("ok", format_resources(data))


CHECK_RESOURCE = ToolSpec(
    name="check_resource",
    description=(
        "Check resources before heavy work: sizes of files or folders (paths relative to the root), memory, "
        "rows and columns of DataFrames in the notebook's kernel (by variable name), system memory (total and "
        "available), GPUs, and the notebook kernel's own CPU and memory (its process tree). Call it with no "
        "arguments for memory and GPUs only."
    ),
    args=CheckResourceArgs,
    action=check_resource,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)
