"""Routes that call the agent's tools directly (the same functions the agent uses): diagnostics,
resources, variables, the notebook's @tool functions, the MCP servers' status, the knowledge index."""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from agent_core.json_types import JsonObject, json_items, json_object

from .errors import BadRequest
from .handler_base import CellwrightHandler, contract_bodies


class ToolRouteHandler(CellwrightHandler):
    """Routes that call the agent's tools directly (the same functions the agent uses)."""

    def environment(self, notebook_path: str, kernel_id: str | None) -> Any:
        return self.app.kernel_environment(notebook_path, kernel_id)

    async def saved_notebook(self, raw: str | None) -> tuple[str, JsonObject]:
        """The root-relative path and saved JSON of the notebook a request names; 400 for anything else."""
        from agent_core.tools.base import ToolInputError
        from agent_core.tools.notebook_reader import load_notebook

        path = self._notebook_path(raw)
        if not path or not path.endswith(".ipynb"):
            raise BadRequest('"path" must name a notebook (.ipynb), relative to the server root.', "bad_request")
        try:
            return path, await asyncio.to_thread(load_notebook, self.app.workspace.root / path)
        except ToolInputError as exc:
            raise BadRequest(f"{exc} (save the notebook first)", "bad_request") from None

    def kernel_of(self, body: Any) -> Any:
        """The environment of the kernel a body names (`kernel_id` and/or `notebook_path`), or None
        when it names none."""
        kernel_id, notebook = body.kernel_id, self._notebook_path(body.notebook_path)
        return self.environment(notebook or "", kernel_id) if (kernel_id or notebook) else None


class DiagnosticsHandler(ToolRouteHandler):
    """POST diagnostics: {"code", "path"?, "kernel_id"?} -> {"diagnostics": [...]} (1-based lines and
    columns). `path` is the notebook (or .py file) the code belongs to: a notebook's kernel is asked
    which names it defines, so they are not reported as undefined. Without code, `path` names a .py
    file to check."""

    route = "diagnostics"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        # the tools and the contract models load on their route's first request: the server starts without them
        # (bench/server_start.py)
        from agent_core.tools.diagnostics import lint_code, lint_file

        body = self.body(contract_bodies().DiagnosticsRequest)
        code, path, kernel_id = body.code, body.path, body.kernel_id
        if code is None and path is None:
            raise BadRequest(
                'Send "code" (the cell\'s Python code), optionally with "path" and "kernel_id".', "missing_fields"
            )
        workspace = self.app.workspace
        if code is None:
            result = await lint_file(workspace, path)
        else:
            target = workspace.resolve(path) if path else None
            if target is not None and target.suffix == ".py":
                result = await lint_code(code, workspace.root, cell=False, path=target)
            else:
                notebook = target.relative_to(workspace.root).as_posix() if target is not None else ""
                env = self.environment(notebook, kernel_id) if (notebook or kernel_id) else None
                result = await lint_code(code, workspace.root, env=env)
        answer: JsonObject = {"diagnostics": result.diagnostics}
        if result.note:
            answer["note"] = result.note
        self.write_json(answer)


class ResourcesHandler(ToolRouteHandler):
    """POST resources: {"files"?, "dataframes"?, "kernel_id"?} -> {"files", "dataframes", "system"}."""

    route = "resources"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.tools.resources import check_resources

        body = self.body(contract_bodies().ResourcesRequest)
        self.write_json(await check_resources(self.app.workspace, self.kernel_of(body), body.files, body.dataframes))


class VariablesHandler(ToolRouteHandler):
    """POST variables: {"kernel_id"?, "notebook_path"?} -> {"variables": [{"name", "type", "shape"?}], "note"?}."""

    route = "variables"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.kernel_probes.introspection import namespace_snapshot

        env = self.kernel_of(self.body(contract_bodies().VariablesRequest))
        if env is None:
            self.write_json({"variables": [], "note": "no kernel: send the notebook's kernel_id or notebook_path"})
            return
        snapshot = await namespace_snapshot(env, limit=200)
        variables = [
            {
                "name": v["name"],
                "type": v["type"],
                **({"shape": v["shape"]} if isinstance(v.get("shape"), list) else {}),
            }
            for v in snapshot.variables
        ]
        self.write_json({"variables": variables, **({"note": snapshot.note} if snapshot.note else {})})


class KnowledgeStatusHandler(CellwrightHandler):
    """GET knowledge/status: the workspace index's files, chunks, last update and errors."""

    route = "knowledge/status"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        base = self.app.knowledge()
        if base is None:
            off = {
                "state": "off",
                "files": 0,
                "chunks": 0,
                "tables": 0,
                "last_update": None,
                "skipped": 0,
                "errors": [],
            }
            self.write_json({**off, "embedding_model": None})
            return
        self.write_json(await asyncio.to_thread(base.status))


class McpServersHandler(CellwrightHandler):
    """GET mcp/servers: status and tools of the configured MCP servers; never env or header values."""

    route = "mcp/servers"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json({"servers": self.app.mcp_manager().servers()})


class NotebookToolsHandler(ToolRouteHandler):
    """POST notebook_tools: {"kernel_id"?, "notebook_path"?} -> {"tools": [...], "notes": [...]}."""

    route = "notebook_tools"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.tools.gathering import TAKEN
        from agent_core.tools.notebook_functions import notebook_tools

        env = self.kernel_of(self.body(contract_bodies().VariablesRequest))
        if env is None:
            self.write_json({"tools": [], "notes": []})
            return
        specs, notes = await notebook_tools(env, TAKEN, self.app.configuration.agent_settings())
        tools = [
            {
                "name": name,
                "description": spec.description,
                "read_only": bool(spec.origin.get("read_only_hint")),
                "file": spec.origin.get("file"),
                "line": spec.origin.get("line"),
            }
            for name, spec in specs.items()
        ]
        self.write_json({"tools": tools, "notes": notes})


class VerifyHandler(ToolRouteHandler):
    """POST verify: {"path"} -> VerifyResult: the saved notebook re-run from the top in a fresh shadow
    kernel (never the notebook's own), each agent cell compared with its thread's stored outputs."""

    route = "verify"

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from agent_core.contract.verify import VerifyRequest
        from agent_core.loop.agent_cells import notebook_agent_cells
        from agent_core.tools.base import ToolInputError
        from agent_core.verify.replay import verify_notebook

        path, notebook = await self.saved_notebook(self.body(VerifyRequest).path)
        recorded: dict[tuple[str, str], list[JsonObject]] = {}
        # the outputs the owner's threads stored for their cells of this notebook
        for cell in await notebook_agent_cells(self.runs.threads, path):
            if cell.finished and not cell.edit:
                recorded[(cell.thread_id, cell.tool_call_id)] = [o.model_dump(exclude_none=True) for o in cell.outputs]
        try:
            result = await verify_notebook(notebook, path, self.environment(path, None), recorded)
        except ToolInputError as exc:
            raise BadRequest(str(exc), "bad_request") from None
        self.write_json(result)


class NotebookGraphHandler(ToolRouteHandler):
    """GET notebook/graph?path=: the notebook's dependency graph, stale cells with their reasons (issue 42).
    The saved file plus the owner's agent cells it lacks (the tools' view), and what the notebook's kernel
    tells silently (input history, names)."""

    route = "notebook/graph"

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from agent_core.cell_graph import NotebookGraph
        from agent_core.cell_graph.records import records
        from agent_core.contract.bodies import MAX_PATH_CHARS
        from agent_core.loop.agent_cells import notebook_agent_cells
        from agent_core.tools.notebook_graph import graph_answer, kernel_facts
        from agent_core.tools.notebook_view import overlay

        raw = self.get_query_argument("path", "")
        path, notebook = await self.saved_notebook(raw if len(raw) <= MAX_PATH_CHARS else None)
        cells = [c for c in json_items(notebook["cells"]) if isinstance(c, dict)]
        metadata = json_object(notebook.get("metadata"))
        view = overlay(path, cells, metadata, await notebook_agent_cells(self.runs.threads, path))
        facts = await kernel_facts(self.environment(path, None))
        graph = NotebookGraph(records(view.cells, facts.history), facts.names)
        kernel = bool(facts.history) or facts.names is not None
        self.write_json(graph_answer(path, graph, kernel))
