"""The JupyterHub of the hub tests (tests/hub_fixture.py starts it with `jupyterhub -f` this file).

What a team's hub would run, shrunk to one machine: DummyAuthenticator (one shared password) for
the users the fixture names, SimpleLocalProcessSpawner (every user a home folder under the test's
folder, all processes as the user running the tests), configurable-http-proxy from node_modules,
a SQLite hub database. The values the fixture chose (ports, folders, tokens, the single-user
servers' environment) come as JSON in CELLWRIGHT_TEST_HUB."""

import json
import os
from pathlib import Path

c = get_config()  # noqa: F821 (defined by JupyterHub when it loads this file)
hub = json.loads(os.environ["CELLWRIGHT_TEST_HUB"])
base = Path(hub["base"])

c.JupyterHub.bind_url = hub["bind_url"]
c.JupyterHub.hub_bind_url = hub["hub_bind_url"]
c.JupyterHub.db_url = f"sqlite:///{base / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(base / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(base / "jupyterhub.pid")
c.ConfigurableHTTPProxy.command = [hub["proxy_command"]]
c.ConfigurableHTTPProxy.api_url = hub["proxy_api_url"]
c.ConfigurableHTTPProxy.pid_file = str(base / "proxy.pid")

c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = set(hub["users"])
c.DummyAuthenticator.password = hub["password"]

# The tests' own client: an API token that may start servers and issue tokens for the users.
c.JupyterHub.services = [{"name": "cellwright-tests", "api_token": hub["admin_token"]}]
c.JupyterHub.load_roles = [
    {
        "name": "cellwright-tests",
        "scopes": ["admin:users", "admin:servers", "tokens"],
        "services": ["cellwright-tests"],
    }
]

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(base / "home" / "{username}")
c.Spawner.notebook_dir = str(base / "home" / "{username}" / "notebooks")
c.Spawner.default_url = "/lab"
# The hub passes on none of its own environment (Spawner.env_keep): the interpreter is named in
# full, and Spawner.environment carries what Cellwright needs (PYTHONPATH, the model endpoint...).
c.Spawner.cmd = [hub["python"], "-m", "jupyterhub.singleuser"]
c.Spawner.args = hub["server_args"]
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
# POST /hub/api/users/<name>/server answers at once (202) rather than after up to 10 s of waiting:
# the fixture starts both servers together and polls until the hub reports them ready.
c.JupyterHub.tornado_settings = {"slow_spawn_timeout": 0}


def _jupyter_dir(name):
    return lambda spawner: str(Path(spawner.home_dir) / ".jupyter" / name)


c.Spawner.environment = {
    **hub["environment"],
    # Each user's own Jupyter folders, in their home (the fixture put the working tree's panel there).
    "JUPYTER_CONFIG_DIR": _jupyter_dir("config"),
    "JUPYTER_DATA_DIR": _jupyter_dir("data"),
    "JUPYTER_RUNTIME_DIR": _jupyter_dir("runtime"),
}
