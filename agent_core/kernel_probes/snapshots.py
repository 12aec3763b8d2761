"""The kernel side of undo: measure the variables a cell will change, snapshot them before it runs,
restore them on undo. This is the source of a probe (agent_core.kernel_probes.probe.probe_expression): it
is exec'd into a fresh dict in the kernel, defines nothing in the user's namespace, and keeps its
snapshots in a private module in sys.modules (`_cellwright_undo`), bounded in bytes.

`measure` (for the approval card, before approval) runs none of the user's code: sizes come from
numpy's and pandas' own accounting and a bounded walk of builtin containers; other objects are
"to be tried". `take` (after approval) copies: DataFrames and arrays with their own deep copy,
everything else with copy.deepcopy (which may run the object's __deepcopy__/__reduce__).

Some values have a state no snapshot can hold: a generator, a coroutine, an open file, a socket, a
lock (copy.deepcopy fails on them), and a module, class or function (shared, so a "copy" is the
object itself). Told by their class alone, they make a step not undoable when the cell changes them
in place (`mutated`) or calls something on them whose effect only the type tells (`check`: the
analysis's `touched`; `gen.send(None)`, `for v in it`). A value the cell only rebinds or deletes is
kept as it is (its old object is all an undo needs). Of the `check` names, iterators are copied too
(`for v in it` advances them); other types are left alone, as the analysis left them."""

from __future__ import annotations

SOURCE = r'''
import copy as _copy

_STORE = "_cellwright_undo"
_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), range, frozenset)
_CODE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)
_WALK_LIMIT = 100000  # items of builtin containers walked to size one value


def _store(create):
    mod = sys.modules.get(_STORE)
    if type(mod) is types.ModuleType and type(mod.__dict__.get("steps")) is dict and type(mod.__dict__.get("gone")) is dict:
        return mod
    if mod is not None and not create:
        return False  # something else sits there: a cell replaced the store
    if not create:
        return None
    mod = types.ModuleType(_STORE)
    mod.steps, mod.gone, mod.counter = {}, {}, 0
    sys.modules[_STORE] = mod
    return mod


_dict_of = type.__dict__["__dict__"].__get__


def _unsaveable_kinds():
    """(class, what it is): values whose state a snapshot cannot hold, from the modules loaded only."""
    kinds = [(types.GeneratorType, "a generator"), (types.CoroutineType, "a coroutine"),
             (types.AsyncGeneratorType, "an async generator"), (types.FrameType, "a stack frame"),
             (types.TracebackType, "a traceback")]
    table = (
        ("_io", ("_IOBase",), "an open file or stream"), ("_socket", ("socket",), "a socket"),
        ("_thread", ("LockType", "RLock"), "a lock"),
        ("threading", ("Condition", "Semaphore", "Event", "Barrier", "Thread"), "a threading object (it holds a lock)"),
        ("_queue", ("SimpleQueue",), "a queue between threads"), ("queue", ("Queue",), "a queue between threads"),
        ("_asyncio", ("Future",), "an asyncio task or future"), ("asyncio", ("Future",), "an asyncio task or future"),
        ("concurrent.futures", ("Future", "Executor"), "a concurrent.futures future or executor"),
        ("subprocess", ("Popen",), "a running process"),
        ("sqlite3", ("Connection", "Cursor"), "a database connection"),
    )
    for module, names, what in table:
        found = _library(module)
        for name in names:
            kind = found.__dict__.get(name) if found is not None else None
            if type(kind) is type:
                kinds.append((kind, what))
    return kinds


def _unsaveable(value, kinds):
    """What `value` is when no snapshot can hold its state, read from its class (never its own code)."""
    mro = _mro_of(type(value))
    copyable = _library("_io")
    copyable = (copyable.StringIO, copyable.BytesIO) if copyable is not None else ()
    for k in mro:
        if _is_one(k, copyable):
            return None  # in-memory streams copy fine
        for base, what in kinds:
            if k is base:
                return what
    return None


def _shared(value):
    """What `value` is when a "copy" of it is the object itself (a module, a class, a function)."""
    mro = _mro_of(type(value))
    if _is_one(types.ModuleType, mro):
        return "a module"
    if _is_one(type, mro):
        return "a class"
    if _is_one(type(value), (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return "a function"
    return None


def _is_iterator(value):
    """Whether its class (or a base) defines __next__: iterating advances it."""
    for k in _mro_of(type(value)):
        if k is not object and "__next__" in _dict_of(k):
            return True
    return False


def _cannot_save(name, what):
    return "`%s` is %s: its state cannot be saved, so undo cannot restore it" % (name, what)


def _blocker(name, value, kinds, shared_too):
    """Why no snapshot can undo a change of `name` in place (None: one can); `shared_too`: the cell
    certainly changes it, so a module, class or function (kept as itself) cannot be undone either."""
    what = _unsaveable(value, kinds)
    if what is None and shared_too:
        what = _shared(value)
    return _cannot_save(name, what) if what is not None else None


def _is_one(kind, kinds):
    """By identity: `in` would call a metaclass's __eq__ (the user's code). Also `_is_one(base, mro)`."""
    for k in kinds:
        if kind is k:
            return True
    return False


def _size(value, libs):
    """(bytes, how) without running the value's own code; bytes None: unknown until copied."""
    pd, np = libs
    kind = type(value)
    if np is not None and kind is np.ndarray:
        return int(value.nbytes), "array"
    if pd is not None and _is_one(kind, (pd.DataFrame, pd.Series)):
        return int(value.memory_usage(deep=True).sum() if kind is pd.DataFrame else value.memory_usage(deep=True)), "pandas"
    if _is_one(kind, _IMMUTABLE) or _is_one(kind, _CODE):
        return sys.getsizeof(value) if _is_one(kind, _IMMUTABLE) else 0, "reference"
    if _is_one(kind, (list, tuple, dict, set)):
        total, stack, seen = 0, [value], 0
        while stack:
            item = stack.pop()
            seen += 1
            if seen > _WALK_LIMIT:
                return None, "copy"
            k = type(item)
            if np is not None and k is np.ndarray:
                total += int(item.nbytes)
            elif _is_one(k, (list, tuple, set)):
                total += sys.getsizeof(item)
                stack.extend(item)
            elif k is dict:
                total += sys.getsizeof(item)
                stack.extend(item.keys())
                stack.extend(item.values())
            elif _is_one(k, _IMMUTABLE):
                total += sys.getsizeof(item)
            else:
                return None, "copy"
        return total, "copy"
    return None, "copy"


def _libs():
    pd, np = sys.modules.get("pandas"), sys.modules.get("numpy")
    return (pd if type(pd) is types.ModuleType else None, np if type(np) is types.ModuleType else None)


def _human(n):
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def measure(ns, payload):
    """What a snapshot of these names would hold: per name its size, or why it cannot be kept.
    `mutated`: the names changed in place; `check`: the names a call may change (their type tells)."""
    args = json.loads(payload)
    cap = int(args["cap"])
    mutated, kinds = set(args.get("mutated", ())), _unsaveable_kinds()
    libs, total, problems, names = _libs(), 0, [], {}
    for name in args["names"]:
        if name not in ns:
            names[name] = {"exists": False}
            continue
        blocker = _blocker(name, ns[name], kinds, True) if name in mutated else None
        if blocker is not None:
            names[name] = {"exists": True, "bytes": None, "how": "unsaveable"}
            problems.append(blocker)
            continue
        size, how = (0, "reference") if _unsaveable(ns[name], kinds) else _size(ns[name], libs)
        names[name] = {"exists": True, "bytes": size, "how": how}
        if size is not None:
            total += size
            if size > cap:
                problems.append("%s is %s, over the %s snapshot limit" % (name, _human(size), _human(cap)))
    for name in args.get("check", ()):
        if name in names or name not in ns:
            continue
        blocker = _blocker(name, ns[name], kinds, False)
        if blocker is not None:
            names[name] = {"exists": True, "bytes": None, "how": "unsaveable"}
            problems.append(blocker)
        elif _is_iterator(ns[name]):
            names[name] = {"exists": True, "bytes": None, "how": "copy"}
    if not problems and total > cap:
        problems.append("the changed variables hold %s together, over the %s snapshot limit" % (_human(total), _human(cap)))
    return json.dumps({"names": names, "bytes": total, "problems": problems})


def _copy_of(value, libs):
    pd, np = libs
    kind = type(value)
    if _is_one(kind, _IMMUTABLE) or _is_one(kind, _CODE):
        return value
    if np is not None and kind is np.ndarray:
        return value.copy()
    if pd is not None and _is_one(kind, (pd.DataFrame, pd.Series)):
        return value.copy(deep=True)
    return _copy.deepcopy(value)


def _refused(problem):
    return json.dumps({"ok": False, "problem": problem})


def take(ns, payload):
    """Snapshot the names before the cell runs; remember which did not exist (the cell creates them).
    Refused, with the reason, when a value the cell changes cannot be saved (see `measure`)."""
    args = json.loads(payload)
    store, libs, cap = _store(True), _libs(), int(args["cap"])
    mutated, kinds = set(args.get("mutated", ())), _unsaveable_kinds()
    values, absent, total, copies = {}, [], 0, []
    for name in args["names"]:
        if name not in ns:
            absent.append(name)
            continue
        blocker = _blocker(name, ns[name], kinds, True) if name in mutated else None
        if blocker is not None:
            return _refused(blocker)
        if _unsaveable(ns[name], kinds) is not None:
            values[name] = ns[name]  # only rebound or deleted: its old object is what an undo puts back
            continue
        copies.append(name)
    for name in args.get("check", ()):
        if name in values or name in copies or name in absent or name not in ns:
            continue
        blocker = _blocker(name, ns[name], kinds, False)
        if blocker is not None:
            return _refused(blocker)
        if _is_iterator(ns[name]):
            copies.append(name)  # `for v in it`: iterating advances it
    for name in copies:
        size, how = _size(ns[name], libs)
        if size is not None and size > cap:
            return _refused("%s is %s, over the %s snapshot limit" % (name, _human(size), _human(cap)))
        try:
            values[name] = _copy_of(ns[name], libs)
        except Exception as exc:
            return _refused("`%s` cannot be copied (%s): its state cannot be saved, so undo cannot restore it" % (name, _describe(exc)))
        total += size if size is not None else _size_after(values[name])
        if total > cap:
            return json.dumps({"ok": False, "problem": "the changed variables are over the %s snapshot limit" % _human(cap)})
    store.counter += 1
    store.steps[args["call_id"]] = {
        "thread": args["thread_id"], "token": args["token"], "values": values, "absent": absent,
        "bytes": total, "order": store.counter,
    }
    evicted = _evict(store, int(args["total_cap"]), args["call_id"])
    return json.dumps({"ok": True, "kept": sorted(values), "absent": absent, "bytes": total, "evicted": evicted})


def _size_after(value):
    try:
        import pickle
        return len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:
        return sys.getsizeof(value)


def _evict(store, total_cap, keep):
    """Drop the oldest snapshots until the store is under its cap (memory is needed)."""
    evicted = []
    order = sorted(store.steps, key=lambda key: store.steps[key]["order"])
    used = sum(step["bytes"] for step in store.steps.values())
    for key in order:
        if used <= total_cap or key == keep:
            break
        used -= store.steps[key]["bytes"]
        del store.steps[key]
        _mark(store, key, "its snapshot was dropped to keep snapshots under the memory limit")
        evicted.append(key)
    return evicted


def _mark(store, key, reason):
    """Why a step has no snapshot any more (bounded: the oldest reasons are forgotten)."""
    store.gone.pop(key, None)
    store.gone[key] = reason
    while len(store.gone) > 2000:
        del store.gone[next(iter(store.gone))]


def undo(ns, payload):
    args = json.loads(payload)
    store = _store(False)
    if store is None:
        return json.dumps({"ok": False, "kind": "kernel_restarted", "problem": "the kernel restarted since that step ran, so its snapshot is gone"})
    if store is False:
        return json.dumps({"ok": False, "kind": "snapshot_store_changed", "problem": "a cell replaced Cellwright's snapshot store"})
    key = args["call_id"]
    step = store.steps.get(key)
    if step is None:
        reason = store.gone.get(key)
        kind = "already_undone" if reason == "undone" else "snapshot_gone"
        return json.dumps({"ok": False, "kind": kind, "problem": "that step was already undone" if reason == "undone" else (reason or "no snapshot of that step is in this kernel (the kernel restarted, or none was kept)")})
    if type(step) is not dict or step.get("token") != args["token"] or step.get("thread") != args["thread_id"] or type(step.get("values")) is not dict:
        return json.dumps({"ok": False, "kind": "snapshot_store_changed", "problem": "the snapshot of that step was changed by a cell"})
    del store.steps[key]
    _mark(store, key, "undone")
    restored, removed = [], []
    for name, value in step["values"].items():
        ns[name] = value
        restored.append(name)
    for name in step["absent"]:
        if name in ns:
            del ns[name]
            removed.append(name)
    return json.dumps({"ok": True, "restored": sorted(restored), "removed": sorted(removed)})


def held(ns, payload):
    """The steps of a thread still undoable in this kernel."""
    args = json.loads(payload)
    store = _store(False)
    if not store:
        return json.dumps({"steps": []})
    return json.dumps({"steps": sorted(k for k, s in store.steps.items() if type(s) is dict and s.get("thread") == args["thread_id"])})


def drop(ns, payload):
    """Forget a thread's snapshots (the thread was deleted)."""
    args = json.loads(payload)
    store = _store(False)
    if not store:
        return json.dumps({"dropped": 0})
    keys = [k for k, s in store.steps.items() if type(s) is not dict or s.get("thread") == args["thread_id"]]
    for key in keys:
        del store.steps[key]
        _mark(store, key, "its thread was deleted")
    return json.dumps({"dropped": len(keys)})
'''
