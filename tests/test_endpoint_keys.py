"""Keys stay with their endpoint (issue 29): an API key belongs to the scheme, host and port of the
base_url it was given for, and no request of Cellwright's carries it anywhere else: not "Test
connection" with a typed endpoint, not a run after PUT config moved base_url, not an MCP server
re-pointed with masked secrets. A recorder on 127.0.0.2 (the scripted fake LLM, recording every
request's headers) proves it through the real server."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from agent_core.config.agent_settings import DEFAULT_ENDPOINT, endpoint_of
from agent_core.config.configurable import SettingsError, load
from agent_core.config.kernel_config import load_for_kernel
from agent_core.config.mcp_servers import MASK
from devtools import fake_llm as fake_llm_module
from devtools.fake_llm import FakeLLM, text
from tests.conftest import Api, of_type

SAVED_KEY = "sk-test-secret-key"  # conftest's key, configured beside the fake LLM's base_url
MCP_HEADER = "Bearer mcp-header-secret-789"
MCP_ENV = "mcp-env-secret-321"


class _RecordingHandler(fake_llm_module._Handler):
    """The fake LLM's handler, recording every request (the model list and MCP posts too) and, when
    the recorder wants a key, answering 401 to a request without it."""

    def _let_in(self) -> bool:
        recorder: Recorder = self.server.fake  # type: ignore[assignment]
        recorder.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        if recorder.key is None or self.headers.get("Authorization") == f"Bearer {recorder.key}":
            return True
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send_json(
            401,
            {
                "error": {
                    "message": "Incorrect API key provided.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
        return False

    def do_GET(self) -> None:
        if self._let_in():
            super().do_GET()

    def do_POST(self) -> None:
        if self._let_in():
            super().do_POST()


class Recorder(FakeLLM):
    """An OpenAI-compatible endpoint on 127.0.0.2 that records the headers of every request."""

    def __init__(self) -> None:
        super().__init__(host="127.0.0.2")
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.key: str | None = None  # set: the endpoint needs this key

    def start(self) -> Recorder:
        super().start()
        assert self._server is not None
        self._server.RequestHandlerClass = _RecordingHandler
        return self

    def authorizations(self) -> list[str | None]:
        return [headers.get("authorization") for _, _, headers in self.seen]

    def everything(self) -> str:
        return json.dumps(self.seen)


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Recorder() as rec:
        yield rec


@pytest.fixture(autouse=True)
def no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's OPENAI_* variables stay out: each key here is the test's own."""
    for name in list(os.environ):
        if name.startswith("OPENAI_"):
            monkeypatch.delenv(name)


async def _run(api: Api, thread: str, message: str) -> list[dict[str, Any]]:
    events = await api.events(thread)
    await api.run(thread, message)
    return await api.until_finished(thread, events[-1]["seq"] if events else 0)


# -- through the real server


async def test_connection_test_sends_a_typed_endpoint_only_the_key_typed_with_it(
    api: Api, fake_llm: FakeLLM, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    recorder.script(text("OK"), text("OK"), text("OK"), text("OK"))
    _, report = await api.call(
        "POST", "config/test", {"base_url": recorder.base_url, "model": "fake-model"}, expect=200
    )
    assert report["ok"] is True, report
    assert len(recorder.seen) == 3 and recorder.authorizations() == [None, None, None]  # models, completion, tools
    assert [check for check in report["checks"] if check["name"] == "key"][0][
        "message"
    ] == "The endpoint accepted the request."

    recorder.seen.clear()
    _, report = await api.call(
        "POST", "config/test", {"base_url": recorder.base_url, "model": "fake-model", "api_key": "sk-typed"}, expect=200
    )
    assert report["ok"] is True and recorder.authorizations() == ["Bearer sk-typed"] * 3

    recorder.seen.clear()
    recorder.key = "sk-the-recorders-own"  # an endpoint that needs a key, tested without one
    _, report = await api.call(
        "POST", "config/test", {"base_url": recorder.base_url, "model": "fake-model"}, expect=200
    )
    assert report["ok"] is False and report["checks"][-1]["name"] == "key", report
    assert "No key for this endpoint" in report["checks"][-1]["message"]
    assert recorder.authorizations() == [None]

    # The saved endpoint itself still gets its own key (nothing typed: the form's endpoint is the saved one).
    fake_llm.script(text("OK"), text("OK"))
    _, report = await api.call("POST", "config/test", {}, expect=200)
    assert report["ok"] is True and {h["authorization"] for h in fake_llm.request_headers} == {f"Bearer {SAVED_KEY}"}
    assert SAVED_KEY not in recorder.everything() and SAVED_KEY not in caplog.text


async def test_a_new_base_url_gets_no_key_and_the_old_one_keeps_its_own(
    api: Api, fake_llm: FakeLLM, recorder: Recorder, cellwright_config: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    first, second = endpoint_of(fake_llm.base_url), endpoint_of(recorder.base_url)
    answers: list[Any] = []
    _, config = await api.call("GET", "config", expect=200)
    assert (
        config["api_key_set"] is True and config["api_keys_set"] == [first] and config["sources"]["api_key"] == "config"
    )

    _, config = await api.call("PUT", "config", {"base_url": recorder.base_url}, expect=200)
    assert (
        config["api_key_set"] is False
        and config["api_keys_set"] == [first]
        and config["sources"]["api_key"] == "default"
    )
    answers.append(config)
    thread = await api.new_thread()
    recorder.script(text("hello from the second endpoint"))
    events = await _run(api, thread, "hi")
    assert events[-1]["status"] == "completed" and of_type(events, "final")
    assert recorder.authorizations() and set(recorder.authorizations()) == {None}  # a run's model request: no key
    answers.append(events)

    recorder.seen.clear()
    recorder.key = "sk-second"  # the endpoint needs a key: the run says so, clearly
    events = await _run(api, thread, "again")
    errors = of_type(events, "error")
    assert events[-1]["status"] == "failed" and errors[-1]["kind"] == "llm_auth", errors
    assert "No key for this endpoint" in errors[-1]["message"] and set(recorder.authorizations()) == {None}
    answers.append(events)

    _, config = await api.call("PUT", "config", {"api_key": "sk-second"}, expect=200)
    assert config["api_key_set"] is True and config["api_keys_set"] == sorted([first, second])
    answers.append(config)
    recorder.seen.clear()
    recorder.script(text("with my own key"))
    events = await _run(api, thread, "once more")
    assert events[-1]["status"] == "completed" and set(recorder.authorizations()) == {"Bearer sk-second"}
    answers.append(events)

    # Back to the first endpoint: its key, without retyping; and back again: the second's.
    _, config = await api.call("PUT", "config", {"base_url": fake_llm.base_url}, expect=200)
    assert config["api_key_set"] is True and config["sources"]["api_key"] == "config"
    fake_llm.script(text("first again"))
    events = await _run(api, thread, "first")
    assert (
        events[-1]["status"] == "completed" and fake_llm.request_headers[-1]["authorization"] == f"Bearer {SAVED_KEY}"
    )
    answers += [config, events]
    recorder.seen.clear()
    _, config = await api.call("PUT", "config", {"base_url": recorder.base_url}, expect=200)
    recorder.script(text("second again"))
    events = await _run(api, thread, "second")
    assert events[-1]["status"] == "completed" and set(recorder.authorizations()) == {"Bearer sk-second"}
    answers += [config, events, await api.call("GET", f"threads/{thread}")]

    settings_path = Path(cellwright_config["data_dir"]) / "settings.json"
    assert stat.S_IMODE(settings_path.stat().st_mode) == 0o600
    saved = json.loads(settings_path.read_text())
    assert (
        saved["api_keys"] == {second: "sk-second"} and "api_key" not in saved
    )  # the configured key stays in the config
    assert SAVED_KEY not in recorder.everything()
    for secret in (SAVED_KEY, "sk-second"):
        assert secret not in json.dumps(answers) and secret not in caplog.text


class TestMcpSecrets:
    @pytest.fixture
    def cellwright_config(self, cellwright_config: dict[str, Any]) -> dict[str, Any]:
        return {
            **cellwright_config,
            "mcp_servers": {
                "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": MCP_HEADER}},
                "local": {"command": sys.executable, "args": ["-c", "pass"], "env": {"TOKEN": MCP_ENV}},
            },
        }

    async def test_an_mcp_server_re_pointed_does_not_take_the_masked_secrets(
        self,
        api: Api,
        fake_llm: FakeLLM,
        recorder: Recorder,
        cellwright_config: dict[str, Any],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        await _mcp_scenario(api, fake_llm, recorder, cellwright_config, caplog)


async def _mcp_scenario(
    api: Api, fake_llm: FakeLLM, recorder: Recorder, cellwright_config: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    _, config = await api.call("GET", "config", expect=200)
    shown = config["mcp_servers"]
    assert shown["web"]["headers"] == {"Authorization": MASK} and shown["local"]["env"] == {"TOKEN": MASK}
    web = {"url": shown["web"]["url"], "headers": shown["web"]["headers"]}
    local = {"command": shown["local"]["command"], "args": shown["local"]["args"], "env": shown["local"]["env"]}
    mcp_url = f"http://127.0.0.2:{recorder.port}/mcp"
    answers: list[Any] = [config]

    refused = [
        ({"web": {**web, "url": mcp_url}, "local": local}, "'web' is no longer the URL"),  # another URL
        (
            {"web": web, "local": {**local, "args": ["-c", "print('other')"]}},
            "'local' is no longer the program",
        ),  # other args
        ({"web": web, "local": {**local, "command": "/bin/sh"}}, "'local' is no longer the program"),  # another command
        ({"web": web, "renamed": local}, "no server 'renamed' was saved"),  # renamed
        (
            {"web": {"command": sys.executable, "env": {"Authorization": MASK}}, "local": local},
            "'web' is no longer the URL",
        ),  # stdio now
    ]
    for servers, message in refused:
        code, answer = await api.call("PUT", "config", {"mcp_servers": servers})
        assert code == 400 and message in answer["message"] and "type the value again" in answer["message"], answer
        answers.append(answer)
    settings_path = Path(cellwright_config["data_dir"]) / "settings.json"
    assert not settings_path.exists() or "mcp_servers" not in json.loads(settings_path.read_text())  # nothing changed
    _, after = await api.call("GET", "config", expect=200)
    assert after["mcp_servers"] == shown

    # Unchanged, the masked values are kept; re-pointed with the secret typed again, the new server gets that one only.
    await api.call("PUT", "config", {"mcp_servers": {"web": web, "local": local}}, expect=200)
    code, answer = await api.call(
        "PUT",
        "config",
        {"mcp_servers": {"web": {"url": mcp_url, "headers": {"Authorization": "Bearer typed-for-the-recorder"}}}},
    )
    assert code == 200, answer
    fake_llm.script(text("done"))
    thread = await api.new_thread()
    events = await _run(api, thread, "use your tools")
    assert events[-1]["status"] == "completed"
    posted = [headers for method, path, headers in recorder.seen if path.startswith("/mcp")]
    assert posted and {h.get("authorization") for h in posted} == {"Bearer typed-for-the-recorder"}
    answers += [answer, events, await api.call("GET", "mcp/servers")]
    for secret in (MCP_HEADER, MCP_ENV, "typed-for-the-recorder"):
        assert secret not in json.dumps(answers) and secret not in caplog.text
    assert MCP_HEADER not in recorder.everything()


# -- the settings on their own: the environment, the config files, settings.json and %agent


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith(("CELLWRIGHT_", "OPENAI_", "JUPYTER_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter-config"))
    return monkeypatch


def test_an_endpoint_is_scheme_host_and_port() -> None:
    assert endpoint_of("") == DEFAULT_ENDPOINT == endpoint_of("https://API.openai.com:443/v1")
    assert endpoint_of("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000" != endpoint_of("http://127.0.0.1:8001/v1")
    assert endpoint_of("http://user:pw@host/v1") == "http://host" != endpoint_of("https://host/v1")


def test_environment_and_config_keys_belong_to_the_base_url_beside_them(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://env-host:1/v1")
    clean_env.setenv("OPENAI_API_KEY", "sk-env")
    settings = load(
        config=Config({"Cellwright": {"base_url": "http://config-host/v1", "data_dir": str(tmp_path / "d1")}})
    )
    assert settings.agent_settings().api_key == "" and settings.public()["api_keys_set"] == ["http://env-host:1"]
    settings.change({"base_url": "http://env-host:1/v2"})
    assert settings.agent_settings().api_key == "sk-env"  # the environment's endpoint: its key

    both = Config(
        {"Cellwright": {"base_url": "http://config-host/v1", "api_key": "sk-config", "data_dir": str(tmp_path / "d2")}}
    )
    settings = load(config=both)
    assert settings.agent_settings().api_key == "sk-config"  # the same level: the key goes with it
    settings.change({"base_url": "http://put-host/v1"})
    public = settings.public()
    assert settings.agent_settings().api_key == "" and public["api_key_set"] is False
    assert public["api_keys_set"] == ["http://config-host", "http://env-host:1"] and "sk-" not in json.dumps(public)
    again = load(config=both)  # the next start: the saved base_url, still without a key
    assert again.base_url == "http://put-host/v1" and again.agent_settings().api_key == ""

    alone = load(config=Config({"Cellwright": {"api_key": "sk-openai", "data_dir": str(tmp_path / "d3")}}))
    assert (
        alone.base_url == "http://env-host:1/v1" and alone.agent_settings().api_key == "sk-env"
    )  # not the config's key
    assert alone.key_for("") == "sk-openai"  # a config key without a config base_url is api.openai.com's
    assert "sk-" not in repr(alone.agent_settings())


def test_an_older_settings_file_keeps_its_key_with_its_base_url(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"base_url": "http://old-host:8000/v1", "api_key": "sk-old"}))
    config = Config({"Cellwright": {"base_url": "http://config-host/v1", "data_dir": str(data)}})
    settings = load(config=config)
    assert settings.agent_settings().api_key == "sk-old" and settings.public()["sources"]["api_key"] == "settings"
    settings.change({"base_url": "http://config-host/v1"})
    assert settings.agent_settings().api_key == ""
    saved = json.loads((data / "settings.json").read_text())
    assert saved["api_keys"] == {"http://old-host:8000": "sk-old"} and "api_key" not in saved
    settings.change({"base_url": "http://old-host:8000/v1"})
    assert settings.agent_settings().api_key == "sk-old"

    (data / "settings.json").write_text(
        json.dumps({"api_key": "sk-no-url"})
    )  # saved without a base_url: the configured one's
    settings = load(config=config)
    assert settings.agent_settings().api_key == "sk-no-url"
    settings.change({"base_url": "http://elsewhere/v1"})
    assert settings.agent_settings().api_key == "" and settings.public()["api_keys_set"] == ["http://config-host"]
    with pytest.raises(SettingsError, match="api_key must be a string"):
        settings.change({"api_key": 42})


def test_the_magic_reads_the_same_keys(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    config_dir, data = tmp_path / "config", tmp_path / "data"
    config_dir.mkdir()
    (config_dir / "jupyter_server_config.json").write_text(
        json.dumps({"Cellwright": {"base_url": "http://config-host/v1", "api_key": "sk-config", "data_dir": str(data)}})
    )
    server = load(
        config=Config(
            {"Cellwright": {"base_url": "http://config-host/v1", "api_key": "sk-config", "data_dir": str(data)}}
        )
    )
    server.change({"base_url": "http://other-host/v1"})
    kernel, _ = load_for_kernel([str(config_dir)], environ={"OPENAI_API_KEY": "sk-env-openai"})
    assert kernel.base_url == "http://other-host/v1" and kernel.agent_settings().api_key == ""
    assert kernel.public()["api_keys_set"] == ["http://config-host", DEFAULT_ENDPOINT]
    server.change({"api_key": "sk-other"})
    kernel, _ = load_for_kernel([str(config_dir)], environ={})
    assert kernel.agent_settings().api_key == "sk-other" and kernel.public() == server.public()
