"""The MCP manager and the mcp_servers setting on their own: shapes refused with clear messages,
secrets masked, a server reused across runs and stopped by shutdown (its process gone)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from agent_core.config.mcp_servers import MASK, McpConfigError, parse_servers, with_kept_secrets
from agent_core.mcp.manager import McpManager
from agent_core.tools import TOOLS

FIXTURE = str(Path(__file__).with_name("mcp_server_fixture.py"))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "must be an object"),
        ({"bad name": {"command": "x"}}, "server name"),
        ({"a__b": {"command": "x"}}, "server name"),
        ({"s": "python"}, '{"command", "args", "env"}'),
        ({"s": {}}, 'either "command"'),
        ({"s": {"command": "x", "args": "a b"}}, "args must be a list"),
        ({"s": {"command": "x", "env": {"K": 1}}}, "env must map names to strings"),
        ({"s": {"url": "file:///etc/passwd"}}, "http:// or https://"),
        ({"s": {"url": "http://h", "env": {}}}, '"url" goes with "headers"'),
        ({"s": {"command": "x", "start_timeout": -1}}, "between 0 and 3600"),
        ({"s": {"command": "x", "cwd": "/"}}, "unknown fields ['cwd']"),
    ],
)
def test_bad_shapes_say_what_to_write(raw: object, message: str) -> None:
    with pytest.raises(McpConfigError, match=None) as caught:
        parse_servers(raw)
    assert message in str(caught.value)


def test_public_masks_secrets_and_the_form_keeps_them() -> None:
    servers = parse_servers(
        {
            "a": {"command": "run", "env": {"TOKEN": "s3cret"}},
            "b": {"url": "https://user:pw@host/mcp?token=abc", "headers": {"Authorization": "Bearer xyz"}},
        }
    )
    shown = str({name: s.public() for name, s in servers.items()})
    assert "s3cret" not in shown and "xyz" not in shown and ":pw@" not in shown and "abc" not in shown
    assert servers["a"].public()["env"] == {"TOKEN": MASK}
    old = {"a": {"command": "run", "env": {"TOKEN": "s3cret"}}}
    assert with_kept_secrets({"a": {"command": "run", "env": {"TOKEN": MASK, "NEW": "v"}}}, old)["a"]["env"] == {
        "TOKEN": "s3cret",
        "NEW": "v",
    }


def test_a_server_is_reused_and_stopped_by_shutdown(tmp_path: Path) -> None:
    config = parse_servers(
        {"local": {"command": sys.executable, "args": [FIXTURE], "env": {"FIXTURE_NOTES": str(tmp_path)}}}
    )
    manager = McpManager(lambda: config)

    async def scenario() -> int:
        specs, notes = await manager.tools_for_run((), frozenset(TOOLS), frozenset())
        assert notes == [] and "mcp__local__lookup" in specs and specs["mcp__local__lookup"].needs_approval
        first = manager._connections["local"].session
        again, _ = await manager.tools_for_run((), frozenset(TOOLS), frozenset())
        assert manager._connections["local"].session is first  # reused, not restarted
        result = await manager._connections["local"].call("pid", {})
        pid = int(result.content[0].text)
        await manager.shutdown()
        return pid

    pid = asyncio.run(scenario())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        asyncio.run(asyncio.sleep(0.1))
    raise AssertionError(f"the MCP server (pid {pid}) still runs after shutdown")


def test_a_server_that_exits_says_why_without_its_secret() -> None:
    code = "import sys; sys.stderr.write('bad config, token tok-98765 refused'); sys.exit(3)"
    config = parse_servers({"dies": {"command": sys.executable, "args": ["-c", code], "env": {"TOKEN": "tok-98765"}}})
    manager = McpManager(lambda: config)

    async def scenario() -> tuple[dict, list[str]]:
        try:
            return await manager.tools_for_run((), frozenset(TOOLS), frozenset())
        finally:
            await manager.shutdown()

    specs, notes = asyncio.run(scenario())
    assert specs == {} and len(notes) == 1
    assert (
        "'dies' is not available" in notes[0]
        and "bad config, token *** refused" in notes[0]
        and "tok-98765" not in notes[0]
    )


def test_a_run_offers_a_bounded_number_of_outside_tools() -> None:
    from agent_core.tools.external import ExternalToolSpec
    from agent_core.tools.gathering import MAX_EXTERNAL_TOOLS, _within_budget

    async def never(args: dict, ctx: object) -> None:
        raise AssertionError("not called")

    schema = {"type": "object", "properties": {}}
    specs = {
        f"t{i}": ExternalToolSpec.make(f"t{i}", "d", schema, {"kind": "mcp", "tool": "x"}, never) for i in range(300)
    }
    kept, notes = _within_budget(specs, [])
    assert len(kept) == MAX_EXTERNAL_TOOLS and "172 tools from MCP servers or the notebook were left out" in notes[0]
    assert all(spec.needs_approval and not spec.read_only for spec in kept.values())
