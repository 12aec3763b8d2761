"""Handlers are authenticated and XSRF-protected exactly like Jupyter's own REST API."""

from __future__ import annotations

from pathlib import Path

import httpx

from devtools.jupyter_process import TOKEN, JupyterProcess


def test_cookie_sessions_need_the_xsrf_token(tmp_path: Path, servers: list) -> None:
    server = JupyterProcess(tmp_path, {"CELLWRIGHT_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}).start()
    servers.append(server)
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        assert browser.get(f"/login?token={TOKEN}", follow_redirects=True).status_code == 200  # a cookie session
        assert browser.get("/cellwright/api/threads").status_code == 200
        forged = browser.post("/cellwright/api/threads", content='{"title": "forged"}')
        assert forged.status_code == 403
        xsrf = browser.cookies.get("_xsrf")
        assert xsrf, "Jupyter sets the _xsrf cookie"
        genuine = browser.post("/cellwright/api/threads", content='{"title": "mine"}', headers={"X-XSRFToken": xsrf})
        assert genuine.status_code == 201
        titles = [t["title"] for t in browser.get("/cellwright/api/threads").json()["threads"]]
        assert titles == ["mine"]
    with httpx.Client(base_url=server.url, timeout=30) as stranger:
        assert stranger.get("/cellwright/api/threads").status_code == 403
        assert stranger.get("/cellwright/api/config").status_code == 403
