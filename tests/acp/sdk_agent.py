"""An ACP agent written with the official SDK for the hosting tests: `python -m tests.acp.sdk_agent MODE`.
Each prompt's first word picks what it does, so one process can play several turns:
  write <path> <text>: plan, tool call, permission, then fs/write_text_file; says what came back
  read <path>: fs/read_text_file, answers the text
  flood: 20000 message chunks, then "flood done"
  spam: 1000 permission requests at once
  hang: never answers (until session/cancel, which it ignores)
  die: exits mid-turn
  garbage: writes a line that is not JSON-RPC, then answers "still here"."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent
from acp.helpers import plan_entry, start_tool_call, update_agent_message_text, update_plan, update_tool_call
from acp.schema import AgentCapabilities, InitializeResponse, NewSessionResponse, PermissionOption, PromptResponse


class SdkAgent:
    def __init__(self) -> None:
        self._conn: Any = None
        self._cancelled = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities())

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="s1")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled.set()

    async def say(self, session_id: str, text: str) -> None:
        await self._conn.session_update(session_id=session_id, update=update_agent_message_text(text))

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        words = "".join(getattr(block, "text", "") for block in prompt).split(" ", 2)
        mode = words[0]
        if mode == "write":
            await self._conn.session_update(
                session_id=session_id, update=update_plan([plan_entry("write the file", status="in_progress")])
            )
            await self._conn.session_update(
                session_id=session_id, update=start_tool_call("t1", f"Write {words[1]}", kind="edit", status="pending")
            )
            options = [
                PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ]
            asked = await self._conn.request_permission(
                session_id=session_id, tool_call=update_tool_call("t1", title=f"Write {words[1]}"), options=options
            )
            outcome = asked.outcome
            chosen = getattr(outcome, "option_id", outcome.outcome)
            if chosen != "yes":
                await self.say(session_id, f"permission: {chosen}")
                return PromptResponse(stop_reason="end_turn")
            try:
                await self._conn.write_text_file(session_id=session_id, path=words[1], content=words[2])
                result = "written"
            except RequestError as exc:
                result = f"refused: {exc.data}"
            await self._conn.session_update(
                session_id=session_id, update=update_tool_call("t1", status="completed", title=result)
            )
            await self.say(session_id, f"write: {result}")
        elif mode == "read":
            try:
                read = await self._conn.read_text_file(session_id=session_id, path=words[1])
                await self.say(session_id, f"read: {read.content}")
            except RequestError as exc:
                await self.say(session_id, f"read refused: {exc.data}")
        elif mode == "flood":
            for _i in range(20000):
                await self.say(session_id, "x" * 100)
            await self.say(session_id, "flood done")
        elif mode == "spam":
            options = [PermissionOption(option_id="yes", name="Allow", kind="allow_once")]
            asks = [
                self._conn.request_permission(
                    session_id=session_id, tool_call=update_tool_call(f"p{i}", title=f"ask {i}"), options=options
                )
                for i in range(1000)
            ]
            answers = await asyncio.gather(*asks, return_exceptions=True)
            granted = sum(1 for a in answers if getattr(a.outcome, "option_id", None) == "yes")  # type: ignore[union-attr]
            await self.say(session_id, f"spam granted {granted}")
        elif mode == "hang":
            await asyncio.Event().wait()
        elif mode == "die":
            await self.say(session_id, "dying")
            os._exit(3)
        elif mode == "garbage":
            sys.stdout.buffer.write(b'this is not json-rpc\n{"jsonrpc": "2.0", "method": 5}\n')
            sys.stdout.buffer.flush()
            await self.say(session_id, "still here")
        else:
            await self.say(session_id, f"echo: {' '.join(words)}")
        return PromptResponse(stop_reason="cancelled" if self._cancelled.is_set() else "end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(SdkAgent()))
