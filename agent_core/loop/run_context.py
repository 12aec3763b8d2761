"""What a run may touch, never checkpointed: its settings, tool environment and ledger, its event
sink, the agent it runs as and the tools that agent is offered, its approval policy and books."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from agent_core.config.agent_settings import AgentSettings
from agent_core.contract import EventDict, make_event
from agent_core.contract.model_requests import SentSummary
from agent_core.json_types import JsonObject
from agent_core.loop import usage as token_usage
from agent_core.loop.agents import AGENTS, AgentConfig, agent_for_mode
from agent_core.loop.approvals import ApprovalCards
from agent_core.loop.autonomy import ToolPolicy, policy_of
from agent_core.loop.state import AgentState, new_run_input
from agent_core.loop.thread_policy import narrowed
from agent_core.messages import Message
from agent_core.storage.request_log import RequestLog, ThreadAudit
from agent_core.storage.tool_ledger import ToolLedger
from agent_core.tools import TOOLS, ToolContext, ToolEnvironment, ToolInputError, ToolOutcome, ToolSpec
from agent_core.tools.background import BackgroundHost
from agent_core.tools.base import AgentCellRecord, Emit
from agent_core.tools.external import ExternalToolSpec
from agent_core.tools.gathering import EXTERNAL_TOOL_AGENTS
from agent_core.undo.book import UndoBook

StepSaved = Callable[[str, str], Awaitable[None]]  # (checkpoint_ns, checkpoint_id): returns once it is saved


@dataclass
class RunContext:
    """What a run may touch; never checkpointed."""

    thread_id: str
    settings: AgentSettings
    env: ToolEnvironment
    ledger: ToolLedger
    # Events go to this sink rather than LangGraph's stream writer: what a tool emits while its run
    # is being cancelled (a cell's "aborted") would never reach the stream's consumer.
    emit: Emit
    notebook_path: str = ""
    agent: AgentConfig = field(default_factory=lambda: AGENTS["main"])
    ledger_scope: str = ""  # the ledger key space: the thread, or a sub-agent's task within it
    tool_mode: str = ""  # "native" or "prompt" for this run; "auto" settles on the first refusal
    task_id: str = ""  # a sub-agent's: the id of the `task` call that started it
    # The live notebook's cells as the browser sent them with the run or the approval (None: use the saved file).
    notebook_cells: list[JsonObject] | None = None
    meter: token_usage.UsageMeter = field(default_factory=token_usage.UsageMeter)
    policy: ToolPolicy = field(default_factory=ToolPolicy)  # read from the state at the start of each node
    summarized: bool = False  # the model node summarised older turns for this call
    # This run's MCP and notebook-defined tools (agent_core.tools.gathering), for the agents that act.
    extra_tools: dict[str, ToolSpec] = field(default_factory=dict)
    # The thread driver's (ThreadRunner), shared by the run's sub-agents: the steps undo may restore
    # and the approval cards already made. A context made without a driver has books of its own.
    undo: UndoBook = field(default_factory=UndoBook)
    approvals: ApprovalCards = field(default_factory=ApprovalCards)
    # Who asks for the calls: "" for the model, else an outside agent ("Claude Code via MCP"), named
    # in a cell's provenance where the model would be.
    driver: str = ""
    requests: RequestLog | None = None  # the thread's record of model requests (None: not recorded)
    last_sent: SentSummary | None = None  # the last model turn's request, as recorded
    agent_cells: AgentCellRecord | None = None  # the record's agent cells of a notebook (ToolContext.agent_cells)
    background: BackgroundHost | None = None  # issue 38: who follows a cell that outlives its run (None: never)
    # A segment that saves its steps in the background (durability "async"): the tools node waits for
    # the checkpoint it runs from (the model's call, saved) before it acts. None: saved before it runs.
    until_saved: StepSaved | None = None
    # An outside agent's call (its run is that one call): the tools node hands the call and its
    # result here as soon as it has them, before the step is saved; its client is answered from them.
    call_answered: Callable[[list[Message]], None] | None = None

    def __post_init__(self) -> None:
        if not self.tool_mode:
            self.tool_mode = "prompt" if self.settings.tool_calling == "prompt" else "native"
        self.ledger_scope = self.ledger_scope or self.thread_id
        self.tools: dict[str, ToolSpec] = {name: TOOLS[name] for name in self.agent.tools}
        if self.agent.name in EXTERNAL_TOOL_AGENTS:
            self.tools.update({name: spec for name, spec in self.extra_tools.items() if name not in TOOLS})

    @property
    def audit(self) -> ThreadAudit | None:
        """Where this agent's model requests are recorded, tagged with its name and task."""
        if self.requests is None:
            return None
        return ThreadAudit(self.requests, self.thread_id, self.agent.name, self.task_id, self._turn_sent)

    def _turn_sent(self, summary: SentSummary) -> None:
        self.last_sent = summary

    def take_sent(self) -> SentSummary | None:
        """What the last model turn's request sent, once (for that call's usage event)."""
        sent, self.last_sent = self.last_sent, None
        return sent

    @property
    def max_model_calls(self) -> int:
        return self.settings.max_model_calls or self.agent.max_model_calls

    def tool_context(self, call_id: str) -> ToolContext:
        """The context a tool of this run is called with (its call id, this run's notebook and record)."""
        return ToolContext(
            call_id,
            self.env,
            self.emit,
            self.settings,
            self,
            thread_id=self.thread_id,
            notebook_path=self.notebook_path,
            notebook_cells=self.notebook_cells,
            agent_cells=self.agent_cells,
        )

    def needs_approval(self, name: str) -> bool:
        if self.policy.asks_for_plan(name):
            return True
        spec = self.tools.get(name)
        if isinstance(spec, ExternalToolSpec):  # the user's opt-in was settled when the tool was built
            return not spec.auto_approvable
        return bool(spec and spec.needs_approval and name not in self.settings.auto_approve)

    def offered(self) -> dict[str, ToolSpec]:
        return {name: spec for name, spec in self.tools.items() if self.policy.offers(name, spec)}

    def begin_node(self, state: Mapping[str, Any]) -> None:
        self.policy = policy_of(state)
        self.settings = narrowed(self.settings, state.get("data_policy"))  # every request of the thread's runs
        if isinstance(after := state.get("background_after"), (int, float)):  # this run's own (POST runs)
            self.settings = self.settings.with_overrides(background_after=float(after))
        if not self.agent.is_subagent:  # a sub-agent's calls add to its parent's totals
            self.meter.load(state)

    async def delegate(self, name: str, description: str, call_id: str) -> ToolOutcome:
        """Run a sub-agent on a fresh context: only the description goes in, only its report comes
        back. It runs as a subgraph of this node, so its approvals pause the whole thread and a resume
        continues it where it stopped, without calling its model again."""
        if name not in self.agent.may_call:
            allowed = ", ".join(self.agent.may_call) or "none"
            raise ToolInputError(f"{self.agent.label} may not call the agent {name!r}; it may call: {allowed}")
        agent = AGENTS[name]
        sub_ctx = RunContext(
            self.thread_id,
            self.settings,
            self.env,
            self.ledger,
            _tagged(self.emit, name, call_id),
            self.notebook_path,
            agent,
            ledger_scope=f"{self.ledger_scope}/{call_id}",
            tool_mode=self.tool_mode,
            task_id=call_id,
            notebook_cells=self.notebook_cells,
            meter=self.meter,
            extra_tools=self.extra_tools,
            undo=self.undo,
            approvals=self.approvals,
            background=self.background,
            requests=self.requests,
            agent_cells=self.agent_cells,
            until_saved=self.until_saved,  # its graph saves into this one's checkpointer, as this one does
        )
        # The switches carry the task's id too: the panel nests what lies between them under the call.
        self.emit(
            make_event("agent_switch", task_id=call_id, **{"from": self.agent.name, "to": name, "task": description})
        )
        # agent_core.loop.graph imports this module (its nodes take this context)
        from agent_core.loop.graph import subagent_graph

        # An input is an update of the state (its messages an append the channel's reducer applies),
        # which LangGraph's typing does not tell apart from the state itself.
        sub_input = cast("AgentState", new_run_input(description, autonomy=self.policy.subagent_autonomy()))
        result = await subagent_graph().ainvoke(sub_input, context=sub_ctx)
        self.emit(
            make_event("agent_switch", task_id=call_id, **{"from": name, "to": self.agent.name, "task": description})
        )
        report = (
            next((m.get("content") for m in reversed(result["messages"]) if m.get("role") == "assistant"), "")
            or "(no report)"
        )
        return ToolOutcome("ok", f"{agent.label} reports:\n{report}", summary=report)


def run_context(
    thread_id: str,
    settings: AgentSettings,
    env: ToolEnvironment,
    ledger: ToolLedger,
    emit: Emit,
    notebook_path: str,
    mode: str,
    notebook_cells: list[JsonObject] | None = None,
    extra_tools: Mapping[str, ToolSpec] | None = None,
    *,
    undo: UndoBook,
    approvals: ApprovalCards,
    driver: str = "",
    requests: RequestLog | None = None,
    agent_cells: AgentCellRecord | None = None,
    background: BackgroundHost | None = None,
    until_saved: StepSaved | None = None,
    call_answered: Callable[[list[Message]], None] | None = None,
) -> RunContext:
    """The context of a run's top agent: the single agent, or the planner in multi mode."""
    agent = agent_for_mode(mode)
    return RunContext(
        thread_id,
        settings,
        env,
        ledger,
        _tagged(emit, agent.name),
        notebook_path,
        agent,
        notebook_cells=notebook_cells,
        extra_tools=dict(extra_tools or {}),
        undo=undo,
        approvals=approvals,
        driver=driver,
        requests=requests,
        agent_cells=agent_cells,
        background=background,
        until_saved=until_saved,
        call_answered=call_answered,
    )


def _tagged(emit: Emit, agent: str, task_id: str = "") -> Emit:
    if agent == "main":
        return emit

    def tagged(event: EventDict) -> None:
        event = event.copy()  # an inner (sub-)agent's tags win
        event.setdefault("agent", agent)
        if task_id:
            event.setdefault("task_id", task_id)
        emit(event)

    return tagged
