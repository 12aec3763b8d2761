"""check_resource: file sizes, DataFrame memory in the notebook's kernel, system memory and GPUs.

`check_resources` gives the exact shape of API.md's `POST resources`; the tool formats the same
data as text for the model. Per-item problems (a missing file, a name that is not a DataFrame, no
kernel) are `{"error": "..."}` entries, never a failure of the whole call; a path outside the root
is (WorkspaceError: a 400 on the route, an error result for the model)."""
from __future__ import annotations

import asyncio
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from ..workspace import WorkspaceError, human_size, resolve_in_root
from .base import ToolContext, ToolEnvironment, ToolInputError, ToolOutcome, ToolSpec

MAX_WALK_ENTRIES = 200_000
MAX_WALK_SECONDS = 5.0
KERNEL_TIMEOUT = 15.0
GPU_TIMEOUT = 5.0
MAX_ITEMS = 50
DEEP_MEMORY_ROWS = 2_000_000  # beyond this, pandas' deep memory count (which walks every string) is skipped
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

# Runs in the kernel. exec'd into a fresh dict, so it defines nothing in the user's namespace.
_PROBE = f'''
def probe(ns, names):
    import json
    out = {{}}
    for name in names:
        try:
            out[name] = measure(ns, name)
        except Exception as exc:
            out[name] = {{"error": "measuring it failed: %s: %s" % (type(exc).__name__, exc)}}
    return json.dumps(out)

def measure(ns, name):
    import sys
    head, *attrs = name.split(".")
    if head not in ns:
        return {{"error": "no variable named %r in the kernel" % head}}
    value = ns[head]
    for attr in attrs:
        value = getattr(value, attr)
    pd, pl = sys.modules.get("pandas"), sys.modules.get("polars")
    if pd is not None and isinstance(value, pd.DataFrame):
        rows, columns = value.shape
        deep = rows <= {DEEP_MEMORY_ROWS}
        used = int(value.memory_usage(deep=deep, index=True).sum())
        return {{"bytes": used, "rows": int(rows), "columns": int(columns), "library": "pandas", "deep": deep}}
    if pl is not None and isinstance(value, pl.DataFrame):
        return {{"bytes": int(value.estimated_size()), "rows": int(value.height), "columns": int(value.width), "library": "polars"}}
    kind = type(value).__module__ + "." + type(value).__qualname__
    if pl is not None and isinstance(value, pl.LazyFrame):
        return {{"error": "%s is a polars LazyFrame: it holds no data until collected" % name}}
    if pd is not None and isinstance(value, pd.Series):
        used = int(value.memory_usage(deep=len(value) <= {DEEP_MEMORY_ROWS}))
        return {{"error": "%s is a pandas Series, not a DataFrame (%d rows, %d bytes)" % (name, len(value), used)}}
    return {{"error": "%s is a %s, not a pandas or polars DataFrame" % (name, kind)}}
'''


def probe_expression(names: list[str]) -> str:
    """One expression: a lambda, called inline, that execs the probe into a fresh dict and runs it."""
    return f"(lambda scope: (exec({_PROBE!r}, scope), scope['probe'])[1])({{}})(globals(), {names!r})"


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


def _size_entry(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {"error": "no such file or directory"}
    if path.is_dir():
        size, files, partial = _walk_size(path)
        entry: dict[str, Any] = {"bytes": size, "human": human_size(size), "type": "directory", "files": files}
        if partial:
            entry.update(partial=True, human=f"more than {human_size(size)}")
        return entry
    size = path.stat().st_size
    return {"bytes": size, "human": human_size(size), "type": "file"}


def _items(raw: Any, what: str) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ToolInputError(f"{what} must be a list of strings")
    if len(raw) > MAX_ITEMS:
        raise ToolInputError(f"at most {MAX_ITEMS} {what} per call")
    return list(dict.fromkeys(raw))


def file_sizes(root: Path, paths: list[str]) -> dict[str, dict[str, Any]]:
    """Sizes by path as given; raises WorkspaceError first when any path leaves the root."""
    resolved = {path: resolve_in_root(root, path) for path in paths}
    return {path: _size_entry(target) for path, target in resolved.items()}


async def dataframe_sizes(env: ToolEnvironment | None, names: list[str], timeout: float = KERNEL_TIMEOUT) -> dict[str, dict[str, Any]]:
    """Memory, rows and columns of DataFrames in the notebook's kernel, read without a trace."""
    result: dict[str, dict[str, Any]] = {}
    valid = []
    for name in names:
        if NAME_RE.match(name):
            valid.append(name)
        else:
            result[name] = {"error": f"{name!r} is not a variable name (use a name like df or obj.frame)"}
    if not valid:
        return result
    if env is None:
        return {**result, **{name: {"error": "no kernel: send the notebook's kernel_id"} for name in valid}}
    try:
        measured = await asyncio.wait_for(env.evaluate_json(probe_expression(valid)), timeout)
    except asyncio.TimeoutError:
        problem = f"the kernel did not answer within {timeout:g} s (it may be busy running a cell); try again when it is idle"
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


async def gpus() -> tuple[list[dict[str, Any]], str]:
    """GPUs from nvidia-smi (bytes), and an error text when it is there but fails."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [], ""
    try:
        proc = await asyncio.create_subprocess_exec(
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


async def check_resources(root: Path, env: ToolEnvironment | None, files: Any = None, dataframes: Any = None) -> dict[str, Any]:
    """The `POST resources` answer. Raises WorkspaceError for a path outside the root,
    ToolInputError for malformed lists."""
    paths = _items(files, "files")
    names = _items(dataframes, "dataframes")
    sizes = await asyncio.to_thread(file_sizes, root, paths) if paths else {}
    frames = await dataframe_sizes(env, names) if names else {}
    gpu_list, gpu_error = await gpus()
    system: dict[str, Any] = {**system_memory(), "gpus": gpu_list}
    if gpu_error:
        system["gpu_error"] = gpu_error
    return {"files": sizes, "dataframes": frames, "system": system}


def format_resources(data: dict[str, Any]) -> str:
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
                approx = "" if entry.get("deep", True) else " (strings not counted: too many rows for a deep count)"
                shape = f"{entry['rows']} rows x {entry['columns']} columns"
                lines.append(f"  {name}: {shape}, {human_size(entry['bytes'])}{approx} ({entry.get('library', '')})")
    system = data["system"]
    total, available = system.get("mem_total"), system.get("mem_available")
    if total:
        lines.append(f"System memory: {human_size(total)} total, {human_size(available or 0)} available")
    else:
        lines.append("System memory: unknown (no /proc/meminfo)")
    gpu_list = system.get("gpus") or []
    if gpu_list:
        lines += [
            f"GPU {g['index']}: {g['name']}, {human_size(g['memory_used'])} used of {human_size(g['memory_total'])}" for g in gpu_list
        ]
    else:
        lines.append("GPUs: none" + (f" ({system['gpu_error']})" if system.get("gpu_error") else ""))
    return "\n".join(lines)


async def check_resource(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    try:
        data = await check_resources(Path(ctx.env.root_dir), ctx.env, args.get("files"), args.get("dataframes"))
    except WorkspaceError as exc:
        raise ToolInputError(exc.message) from None
    return ToolOutcome("ok", format_resources(data))


CHECK_RESOURCE = ToolSpec(
    name="check_resource",
    description=(
        "Check resources before heavy work: sizes of files or folders (paths relative to the root), memory, "
        "rows and columns of DataFrames in the notebook's kernel (by variable name), system memory (total and "
        "available) and GPUs. Call it with no arguments for memory and GPUs only."
    ),
    parameters={
        "type": "object",
        "properties": {
            "files": {"type": "array", "items": {"type": "string"}, "description": "Files or folders to size."},
            "dataframes": {"type": "array", "items": {"type": "string"}, "description": "DataFrame variable names in the kernel."},
        },
    },
    run=check_resource,
    read_only=True,
)
