"""What every in-kernel probe shares: how it is sent (one expression, its inputs as JSON data), and
the helpers that read an object's class without running the user's code.

A probe is Python source exec'd into a fresh dict inside the kernel, so it defines nothing in the
user's namespace; its entry function gets the namespace dict and a JSON payload. It must run none
of the user's code: names are looked up in the namespace dict (no attribute chain, no property);
an object's class is read with type() and compared by identity with a library's own classes, found
in sys.modules only (a library the user did not import is never imported); class names are read
through type's own descriptors (a metaclass could answer attribute reads itself)."""

from __future__ import annotations

import json
import keyword
from typing import Any

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


_PLAIN = None


def _plain_types():
    """ids of the classes whose methods (__sizeof__, __repr__) are the interpreter's or pandas' own C code."""
    global _PLAIN
    if _PLAIN is None:
        import datetime
        import decimal

        kinds = [str, bytes, int, float, bool, complex, type(None), datetime.datetime, datetime.date,
                 datetime.time, datetime.timedelta, decimal.Decimal]
        pd = _library("pandas")
        if pd is not None:
            kinds += [type(pd.NA), type(pd.NaT), pd.Timestamp, pd.Timedelta]
        np = _library("numpy")
        if np is not None:
            kinds += [np.float64, np.float32, np.int64, np.int32, np.bool_, np.datetime64, np.str_]
        _PLAIN = frozenset(map(id, kinds))  # ids: hashing a class could run its metaclass's __hash__
    return _PLAIN


def _all_plain(values):
    return frozenset(map(id, map(type, values))) <= _plain_types()
'''


def is_variable_name(name: Any) -> bool:
    """A plain Python identifier that is not a keyword: all a probe may be asked to look up."""
    return isinstance(name, str) and len(name) <= 200 and name.isidentifier() and not keyword.iskeyword(name)


def probe_expression(source: str, entry: str, payload: Any) -> str:
    """One expression, evaluated in the kernel with the user's namespace as globals, that runs
    `entry(namespace, payload_json)` of `source` (after HELPERS). It looks up no global name (a
    user's variable called exec or globals would be found first); the payload travels as JSON data
    inside a string literal, never as code."""
    return (
        "(lambda f, scope: (f.__builtins__['exec'](" + repr(HELPERS + source) + ", scope), "
        "scope[" + repr(entry) + "](f.__globals__, " + repr(json.dumps(payload)) + "))[1])((lambda: None), {})"
    )
