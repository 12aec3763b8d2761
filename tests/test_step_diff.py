"""GET threads/{id}/diff (issue 25) through the real routes, a real kernel and the scripted model:
per cell and per file, what a range of the agent's steps changed, before and after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api
from tests.test_rewind import _five_steps
from tests.test_undo_routes import _run_approved, notebook_with_my_cell


async def test_a_range_of_steps_per_cell_and_per_file(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    thread = await _five_steps(api, fake_llm, notebook_kernel, jp_serverapp, jp_root_dir)

    _, middle = await api.call("GET", f"threads/{thread}/diff", params={"from": "s2", "to": "s4"}, expect=200)
    assert middle["steps"] == ["s2", "s3", "s4"]
    assert [c["tool_call_ids"] for c in middle["cells"]] == [["s2"]]
    cell = middle["cells"][0]
    assert cell["before"] is None and cell["before_known"] and cell["cell_type"] == "code"
    assert cell["after"]["source"].startswith("df['b'] = df['b'] * 2") and "+total = " in cell["diff"]
    files = {f["path"]: f for f in middle["files"]}
    assert sorted(files) == ["notes.txt", "out.txt"]
    assert files["out.txt"]["before"] is None and files["out.txt"]["after"] == "written by the agent\n"
    assert files["notes.txt"]["before"] == "a draft\n" and files["notes.txt"]["after"] == "a final\n"
    assert "-a draft\n+a final\n" in files["notes.txt"]["diff"]
    assert all(f["after_is_now"] and not f["changed_since"] for f in files.values())

    # The whole thread: three cells (two code, one Markdown), in the order the steps made them.
    _, whole = await api.call("GET", f"threads/{thread}/diff", expect=200)
    assert whole["from_tool_call_id"] == "s1" and whole["to_tool_call_id"] == "s5"
    assert [(c["tool_call_ids"], c["cell_type"]) for c in whole["cells"]] == [
        (["s1"], "code"),
        (["s2"], "code"),
        (["s5"], "markdown"),
    ]

    # The user changes a file after the agent: the diff says so.
    (jp_root_dir / "notes.txt").write_text("mine now\n")
    _, later = await api.call("GET", f"threads/{thread}/diff", params={"from": "s4", "to": "s4"}, expect=200)
    (notes,) = later["files"]
    assert notes["after"] == "mine now\n" and notes["changed_since"]

    await api.call("GET", f"threads/{thread}/diff", params={"from": "s4", "to": "s2"}, expect=400)
    _, missing = await api.call("GET", f"threads/{thread}/diff", params={"from": "nope"}, expect=404)
    assert missing["error"] == "step_not_found"
    await api.call("GET", "threads/not-a-thread/diff", expect=404)


async def test_an_edited_cell_shows_its_source_from_before_the_edit(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    await notebook_with_my_cell(jp_serverapp, notebook_kernel, jp_root_dir)
    fake_llm.script(
        tool_call("edit_cell", {"cell_id": "mine", "source": "y = 3\nprint(y)"}, id="ed1"),
        tool_call("edit_cell", {"cell_id": "mine", "source": "y = 4\nprint(y)"}, id="ed2"),
        text("ok"),
    )
    thread = await api.new_thread()
    await _run_approved(api, thread, "change y", ["ed1", "ed2"])

    _, both = await api.call("GET", f"threads/{thread}/diff", expect=200)
    (cell,) = both["cells"]
    assert cell["cell_id"] == "mine" and cell["tool_call_ids"] == ["ed1", "ed2"]
    assert cell["before"]["source"] == "y = 2" and not cell["before"].get("outputs") and cell["before_known"]
    assert cell["after"]["source"] == "y = 4\nprint(y)"
    assert cell["after"]["outputs"][0]["text"] == "4\n"
    assert "-y = 2\n" in cell["diff"] and "+y = 4\n" in cell["diff"]

    _, second = await api.call("GET", f"threads/{thread}/diff", params={"from": "ed2"}, expect=200)
    assert second["cells"][0]["before"]["source"] == "y = 3\nprint(y)"  # as the first edit left it
    assert second["cells"][0]["before"]["outputs"][0]["text"] == "3\n"


async def test_a_file_turned_into_a_link_out_of_the_root_is_never_read_into_a_diff(
    api: Api, fake_llm: FakeLLM, jp_root_dir: Path, tmp_path: Path
) -> None:
    """After the agent's write, the file becomes a link to a secret outside the root (or a hidden
    file): the diff's "after" is not read through it."""
    fake_llm.script(
        tool_call("write_file", {"path": "out.txt", "content": "by the agent\n"}, id="w1"),
        tool_call("write_file", {"path": "inner.txt", "content": "by the agent\n"}, id="w2"),
        text("ok"),
    )
    thread = await api.new_thread()
    await _run_approved(api, thread, "write", ["w1", "w2"])
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("outside the root: never shown\n")
    (jp_root_dir / ".hidden-secret").write_text("hidden: never shown\n")
    for name, target in (("out.txt", secret), ("inner.txt", jp_root_dir / ".hidden-secret")):
        (jp_root_dir / name).unlink()
        (jp_root_dir / name).symlink_to(target)
    code, answer = await api.call("GET", f"threads/{thread}/diff", expect=200)
    files = {f["path"]: f for f in answer["files"]}
    assert files["out.txt"]["after"] is None and files["inner.txt"]["after"] is None, files
    assert "never shown" not in str(answer)
