"""The wire contract is defined once, as Pydantic models (agent_core/contract, each tool's argument
model). These fail when a generated file (OpenAPI, contract.gen.ts, plugin.json) is stale, when the
server's routes or what it really sends drift from the models, or when a tool's arguments drift
from API.md."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from agent_core.contract import EVENT_TYPES, make_event, validate_event
from agent_core.contract.answers import ErrorBody
from agent_core.contract.choices import EventErrorKind, LLMErrorKind, RouteErrorKind, UndoRefusal
from agent_core.contract.events import EventType
from agent_core.contract.routes import ROUTES
from agent_core.contract_files.openapi import openapi_json
from agent_core.loop.agents import AGENTS
from agent_core.tools import TOOLS
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.sse import parse_sse
from tests.conftest import Api, of_type

ROOT = Path(__file__).resolve().parent.parent

# API.md, "Tools the model sees": names and argument names.
API_TOOL_ARGS = {
    "run_cell": {"code", "description"},
    "add_markdown": {"content"},
    "write_todos": {"todos"},
    "final_answer": {"answer", "next_items"},
    "execute_command": {"command", "stdin", "timeout", "cwd"},
    "check_resource": {"files", "dataframes"},
    "diagnostics": {"code", "path"},
    "read_file": {"path", "start_line", "end_line"},
    "list_files": {"path", "recursive"},
    "write_file": {"path", "content", "overwrite"},
    "edit_file": {"path", "edits"},
    "search_workspace": {"pattern", "path", "file_types"},
    "search_notebooks": {"pattern", "notebook_path"},
    "load_skill": {"name"},
    "task": {"agent", "description"},
    "read_notebook": {"path", "start", "end"},  # API.md, "Additions"
    "edit_cell": {"cell_id", "index", "source"},  # index: issue 44
    "restart_kernel": set(),
    "search_knowledge": {"query", "k"},
    "sql_query": {"database", "sql"},
    "verify_notebook": {"path"},
    "explore": {"code"},
    "rerun_stale": {"cell_ids"},  # issue 42
}


def test_generated_files_are_what_the_models_produce() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_contract.py"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_tools_have_the_api_names_and_arguments() -> None:
    assert set(TOOLS) == set(API_TOOL_ARGS)
    for name, spec in TOOLS.items():
        assert set(spec.args.model_fields) == API_TOOL_ARGS[name], name
        assert set(spec.parameters["properties"]) == API_TOOL_ARGS[name], name


def test_tool_schemas_are_plain_for_the_model() -> None:
    """No $refs (some servers' grammars follow none), no pydantic titles, no "string or null"."""
    for name, spec in TOOLS.items():
        text = str(spec.parameters)
        assert "$ref" not in text and "$defs" not in text and "'title': '" not in text.replace("'title': {", ""), name
        assert "'null'" not in text, name
        assert set(spec.parameters.get("required", [])) <= set(spec.parameters["properties"]), name


def test_risky_tools_need_approval_by_default() -> None:
    risky = {name for name, spec in TOOLS.items() if spec.needs_approval}
    assert risky == {
        "run_cell",
        "execute_command",
        "write_file",
        "edit_file",
        "edit_cell",
        "restart_kernel",
        "sql_query",
        "verify_notebook",
        "explore",  # where no sandbox can be had: ToolSpec.sandboxed waives it per call
        "rerun_stale",  # issue 42: one approval for the chain
    }


def test_every_agent_uses_registered_tools() -> None:
    for agent in AGENTS.values():
        assert set(agent.tools) <= set(TOOLS), agent.name


def test_tool_argument_errors_speak_to_the_model() -> None:
    todos = TOOLS["write_todos"]
    assert todos.check_args({"items": []}) == "write_todos needs the argument 'todos'"
    assert todos.check_args({"todos": [], "extra": 1}) == "write_todos has no argument 'extra'; it takes ['todos']"
    assert todos.check_args({"todos": "x"}) == "write_todos: argument 'todos' must be of type array"
    assert todos.check_args([]) == "write_todos takes a JSON object of arguments"
    assert "edits[0] has unknown keys ['extra']" in str(
        TOOLS["edit_file"].check_args({"path": "a", "edits": [{"old": "a", "new": "b", "extra": 1}]})
    )
    assert TOOLS["final_answer"].parse({"answer": "a", "next_items": ["Plot it"]}).model_dump()["next_items"] == [
        {"title": "Plot it", "prompt": "Plot it"}
    ]


def test_make_event_checks_what_is_emitted() -> None:
    assert make_event("token", text="hi") == {"type": "token", "text": "hi"}
    assert (
        make_event("agent_switch", task_id="t1", **{"from": "planner", "to": "researcher", "task": "x"})["from"]
        == "planner"
    )
    with pytest.raises(ValidationError):
        make_event("token", text=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        make_event("tool_result", id="c", name="run_cell", status="ok", summary="", stoped=True)
    with pytest.raises(ValidationError):
        make_event("run_finished", status="done")
    with pytest.raises(ValueError):
        make_event("tokens", text="hi")  # type: ignore[arg-type]
    assert set(get_args(EventType)) == {*EVENT_TYPES, "caught_up"}


# -- error kinds: each one raised or emitted is listed in the contract (agent_core/contract/choices.py)

# The classes whose `kind` a route answer or an event carries, and where their own signature takes it.
ERROR_ROOTS = {"CellwrightError": ("route", 1), "UndoRefused": ("undo", 1), "LLMError": ("llm", 0)}


def _kinds_of(alias: Any) -> set[str]:
    """The strings of a Literal alias, through nested aliases and unions."""
    value = getattr(alias, "__value__", alias)
    args = get_args(value)
    if not args:
        return set()
    if all(isinstance(arg, str) for arg in args):
        return set(args)
    return set().union(*(_kinds_of(arg) for arg in args))


def _strings(node: ast.AST | None) -> list[str]:
    """The string constants an expression can be: `"a"`, `"a" if x else "b"`, `x or "a"`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [text for value in node.values for text in _strings(value)]
    return []


def _name(node: ast.AST | None) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _trees() -> list[tuple[str, ast.Module]]:
    """agent_core and jupyter_ext, and the kernel-side sources they keep as a `SOURCE` string."""
    trees = []
    for folder in ("agent_core", "jupyter_ext"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            trees.append((str(path.relative_to(ROOT)), tree))
            for stmt in tree.body:
                if isinstance(stmt, ast.Assign) and [_name(t) for t in stmt.targets] == ["SOURCE"]:
                    trees += [(f"{path.relative_to(ROOT)} SOURCE", ast.parse(text)) for text in _strings(stmt.value)]
    return trees


def _kinds_in_code() -> list[tuple[str, str, str]]:
    """(family, kind, where) for each string literal the code gives as an error kind: a kind given
    to an error class (positionally where its own signature takes it, or `kind=`), a `kind` class
    attribute or `__init__` default of one, make_event("error", kind=...), an error answer's
    {"error": ..., "message": ...}, the kernel's undo refusals ({"ok": ..., "kind": ...}), the
    contract's field_kinds; and, where one of those is a local `kind`, what the function assigns to it."""
    trees = _trees()
    bases: dict[str, list[str | None]] = {}
    own_init: set[str] = set()
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [_name(base) for base in node.bases]
                if any(isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__" for stmt in node.body):
                    own_init.add(node.name)

    def family_of(name: str | None) -> str | None:
        if name in ERROR_ROOTS:
            return ERROR_ROOTS[name][0]
        return next((family for base in bases.get(name or "", []) if (family := family_of(base))), None)

    def sinks(node: ast.AST) -> list[tuple[str, ast.expr]]:
        """Where `node` makes an expression an error kind, and of which family."""
        if isinstance(node, ast.Call):
            callee = _name(node.func)
            given = [keyword.value for keyword in node.keywords if keyword.arg == "kind"]
            if callee == "make_event":
                return (
                    [("event", value) for value in given] if node.args and _strings(node.args[0]) == ["error"] else []
                )
            family = family_of(callee)
            if family is None:
                return []
            position = next(at for name, at in ERROR_ROOTS.values() if name == family)
            if (callee in ERROR_ROOTS or callee not in own_init) and len(node.args) > position:
                given.append(node.args[position])
            return [(family, value) for value in given]
        if isinstance(node, ast.Dict):
            entries = {
                key.value: value
                for key, value in zip(node.keys, node.values, strict=True)
                if isinstance(key, ast.Constant)
            }
            if {"error", "message"} <= entries.keys():
                return [("route", entries["error"])]
            if {"ok", "kind"} <= entries.keys():
                return [("undo", entries["kind"])]
        return []

    found: list[tuple[str, str, str]] = []
    for path, tree in trees:
        for node in ast.walk(tree):
            where = f"{path}:{getattr(node, 'lineno', '?')}"
            found += [(family, kind, where) for family, value in sinks(node) for kind in _strings(value)]
            if isinstance(node, ast.ClassDef) and (family := family_of(node.name)):
                for stmt in node.body:
                    if isinstance(stmt, ast.Assign | ast.AnnAssign):
                        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                        if "kind" in [_name(t) for t in targets]:
                            found += [(family, kind, where) for kind in _strings(stmt.value)]
                    elif isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                        args = stmt.args.args
                        defaults = dict(
                            zip(
                                [a.arg for a in args[len(args) - len(stmt.args.defaults) :]],
                                stmt.args.defaults,
                                strict=True,
                            )
                        )
                        found += [(family, kind, where) for kind in _strings(defaults.get("kind"))]
            elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if "field_kinds" in [_name(t) for t in targets]:
                    found += [("route", kind, where) for value in node.value.values for kind in _strings(value)]
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                families = {
                    family for inner in ast.walk(node) for family, value in sinks(inner) if _name(value) == "kind"
                }
                for inner in ast.walk(node):
                    if not isinstance(inner, ast.Assign):
                        continue
                    for target in inner.targets:
                        pairs = (
                            zip(target.elts, inner.value.elts, strict=False)
                            if isinstance(target, ast.Tuple) and isinstance(inner.value, ast.Tuple)
                            else [(target, inner.value)]
                        )
                        found += [
                            (family, kind, f"{path}:{inner.lineno}")
                            for name, value in pairs
                            if _name(name) == "kind"
                            for kind in _strings(value)
                            for family in families
                        ]
    return found


def test_every_error_kind_raised_or_emitted_is_in_the_contract() -> None:
    listed = {
        "route": _kinds_of(RouteErrorKind),
        "undo": _kinds_of(UndoRefusal),
        "llm": _kinds_of(LLMErrorKind),
        "event": _kinds_of(EventErrorKind),
    }
    assert listed["undo"] <= listed["route"] and listed["llm"] <= listed["event"]
    found = _kinds_in_code()
    unlisted = sorted(f"{where}: {kind!r} ({family})" for family, kind, where in found if kind not in listed[family])
    assert not unlisted, "error kinds the contract does not list (add them to agent_core/contract/choices.py):\n" + (
        "\n".join(unlisted)
    )
    # The walk sees every kind of each sort (a walk that finds nothing would pass the check above),
    # and the contract lists none that nothing raises or emits.
    assert {kind for _, kind, _ in found} == listed["route"] | listed["event"]


def test_error_answers_and_events_refuse_an_unlisted_kind() -> None:
    make_event("error", kind="kernel_unresponsive", message="busy", retryable=False, kernel_id="k")
    with pytest.raises(ValidationError):
        make_event("error", kind="kernel_asleep", message="busy", retryable=False)
    ErrorBody.model_validate({"error": "path_outside_root", "message": "no"})
    with pytest.raises(ValidationError):
        ErrorBody.model_validate({"error": "path_outside", "message": "no"})


def _route_shape(path: str) -> str:
    return re.sub(r"\{\w+\}", "{}", path)


def test_the_route_table_is_the_servers() -> None:
    from jupyter_ext.handlers import default_handlers

    served = set()
    for pattern, handler in default_handlers:
        path = re.sub(r"\(\?P<\w+>[^)]*\)", "{}", pattern.removeprefix("/cellwright/api/")).replace("\\.", ".")
        served |= {(method, path) for method in ("get", "put", "post", "delete") if method in vars(handler)}
    assert served == {(route.method, _route_shape(route.path)) for route in ROUTES}


# -- what the server really sends fits the models


def _fits(model: Any, data: Any) -> None:
    if isinstance(model, type) and issubclass(model, BaseModel):
        model.model_validate(data)


def _answer_model(method: str, path: str) -> Any:
    def matches(template: str) -> bool:
        return re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", template.replace(".", r"\.")), path) is not None

    route = next(r for r in ROUTES if r.method == method and matches(r.path))
    return next(iter(route.answers.values()))


async def test_a_multi_agent_run_and_every_route_answer_fit_the_contract(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Any
) -> None:
    fake_llm.script(
        tool_call("write_todos", {"todos": [{"content": "Count", "status": "in_progress"}]}, id="p0"),
        tool_call("task", {"agent": "python_developer", "description": "Print 6 * 7."}, id="p1"),
        tool_call("run_cell", {"code": "print(6 * 7)"}, id="d1"),
        text("It prints 42."),
        tool_call("final_answer", {"answer": "**42**", "next_items": [{"title": "More", "prompt": "more"}]}),
    )
    thread = await api.new_thread()
    await api.run(thread, "Count.", mode="multi")
    first = await api.until_finished(thread)
    approval = of_type(first, "approval_required")[0]
    assert approval["task_id"] == "p1" and approval["agent"] == "python_developer"
    for method, path in [("GET", f"threads/{thread}"), ("GET", "threads"), ("GET", "health"), ("GET", "config")]:
        _, answer = await api.call(method, path, expect=200)
        _fits(_answer_model(method.lower(), path), answer)
    code, _ = await api.approve(thread, "d1")
    assert code == 202
    second = await api.until_finished(thread, first[-1]["seq"])
    for event in first + second:
        validate_event(event)
    developer = [e for e in first + second if e.get("agent") == "python_developer"]
    assert developer and all(e["task_id"] == "p1" for e in developer)
    assert all(
        "task_id" not in e for e in first + second if e.get("agent") == "planner" and e["type"] != "agent_switch"
    )
    assert of_type(second, "cell_output")[0]["task_id"] == "p1"

    code, body = await api.call("GET", f"threads/{thread}/events", params={"after": 0})
    marker = [event for event in parse_sse(body, live=True) if event["type"] == "caught_up"]
    for event in marker:
        validate_event(event)
    for method, path, body in [
        ("POST", "diagnostics", {"code": "import os\n"}),
        ("POST", "resources", {"files": ["analysis.ipynb", "missing.csv"]}),
        ("POST", "threads", {"title": "t"}),
    ]:
        _, answer = await api.call(method, path, body)
        _fits(_answer_model(method.lower(), path), answer)
    _, error = await api.call("GET", "threads/nope", expect=404)
    ErrorBody.model_validate(error)


async def test_the_served_document_is_the_checked_in_one(api: Api) -> None:
    code, document = await api.call("GET", "openapi.json")
    assert code == 200 and document["openapi"] == "3.1.0"
    assert (ROOT / "jupyter_ext" / "openapi.json").read_text("utf-8") == openapi_json()
    assert set(document["paths"]) == {"/" + route.path for route in ROUTES}
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(document)


def test_auto_approve_has_one_home() -> None:
    """The server's configuration (edited in the panel's settings form) holds auto_approve; the
    JupyterLab settings registry keeps no second copy that could disagree with it."""
    import json
    from pathlib import Path

    schema = json.loads((Path(__file__).resolve().parent.parent / "labextension_src/schema/plugin.json").read_text())
    assert "auto_approve" not in schema["properties"]
