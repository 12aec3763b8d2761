"""Undo through the `%agent` magic's ToolEnvironment (the kernel's own shell): an approved cell is
snapshotted in the same kernel-side store the server uses."""
from __future__ import annotations

from tests.test_magic import Kernel, kernel, llm, places  # noqa: F401 (the magic's fixtures)
from devtools.fake_llm import FakeLLM, tool_call


def test_the_magics_cells_are_snapshotted_in_the_kernel(kernel: Kernel, llm: FakeLLM) -> None:  # noqa: F811
    kernel.run("v = [1, 2]")
    llm.script(tool_call("run_cell", {"code": "v.append(3)\nnew = 1"}, id="m1"), tool_call("final_answer", {"answer": "Done."}))
    out = kernel.run("%agent --new --yes change v")
    assert out.answers == ["Done."], out
    check = "import sys; s = sys.modules['_cellwright_undo'].steps['m1']; print(s['values'], s['absent'])"
    assert kernel.run(check).stdout == "{'v': [1, 2]} ['new']\n"
