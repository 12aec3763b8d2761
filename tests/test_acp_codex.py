"""A real ACP agent hosted in a thread: Codex's ACP adapter (npm @zed-industries/codex-acp, a
devDependency: `npm ci` installs it with its native binary), pointed at the scripted model through
the Responses API (devtools/fake_llm_responses.py). Its commands wait for our approval cards."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api, of_type
from tests.test_acp_hosting import answer, ask, until

CODEX = Path(__file__).resolve().parent.parent / "node_modules" / ".bin" / "codex-acp"


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any], fake_llm: FakeLLM, tmp_path: Path) -> dict[str, Any]:
    assert CODEX.exists(), "codex-acp is missing: run `npm ci` (package.json devDependencies)"
    provider = f'{{name="scripted", base_url="{fake_llm.base_url}", wire_api="responses"}}'
    settings = {
        "model_provider": '"scripted"',
        "model_providers.scripted": provider,
        "model": '"fake-model"',
        "approval_policy": '"untrusted"',  # every command it runs asks first: our card
        "sandbox_mode": '"danger-full-access"',  # Codex's own sandbox is not what is tested here
    }
    args = [part for key, value in settings.items() for part in ("-c", f"{key}={value}")]
    (tmp_path / "codex-home").mkdir()
    codex = {"command": str(CODEX), "args": args, "env": {"CODEX_HOME": str(tmp_path / "codex-home")}}
    return {**cellwright_config, "acp_agents": {"Codex": codex}}


async def test_codex_asks_on_our_cards_and_stops(api: Api, fake_llm: FakeLLM, jp_root_dir: Path) -> None:
    fake_llm.script(
        tool_call("exec_command", {"cmd": "echo hi > made.txt && echo more >> notes.txt && rm gone.txt"}),
        text("Wrote made.txt."),
        text("thinking", hang=True),
        tool_call("exec_command", {"cmd": "echo no > nope.txt"}),
        text("Understood: not written."),
    )
    (jp_root_dir / "notes.txt").write_text("mine\n")
    (jp_root_dir / "gone.txt").write_text("keep me\n")
    _, thread = await api.call("POST", "threads", {"agent": "Codex"}, expect=201)
    thread_id = thread["thread_id"]

    events = await ask(api, thread_id, "make a file")
    card = of_type(events, "approval_required")[-1]
    assert "echo hi > made.txt" in card["description"] and "rm gone.txt" in card["command"]
    assert not (jp_root_dir / "made.txt").exists()  # nothing runs before the decision
    await api.approve(thread_id, card["id"])
    events = await until(api, thread_id, events[-1]["seq"], ("run_finished",))
    assert events[-1]["status"] == "completed" and "Wrote made.txt." in answer(events)
    assert (jp_root_dir / "made.txt").read_text() == "hi\n"
    assert fake_llm.paths[0] == "/v1/responses"
    # Codex wrote through its own shell, not our fs/write_text_file: what the approved command changed
    # was seen before and after it ran, so its card undoes it like one of our own writes.
    _, undone = await api.call("POST", f"threads/{thread_id}/undo/{card['id']}", {}, expect=200)
    assert (sorted(undone["restored"]), undone["removed"]) == (["gone.txt", "notes.txt"], ["made.txt"])
    assert not (jp_root_dir / "made.txt").exists() and (jp_root_dir / "notes.txt").read_text() == "mine\n"
    assert (jp_root_dir / "gone.txt").read_text() == "keep me\n"

    await api.call("POST", f"threads/{thread_id}/runs", {"message": "think hard"}, expect=202)
    await asyncio.to_thread(fake_llm.wait_for_requests, 3)  # its model answers and never ends
    await api.call("POST", f"threads/{thread_id}/cancel", {}, expect=202)
    events = await until(api, thread_id, events[-1]["seq"], ("run_finished",))
    assert events[-1]["status"] == "cancelled"

    events = await ask(api, thread_id, "make another", events[-1]["seq"])
    card = of_type(events, "approval_required")[-1]
    await api.approve(thread_id, card["id"], "reject", reason="no more files")
    events = await until(api, thread_id, events[-1]["seq"], ("run_finished",))
    assert not (jp_root_dir / "nope.txt").exists()
    assert events[-1]["status"] in ("completed", "cancelled")
