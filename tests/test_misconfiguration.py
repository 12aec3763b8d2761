"""A server whose setup Cellwright can name as wrong says so (health's `problems`, 503 misconfigured
elsewhere, never 500), and one that enables the extension under its old name too loads it once.
Both through a real `jupyter server` subprocess."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from agent_core.contract.answers import Health
from devtools.jupyter_process import REPO, JupyterProcess

PASSWORD = "s3cret-pg-password"
ENV = {"CELLWRIGHT_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}

# Imported by Python at start (the `site` module) in the server's process: a finder first on the
# meta path that refuses the `postgres` extra, as if it were not installed.
BLOCK_POSTGRES = """
import sys

BLOCKED = ("psycopg", "psycopg_pool", "langgraph.checkpoint.postgres")


class RefusePostgresExtra:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, RefusePostgresExtra())
"""


def _without_postgres_extra(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_POSTGRES)
    path = os.pathsep.join(filter(None, [str(site), str(REPO), os.environ.get("PYTHONPATH", "")]))
    return {**ENV, "PYTHONPATH": path, "CELLWRIGHT_DATABASE_URL": f"postgresql://cw:{PASSWORD}@127.0.0.1:9/cellwright"}


def _stop_cleanly(server: JupyterProcess) -> str:
    """The shutdown API (what JupyterLab's File > Shut Down sends); the server's log once it exited."""
    assert server.proc is not None
    response = server.request("POST", "api/shutdown")
    assert response.status_code in (200, 202), response.text
    assert server.proc.wait(30) == 0
    return server.log_path.read_text()


def test_a_postgres_url_without_the_postgres_extra_is_named_not_a_500(tmp_path: Path, servers: list) -> None:
    server = JupyterProcess(tmp_path, _without_postgres_extra(tmp_path)).start()
    servers.append(server)
    answers = []

    health = server.get("cellwright/api/health")
    answers.append(health.text)
    assert health.status_code == 200, health.text
    body = health.json()
    Health.model_validate(body)
    assert body["checkpointer"] == "postgres"
    [problem] = body["problems"]
    assert problem["kind"] == "postgres_extra_missing"
    assert "pip install 'cellwright[postgres]'" in problem["message"] and "psycopg" in problem["message"]

    for method, path, payload in [
        ("GET", "cellwright/api/threads", None),
        ("POST", "cellwright/api/threads", {"title": "t"}),
        ("GET", "cellwright/api/threads/abc", None),
        ("GET", "cellwright/api/threads/abc/events", None),
        ("GET", "cellwright/api/config", None),
        ("POST", "cellwright/api/diagnostics", {"code": "x = 1\n"}),
    ]:
        response = server.request(method, path, payload)
        answers.append(response.text)
        assert response.status_code == 503, (method, path, response.status_code, response.text)
        assert response.json() == {"error": "misconfigured", "message": problem["message"]}, (method, path)

    assert not any(PASSWORD in answer for answer in answers)
    log = _stop_cleanly(server)
    assert log.count("pip install 'cellwright[postgres]'") == 1, log[-3000:]  # said once, at start
    assert PASSWORD not in log
    assert "Traceback" not in log and not re.search(r"\b50[0-24-9] (GET|POST)", log), log[-3000:]  # no 5xx but 503


def test_enabled_under_both_names_it_loads_once_and_says_to_drop_the_old_one(tmp_path: Path, servers: list) -> None:
    # An older install's config file still enables the module's name; the current one enables cellwright.
    config_d = tmp_path / "config" / "jupyter_server_config.d"
    config_d.mkdir(parents=True)
    (config_d / "jupyter_ext.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_ext": True}}})
    )
    server = JupyterProcess(tmp_path, ENV).start()
    servers.append(server)

    assert server.get("cellwright/api/health").status_code == 200
    created = server.request("POST", "cellwright/api/threads", {"title": "once"})
    assert created.status_code == 201, created.text
    threads = server.get("cellwright/api/threads").json()["threads"]
    assert [t["title"] for t in threads] == ["once"]

    log = _stop_cleanly(server)
    assert log.count("jupyter server extension disable jupyter_ext") == 1, log[-3000:]
    assert "Traceback" not in log and "AttributeError" not in log, log[-3000:]


def test_enabled_under_both_names_on_the_command_line(tmp_path: Path, servers: list) -> None:
    # --ServerApp.jpserver_extensions={'cellwright': True, 'jupyter_ext': True}: both names at once.
    server = JupyterProcess(tmp_path, ENV, extensions={"jupyter_ext": True}).start()
    servers.append(server)
    assert server.get("cellwright/api/threads").status_code == 200
    log = _stop_cleanly(server)
    assert "'jupyter_ext': True" in " ".join(server.proc.args)  # type: ignore[union-attr]
    assert log.count("jupyter server extension disable jupyter_ext") == 1, log[-3000:]
    assert "Traceback" not in log and "AttributeError" not in log, log[-3000:]


def test_a_setting_set_wrong_is_named_by_health_and_routes_answer_503(tmp_path: Path, servers: list) -> None:
    # A wrong tool name: the server still starts, health says what to fix, every other route answers
    # 503 with it (a failed extension answered 404 and said why only in the log).
    args = ["--Cellwright.auto_approve=['run_cell', 'no_such_tool']"]
    server = JupyterProcess(tmp_path, ENV, extra_args=args).start()
    servers.append(server)
    health = server.get("cellwright/api/health")
    assert health.status_code == 200, health.text
    [problem] = health.json()["problems"]
    assert problem["kind"] == "settings_invalid" and "no_such_tool" in problem["message"], problem
    assert "restart the server" in problem["message"]
    response = server.request("POST", "cellwright/api/threads", {"title": "t"})
    assert response.status_code == 503, response.text
    assert response.json() == {"error": "misconfigured", "message": problem["message"]}
    log = _stop_cleanly(server)
    assert log.count("no_such_tool") == 1 and "Traceback" not in log, log[-3000:]


def test_a_secret_set_wrong_is_named_without_its_value(tmp_path: Path, servers: list) -> None:
    pasted = 73019482651093384  # a key of digits, as a number in a config file
    config_d = tmp_path / "config"
    config_d.mkdir(parents=True)
    (config_d / "jupyter_server_config.json").write_text(json.dumps({"Cellwright": {"api_key": pasted}}))
    server = JupyterProcess(tmp_path, ENV).start()
    servers.append(server)
    [problem] = server.get("cellwright/api/health").json()["problems"]
    assert "api_key" in problem["message"] and "not a value of type int" in problem["message"], problem
    log = _stop_cleanly(server)
    assert str(pasted) not in problem["message"] and str(pasted) not in log, log[-3000:]


def test_list_settings_on_the_command_line_take_a_list_or_repeated_items() -> None:
    from jupyter_server.serverapp import ServerApp

    from agent_core.config.configurable import load

    for args, expected in [
        (["--Cellwright.auto_approve=['run_cell', 'execute_command']"], ["run_cell", "execute_command"]),
        (["--Cellwright.auto_approve=run_cell"], ["run_cell"]),
        (["--Cellwright.auto_approve=run_cell", "--Cellwright.auto_approve=read_file"], ["run_cell", "read_file"]),
    ]:
        app = ServerApp()
        app.parse_command_line(args)  # as `jupyter server`/`jupyter lab` parse it: Cellwright is not known yet
        assert load(config=app.config).auto_approve == expected, args
