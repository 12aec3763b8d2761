"""One configuration (agent_core.config.configurable): the `Cellwright` traits as the server and the
`%agent` magic both read them, PUT config and its settings.json, and the one KernelEnvironment."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from agent_core.config.agent_settings import AgentSettings
from agent_core.config.configurable import Cellwright, SettingsError, load
from agent_core.config.kernel_config import load_for_kernel
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.jupyter_process import JupyterProcess
from tests.conftest import NOTEBOOK, Api, of_type

ENV_NAMES = ("CELLWRIGHT_", "OPENAI_", "JUPYTER_")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No Cellwright, OpenAI or Jupyter variable of the machine running the tests leaks in, and
    the default data folder is the test's own."""
    for name in list(os.environ):
        if name.startswith(ENV_NAMES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    return monkeypatch


def write_config(folder: Path, name: str, content: str | dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".py" if isinstance(content, str) else ".json"
    (folder / (name + suffix)).write_text(content if isinstance(content, str) else json.dumps(content))


# -- precedence and validation, without a server


def test_precedence_config_files_then_saved_settings_then_environment(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    config, data = tmp_path / "config", tmp_path / "data"
    write_config(
        config,
        "jupyter_cellwright_config",
        {"Cellwright": {"model": "from-own-file", "max_retries": 7, "command_timeout": 5}},
    )
    write_config(
        config, "jupyter_server_config", "c.Cellwright.base_url = 'http://from-py/v1'\nc.Cellwright.model = 'from-py'\n"
    )
    write_config(
        config,
        "jupyter_server_config",
        {"Cellwright": {"model": "from-json", "request_timeout": 5, "data_dir": str(data)}},
    )
    data.mkdir()
    saved = {"model": "from-put-config", "auto_approve": ["run_cell"], "tool_calling": "turbo", "data_dir": "ignored"}
    (data / "settings.json").write_text(json.dumps(saved))
    for name, value in {
        "CELLWRIGHT_MODEL": "from-env",
        "OPENAI_API_KEY": "env-key",
        "OPENAI_BASE_URL": "http://env/v1",
    }.items():
        clean_env.setenv(name, value)

    settings, notes = load_for_kernel([str(config)])
    agent = settings.agent_settings()
    assert agent.model == "from-put-config" and agent.auto_approve == {
        "run_cell"
    }  # settings.json wins for what PUT sets
    assert agent.base_url == "http://from-py/v1"  # a config beats the env, which fills the rest...
    # ...but OPENAI_API_KEY stays with OPENAI_BASE_URL: it is not sent to the config's endpoint
    assert agent.api_key == "" and settings.key_for("http://env/v1") == "env-key"
    assert (
        agent.request_timeout == 5.0 and agent.max_retries == 7
    )  # .json over .py; the server's file over the extension's
    assert agent.command_timeout == 5.0 and agent.tool_calling == "native"  # the bad saved value was skipped...
    assert any("tool_calling" in note and "turbo" in note for note in notes)  # ...and the user is told
    assert (
        settings.data_dir == str(data) and settings.threads_path == data / "threads.sqlite"
    )  # settings.json cannot move it


def test_every_agent_setting_is_a_trait_with_help(clean_env: pytest.MonkeyPatch) -> None:
    traits = Cellwright.class_traits(config=True)
    assert {f.name for f in fields(AgentSettings)} <= set(traits)
    assert all(trait.help for trait in traits.values())
    # One set of defaults; data_dir's is computed (Jupyter's data folder), so AgentSettings cannot hold it.
    assert Cellwright().agent_settings() == AgentSettings(data_dir=Cellwright().data_dir)
    assert set(Cellwright.runtime_names()) == {
        "model",
        "base_url",
        "api_key",
        "tool_calling",
        "auto_approve",
        "prices",
        "mcp_servers",
        "acp_agents",
    }  # what PUT config may set


def test_database_url_and_its_older_name(clean_env: pytest.MonkeyPatch) -> None:
    assert load().database_url == ""
    clean_env.setenv("CELLWRIGHT_CHECKPOINTER_URL", "memory")
    assert load().database_url == "memory"
    clean_env.setenv("CELLWRIGHT_DATABASE_URL", "postgresql://db/a")
    assert load().database_url == "postgresql://db/a"
    assert load(config=Config({"Cellwright": {"checkpointer_url": "/data/x.sqlite"}})).database_url == "/data/x.sqlite"
    both = Config({"Cellwright": {"checkpointer_url": "/old.sqlite", "database_url": "postgresql://db/b"}})
    assert load(config=both).database_url == "postgresql://db/b"
    assert load(config=both).public()["checkpointer"] == "postgres"


def test_the_owner_is_the_user_the_server_runs_for(clean_env: pytest.MonkeyPatch) -> None:
    import getpass

    clean_env.delenv("JUPYTERHUB_USER", raising=False)
    assert load().owner == getpass.getuser()
    clean_env.setenv("JUPYTERHUB_USER", "alice")  # as JupyterHub starts a single-user server
    assert load().owner == "alice"
    clean_env.setenv("CELLWRIGHT_OWNER", "team-a")
    assert load().owner == "team-a"
    assert load(config=Config({"Cellwright": {"owner": "bob"}})).owner == "bob"
    assert load().database_pool_size == 2
    clean_env.setenv("CELLWRIGHT_DATABASE_POOL_SIZE", "5")
    assert load().database_pool_size == 5
    assert load().database_timeout == 10.0
    clean_env.setenv("CELLWRIGHT_DATABASE_TIMEOUT", "2.5")
    assert load().database_timeout == 2.5


@pytest.mark.parametrize(
    ("config", "env", "expected"),
    [
        ({"tool_calling": "turbo"}, {}, ["tool_calling", "'native', 'prompt', 'auto'", "turbo"]),
        ({}, {"CELLWRIGHT_TOOL_CALLING": "turbo"}, ["tool_calling", "CELLWRIGHT_TOOL_CALLING", "turbo"]),
        ({"auto_approve": ["run_cell", "rm_rf"]}, {}, ["auto_approve", "rm_rf", "unknown tools"]),
        ({"max_retries": "x"}, {}, ["max_retries", "'x'"]),
        ({"cell_timeout": 0}, {}, ["cell_timeout", "more than 0 seconds"]),
        ({"max_model_calls": 0}, {}, ["max_model_calls"]),
        ({"database_pool_size": 0}, {}, ["database_pool_size must be 1 or more", "not 0"]),
        ({}, {"CELLWRIGHT_DATABASE_POOL_SIZE": "two"}, ["CELLWRIGHT_DATABASE_POOL_SIZE", "whole number", "'two'"]),
        ({"database_timeout": 0}, {}, ["database_timeout", "more than 0 seconds"]),
        ({}, {"CELLWRIGHT_DATABASE_TIMEOUT": "soon"}, ["CELLWRIGHT_DATABASE_TIMEOUT", "number of seconds", "'soon'"]),
        ({"owner": " "}, {}, ["owner must name a user"]),
    ],
)
def test_a_bad_value_is_refused_with_its_name_and_what_it_takes(
    clean_env: pytest.MonkeyPatch, config: dict[str, Any], env: dict[str, str], expected: list[str]
) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value)
    with pytest.raises(SettingsError) as refused:
        load(config=Config({"Cellwright": config}))
    assert all(part in str(refused.value) for part in expected), str(refused.value)


def test_the_magic_says_what_is_wrong_in_a_config_file(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    write_config(tmp_path, "jupyter_server_config", {"Cellwright": {"tool_calling": "turbo"}})
    with pytest.raises(SettingsError, match="tool_calling"):
        load_for_kernel([str(tmp_path)])
    write_config(tmp_path, "jupyter_server_config", {"Cellwright": {"modle": "typo", "data_dir": str(tmp_path / "d")}})
    write_config(tmp_path, "jupyter_cellwright_config", "c.Cellwright.model = (\n")  # a syntax error
    settings, notes = load_for_kernel([str(tmp_path)])
    assert any("modle" in note and "not recognized" in note for note in notes), notes
    assert any("jupyter_cellwright_config.py" in note for note in notes), notes
    assert settings.model == ""


def test_a_change_is_all_or_nothing_and_saved_owner_only(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    settings = load(config=Config({"Cellwright": {"model": "m0", "data_dir": str(tmp_path / "data")}}))
    with pytest.raises(SettingsError, match="rm_rf"):
        settings.change({"model": "m1", "auto_approve": ["rm_rf"]})
    with pytest.raises(SettingsError, match="tool_calling"):
        settings.change({"model": "m1", "tool_calling": "turbo"})
    with pytest.raises(SettingsError, match=r"Unknown settings \['max_retries'\]"):
        settings.change({"model": "m1", "max_retries": 0})
    assert settings.model == "m0" and not settings.settings_path.exists()
    settings.change({"model": "m1", "api_key": "sk-new"})
    settings.change({"auto_approve": ["read_file"]})
    assert json.loads(settings.settings_path.read_text()) == {
        "model": "m1",
        "api_keys": {"https://api.openai.com": "sk-new"},
        "auto_approve": ["read_file"],
    }
    assert stat.S_IMODE(settings.settings_path.stat().st_mode) == 0o600
    again = load(config=Config({"Cellwright": {"model": "m0", "data_dir": str(tmp_path / "data")}}))
    assert again.agent_settings() == settings.agent_settings()


def test_one_version_from_package_json() -> None:
    import agent_core
    import cellwright
    import jupyter_ext

    # pyproject.toml takes it from package.json at build time (hatch-nodejs-version): an installed
    # Cellwright older than this checkout fails here, as the panel's version check would.
    written = json.loads((Path(__file__).resolve().parent.parent / "package.json").read_text())["version"]
    assert agent_core.__version__ == jupyter_ext.__version__ == cellwright.__version__ == written


# -- the server and the magic, for real


def kernel_view(server: JupyterProcess, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """GET config as a `%agent` in a kernel of `server` would see it (a kernel inherits the server's environment)."""
    for name in list(os.environ):
        if name.startswith(ENV_NAMES):
            monkeypatch.delenv(name)
    for name, value in server.env.items():
        if name.startswith(ENV_NAMES):
            monkeypatch.setenv(name, value)
    settings, _ = load_for_kernel()
    return settings.public()


@pytest.mark.runs_long
def test_the_server_and_the_magic_read_the_same_settings(
    tmp_path: Path, servers: list[JupyterProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    write_config(config, "jupyter_server_config", "c.Cellwright.model = 'from-py'\nc.Cellwright.max_model_calls = 7\n")
    write_config(
        config,
        "jupyter_server_config",
        {"Cellwright": {"base_url": "http://from-json/v1", "auto_approve": ["read_file"]}},
    )
    write_config(config, "jupyter_cellwright_config", {"Cellwright": {"model": "from-own-file", "command_timeout": 60}})
    env = {"OPENAI_API_KEY": "sk-from-env", "CELLWRIGHT_TOOL_CALLING": "prompt", "CELLWRIGHT_MODEL": "from-env"}
    server = JupyterProcess(tmp_path, env).start()
    servers.append(server)

    served = server.get("cellwright/api/config").json()
    assert served == kernel_view(server, monkeypatch)
    assert served["model"] == "from-py" and served["base_url"] == "http://from-json/v1"
    assert served["api_key_set"] is False  # OPENAI_API_KEY without OPENAI_BASE_URL belongs to api.openai.com
    assert served["api_keys_set"] == ["https://api.openai.com"]
    assert (served["tool_calling"], served["max_model_calls"], served["command_timeout"]) == ("prompt", 7, 60)

    changed = server.request("PUT", "cellwright/api/config", {"model": "put-model", "tool_calling": "native"})
    assert changed.status_code == 200, changed.text
    assert kernel_view(server, monkeypatch) == changed.json()  # the magic's next call uses them
    refused = server.request("PUT", "cellwright/api/config", {"model": "other", "tool_calling": "turbo"})
    assert refused.status_code == 400 and "tool_calling" in refused.json()["message"]

    server.stop()
    server.extra_args = ["--Cellwright.command_timeout=33"]
    server.start()
    after = server.get("cellwright/api/config").json()
    assert (after["model"], after["tool_calling"], after["command_timeout"]) == ("put-model", "native", 33)
    health = server.get("cellwright/api/health").json()
    import agent_core

    assert health["version"] == agent_core.__version__ and health["model"] == "put-model"
    assert health["shared_document"] is False  # no jupyter-collaboration: the panel writes the cells


def test_a_bad_config_value_is_named_by_health_and_the_log(tmp_path: Path, servers: list[JupyterProcess]) -> None:
    write_config(tmp_path / "config", "jupyter_server_config", {"Cellwright": {"tool_calling": "turbo"}})
    server = JupyterProcess(tmp_path, {}).start()
    servers.append(server)
    [problem] = server.get("cellwright/api/health").json()["problems"]
    for said in (problem["message"], server.log_path.read_text()):
        assert "tool_calling" in said and "turbo" in said and "'native', 'prompt', 'auto'" in said


# -- one KernelEnvironment, with the cell time-out, for runs and for the tool routes


@pytest.fixture
def cellwright_config(cellwright_config: dict[str, Any]) -> dict[str, Any]:
    return {**cellwright_config, "cell_timeout": 1.5, "auto_approve": ["run_cell"]}


async def test_runs_and_tool_routes_get_the_cell_timeout(
    api: Api, fake_llm: FakeLLM, notebook_kernel: str, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_ext import kernel_executor

    made: list[Any] = []

    class Recorded(kernel_executor.KernelEnvironment):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(kernel_executor, "KernelEnvironment", Recorded)
    app = jp_serverapp.web_app.settings["cellwright"]
    await api.call("POST", "resources", {"dataframes": ["df"], "kernel_id": notebook_kernel}, expect=200)
    assert [(env.cell_timeout, env.workspace) for env in made] == [(1.5, app.workspace)]

    fake_llm.script(tool_call("run_cell", {"code": "import time; time.sleep(30)"}, id="c1"), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "sleep", kernel_id=notebook_kernel)
    events = await api.until_finished(thread)
    assert of_type(events, "cell_finished")[0]["status"] != "ok"
    outputs = [e["output"] for e in of_type(events, "cell_output")]
    assert any("time-out of 1.5 s" in json.dumps(output) for output in outputs), outputs
    assert made[-1].notebook_path == NOTEBOOK and made[-1].cell_timeout == 1.5 and made[-1].workspace is app.workspace
