"""Small notebooks with known stale cells: the corpus the dependency graph is scored on (and ipyflow
beside it). Each is a list of cell sources and the steps a user took: run a cell, edit one without
running it, delete one. `stale` are the cells (by their first position) whose results are out of
date at the end; `hidden` the cells that read a name only the kernel still has. `unknowable` names
why a case is beyond what static analysis plus the kernel's names and history can tell.

What counts as stale here: a cell whose shown result would differ if it ran again now, because a
value it read was rebound or changed in place after it ran, its own source changed, or it read from
a stale cell. A name deleted after a cell read it leaves the cell's result as it was (not stale)."""

from __future__ import annotations

from dataclasses import dataclass

Step = tuple[str, int] | tuple[str, int, str]  # ("run", i), ("delete", i), ("edit", i, new source)

HELPER_FILE = "stale_helper.py"
HELPER_SOURCE = "z = 5\n"


@dataclass(frozen=True)
class Case:
    name: str
    cells: tuple[str, ...]
    steps: tuple[Step, ...]
    stale: frozenset[int] = frozenset()
    hidden: frozenset[int] = frozenset()
    unknowable: str | None = None


def _all(n: int) -> tuple[Step, ...]:
    return tuple(("run", i) for i in range(n))


def case(
    name: str,
    cells: list[str],
    steps: tuple[Step, ...] | None = None,
    stale: tuple[int, ...] = (),
    hidden: tuple[int, ...] = (),
    unknowable: str | None = None,
) -> Case:
    return Case(
        name,
        tuple(cells),
        steps if steps is not None else _all(len(cells)),
        frozenset(stale),
        frozenset(hidden),
        unknowable,
    )


CASES: tuple[Case, ...] = (
    case("redefinition", ["a = 1", "b = a + 1", "a = 2"], stale=(1,)),
    case("definer re-run", ["a = 1", "b = a + 1"], (("run", 0), ("run", 1), ("run", 0)), stale=(1,)),
    case("chain", ["a = 1", "b = a * 2", "c = b + 1"], (("run", 0), ("run", 1), ("run", 2), ("run", 0)), stale=(1, 2)),
    case("fresh chain", ["a = 1", "b = a + 1", "c = b"]),
    case(
        "source edited, not run", ["a = 1", "b = a + 1"], (("run", 0), ("run", 1), ("edit", 0, "a = 5")), stale=(0, 1)
    ),
    case(
        "edit in the middle",
        ["a = 1", "b = a + 1", "c = b + 1", "d = 7"],
        (*_all(4), ("edit", 1, "b = a + 100")),
        stale=(1, 2),
    ),
    case("in-place subscript", ["df = {'x': [1]}", "n = len(df)", "df['y'] = [2]"], stale=(1,)),
    case("append", ["lst = []", "n = len(lst)", "lst.append(1)"], stale=(1,)),
    case("sort in place", ["x = [2, 1]", "print(x)", "x.sort()"], stale=(1,)),
    case("dict update", ["d = {}", "k = len(d)", "d.update(a=1)"], stale=(1,)),
    case("attribute set", ["class O:\n    pass\no = O()", "v = getattr(o, 'x', 0)", "o.x = 1"], stale=(1,)),
    case("read-only method", ["d = {'x': 1}", "n = len(d)", "m = d.get('x')"]),
    case("del", ["x = 1", "y = x + 1", "del x"]),
    case("del then redefine", ["x = 1", "y = x + 1", "del x", "x = 3"], stale=(1,)),
    case("import rebinds", ["import math as m", "r = m.sqrt(4)", "import cmath as m"], stale=(1,)),
    case("unrelated import", ["import math", "r = math.pi", "import os"]),
    case("function reads a global", ["k = 2", "def f(v):\n    return v * k", "y = f(3)", "k = 10"], stale=(2,)),
    case("function redefined", ["def f():\n    return 1", "y = f()", "def f():\n    return 2"], stale=(1,)),
    case(
        "function mutates a global",
        ["acc = []", "def add(v):\n    acc.append(v)", "n = len(acc)", "add(1)"],
        stale=(2,),
    ),
    case(
        "method reads a global",
        ["scale = 2", "class P:\n    def area(self):\n        return scale", "a = P().area()", "scale = 3"],
        stale=(2,),
    ),
    case("class body reads a global", ["base = 1", "class Q:\n    k = base", "v = Q.k", "base = 5"], stale=(1, 2)),
    case(
        "functions through functions",
        ["def g():\n    return h()", "def h():\n    return w", "w = 1", "r = g()", "w = 2"],
        stale=(3,),
    ),
    case("lambda", ["k = 1", "g = lambda v: v + k", "r = g(1)", "k = 2"], stale=(2,)),
    case("comprehension", ["f = 3", "xs = [i * f for i in range(3)]", "f = 4"], stale=(1,)),
    case(
        "loop re-run",
        ["total = 0", "for i in range(3):\n    total += i", "shown = total"],
        (("run", 0), ("run", 1), ("run", 2), ("run", 1)),
        stale=(2,),
    ),
    case("augmented assignment", ["n = 1", "m = n", "n += 1"], stale=(1,)),
    case("tuple unpacking", ["a, b = 1, 2", "s = a + b", "b = 7"], stale=(1,)),
    case("unrelated redefinition", ["a = 1", "b = 2", "c = a + 1", "b = 5"]),
    case("two readers, one fresh", ["a = 1", "b = a", "c = a", "a = 2", "d = a"], stale=(1, 2)),
    case("out of order, fine", ["b = a + 1", "a = 1"], (("run", 1), ("run", 0))),
    case("out of order, stale", ["b = a + 1", "a = 1"], (("run", 1), ("run", 0), ("run", 1)), stale=(0,)),
    case("star import read", ["from math import *", "r = sqrt(4)"]),
    case(
        "star import rebinds",
        ["pi = 3", "r = pi * 2", "from math import *"],
        stale=(1,),
        unknowable="a star import binds names only the module knows: which ones is not in the cell",
    ),
    case("%run defines", ["%run " + HELPER_FILE, "w = z + 1"]),
    case(
        "%run rebinds",
        ["z = 1", "w = z + 1", "%run " + HELPER_FILE],
        stale=(1,),
        unknowable="%run binds the names another file defines: the cell does not list them",
    ),
    case("globals() write", ["globals()['g'] = 1", "h = g + 1", "globals()['g'] = 2"], stale=(1,)),
    case("globals() read", ["g = 1", "h = globals()['g'] + 1", "g = 2"], stale=(1,)),
    case(
        "exec rebinds",
        ["exec('q = 1')", "r = q + 1", "exec('q = 2')"],
        stale=(1,),
        unknowable="exec of a string binds what the string says, at run time",
    ),
    case("deleted definer", ["x = 1", "y = x + 1"], (("run", 0), ("run", 1), ("delete", 0)), hidden=(1,)),
    case("definer edited away", ["x = 1", "y = x * 2"], (("run", 0), ("run", 1), ("edit", 0, "x2 = 1")), stale=(0, 1)),
)
