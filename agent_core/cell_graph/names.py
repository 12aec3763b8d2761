"""What one code cell does to the kernel's names, for the dependency graph: the names it reads and
writes when it runs, apart from what its functions (and classes' methods) read and write only when
they are called. Built on the static analysis of `agent_core.impact`; a `def f(): return a` cell
does not depend on `a`, the cell that calls `f()` does. Pure, cached by source, never raises."""

from __future__ import annotations

import ast
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field

from agent_core.impact.analysis import CodeImpact, analyze_code
from agent_core.impact.scopes import BUILTIN_NAMES, literal_str
from agent_core.impact.syntax import TooComplex, split_cell_magic, to_python

CACHE_SIZE = 4096  # cell sources whose analysis is kept: a 500-cell notebook's edits stay warm


@dataclass(frozen=True)
class Deferred:
    """What a function (or a class's methods) reads and writes when called, not when defined."""

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CellNames:
    """A cell's effect on names when it runs. `writes` are rebinds and in-place changes; `deletes`
    unbind; `deferred` maps a function or class the cell defines to what calling it touches.
    `binds_unknown` says it may bind names no analysis can list (a star import, %run, exec)."""

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    mutates: frozenset[str] = frozenset()  # of `writes`, those only changed in place, not rebound
    deletes: frozenset[str] = frozenset()
    deferred: dict[str, Deferred] = field(default_factory=dict)
    binds_unknown: str | None = None  # why, in words, when it may


def _variables(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset(name for name in names if name.isidentifier() and name not in BUILTIN_NAMES)


def _python(code: str) -> ast.Module | None:
    if split_cell_magic(code) is not None:
        return None  # a cell magic's body is not Python (the impact analysis reads it by table)
    try:
        source = to_python(code)
    except (SyntaxError, ValueError, TooComplex):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None


class _Hollow(ast.NodeTransformer):
    """Functions and lambdas with their bodies taken out: what is left runs when the cell runs
    (decorators, defaults, class bodies)."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        node.body = [ast.Pass()]
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        node.body = [ast.Pass()]
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node.args = self.visit(node.args)
        node.body = ast.Constant(None)
        return node


def _globals_keys(tree: ast.Module) -> tuple[set[str], set[str], bool]:
    """`globals()["name"]` with a literal key: (names read, names written) through it, and whether
    every use of globals() in the cell is such a subscript (then nothing unknown is bound)."""
    reads: set[str] = set()
    writes: set[str] = set()
    calls = sum(1 for node in ast.walk(tree) if _is_globals_call(node))
    keyed = 0
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        call = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "globals"):
            continue
        key = literal_str(node.slice)
        if key is not None and key.isidentifier():
            keyed += 1
            (writes if isinstance(node.ctx, (ast.Store, ast.Del)) else reads).add(key)
    return reads, writes, keyed == calls


def _unknown_binding(impact: CodeImpact, literal_globals: bool) -> str | None:
    if impact.parse_error:
        return None  # a cell that does not parse raises before it binds anything
    for finding in impact.unknown:
        if literal_globals and finding.name == "writes through globals()":
            continue  # every key was a literal: the names are known
        return finding.name
    return None


def _defined_names(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _deferred(tree: ast.Module, immediate: CodeImpact) -> dict[str, Deferred]:
    """Per top-level function, class or lambda-holding name: what its body touches beyond what
    the cell itself touches when it runs."""
    now_reads, now_writes = set(immediate.names("reads")), set(immediate.changed_names())
    found: dict[str, Deferred] = {}
    for node in tree.body:
        names = _defined_names(node)
        if not names or not any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for n in ast.walk(node)
        ):
            continue
        impact = analyze_code(ast.unparse(node))
        reads = _variables(impact.names("reads")) - now_reads - names
        writes = _variables(impact.changed_names()) - now_writes - names
        if reads or writes:
            for name in names:
                found[name] = Deferred(reads, writes)
    return found


def _analyse(code: str) -> CellNames:
    impact = analyze_code(code)
    tree = _python(code)
    if tree is None:
        return CellNames(
            reads=_variables(impact.names("reads")),
            writes=_variables(impact.names("assigns") + impact.names("mutates")),
            mutates=_variables(impact.names("mutates")) - _variables(impact.names("assigns")),
            deletes=_variables(impact.names("deletes")),
            binds_unknown=_unknown_binding(impact, False),
        )
    key_reads, key_writes, literal = _globals_keys(tree)
    deferred: dict[str, Deferred] = {}
    hollow = impact
    if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for n in ast.walk(tree)):
        hollow = analyze_code(ast.unparse(_Hollow().visit(_python(code) or tree)))
        deferred = _deferred(tree, hollow)
    return CellNames(
        reads=_variables(hollow.names("reads")) | key_reads,
        writes=_variables(hollow.names("assigns") + hollow.names("mutates")) | key_writes,
        mutates=_variables(hollow.names("mutates")) - _variables(hollow.names("assigns")) - key_writes,
        deletes=_variables(hollow.names("deletes")),
        deferred=deferred,
        binds_unknown=_unknown_binding(impact, literal),
    )


def _is_globals_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals"


_CACHE: OrderedDict[str, CellNames] = OrderedDict()


def cell_names(code: str) -> CellNames:
    """The names `code` reads and writes when it runs (cached by source). Never raises."""
    known = _CACHE.get(code)
    if known is not None:
        _CACHE.move_to_end(code)
        return known
    try:
        names = _analyse(code)
    except (RecursionError, MemoryError, TooComplex):
        names = CellNames(binds_unknown="cell too large to analyse")
    _CACHE[code] = names
    if len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return names
