"""explore (issue 37) end to end: a real Jupyter server, a real kernel, the agent driven by the
scripted fake LLM. Looks run unasked in a sandboxed fork and come back like a cell's outputs; the
user's kernel (variables, execution count, history) is what it was; health says what sandbox there is."""

from __future__ import annotations

import ast
import json

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
    """Each sent as the server sends it (agent_core.kernel_probes.sandbox's expression in one silent
    execute_request, no history, no count), on the test's own client: the agent's path is covered
    above, and 100 agent runs would cost a minute. Variables, execution count and history stay."""
    from agent_core.kernel_probes.sandbox import explore_expression

    before = lab.kernel_state()
    limits = {"cpu_s": 10.0, "wall_s": 20.0, "memory_mb": 1024.0, "processes": 8.0}
    for i in range(100):
        code = f"kept.append({i}); df.iloc[0, 0] = {i}; x{i} = {i}; print(len(kept), x{i})"
        expression = explore_expression(code, limits, str(lab.root), [], True)
        reply = lab.client.execute_interactive(
            "", silent=True, store_history=False, user_expressions={"r": expression}, timeout=60
        )
        found = json.loads(ast.literal_eval(reply["content"]["user_expressions"]["r"]["data"]["text/plain"]))
        assert found["status"] == "ok" and found["outputs"][0]["text"] == f"4 {i}\n", found
    assert lab.kernel_state() == before


def test_ask_mode_offers_explore(lab: Lab) -> None:
    result = lab.call("explore", {"code": "len(df)"}, autonomy="ask")
    assert result["status"] == "ok" and result["sandboxed"] is True, result
    assert "10" in output_text(result)
