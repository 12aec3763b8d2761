"""Scopes and names for the impact walk: what a function body binds, a parameter list, the root
variable of `a.b[0].c`, the names that are never a kernel variable's read (builtins, IPython's)."""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

IPYTHON_NAMES = frozenset(
    {
        "get_ipython",
        "display",
        "In",
        "Out",
        "exit",
        "quit",
        "_",
        "__",
        "___",
        "_i",
        "_ii",
        "_iii",
        "_oh",
        "_ih",
        "_dh",
        "__name__",
        "__file__",
        "__doc__",
        "__builtins__",
        "__spec__",
        "__loader__",
        "__package__",
    }
)
BUILTIN_NAMES = frozenset(dir(builtins)) | IPYTHON_NAMES


@dataclass
class Scope:
    kind: str  # "module", "function", "lambda", "class", "comprehension"
    names: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    views: dict[str, str] = field(default_factory=dict)  # name -> the earlier variable it refers into


class Sink:
    """Findings per category in the order met, one per (category, name), the first line kept."""

    def __init__(self) -> None:
        self.found: dict[str, dict[str, int]] = {}

    def add(self, category: str, name: str, line: int) -> None:
        self.found.setdefault(category, {}).setdefault(name, max(1, int(line or 1)))


def bound_in_body(body: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """Names a function body binds (Python makes them local everywhere in it) and its `global`s;
    nested functions, classes and lambdas keep their own names."""
    bound: set[str] = set()
    declared: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            (declared if isinstance(node, ast.Global) else bound).update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            stack.extend(node.decorator_list)
            continue
        elif isinstance(node, ast.Lambda):
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return bound - declared, declared


def parameters(arguments: ast.arguments) -> set[str]:
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
    return {arg.arg for arg in every}


def root_of(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


def literal_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def stored_names(body: list[ast.stmt]) -> set[str]:
    return {
        node.id
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))
    }
