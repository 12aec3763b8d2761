"""execute_command: output, stdin, streaming in batches, bounds, and no process surviving a
time-out, a Stop or the end of the command."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agent_core.output_digest import BoundedText
from agent_core.tools import TOOLS, ToolInputError, ToolOutcome, shell
from tests.tools_env import Ctx

SPEC = TOOLS["execute_command"]


async def run(root: Path, ctx: Ctx | None = None, **args: Any) -> ToolOutcome:
    # run checks the arguments against the tool's model first: a bad one is a ToolInputError
    return await SPEC.run(args, (ctx or Ctx(root))())


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (a zombie has exited; PID 1 may not reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


async def wait_for_pids(path: Path, count: int) -> list[int]:
    for _ in range(200):
        if path.exists() and len(path.read_text().split()) >= count:
            return pids(path)
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never got {count} pids")


def streamed(events: list[dict[str, Any]], name: str | None = None) -> str:
    assert all(e["type"] == "cell_output" and e["id"] == "call_1" for e in events)
    return "".join(e["output"]["text"] for e in events if name is None or e["output"]["name"] == name)


async def test_output_exit_code_and_streamed_events(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    out = await run(tmp_path, ctx, command="echo hello; echo oops >&2; exit 3")
    assert out.status == "error"
    assert out.content.splitlines() == [
        "$ echo hello; echo oops >&2; exit 3",
        "(cwd: .)",
        "exit code: 3",
        "stdout:",
        "hello",
        "stderr:",
        "oops",
    ]
    assert streamed(ctx.events, "stdout") == "hello\n" and streamed(ctx.events, "stderr") == "oops\n"
    assert {e["output"]["output_type"] for e in ctx.events} == {"stream"}
    ok = await run(tmp_path, command="printf '\\033[31mred\\033[0m'")
    assert ok.status == "ok" and "stdout:\nred" in ok.content  # no ANSI codes for the model


async def test_stdin_and_no_interactive_hang(tmp_path: Path) -> None:
    out = await run(tmp_path, command="read answer; echo got=$answer", stdin="y\n")
    assert "got=y" in out.content
    started = time.monotonic()
    out = await run(tmp_path, command="read answer || echo no-input; cat", timeout=10)
    assert "no-input" in out.content and time.monotonic() - started < 5  # stdin is empty, not a hang


async def test_output_is_batched_not_one_event_per_line(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    out = await run(tmp_path, ctx, command="for i in $(seq 1 3000); do echo line $i; done")
    assert streamed(ctx.events) == "".join(f"line {i}\n" for i in range(1, 3001))
    assert len(ctx.events) < 30
    assert "[..." in out.content and "line 1\n" in out.content and out.content.endswith("line 3000\nstderr: (empty)")


async def test_flood_is_bounded(tmp_path: Path) -> None:
    ctx = Ctx(tmp_path)
    out = await run(tmp_path, ctx, command="yes flood | head -c 30000000; echo done >&2")
    assert out.status == "ok" and len(out.content) < shell.STDOUT_LIMIT + shell.STDERR_LIMIT + 500
    assert "characters cut" in out.content and "stderr:\ndone" in out.content
    text = streamed(ctx.events)
    assert len(text) < shell.STREAM_LIMIT + 200 and "is not shown here" in text


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    command = (
        "sleep 300 & echo $! >> pids.txt; "
        "(sleep 300 & echo $! >> pids.txt; wait) & "
        "echo $$ >> pids.txt; echo started; sleep 300"
    )
    started = time.monotonic()
    out = await run(tmp_path, command=command, timeout=1)
    assert time.monotonic() - started < 10
    assert out.status == "error" and "timed out after 1 s" in out.content and "started" in out.content
    spawned = pids(tmp_path / "pids.txt")
    assert len(spawned) == 3
    await asyncio.sleep(0.1)
    assert [pid for pid in spawned if alive(pid)] == []


async def test_background_leftovers_are_stopped_when_the_command_ends(tmp_path: Path) -> None:
    started = time.monotonic()
    out = await run(
        tmp_path,
        command="nohup sleep 300 >/dev/null 2>&1 & echo $! > pid.txt; sleep 300 & echo $! >> pid.txt; echo done",
    )
    assert time.monotonic() - started < 5
    assert out.status == "ok" and "done" in out.content and "background processes" in out.content
    await asyncio.sleep(0.1)
    assert [pid for pid in pids(tmp_path / "pid.txt") if alive(pid)] == []


async def test_stop_kills_the_process_group(tmp_path: Path) -> None:
    task = asyncio.create_task(run(tmp_path, command="sleep 300 & echo $! > pids.txt; echo $$ >> pids.txt; wait"))
    spawned = await wait_for_pids(tmp_path / "pids.txt", 2)
    assert all(alive(pid) for pid in spawned)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.1)
    assert [pid for pid in spawned if alive(pid)] == []


async def test_sigterm_ignored_gets_sigkill(tmp_path: Path) -> None:
    out = await run(tmp_path, command="trap '' TERM; echo $$ > pid.txt; sleep 300 & wait; sleep 300", timeout=1)
    assert "timed out" in out.content
    await asyncio.sleep(0.1)
    assert not alive(pids(tmp_path / "pid.txt")[0])


async def test_cwd_and_bad_arguments(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "file.txt").write_text("x")
    out = await run(tmp_path, command="pwd", cwd="sub")
    assert out.content.splitlines()[1] == "(cwd: sub)" and str((tmp_path / "sub").resolve()) in out.content
    for args, needle in [
        ({"command": "ls", "cwd": "nope"}, "not an existing folder"),
        ({"command": "ls", "cwd": "file.txt"}, "not an existing folder"),
        ({"command": "ls", "cwd": "../.."}, "outside the workspace root"),
        ({"command": "   "}, "command is empty"),
        ({"command": "ls", "timeout": 0}, "positive number"),
        ({"command": "ls", "timeout": 10**6}, "at most"),
        ({"command": "ls", "timeout": True}, "positive number"),
    ]:
        with pytest.raises(ToolInputError, match=needle):
            await run(tmp_path, **args)


async def test_approval_card_preview(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    ctx = Ctx(tmp_path)()
    assert SPEC.needs_approval and not SPEC.read_only
    card = await SPEC.preview({"command": "make", "cwd": "sub"}, ctx)  # type: ignore[misc]
    assert {k: card[k] for k in ("command", "cwd")} == {"command": "make", "cwd": "sub"}
    assert card["impact"]["undoable"] is False and card["impact"]["shell"][0]["line"] == 1  # runs outside the kernel
    bad = await SPEC.preview({"command": "make", "cwd": "../x"}, ctx)  # type: ignore[misc]
    assert "will fail" in bad["description"]
    assert "sub" in SPEC.describe_call({"command": "make", "cwd": "sub"})


def test_bounded_text_keeps_head_and_tail() -> None:
    kept = BoundedText(30)
    for i in range(1000):
        kept.add(f"{i:04}")
    text = kept.text()
    assert (
        text.startswith("00000001000200030004")
        and text.endswith("09980999")
        and "[... 3970 characters cut ...]" in text
    )


async def test_stop_while_asyncio_still_connects_the_pipes_ends_at_once(tmp_path: Path) -> None:
    """A Stop in the command's first moments: asyncio has started bash and waits to connect its pipes.
    Python 3.11's create_subprocess_exec, cancelled there, waited for ever (CI: 300 s)."""
    for _ in range(5):
        task = asyncio.create_task(run(tmp_path, command="echo $$ > pids.txt; sleep 300 & wait"))
        await asyncio.sleep(0)  # the task runs to its first wait: bash started, its pipes not yet connected
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
        started = pids(tmp_path / "pids.txt") if (tmp_path / "pids.txt").exists() else []
        assert [pid for pid in started if alive(pid)] == []
