"""What a call touches outside the kernel, by table: file writes, network, shell and installs.
Calls are matched on their dotted name after import aliases are resolved (`np.save` ->
`numpy.save`, `from os import remove` -> `os.remove`); methods on unknown objects by their name
when it is unambiguous (`to_csv`, `savefig`, `write_text`)."""

from __future__ import annotations

import ast

from agent_core.impact.known_calls import (
    CHDIR_FUNCTIONS,
    DEFAULT_ALIASES,
    FILE_FUNCTIONS,
    HANDLE_FUNCTIONS,
    MUTATING_FUNCTIONS,
    NETWORK_METHODS,
    NETWORK_MODULES,
    OPEN_FUNCTIONS,
    PATH_CONSTRUCTORS,
    PATH_KEYWORDS,
    PATH_METHODS,
    PATH_ONLY_METHODS,
    SHELL_FUNCTIONS,
    SHUTIL_READ_ONLY,
    SPARK_WRITERS,
    TWO_PATH_FUNCTIONS,
    URL_SCHEMES,
    URL_TEXT_CALLS,
    WRITER_METHODS,
)
from agent_core.impact.magics import command_effects, shorten


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def resolve(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    full = aliases.get(head, DEFAULT_ALIASES.get(head, head))
    return f"{full}.{rest}" if rest else full


def describe(node: ast.AST, limit: int = 80) -> str:
    """A path or argument as the user wrote it: a string's value, else the expression's source."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        value = node.value.decode("utf-8", "replace") if isinstance(node.value, bytes) else node.value
        return shorten(value, limit)
    try:
        return shorten(ast.unparse(node), limit)
    except (ValueError, RecursionError):  # pragma: no cover - unparse of odd trees
        return "<expression>"


def _argument(call: ast.Call, index: int, keywords: tuple[str, ...] = PATH_KEYWORDS) -> ast.AST | None:
    if index < len(call.args) and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return keyword.value
    return None


def _writes_mode(call: ast.Call, index: int) -> bool | None:
    """True/False for a literal mode, None when it cannot be read (a variable)."""
    mode = _argument(call, index, ("mode", "flags"))
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(flag in mode.value for flag in "wax+")
    if isinstance(mode, ast.Constant):
        return False
    return None


def _is_file_mode(node: ast.AST | None) -> bool:
    """A literal like "w", "rb", "a+": tells `path.open("w")` from `webbrowser.open(url)`."""
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and 0 < len(node.value) <= 4
        and set(node.value) <= set("rwabxtU+")
    )


def _os_open_writes(call: ast.Call) -> bool:
    flags = _argument(call, 1, ("flags",))
    text = ast.unparse(flags) if flags is not None else ""
    return any(flag in text for flag in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"))


def _is_path_expression(node: ast.AST, aliases: dict[str, str]) -> bool:
    if isinstance(node, ast.Call):
        name = dotted(node.func)
        return name is not None and resolve(name, aliases) in PATH_CONSTRUCTORS | {"pathlib.Path"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _is_path_expression(node.left, aliases)
    return False


def _describe_path(node: ast.AST, aliases: dict[str, str]) -> str:
    """`Path("a.txt")` -> `a.txt`; anything else as written."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and _is_path_expression(node, aliases):
        return describe(node.args[0])
    return describe(node)


def _command_text(node: ast.AST) -> str | None:
    """The command of `subprocess.run(["pip", "install", x])` or `os.system("ls")` as text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        words = [describe(item, 60) for item in node.elts[:50]]
        return " ".join(words)
    if isinstance(node, ast.JoinedStr):
        return describe(node, 200)
    return None


def _urls(call: ast.Call) -> list[str]:
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    found = []
    for value in values:
        text = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
        if isinstance(value, ast.JoinedStr) and value.values and isinstance(value.values[0], ast.Constant):
            text = str(value.values[0].value)
        if text and text.strip().lower().startswith(URL_SCHEMES):
            found.append(shorten(text.strip(), 100))
    return found


def _file_effects(
    call: ast.Call, full: str | None, method: str | None, aliases: dict[str, str], bound: frozenset[str]
) -> list[str]:
    if full in OPEN_FUNCTIONS:
        if full == "os.open":
            return [describe(call.args[0])] if call.args and _os_open_writes(call) else []
        writes, target = _writes_mode(call, 1), _argument(call, 0)
        if writes is False or target is None:
            return []
        return [describe(target) if writes else f"{describe(target)} (mode not known)"]
    if method == "open" and isinstance(call.func, ast.Attribute) and _is_file_mode(_argument(call, 0, ("mode",))):
        return [_describe_path(call.func.value, aliases)] if _writes_mode(call, 0) else []  # Path(...).open("w")
    if full in FILE_FUNCTIONS:
        target = _argument(call, FILE_FUNCTIONS[full])
        if target is None or (isinstance(target, ast.Call) and dotted(target.func) in OPEN_FUNCTIONS):
            return []  # the open() call is reported itself
        if full in HANDLE_FUNCTIONS and isinstance(target, ast.Name) and target.id in bound:
            return []  # a handle this cell opened: its open() is the finding
        return [describe(target)]
    if full in TWO_PATH_FUNCTIONS or (full and full.startswith("shutil.") and full[7:] not in SHUTIL_READ_ONLY):
        first, second = _argument(call, 0, ("src", "path")), _argument(call, 1, ("dst",))
        if first is not None and second is not None:
            return [f"{describe(first, 50)} -> {describe(second, 50)}"]
        return [describe(first)] if first is not None else [full]
    if method is None or not isinstance(call.func, ast.Attribute):
        return []
    receiver = call.func.value
    if method in PATH_METHODS or (method in PATH_ONLY_METHODS and _is_path_expression(receiver, aliases)):
        return [_describe_path(receiver, aliases)]
    if method in SPARK_WRITERS and any(
        isinstance(node, ast.Attribute) and node.attr in ("write", "writeStream") for node in ast.walk(receiver)
    ):
        target = _argument(call, 0)
        return [describe(target) if target is not None else describe(receiver)]
    if method in WRITER_METHODS:
        target = _argument(call, 1 if method == "dump" else 0)
        if target is not None:
            return [
                f"table {describe(target)}" if method in ("to_sql", "saveAsTable", "insertInto") else describe(target)
            ]
    return []


def call_effects(call: ast.Call, aliases: dict[str, str], bound: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(category, name) pairs for files_written, network, shell and installs; `bound` holds the
    names the cell itself bound (a file handle it opened)."""
    name = dotted(call.func)
    full = resolve(name, aliases) if name else None
    method = call.func.attr if isinstance(call.func, ast.Attribute) else None
    effects = [("files_written", path) for path in _file_effects(call, full, method, aliases, bound)]
    if full in CHDIR_FUNCTIONS:
        effects.append(("shell", describe(call)))  # the working directory: later relative paths change
    if full in SHELL_FUNCTIONS:
        command = _command_text(call.args[0]) if call.args else None
        label = shorten(command) if command else name or "subprocess"
        effects.extend(command_effects(command or "", label) if command else [("shell", label)])
    network_name = full and next(
        (module for module in NETWORK_MODULES if full == module or full.startswith(module + ".")), None
    )
    urls = _urls(call)
    if network_name or (method in NETWORK_METHODS):
        effects.append(("network", urls[0] if urls else shorten(name or method or "network call")))
    elif urls and full not in SHELL_FUNCTIONS and (method or name or "").rsplit(".", 1)[-1] not in URL_TEXT_CALLS:
        effects.extend(("network", url) for url in urls)
    return effects


def mutated_argument(call: ast.Call, aliases: dict[str, str]) -> ast.AST | None:
    """The argument a module function changes in place (`random.shuffle(x)` -> x), if any."""
    name = dotted(call.func)
    if name is None or not call.args:
        return None
    full = resolve(name, aliases)
    if full in MUTATING_FUNCTIONS:
        return call.args[0]
    if "." in name and full.rsplit(".", 1)[-1].endswith("_") and not full.rsplit(".", 1)[-1].startswith("_"):
        head = name.split(".", 1)[0]  # torch.nn.init.xavier_uniform_(w): only on a module path
        if head in aliases or head in DEFAULT_ALIASES or head in ("torch", "nn", "init"):
            return call.args[0]
    return None
