"""Every fact about a tool lives on its ToolSpec (what it touches, its cell, how an undo or a rewind
treats it, whether outside agents may call it), and the modes, rewind and the MCP catalog read
them there. These fail when a registered tool lacks a fact, states two that contradict each
other, or when a reader goes back to a list of names of its own."""

from __future__ import annotations

from typing import get_args

import pytest

from agent_core.loop.autonomy import ToolPolicy
from agent_core.rewind.rewind_plan import LaterStep, Situation, plan
from agent_core.tools import TOOLS, ToolSpec
from agent_core.tools.base import CellEffect, Touches, UndoneBy
from agent_core.undo.book import UndoBook
from jupyter_ext.mcp_endpoint import CATALOG

# The conversational tools belong to Cellwright's own model, never to an outside agent.
CONVERSATIONAL = {"write_todos", "final_answer", "task", "load_skill"}


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_tool_states_each_fact(name: str) -> None:
    spec = TOOLS[name]
    assert spec.touches in get_args(Touches), f"{name}: touches must be one of {get_args(Touches)}"
    assert spec.cell in get_args(CellEffect) and spec.undone_by in get_args(UndoneBy)
    if spec.touches == "nothing":
        assert spec.cell == "none" and spec.undone_by == "none", f"{name} touches nothing, so nothing is undone"
        # A sandboxed tool (explore) asks only where no sandbox can be had: in the sandbox it touches nothing.
        assert not spec.needs_approval or spec.sandboxed is not None, (
            f"{name} needs approval, so it touches something: say what"
        )
    else:
        # A rewind must know what to do with it: undo it, remove its cell, or say what stays.
        assert spec.undone_by != "none" or spec.cell == "adds" or spec.rewind_leaves, (
            f"{name} touches {spec.touches}: give it undone_by, a cell, or rewind_leaves (what a rewind leaves)"
        )
    assert not spec.read_only or spec.touches == "nothing", f"{name} is read_only but touches {spec.touches}"
    assert spec.undone_by != "kernel_snapshot" or spec.touches == "kernel"
    assert spec.undone_by != "file_preimage" or spec.touches == "files"
    assert not (spec.undone_by != "none" and spec.rewind_leaves), f"{name}: undone, or left by a rewind, not both"


def test_the_outside_agents_catalog_is_the_tools_that_say_so() -> None:
    assert set(CATALOG) == {name for name, spec in TOOLS.items() if spec.outside_agents}
    assert not set(CATALOG) & CONVERSATIONAL


def test_ask_mode_offers_the_tools_that_touch_nothing() -> None:
    ask = ToolPolicy("ask")
    offered = {name for name, spec in TOOLS.items() if ask.offers(name, spec)}
    assert offered == {name for name, spec in TOOLS.items() if spec.touches == "nothing"}
    assert {"write_todos", "final_answer", "task", "read_file"} <= offered
    assert not offered & {"run_cell", "write_file", "execute_command", "verify_notebook"}


def test_a_new_tool_is_planned_by_its_facts_alone() -> None:
    """A tool the rewind has never heard of by name is treated as its ToolSpec says."""

    spec: ToolSpec = ToolSpec(
        name="probe_tool",
        description="",
        args=TOOLS["read_file"].args,
        action=TOOLS["read_file"].action,
        touches="outside",
        rewind_leaves="it rang a bell: the bell stays rung",
    )
    here = Situation("t", UndoBook(), None, None, "revert", "revert")
    TOOLS["probe_tool"] = spec
    try:
        [planned] = plan([LaterStep("c1", "probe_tool", "ok", None)], here)
    finally:
        del TOOLS["probe_tool"]
    assert planned.cannot == ["it rang a bell: the bell stays rung"]
