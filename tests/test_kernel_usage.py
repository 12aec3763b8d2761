"""The kernel's CPU and memory (its process tree, psutil) through POST resources and check_resource,
with a real kernel that allocates 500 MB."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api, of_type
from tests.test_tools_routes import run_in_kernel

MB = 2**20


async def test_a_500_mb_allocation_shows_in_the_route_and_the_tool(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, notebook_kernel: str
) -> None:
    _, before = await api.call("POST", "resources", {"kernel_id": notebook_kernel}, expect=200)
    assert before["kernel"]["cpu_percent"] >= 0
    assert "gpu_memory_bytes" not in before["kernel"]  # no NVML on this machine: the field is absent
    await run_in_kernel(jp_serverapp, "ballast = bytearray(500 * 2**20)\nballast[::4096] = b'x' * len(ballast[::4096])")
    _, after = await api.call("POST", "resources", {"kernel_id": notebook_kernel}, expect=200)
    assert after["kernel"]["memory_bytes"] - before["kernel"]["memory_bytes"] > 450 * MB

    fake_llm.script(tool_call("check_resource", {}, id="r1"), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "how loaded is the kernel?", kernel_id=notebook_kernel)
    events = await api.until_finished(thread)
    assert of_type(events, "tool_result")[0]["status"] == "ok"
    report = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][0]
    line = next(line for line in report.splitlines() if line.startswith("Kernel (process tree)"))
    megabytes = float(line.split("memory ")[1].split()[0])
    unit = line.split("memory ")[1].split()[1].rstrip(",")
    assert unit in ("MiB", "GiB") and (megabytes if unit == "MiB" else megabytes * 1024) > 450, line


async def test_no_kernel_is_an_entry_not_a_failure(api: Api, notebook_kernel: str) -> None:
    _, data = await api.call(
        "POST", "resources", {"kernel_id": "no-such-kernel", "notebook_path": "missing.ipynb"}, expect=200
    )
    assert "no kernel" in data["kernel"]["error"]
    _, data = await api.call("POST", "resources", {}, expect=200)
    assert "kernel" not in data
