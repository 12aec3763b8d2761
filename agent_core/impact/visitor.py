"""The scope-aware walk over a cell's syntax tree. Kernel-level bindings are `assigns`; names bound
inside functions, lambdas, comprehensions and class bodies are not (a `global` declaration makes
them kernel bindings again); names loaded from outside are `reads`; in-place changes of names the
cell did not bind itself are `mutates`, reported on the root name (`self.a.b[0] = 1` -> `self`);
calls that may change such a name by means the analysis cannot tell from the code alone (a method
it does not know, `for v in it`, `list(it)`) are `touched`: only the value's type in the kernel
says whether they change it (`gen.send(None)` advances a generator, `df.head()` changes nothing).
Side effects in a function body are reported even though the call may come later: conservative."""

from __future__ import annotations

import ast
from collections.abc import Callable

from agent_core.impact import calls, magics
from agent_core.impact.known_names import (
    CODE_RUNNERS,
    CONSUMERS,
    IPYTHON_RUNNERS,
    ITERATION_WRAPPERS,
    KNOWN_MODULES,
    MAX_MAGIC_DEPTH,
    MUTATING_METHODS,
    NAMESPACE_FUNCTIONS,
    UNKNOWN_FUNCTIONS,
)
from agent_core.impact.scopes import (
    BUILTIN_NAMES,
    Scope,
    Sink,
    bound_in_body,
    literal_str,
    parameters,
    root_of,
    stored_names,
)


class ImpactVisitor(ast.NodeVisitor):
    def __init__(self, sink: Sink, python_cell: Callable[[str, int], ast.Module | None]) -> None:
        self.sink = sink
        self.python_cell = python_cell  # (code, first line) -> its tree, lines placed in the cell
        self.scopes: list[Scope] = [Scope("module")]
        self.assigned: set[str] = set()  # kernel names bound so far in the cell
        self.imported: set[str] = set()  # ... of which by an import statement
        self.modules: set[str] = set()  # ... of which by `import x` (certainly a module)
        self.aliases: dict[str, str] = {}
        self.global_writers: dict[str, tuple[str, ...]] = {}
        self.depth = 0

    # -- names and scopes ------------------------------------------------------------------
    def _is_local(self, name: str) -> bool:
        for index in range(len(self.scopes) - 1, 0, -1):
            scope = self.scopes[index]
            if name in scope.declared_global:
                return False
            if scope.kind == "class" and index != len(self.scopes) - 1:
                continue  # a class body's names are not visible in its methods
            if name in scope.names:
                return True
        return False

    def _kernel_name(self, name: str) -> bool:
        """Whether binding `name` here binds a kernel variable."""
        scope = self.scopes[-1]
        return scope.kind == "module" or name in scope.declared_global

    def _binding_scope(self, name: str, walrus: bool = False) -> Scope:
        """The scope a binding of `name` here lands in (the module's for a `global` name)."""
        scopes = [scope for scope in self.scopes if scope.kind != "comprehension"] if walrus else self.scopes
        scope = scopes[-1]
        return self.scopes[0] if name in scope.declared_global else scope

    def bind(self, name: str, line: int, *, walrus: bool = False) -> None:
        scope = self._binding_scope(name, walrus)
        scope.views.pop(name, None)
        if scope.kind != "module":
            scope.names.add(name)
            return
        self.sink.add("assigns", name, line)
        if scope is self.scopes[-1]:  # not a function's `global` (it may never be called)
            self.assigned.add(name)

    def _view(self, name: str) -> str | None:
        """The earlier variable `name` refers into (`row` in `for row in rows`), if it is one."""
        for scope in reversed(self.scopes):
            if name in scope.views:
                return scope.views[name]
            if name in scope.names and scope.kind != "module":
                return None
        return None

    def _source(self, node: ast.AST, through_calls: bool) -> str | None:
        """The variable from before the cell that `node` refers into, if any: `rows[0]`,
        `cfg.section`; with `through_calls`, also `d.items()`, `enumerate(rows)` (iteration)."""
        while True:
            node = root_of(node)
            if not (through_calls and isinstance(node, ast.Call)):
                break
            if isinstance(node.func, ast.Attribute):
                node = node.func.value
            elif isinstance(node.func, ast.Name) and node.func.id in ITERATION_WRAPPERS and node.args:
                node = node.args[0]
            else:
                return None
        if not isinstance(node, ast.Name) or self._is_module(node):
            return None
        view = self._view(node.id)
        if view or self._is_local(node.id) or (node.id in self.assigned and node.id not in self.imported):
            return view
        return node.id

    def _refer(self, target: ast.AST, value: ast.AST, through_calls: bool) -> None:
        source = self._source(value, through_calls)
        if source is None:
            return
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self._binding_scope(node.id).views[node.id] = source

    def read(self, name: str, line: int) -> None:
        if name in BUILTIN_NAMES or name in self.assigned or self._is_local(name):
            return
        self.sink.add("reads", name, line)

    def _is_module(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and (
            node.id in self.modules or (node.id in KNOWN_MODULES and node.id not in self.assigned)
        )

    def mutate(self, target: ast.AST, line: int) -> None:
        root = root_of(target)
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id in NAMESPACE_FUNCTIONS:
            self.sink.add("unknown", f"writes through {root.func.id}()", line)
        elif isinstance(root, ast.Name) and self._view(root.id):
            self.sink.add("mutates", self._view(root.id) or root.id, line)
        elif isinstance(root, ast.Name) and not self._is_local(root.id):
            if root.id in self.assigned and root.id not in self.imported:
                return  # a value the cell made itself: it is among the assigns already
            self.sink.add("mutates", root.id, line)

    def touch(self, target: ast.AST, line: int) -> None:
        """`target` may be changed by this call (a method the analysis does not know, an iteration):
        the name from before the cell it belongs to is `touched` (a module's functions are calls)."""
        root = root_of(target)
        if not isinstance(root, ast.Name) or self._is_module(root):
            return
        view = self._view(root.id)
        if view:
            self.sink.add("touched", view, line)
        elif not self._is_local(root.id) and root.id not in self.assigned:
            self.sink.add("touched", root.id, line)

    # -- statements --------------------------------------------------------------------------
    def _target(self, target: ast.AST, line: int) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, line)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                self._target(item, line)
        elif isinstance(target, ast.Starred):
            self._target(target.value, line)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            self.mutate(target, line)
            self.visit(target.value)
            if isinstance(target, ast.Subscript):
                self.visit(target.slice)
        else:
            self.visit(target)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._target(target, node.lineno)
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._refer(target, node.value, through_calls=False)  # `part = df["a"]` (a view)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._target(node.target, node.lineno)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.read(node.target.id, node.lineno)
        self._target(node.target, node.lineno)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.bind(node.target.id, node.lineno, walrus=True)

    def _loop(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self.touch(node.iter, node.lineno)  # `for v in it` advances an iterator
        self._target(node.target, node.lineno)
        self._refer(node.target, node.iter, through_calls=True)  # `for row in rows`: row is in rows
        for statement in [*node.body, *node.orelse]:
            self.visit(statement)

    visit_For = visit_AsyncFor = _loop

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._target(item.optional_vars, node.lineno)
        for statement in node.body:
            self.visit(statement)

    visit_With = visit_AsyncWith = _with

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.aliases[bound] = alias.name if alias.asname else bound
            self.bind(bound, node.lineno)
            if self._kernel_name(bound):
                self.imported.add(bound)
                self.modules.add(bound)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name == "*":
                self.sink.add("unknown", f"from {node.module or '.'} import * (binds names not listed)", node.lineno)
                continue
            bound = alias.asname or alias.name
            if node.module and not node.level:
                self.aliases[bound] = f"{node.module}.{alias.name}"
            self.bind(bound, node.lineno)
            if self._kernel_name(bound):
                self.imported.add(bound)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._delete(target, node.lineno)

    def _delete(self, target: ast.AST, line: int) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                self._delete(item, line)
        elif isinstance(target, ast.Name):
            if self._kernel_name(target.id) and not self._is_local(target.id):
                self.sink.add("deletes", target.id, line)
                self.assigned.discard(target.id)
        else:
            self._target(target, line)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.bind(node.name, node.lineno)
        for statement in node.body:
            self.visit(statement)

    def _capture(self, node: ast.MatchAs | ast.MatchStar) -> None:
        if node.name:
            self.bind(node.name, node.lineno)
        self.generic_visit(node)

    visit_MatchAs = visit_MatchStar = _capture

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.bind(node.rest, node.lineno)
        self.generic_visit(node)

    # -- scopes ------------------------------------------------------------------------------
    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expression in [*node.decorator_list, *node.args.defaults, *filter(None, node.args.kw_defaults)]:
            self.visit(expression)
        self.bind(node.name, node.lineno)
        bound, declared = bound_in_body(node.body)
        self.scopes.append(Scope("function", bound | parameters(node.args), declared))
        for statement in node.body:
            self.visit(statement)
        self.scopes.pop()
        written = sorted(name for name in declared if name in bound or name in stored_names(node.body))
        if written and self._kernel_name(node.name):
            self.global_writers[node.name] = tuple(written)

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for expression in [*node.args.defaults, *filter(None, node.args.kw_defaults)]:
            self.visit(expression)
        self.scopes.append(Scope("lambda", parameters(node.args)))
        self.visit(node.body)
        self.scopes.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in [*node.decorator_list, *node.bases, *(keyword.value for keyword in node.keywords)]:
            self.visit(expression)
        self.scopes.append(Scope("class"))
        for statement in node.body:
            self.visit(statement)
        self.scopes.pop()
        self.bind(node.name, node.lineno)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        self.visit(node.generators[0].iter)  # evaluated in the enclosing scope
        self.touch(node.generators[0].iter, getattr(node.generators[0].iter, "lineno", 1))
        self.scopes.append(Scope("comprehension"))
        for index, generator in enumerate(node.generators):
            if index:
                self.visit(generator.iter)
                self.touch(generator.iter, getattr(generator.iter, "lineno", 1))
            self._target(generator.target, getattr(generator.target, "lineno", 1))
            for condition in generator.ifs:
                self.visit(condition)
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for part in parts:
            self.visit(part)
        self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # -- expressions -------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.read(node.id, node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        line = node.lineno
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "get_ipython"
        ):
            self._ipython(node, func.attr, line)
            return
        name = calls.dotted(func)
        local = isinstance(func, ast.Name) and self._is_local(func.id)
        if isinstance(func, ast.Name) and not local:
            self._builtin_call(node, func.id, line)
        if name and calls.resolve(name, self.aliases) in UNKNOWN_FUNCTIONS:
            self.sink.add("unknown", magics.shorten(ast.unparse(node), 60), line)
        bound = frozenset(self.assigned).union(*(scope.names for scope in self.scopes[1:]))
        for category, text in calls.call_effects(node, self.aliases, bound):
            self.sink.add(category, text, line)
        if isinstance(func, ast.Attribute):
            self._method(node, func, line)
        changed = calls.mutated_argument(node, self.aliases)
        if changed is not None:
            self.mutate(changed, line)
        for keyword in node.keywords:
            if keyword.arg == "out" and isinstance(keyword.value, (ast.Name, ast.Attribute, ast.Subscript)):
                self.mutate(keyword.value, line)
        self.generic_visit(node)

    def _builtin_call(self, node: ast.Call, name: str, line: int) -> None:
        if name in CODE_RUNNERS:
            self.sink.add("unknown", magics.shorten(ast.unparse(node), 60), line)
        elif name in ("setattr", "delattr") and node.args:
            if len(node.args) > 1 and literal_str(node.args[1]) is not None:
                self.mutate(node.args[0], line)
            else:
                self.sink.add("unknown", magics.shorten(ast.unparse(node), 60), line)
        elif name == "getattr" and len(node.args) > 1 and literal_str(node.args[1]) is None:
            self.sink.add("unknown", magics.shorten(ast.unparse(node), 60), line)
        elif name == "next" and node.args:
            self.mutate(node.args[0], line)  # advances the iterator
        elif name in CONSUMERS:
            for argument in node.args:
                self.touch(argument.value if isinstance(argument, ast.Starred) else argument, line)
        elif name in self.global_writers:
            self.sink.add("unknown", f"{name}() sets globals: {', '.join(self.global_writers[name])}", line)

    def _method(self, node: ast.Call, func: ast.Attribute, line: int) -> None:
        method, receiver = func.attr, func.value
        if method in IPYTHON_RUNNERS and not self._is_module(receiver):
            self.sink.add("unknown", magics.shorten(ast.unparse(node), 60), line)
            return
        inplace = any(
            keyword.arg == "inplace"
            and not (isinstance(keyword.value, ast.Constant) and keyword.value.value in (False, None))
            for keyword in node.keywords
        )
        underscore = method.endswith("_") and not method.startswith("_") and len(method) > 1
        if underscore and self._is_module(root_of(receiver)):
            return  # torch.nn.init.zeros_(w): a module function, it changes its argument (calls.py)
        if (method in MUTATING_METHODS or inplace or underscore) and not self._is_module(receiver):
            self.mutate(receiver, line)
        else:
            self.touch(receiver, line)  # `gen.send(None)`, `df.head()`: the value's type decides

    def _ipython(self, node: ast.Call, attr: str, line: int) -> None:
        if attr == "show_usage" and not node.args:
            return  # a lone `?`: IPython's help text
        literals = [literal_str(argument) for argument in node.args]
        texts = [text for text in literals if text is not None]
        if len(texts) < len(literals) or not texts or node.keywords:
            self.sink.add("unknown", magics.shorten(ast.unparse(node), 60), line)
            return
        if attr in ("system", "getoutput"):
            for category, text in magics.command_effects(texts[0], f"!{texts[0]}"):
                self.sink.add(category, text, line)
        elif attr == "run_line_magic" and len(texts) == 2:
            self.apply_magic(magics.line_magic(texts[0], texts[1]), line, f"%{texts[0]}")
        elif attr == "run_cell_magic" and len(texts) == 3:
            self.apply_magic(magics.cell_magic(texts[0], texts[1], texts[2]), line, f"%%{texts[0]}")
        else:
            self.sink.add("unknown", magics.shorten(ast.unparse(node), 60), line)

    def apply_magic(self, effect: magics.MagicEffect, line: int, label: str) -> None:
        for category, text, offset in effect.effects:
            self.sink.add(category, text, line + offset)
        for name in effect.assigns:
            self.bind(name, line)
        for name in effect.deletes:
            self.sink.add("deletes", name, line)
        if effect.python is not None and effect.python.strip():
            self.python_code(effect.python, line + effect.python_line_offset, label)

    def python_code(self, code: str, first_line: int, label: str) -> None:
        """Code a magic runs in the kernel (`%time df.sort(...)`), walked like the cell's own."""
        if self.depth >= MAX_MAGIC_DEPTH:
            self.sink.add("unknown", f"{label}: nested too deeply to analyse", first_line)
            return
        tree = self.python_cell(code, first_line)
        if tree is None:
            self.sink.add("unknown", f"{label}: code that does not parse", first_line)
            return
        self.depth += 1
        try:
            for statement in tree.body:
                self.visit(statement)
        finally:
            self.depth -= 1
