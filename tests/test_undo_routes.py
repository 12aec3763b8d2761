"""Issue 12 through the real routes, a real kernel and the scripted model: the approval card's
impact and undoability, the snapshot before an approved cell and the undo that restores the kernel,
rules saved from a rejection, provenance on cell_started, and hostile ids and cells."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import NOTEBOOK, Api, of_type


async def _kernel(jp_serverapp: Any, kernel_id: str, expression: str) -> Any:
    """Evaluate in the notebook's kernel, silently (the JSON of `expression`)."""
    env = jp_serverapp.web_app.settings["cellwright"].kernel_environment(NOTEBOOK, kernel_id)
    return await env.evaluate_json(f"__import__('json').dumps({expression})")


async def notebook_with_my_cell(jp_serverapp: Any, kernel_id: str, root: Any) -> None:
    """The notebook holds the user's cell "mine" (`y = 2`), and the kernel has run it."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("y = 2", id="mine")]
    nbformat.write(notebook, str(root / NOTEBOOK))
    await _kernel(jp_serverapp, kernel_id, "globals().__setitem__('y', 2) or 1")


async def _run_approved(api: Api, thread: str, message: str, call_ids: list[str]) -> list[dict[str, Any]]:
    """Start a run and approve each call in turn; every event of the run."""
    await api.run(thread, message)
    events = await api.until_finished(thread)
    for call_id in call_ids:
        card = of_type(events, "approval_required")[-1]
        assert card["id"] == call_id, card
        code, body = await api.approve(thread, call_id)
        assert code == 202, body
        events += await api.until_finished(thread, events[-1]["seq"])
    return events


async def _setup_df(api: Api, fake_llm: FakeLLM, thread: str) -> None:
    fake_llm.script(
        tool_call(
            "run_cell", {"code": "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})"}, id="setup"
        ),
        text("Loaded."),
    )
    await _run_approved(api, thread, "load", ["setup"])


@pytest.mark.also_gateway
async def test_undo_restores_a_frame_changed_in_place_and_removes_created_names(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    thread = await api.new_thread()
    await _setup_df(api, fake_llm, thread)
    await _kernel(jp_serverapp, notebook_kernel, "globals().__setitem__('_before', df.copy(deep=True)) or 1")
    change = "df.drop(columns=['b'], inplace=True)\ndf['a'] = df['a'] * 10\ntmp = df['a'].sum()"
    fake_llm.script(tool_call("run_cell", {"code": change}, id="change"), text("Changed."), text("ok"))
    events = await _run_approved(api, thread, "change it", ["change"])
    card = of_type(events, "approval_required")[-1]
    impact = card["impact"]
    assert impact["undoable"] is True and impact["rule_warnings"] == []
    assert "df" in {f["name"] for f in impact["mutates"] + impact["assigns"]}
    assert {"name": "tmp", "line": 3} in impact["assigns"]
    started = of_type(events, "cell_started")[-1]
    provenance = started["provenance"]
    assert provenance["tool_call_id"] == "change" and provenance["thread_id"] == thread
    assert (
        provenance["decision"] == "approved" and provenance["model"] == "fake-model" and provenance["undoable"] is True
    )
    assert await _kernel(jp_serverapp, notebook_kernel, "[list(df.columns), int(tmp)]") == [["a"], 60]

    code, answer = await api.call("POST", f"threads/{thread}/undo/change", {}, expect=200)
    assert "df" in answer["restored"] and answer["removed"] == ["tmp"] and answer["not_undone"] == []
    assert answer["cell_id"] == started["cell_id"] and answer["edit"] is False
    same = "[bool(df.equals(_before)), 'tmp' in globals()]"
    assert await _kernel(jp_serverapp, notebook_kernel, same) == [True, False]

    code, again = await api.call("POST", f"threads/{thread}/undo/change", {}, expect=409)
    assert again["error"] == "already_undone" and "already undone" in again["message"]
    events = await api.events(thread)
    assert of_type(events, "step_undone")[-1]["id"] == "change"

    # The next run is told, so the model does not rely on the undone step.
    await api.run(thread, "what now?")
    await api.until_finished(thread, events[-1]["seq"])
    sent = " ".join(str(m.get("content")) for m in fake_llm.requests[-1]["messages"])
    assert "The user undid step change" in sent and "deleted tmp" in sent


async def test_a_2_gb_array_is_not_undoable_before_approval(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    # np.zeros allocates lazily: 2 GB of address space, no memory touched.
    await _kernel(
        jp_serverapp,
        notebook_kernel,
        "globals().__setitem__('big', __import__('numpy').zeros(2 * 1024**3, dtype='uint8')) or 1",
    )
    fake_llm.script(tool_call("run_cell", {"code": "big[0] = 1"}, id="poke"), text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "poke it")
    events = await api.until_finished(thread)
    impact = of_type(events, "approval_required")[-1]["impact"]
    assert impact["undoable"] is False
    assert "big is 2.0 GB" in impact["not_undoable_reason"] and "256.0 MB" in impact["not_undoable_reason"]
    code, _ = await api.approve(thread, "poke")
    events += await api.until_finished(thread, events[-1]["seq"])
    assert of_type(events, "cell_started")[-1]["provenance"]["undoable"] is False
    code, refused = await api.call("POST", f"threads/{thread}/undo/poke", {}, expect=409)
    assert refused["error"] == "no_snapshot"


@pytest.mark.also_gateway
async def test_undo_after_a_kernel_restart_is_refused_with_the_reason(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "x = 41 + 1"}, id="setx"), text("Set."))
    thread = await api.new_thread()
    await _run_approved(api, thread, "set x", ["setx"])
    await jp_serverapp.kernel_manager.restart_kernel(notebook_kernel)
    code, refused = await api.call("POST", f"threads/{thread}/undo/setx", {}, expect=409)
    assert refused["error"] == "kernel_restarted" and "restarted" in refused["message"], refused


async def test_a_rejection_saved_as_a_rule_reaches_the_next_run_and_warns_on_a_later_card(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_root_dir: Any
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "%pip install requests"}, id="pip1"), text("Understood."))
    thread = await api.new_thread()
    await api.run(thread, "fetch the data")
    first = await api.until_finished(thread)
    impact = of_type(first, "approval_required")[-1]["impact"]
    assert impact["installs"] and impact["suggested_rule"] == "Never install packages"
    code, _ = await api.approve(thread, "pip1", "reject", reason="no pip installs", save_rule="no pip installs")
    assert code == 202
    await api.until_finished(thread, first[-1]["seq"])
    assert "no pip installs" in (jp_root_dir / ".cellwright" / "rules.md").read_text()

    fake_llm.script(tool_call("run_cell", {"code": "%pip install httpx"}, id="pip2"), text("ok"))
    await api.run(thread, "try again")
    events = await api.until_finished(thread)
    assert "no pip installs" in fake_llm.requests[-1]["messages"][0]["content"]
    warnings = of_type(events, "approval_required")[-1]["impact"]["rule_warnings"]
    assert warnings and any("no pip installs" in w for w in warnings)


async def test_an_empty_rule_is_refused_and_the_call_stays_pending(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "print(1)"}, id="c1"), text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "print")
    await api.until_finished(thread)
    code, body = await api.approve(thread, "c1", "reject", reason="no", save_rule="x" * 301)
    assert code == 400
    _, detail = await api.call("GET", f"threads/{thread}", expect=200)
    assert detail["pending_approval"]["id"] == "c1"


@pytest.mark.parametrize("bad", ["..%2F..%2Fetc", "nope", "x'%5D)%3Bimport os", "%00"])
async def test_undo_of_an_unknown_or_hostile_step_id_is_404(api: Api, fake_llm: FakeLLM, bad: str) -> None:
    thread = await api.new_thread()
    code, body = await api.call("POST", f"threads/{thread}/undo/{bad}", {})
    assert code == 404, body
    code, body = await api.call("POST", "threads/nothread/undo/x", {})
    assert code == 404 and body["error"] == "thread_not_found"


async def test_a_cell_that_tampers_with_the_snapshot_store_cannot_forge_an_undo(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    hostile_id = "..\\x'\"];import os#"  # jp_fetch quotes each path part itself
    fake_llm.script(tool_call("run_cell", {"code": "y = [1, 2]"}, id=hostile_id), text("ok"))
    thread = await api.new_thread()
    await _run_approved(api, thread, "set y", [hostile_id])
    assert await _kernel(jp_serverapp, notebook_kernel, "y") == [1, 2]
    # A later (hostile) cell rewrites the stored snapshot: the undo notices and refuses.
    tamper = "import sys\nfor s in sys.modules['_cellwright_undo'].steps.values():\n    s['token'] = 'forged'; s['values']['y'] = 'evil'"
    fake_llm.script(tool_call("run_cell", {"code": tamper}, id="tamper"), text("ok"))
    await _run_approved(api, thread, "tamper", ["tamper"])
    code, refused = await api.call("POST", f"threads/{thread}/undo/{hostile_id}", {}, expect=409)
    assert refused["error"] == "snapshot_store_changed"
    assert await _kernel(jp_serverapp, notebook_kernel, "y") == [1, 2]


async def test_an_edited_cell_keeps_what_the_agent_proposed_and_undo_returns_its_old_value(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Any
) -> None:
    await notebook_with_my_cell(jp_serverapp, notebook_kernel, jp_root_dir)
    fake_llm.script(tool_call("edit_cell", {"cell_id": "mine", "source": "y = 3"}, id="ed1"), text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "change y")
    events = await api.until_finished(thread)
    code, _ = await api.approve(thread, "ed1", "edit", args={"cell_id": "mine", "source": "y = 30\nz = 1"})
    assert code == 202
    events += await api.until_finished(thread, events[-1]["seq"])
    provenance = of_type(events, "cell_started")[-1]["provenance"]
    assert provenance["decision"] == "edited" and provenance["edited_from"] == "y = 3"
    assert await _kernel(jp_serverapp, notebook_kernel, "[y, z]") == [30, 1]
    _, answer = await api.call("POST", f"threads/{thread}/undo/ed1", {}, expect=200)
    assert answer == {"restored": ["y"], "removed": ["z"], "not_undone": [], "cell_id": "mine", "edit": True}
    assert await _kernel(jp_serverapp, notebook_kernel, "[y, 'z' in globals()]") == [2, False]


async def test_a_shell_command_card_says_it_cannot_be_undone(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(tool_call("execute_command", {"command": "pip install requests"}, id="sh1"), text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "install")
    impact = of_type(await api.until_finished(thread), "approval_required")[-1]["impact"]
    assert impact["undoable"] is False and "outside the kernel" in impact["not_undoable_reason"]
    assert impact["installs"] or impact["shell"]


async def test_deleting_a_thread_drops_its_snapshots_in_the_kernel(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "w = list(range(10))"}, id="w1"), text("ok"))
    thread = await api.new_thread()
    await _run_approved(api, thread, "make w", ["w1"])
    held = "sorted(__import__('sys').modules['_cellwright_undo'].steps)"
    assert await _kernel(jp_serverapp, notebook_kernel, held) == ["w1"]
    await api.call("DELETE", f"threads/{thread}", expect=204)
    assert await _kernel(jp_serverapp, notebook_kernel, held) == []


async def test_the_card_measures_without_running_the_users_code(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    # A class whose metaclass compares (and hashes) with side effects, and an object with a
    # __deepcopy__ that says when it ran: the card (before approval) must trigger neither.
    setup = (
        "class Meta(type):\n"
        "    def __eq__(cls, other):\n"
        "        globals()['touched'] = 'eq'; return False\n"
        "    __hash__ = type.__hash__\n"
        "class Sneaky(metaclass=Meta):\n"
        "    def __deepcopy__(self, memo):\n"
        "        globals()['touched'] = 'copied'; return Sneaky()\n"
        "s = Sneaky()\n"
    )
    env = jp_serverapp.web_app.settings["cellwright"].kernel_environment(NOTEBOOK, notebook_kernel)
    run = await env.run_cell("setup", setup, lambda event: None)
    assert run.status == "ok", run.outputs
    fake_llm.script(tool_call("run_cell", {"code": "s.x = 1"}, id="sx"), text("ok"))
    thread = await api.new_thread()
    await api.run(thread, "set s.x")
    impact = of_type(await api.until_finished(thread), "approval_required")[-1]["impact"]
    assert impact["undoable"] is True
    assert await _kernel(jp_serverapp, notebook_kernel, "globals().get('touched')") is None


@pytest.mark.also_gateway
async def test_undoing_a_run_newest_first_brings_the_kernel_back_to_before_it(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    await _kernel(jp_serverapp, notebook_kernel, "globals().__setitem__('a', 0) or 1")
    fake_llm.script(
        tool_call("run_cell", {"code": "a = a + 1"}, id="s1"),
        tool_call("run_cell", {"code": "a = a * 10\nb = 3"}, id="s2"),
        text("done"),
    )
    thread = await api.new_thread()
    await _run_approved(api, thread, "two steps", ["s1", "s2"])
    assert await _kernel(jp_serverapp, notebook_kernel, "[a, b]") == [10, 3]
    for step in ("s2", "s1"):  # what the panel's "Undo run" sends
        await api.call("POST", f"threads/{thread}/undo/{step}", {}, expect=200)
    assert await _kernel(jp_serverapp, notebook_kernel, "[a, 'b' in globals()]") == [0, False]


async def test_a_sub_agents_step_can_be_undone(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    fake_llm.script(
        tool_call("task", {"agent": "python_developer", "description": "Set q."}, id="p1"),
        tool_call("run_cell", {"code": "q = 7"}, id="dev1"),
        text("q is set."),
        tool_call("final_answer", {"answer": "Done."}),
    )
    thread = await api.new_thread()
    await api.run(thread, "set q", mode="multi")
    events = await api.until_finished(thread)
    assert of_type(events, "approval_required")[-1]["agent"] == "python_developer"
    await api.approve(thread, "dev1")
    events += await api.until_finished(thread, events[-1]["seq"])
    assert of_type(events, "cell_started")[-1]["provenance"]["agent"] == "python_developer"
    _, answer = await api.call("POST", f"threads/{thread}/undo/dev1", {}, expect=200)
    assert answer["removed"] == ["q"]


GENERATOR = "def _count():\n    yield from range(10)\ngen = _count()\n"
GENERATOR_REASON = "`gen` is a generator: its state cannot be saved, so undo cannot restore it"


async def test_a_generator_advanced_by_a_call_is_not_undoable_while_df_head_is(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    env = jp_serverapp.web_app.settings["cellwright"].kernel_environment(NOTEBOOK, notebook_kernel)
    run = await env.run_cell(
        "setup",
        GENERATOR + "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\ns = 'x'\nlst = [1]",
        lambda event: None,
    )
    assert run.status == "ok", run.outputs
    fake_llm.script(
        tool_call("run_cell", {"code": "df.head()\nprint(s.upper(), len(lst), lst.copy())"}, id="look"),
        tool_call("run_cell", {"code": "gen.send(None)"}, id="send"),
        tool_call("run_cell", {"code": "next(gen)"}, id="next"),
        text("done"),
    )
    thread = await api.new_thread()
    events = await _run_approved(api, thread, "look and advance", ["look", "send", "next"])
    cards = {card["id"]: card["impact"] for card in of_type(events, "approval_required")}
    assert cards["look"]["undoable"] is True and cards["look"]["not_undoable_reason"] is None
    for call_id in ("send", "next"):
        assert cards[call_id]["undoable"] is False, cards[call_id]
        assert GENERATOR_REASON in cards[call_id]["not_undoable_reason"]
    assert {"name": "gen", "line": 1} in cards["next"]["mutates"]  # next() advances it: a change, shown as one
    started = {e["provenance"]["tool_call_id"]: e["provenance"] for e in of_type(events, "cell_started")}
    assert started["look"]["undoable"] is True
    assert started["send"]["undoable"] is False and GENERATOR_REASON in started["send"]["not_undoable_reason"]
    assert started["next"]["undoable"] is False

    # The undo never claims to have restored the generator: it is refused, with the reason.
    for call_id in ("next", "send"):
        _, refused = await api.call("POST", f"threads/{thread}/undo/{call_id}", {}, expect=409)
        assert refused["error"] == "no_snapshot" and GENERATOR_REASON in refused["message"], refused
    assert await _kernel(jp_serverapp, notebook_kernel, "next(gen)") == 2  # 0 and 1 were taken: nothing was put back
    _, answer = await api.call("POST", f"threads/{thread}/undo/look", {}, expect=200)
    assert answer["restored"] == [] and answer["removed"] == []


async def test_an_iterator_consumed_by_a_cell_is_restored_or_the_step_says_why_not(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any
) -> None:
    # `it` copies (a list iterator): undo puts it back where it was. `pairs` wraps a generator: the
    # card cannot tell without running its copy, so the snapshot before the cell finds out and says so.
    env = jp_serverapp.web_app.settings["cellwright"].kernel_environment(NOTEBOOK, notebook_kernel)
    run = await env.run_cell(
        "setup", GENERATOR + "it = iter([1, 2, 3])\npairs = enumerate(_count())", lambda event: None
    )
    assert run.status == "ok", run.outputs
    fake_llm.script(
        tool_call("run_cell", {"code": "for v in it:\n    break"}, id="iter"),
        tool_call("run_cell", {"code": "for i, p in pairs:\n    break"}, id="pairs"),
        text("done"),
    )
    thread = await api.new_thread()
    events = await _run_approved(api, thread, "consume", ["iter", "pairs"])
    started = {e["provenance"]["tool_call_id"]: e["provenance"] for e in of_type(events, "cell_started")}
    assert started["iter"]["undoable"] is True
    assert started["pairs"]["undoable"] is False
    reason = started["pairs"]["not_undoable_reason"]
    assert "`pairs` cannot be copied" in reason and "generator" in reason and "undo cannot restore it" in reason
    _, refused = await api.call("POST", f"threads/{thread}/undo/pairs", {}, expect=409)
    assert refused["error"] == "no_snapshot" and "`pairs` cannot be copied" in refused["message"]
    _, answer = await api.call("POST", f"threads/{thread}/undo/iter", {}, expect=200)
    assert "it" in answer["restored"] and answer["removed"] == ["v"]
    assert await _kernel(jp_serverapp, notebook_kernel, "list(it)") == [1, 2, 3]
