"""What every in-kernel probe shares: how it is sent (one expression, its inputs as JSON data), and
the helpers that read an object's class without running the user's code.

A probe is Python source exec'd into a private module inside the kernel, so it defines nothing in
the user's namespace; its entry function gets the namespace dict and a JSON payload. It must run none
of the user's code: names are looked up in the namespace dict (no attribute chain, no property);
an object's class is read with type() and compared by identity with a library's own classes, found
in sys.modules only (a library the user did not import is never imported); class names are read
through type's own descriptors (a metaclass could answer attribute reads itself)."""

from __future__ import annotations

import hashlib
import json
import keyword

HELPERS = r'''
import json
import sys
import types

_module_of = type.__dict__["__module__"].__get__
_qualname_of = type.__dict__["__qualname__"].__get__
_mro_of = type.__dict__["__mro__"].__get__
_TRUSTED = ("builtins", "pandas", "polars", "numpy")


def _describe(exc):
    kind = type(exc)
    if _module_of(kind).split(".")[0] not in _TRUSTED:
        return _class_name(kind)  # its message would come from its own __str__
    return "%s: %s" % (_qualname_of(kind), exc)


def _class_name(kind):
    module, name = _module_of(kind), _qualname_of(kind)
    return "%s.%s" % (module if type(module) is str else "?", name if type(name) is str else "?")


def _library(name):
    module = sys.modules.get(name)
    return module if type(module) is types.ModuleType else None


_PLAIN = {}


def _plain_types():
    """ids of the classes whose methods (__sizeof__, __repr__) are the interpreter's or pandas' own C code.
    Kept per set of loaded libraries: this module stays loaded, and the user may import pandas later."""
    pd, np = _library("pandas"), _library("numpy")
    key = (id(pd), id(np))
    if key not in _PLAIN:
        import datetime
        import decimal

        kinds = [str, bytes, int, float, bool, complex, type(None), datetime.datetime, datetime.date,
                 datetime.time, datetime.timedelta, decimal.Decimal]
        if pd is not None:
            kinds += [type(pd.NA), type(pd.NaT), pd.Timestamp, pd.Timedelta]
        if np is not None:
            kinds += [np.float64, np.float32, np.int64, np.int32, np.bool_, np.datetime64, np.str_]
        _PLAIN.clear()
        _PLAIN[key] = frozenset(map(id, kinds))  # ids: hashing a class could run its metaclass's __hash__
    return _PLAIN[key]


def _all_plain(values):
    return frozenset(map(id, map(type, values))) <= _plain_types()
'''


def is_variable_name(name: object) -> bool:
    """A plain Python identifier that is not a keyword: all a probe may be asked to look up."""
    return isinstance(name, str) and len(name) <= 200 and name.isidentifier() and not keyword.iskeyword(name)


class ReadOnlyExpression(str):
    """An expression that runs none of the user's code (a probe's, or a plain read like the names in
    globals()): the kernel may answer it on its quick path (agent_core.kernel_probes.quick_answers),
    outside IPython's cell machinery. Code that may run the user's code (an @tool call, an undo copy,
    an exploration) stays a plain str and goes through execute_request as a cell's would."""


def read_only_probe(source: str, entry: str, payload: object) -> ReadOnlyExpression:
    """probe_expression for a probe whose entry runs none of the user's code."""
    return ReadOnlyExpression(probe_expression(source, entry, payload))


def probe_expression(source: str, entry: str, payload: object) -> str:
    """One expression, evaluated in the kernel with the user's namespace as globals, that runs
    `entry(namespace, payload_json)` of `source` (after HELPERS). It looks up no global name (a
    user's variable called exec or globals would be found first); the payload travels as JSON data
    inside a string literal, never as code.

    The source is compiled once per kernel: into a private module in sys.modules named for its
    hash (compiling a probe took longer than running it, at the start of every run). It still
    travels with each expression, so a restarted kernel, or another version of Cellwright, loads
    its own."""
    code = HELPERS + source
    name = "_cellwright_probe_" + hashlib.sha256(code.encode()).hexdigest()[:16]
    load = (
        "(lambda m: (b['exec']("
        + repr(code)
        + ", m.__dict__), b['__import__']('sys').modules.__setitem__("
        + repr(name)
        + ", m), m)[2])(b['__import__']('types').ModuleType("
        + repr(name)
        + "))"
    )
    return (
        "(lambda f, b: (b['__import__']('sys').modules.get("
        + repr(name)
        + ") or "
        + load
        + ").__dict__["
        + repr(entry)
        + "](f.__globals__, "
        + repr(json.dumps(payload))
        + "))((lambda: None), (lambda: None).__builtins__)"
    )
