"""explore (issue 37) end to end: a real Jupyter server, a real kernel, the agent driven by the
scripted fake LLM. Looks run unasked in a sandboxed fork and come back like a cell's outputs; the
user's kernel (variables, execution count, history) is what it was; health says what sandbox there is."""

from __future__ import annotations

import pytest

from tests.sandbox_fixtures import Lab, lab, llm, output_text  # noqa: F401  (fixtures)


def test_health_names_the_sandbox(lab: Lab) -> None:
    health = lab.server.get("cellwright/api/health").json()
    assert health["sandbox"]["available"] is True, health
    assert "namespaces" in health["sandbox"]["mechanism"]
    assert health["sandbox"]["shell"]["available"] is True, health


def test_explore_looks_at_live_variables_unasked(lab: Lab) -> None:
    before = lab.kernel_state()
    result = lab.explore("print(df.shape)\ndf['a'].describe()")
    assert result["status"] == "ok", result
    assert "(10, 2)" in output_text(result)
    kinds = [o["output_type"] for o in result["outputs"]]
    assert kinds == ["stream", "execute_result"], result["outputs"]
    assert "mean" in result["outputs"][1]["data"]["text/plain"]
    assert lab.kernel_state() == before


def test_explore_renders_figures_in_the_fork(lab: Lab) -> None:
    before = lab.kernel_state()
    result = lab.explore("import matplotlib.pyplot as plt\nplt.plot(df['a'])\nplt.title('a')")
    assert result["status"] == "ok", result
    images = [o for o in result["outputs"] if "image/png" in (o.get("data") or {})]
    assert images, result["outputs"]
    assert images[0]["data"]["image/png"].startswith("iVBOR")  # a PNG, base64
    assert lab.kernel_state() == before


def test_explore_changes_nothing_it_assigns(lab: Lab) -> None:
    before = lab.kernel_state()
    result = lab.explore("df['a'] = 0\nkept.append(4)\nnew_name = 1\ndel secret_value\nkept")
    assert result["status"] == "ok", result
    assert "[1, 2, 3, 4]" in output_text(result)
    after = lab.kernel_state()
    assert after == before and "new_name" not in after["names"] and after["kept"] == "[1, 2, 3]"


def test_an_error_is_the_model_s_to_read(lab: Lab) -> None:
    result = lab.explore("df['no such column']")
    assert result["status"] == "error"
    assert any(o["output_type"] == "error" and o["ename"] == "KeyError" for o in result["outputs"]), result


def test_a_hundred_explores_leave_the_kernel_as_it_was(lab: Lab) -> None:
    """Through the server's own evaluation path: the kernel's variables, execution count and history."""
    from tests.sandbox_fixtures import STATE  # noqa: F401  (the same reading as kernel_state)

    before = lab.kernel_state()
    calls = [f"kept.append({i}); df.iloc[0, 0] = {i}; x{i} = {i}; print(len(kept))" for i in range(100)]
    # one run of 100 calls: every one is a real explore through the agent, unasked
    from devtools.fake_llm import text, tool_call

    events = lab.run_agent(
        *[tool_call("explore", {"code": c}, id=f"call_many_{i}") for i, c in enumerate(calls)],
        text("done"),
        timeout=300,
    )
    results = [e for e in events if e["type"] == "tool_result"]
    assert len(results) == 100 and all(r["status"] == "ok" and r["sandboxed"] for r in results), results[-1]
    assert all("4\n" in output_text(r) for r in results)  # each fork started from the same kernel
    assert not [e for e in events if e["type"] in ("approval_required", "cell_started")]
    assert lab.kernel_state() == before


def test_ask_mode_offers_explore(lab: Lab) -> None:
    result = lab.call("explore", {"code": "len(df)"}, autonomy="ask")
    assert result["status"] == "ok" and result["sandboxed"] is True, result
    assert "10" in output_text(result)
