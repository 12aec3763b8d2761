"""Escapes from the sandbox (issue 37), each a real attempt from code the agent explores (a real
fork of a real kernel behind a real Jupyter server) or from a read-only shell command it runs
unasked (real bubblewrap). Every test asserts the attempt was contained (no connection reached the
test's listeners, no file appeared, no secret came back, the kernel and server live on) AND that
the user's kernel is untouched (variables, execution count, history). The explore attempts run in
one agent run (one tool call each) to keep the module fast; each test reads its own call's result."""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from devtools.fake_llm import text, tool_call
from tests.sandbox_fixtures import LIMITS, SECRET, Lab, Listener, lab, listeners, llm, output_text  # noqa: F401  (fixtures)

TAG = uuid.uuid4().hex[:8]  # names of files the attempts try to make, unique to this run


class Escapes:
    def __init__(self, lab: Lab, listeners: list[Listener], unix_path: str) -> None:
        self.lab = lab
        self.listeners = listeners
        self.unix_path = unix_path
        self.kernel_pid = self.kernel_value("__import__('os').getpid()")
        self.server_pid = lab.server.proc.pid if lab.server.proc else 0
        self.outside = lab.root.parent / f"outside-{TAG}"
        self.outside.mkdir()
        (lab.root / "link_out").symlink_to(self.outside)
        (lab.root / "link_env").symlink_to(lab.root / ".env")
        (lab.root / "link_ssh").symlink_to(lab.home / ".ssh")
        self.connection = next((lab.root.parent / "runtime").glob(f"kernel-{lab.kernel_id}.json"))
        self.hmac_key = json.loads(self.connection.read_text())["key"]
        self.settings = lab.root.parent / "data" / "cellwright" / "settings.json"
        assert SECRET in self.settings.read_text()  # the saved API key is there to be stolen
        self.zmq_fds = sorted(
            int(fd)
            for fd in os.listdir(f"/proc/{self.kernel_pid}/fd")
            if os.readlink(f"/proc/{self.kernel_pid}/fd/{fd}").startswith("socket:")
        )
        self.before = lab.kernel_state()
        self.results: dict[str, dict[str, Any]] = {}

    def kernel_value(self, expression: str) -> Any:
        reply = self.lab.client.execute_interactive(
            "", silent=True, store_history=False, user_expressions={"v": expression}, timeout=30
        )
        return eval(reply["content"]["user_expressions"]["v"]["data"]["text/plain"])

    def run(self, attempts: dict[str, str]) -> None:
        calls = [tool_call("explore", {"code": code}, id=f"call_{name}") for name, code in attempts.items()]
        events = self.lab.run_agent(*calls, text("done"), timeout=600)
        assert not [e for e in events if e["type"] in ("approval_required", "cell_started")]
        for event in events:
            if event["type"] == "tool_result":
                self.results[event["id"].removeprefix("call_")] = event
        assert set(self.results) >= set(attempts), set(attempts) - set(self.results)

    def result(self, name: str) -> dict[str, Any]:
        found = self.results[name]
        assert found["sandboxed"] is True, found
        return found

    def kernel_untouched(self) -> None:
        assert psutil.pid_exists(self.kernel_pid) and psutil.pid_exists(self.server_pid)
        assert self.kernel_value("__import__('os').getpid()") == self.kernel_pid
        assert self.lab.kernel_state() == self.before


def attempts(e: Escapes) -> dict[str, str]:
    one, two = e.listeners
    root, home = e.lab.root, e.lab.home
    return {
        "connect_loopback": f"import socket\nsocket.create_connection(('127.0.0.1', {one.port}), timeout=2)",
        "connect_other_loopback": f"import socket\nsocket.create_connection(('127.0.0.2', {two.port}), timeout=2)",
        "connect_raw_ctypes": (
            "import ctypes, socket, struct\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "fd = libc.socket(2, 1, 0)\n"
            f"addr = struct.pack('!HH4s8x', 2, {one.port}, socket.inet_aton('127.0.0.1'))\n"
            "addr = struct.pack('H', 2) + addr[2:]\n"
            "print('rc', libc.connect(fd, addr, len(addr)), ctypes.get_errno())"
        ),
        "dns": "import socket\nsocket.getaddrinfo('example.com', 443)",
        "dns_subprocess": "import subprocess\nprint(subprocess.run(['getent', 'hosts', 'example.com']).returncode)",
        "curl": (
            "import subprocess\n"
            f"r = subprocess.run(['curl', '-sS', '--max-time', '3', 'http://127.0.0.1:{one.port}/'], capture_output=True)\n"
            "print('curl exit', r.returncode)"
        ),
        "unix_socket": f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({e.unix_path!r})",
        "write_root": f"open({str(root / f'out-{TAG}.csv')!r}, 'w').write('x')",
        "write_root_ctypes": (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"print('fd', libc.open({str(root / f'ct-{TAG}').encode()!r}, 0o101, 0o644), ctypes.get_errno())"
        ),
        "write_home": f"open({str(home / f'home-{TAG}')!r}, 'w').write('x')",
        "write_tmp": f"open('/tmp/tmp-{TAG}', 'w').write('x')\nprint(open('/tmp/tmp-{TAG}').read())",
        "write_subprocess": f"import subprocess\nsubprocess.run(['touch', {str(root / f'touch-{TAG}')!r}])",
        "write_through_symlink": f"open({str(root / 'link_out' / f'sym-{TAG}')!r}, 'w').write('x')",
        "read_env": f"print(open({str(root / '.env')!r}).read())",
        "read_env_ctypes": (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"fd = libc.open({str(root / '.env').encode()!r}, 0)\nb = ctypes.create_string_buffer(200)\n"
            "print(fd, libc.read(fd, b, 200), b.value)"
        ),
        "read_hidden_data": f"print(open({str(root / 'data' / '.hidden.csv')!r}).read())",
        "read_hidden_dir": f"print(open({str(root / '.git' / 'config')!r}).read())",
        "read_ssh": (
            "import subprocess\n"
            f"print(subprocess.run(['cat', {str(home / '.ssh' / 'id_rsa')!r}], capture_output=True, text=True))"
        ),
        "read_netrc": f"print(open({str(home / '.netrc')!r}).read())",
        "read_connection_file": f"print(open({str(e.connection)!r}).read())",
        "read_api_key_file": f"print(open({str(e.settings)!r}).read())",
        "read_via_symlinks": (
            "import subprocess\n"
            f"print(subprocess.run('cat {root / 'link_env'}; cat {root / 'link_ssh'}/id_rsa', shell=True, "
            "capture_output=True, text=True))"
        ),
        "read_environment": (
            "import os\nprint({k: v for k, v in os.environ.items() if 'KEY' in k})\n"
            "print(open('/proc/self/environ', 'rb').read())"
        ),
        "kill_kernel": f"import os, signal\nos.kill({e.kernel_pid}, signal.SIGKILL)",
        "kill_server": f"import os, signal\nos.kill({e.server_pid}, signal.SIGTERM)",
        "kill_ctypes": (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"print('kill', libc.kill({e.kernel_pid}, 9), libc.kill({e.server_pid}, 9), libc.kill(-1, 9), "
            "ctypes.get_errno())"
        ),
        "ptrace": (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"print('ptrace', libc.ptrace(16, {e.kernel_pid}, 0, 0), ctypes.get_errno())"
        ),
        "proc_mem": (
            "import os\nprint(sorted(p for p in os.listdir('/proc') if p.isdigit()))\n"
            f"print(open('/proc/{e.kernel_pid}/mem', 'rb').read(16))"
        ),
        "proc_root": f"import os\nprint(os.listdir('/proc/1/root{home / '.ssh'}'))",
        "rebind_variables": "secret_value = 'changed'\nkept.clear()\ndf.drop(columns=['b'], inplace=True)\nglobals().clear()",
        "inherited_fds": (
            "import os\nopen_fds = sorted(int(f) for f in os.listdir('/proc/self/fd'))\nprint('fds', open_fds)\n"
            f"for fd in {e.zmq_fds!r}:\n"
            "    try:\n        os.write(fd, b'x'); print('wrote', fd)\n    except OSError as exc:\n        pass"
        ),
        "fork_bomb": "import os\nwhile True:\n    os.fork()",
        "memory_balloon": "balloon = bytearray(8 * 1024 ** 3)",
        "endless_loop": "while True:\n    pass",
        "cpu_rlimit": "import resource\nresource.getrlimit(resource.RLIMIT_CPU)",
        "sleep_forever": "import time\ntime.sleep(3600)",
        "ctypes_mounts": (
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"print('umount', libc.umount2({str(root / '.env').encode()!r}, 2), ctypes.get_errno())\n"
            "print('mount', libc.mount(b'none', b'/root', b'tmpfs', 0, None), ctypes.get_errno())\n"
            "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"
            f"fd = libc.open({str(root / '.env').encode()!r}, 0); b = ctypes.create_string_buffer(200)\n"
            "print(libc.read(fd, b, 200), b.value)"
        ),
    }


@pytest.fixture(scope="module")
def unix_listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[bool]]]:
    path = str(tmp_path_factory.mktemp("sock") / "server.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(5)
    server.settimeout(0.1)
    reached: list[bool] = []

    def serve() -> None:
        while server.fileno() >= 0:
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            reached.append(True)
            conn.close()

    import threading

    threading.Thread(target=serve, daemon=True).start()
    yield path, reached
    server.close()


@pytest.fixture(scope="module")
def escapes(lab: Lab, listeners: list[Listener], unix_listener: tuple[str, list[bool]]) -> Escapes:  # noqa: F811
    found = Escapes(lab, listeners, unix_listener[0])
    kernel = psutil.Process(found.kernel_pid)
    found.children_before = {p.pid for p in kernel.children(recursive=True)}  # type: ignore[attr-defined]
    found.run(attempts(found))
    return found


def blocked(e: Escapes, name: str) -> list[str]:
    return list(e.result(name).get("blocked") or [])


# -- network


@pytest.mark.parametrize("name", ["connect_loopback", "connect_other_loopback", "connect_raw_ctypes", "curl"])
def test_no_connection_reaches_a_listener(escapes: Escapes, name: str) -> None:
    result = escapes.result(name)
    assert all(not listener.connections for listener in escapes.listeners), name
    if name.startswith("connect_loopback") or name == "connect_other_loopback":
        assert result["status"] == "error" and "network blocked" in blocked(escapes, name)
    if name == "connect_raw_ctypes":
        assert "rc -1" in output_text(result)
    if name == "curl":
        assert "curl exit 0" not in output_text(result) and "curl exit" in output_text(result)
    escapes.kernel_untouched()


def test_dns_is_blocked(escapes: Escapes) -> None:
    assert escapes.result("dns")["status"] == "error" and "network blocked" in blocked(escapes, "dns")
    assert output_text(escapes.result("dns_subprocess")).strip().endswith("2")  # getent: not found
    escapes.kernel_untouched()


def test_no_unix_socket_outside(escapes: Escapes, unix_listener: tuple[str, list[bool]]) -> None:
    assert escapes.result("unix_socket")["status"] == "error"
    assert not unix_listener[1]
    escapes.kernel_untouched()


# -- files


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("write_root", "out-{tag}.csv"),
        ("write_root_ctypes", "ct-{tag}"),
        ("write_subprocess", "touch-{tag}"),
        ("write_through_symlink", "link_out/sym-{tag}"),
        ("write_home", "home-{tag}"),
        ("write_tmp", "tmp-{tag}"),
    ],
)
def test_no_write_reaches_the_disk(escapes: Escapes, name: str, path: str) -> None:
    path = path.format(tag=TAG)  # ids without the run's tag: pytest-xdist's workers collect the same tests
    result = escapes.result(name)
    where = {"write_home": escapes.lab.home, "write_tmp": Path("/tmp")}.get(name, escapes.lab.root)
    assert not (where / path).exists() and not list(escapes.outside.iterdir())
    if name == "write_root":
        assert f"write blocked: out-{TAG}.csv" in blocked(escapes, name)
    if name == "write_tmp":  # the sandbox's own scratch: writable inside, gone after
        assert result["status"] == "ok" and "x" in output_text(result)
    escapes.kernel_untouched()


@pytest.mark.parametrize(
    "name",
    [
        "read_env",
        "read_env_ctypes",
        "read_hidden_data",
        "read_hidden_dir",
        "read_ssh",
        "read_netrc",
        "read_api_key_file",
        "read_via_symlinks",
        "read_environment",
        "ctypes_mounts",
        "proc_root",
    ],
)
def test_no_secret_comes_back(escapes: Escapes, name: str) -> None:
    shown = json.dumps(escapes.result(name))
    assert SECRET not in shown and "sk-test-secret-key" not in shown, name
    escapes.kernel_untouched()


def test_the_connection_file_stays_hidden(escapes: Escapes) -> None:
    assert escapes.hmac_key not in json.dumps(escapes.result("read_connection_file"))
    escapes.kernel_untouched()


# -- processes


@pytest.mark.parametrize("name", ["kill_kernel", "kill_server", "kill_ctypes", "ptrace", "proc_mem"])
def test_no_signal_or_trace_reaches_another_process(escapes: Escapes, name: str) -> None:
    result = escapes.result(name)
    shown = output_text(result)
    if name.startswith("kill_") and name != "kill_ctypes":
        assert "signal blocked" in " ".join(blocked(escapes, name)), result
    if name == "ptrace":
        assert "ptrace -1" in shown
    if name == "proc_mem":  # the kernel's PID does not exist in the sandbox's /proc
        assert result["status"] == "error" and str(escapes.kernel_pid) not in shown.split("\n")[0]
    escapes.kernel_untouched()


def test_rebinding_variables_stays_in_the_fork(escapes: Escapes) -> None:
    assert escapes.result("rebind_variables")["status"] == "ok"
    escapes.kernel_untouched()


def test_inherited_fds_are_closed(escapes: Escapes) -> None:
    shown = output_text(escapes.result("inherited_fds"))
    fds = json.loads(shown.split("fds ", 1)[1].split("\n", 1)[0])
    assert len(fds) <= 6, fds  # 0-2, the result pipe, the listing's own fd
    assert "wrote" not in shown
    escapes.kernel_untouched()


def test_a_fork_bomb_hits_the_process_limit(escapes: Escapes) -> None:
    result = escapes.result("fork_bomb")
    assert result["status"] == "error"
    assert any("process limit" in b for b in blocked(escapes, "fork_bomb")), result
    kernel = psutil.Process(escapes.kernel_pid)
    left = {p.pid for p in kernel.children(recursive=True)} - escapes.children_before  # type: ignore[attr-defined]
    assert not left, left
    escapes.kernel_untouched()


def test_a_memory_balloon_hits_the_memory_limit(escapes: Escapes) -> None:
    assert escapes.result("memory_balloon")["status"] == "error"
    assert any("memory limit" in b for b in blocked(escapes, "memory_balloon"))
    escapes.kernel_untouched()


def test_an_endless_loop_is_killed_at_a_limit(escapes: Escapes) -> None:
    """Killed at the CPU limit, or at the wall time limit first on a machine busy enough that the
    loop gets less than a core: which one is the scheduler's call, both end it."""
    result = escapes.result("endless_loop")
    stopped = " ".join(blocked(escapes, "endless_loop"))
    assert result["status"] == "error" and ("CPU time limit" in stopped or "wall time limit" in stopped), result
    assert output_text(escapes.result("cpu_rlimit")).strip() == f"({LIMITS['cpu_s']}, {LIMITS['cpu_s']})"
    escapes.kernel_untouched()


def test_a_sleep_is_killed_at_the_wall_time_limit(escapes: Escapes) -> None:
    result = escapes.result("sleep_forever")
    assert result["status"] == "error" and any("wall time limit" in b for b in blocked(escapes, "sleep_forever"))
    escapes.kernel_untouched()


# -- the sandboxed shell


def shell(lab: Lab, command: str) -> dict[str, Any]:
    return lab.call("execute_command", {"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "cat .env",
        "cat data/.hidden.csv",
        "cat .git/config",
        "cat link_env",
        "grep -r s3cr3t . 2>/dev/null",
        "cat {home}/.ssh/id_rsa",
        "cat {home}/.netrc",
        "cat {connection}",
        "cat {settings}",
        "ls -la {home}/.ssh",
        "cat /proc/{kernel_pid}/environ",
        "cat /proc/self/environ",
        "cat /proc/1/environ",
    ],
)
def test_a_read_only_command_runs_unasked_and_sees_no_secret(escapes: Escapes, command: str) -> None:
    lab = escapes.lab
    line = command.format(
        home=lab.home, connection=escapes.connection, settings=escapes.settings, kernel_pid=escapes.kernel_pid
    )
    result = shell(lab, line)
    assert result.get("sandboxed") is True, result
    assert "approval_required" not in {e["type"] for e in result["_events"]}
    shown = json.dumps(result["_events"])
    assert SECRET not in shown and escapes.hmac_key not in shown and "sk-test-secret-key" not in shown
    escapes.kernel_untouched()


@pytest.mark.parametrize("command", ["curl -sS http://127.0.0.1:{port}/", "touch out-{tag}", "ls > listing-{tag}"])
def test_a_command_that_is_not_read_only_is_asked(escapes: Escapes, command: str) -> None:
    line = command.format(port=escapes.listeners[0].port, tag=TAG)
    events = escapes.lab.run_agent(tool_call("execute_command", {"command": line}), text("done"))
    asked = [e for e in events if e["type"] == "approval_required"]
    assert asked and asked[0]["sandbox_reason"], events
    assert not escapes.listeners[0].connections and not list(escapes.lab.root.glob(f"*-{TAG}"))
    escapes.kernel_untouched()


@pytest.mark.parametrize(
    "command",
    [
        "curl -sS --max-time 3 http://127.0.0.1:{port}/; curl -sS --max-time 3 http://127.0.0.2:{port2}/",
        "touch {root}/bw-{tag}; echo x > {home}/bw-{tag}; echo y > /tmp/bw-{tag}; cat /tmp/bw-{tag}",
        "kill -9 {kernel_pid}; kill -9 {server_pid}",
        "cat {root}/.env {home}/.ssh/id_rsa {settings}",
    ],
)
def test_bubblewrap_itself_contains_what_the_list_would_ask_for(escapes: Escapes, command: str) -> None:
    """The allow-list is the first gate; the sandbox is the guarantee: run past the list, straight
    under the same bwrap argv, and still nothing gets out."""
    import asyncio

    from agent_core.tools.shell import run_command
    from agent_core.tools.shell_sandbox import bwrap_wrapper, sandbox_env

    lab = escapes.lab
    one, two = escapes.listeners
    line = command.format(
        port=one.port, port2=two.port, root=lab.root, home=lab.home, tag=TAG, kernel_pid=escapes.kernel_pid,
        server_pid=escapes.server_pid, settings=escapes.settings,
    )  # fmt: skip
    denied = [str(lab.root.parent / "runtime"), str(lab.root.parent / "data" / "cellwright")]
    prefix = bwrap_wrapper(lab.root, denied, lab.root).argv
    result = asyncio.run(run_command(line, lab.root, timeout=30, prefix=prefix, env=sandbox_env()))
    assert not one.connections and not two.connections
    assert not (lab.root / f"bw-{TAG}").exists() and not (lab.home / f"bw-{TAG}").exists()
    assert not Path(f"/tmp/bw-{TAG}").exists()
    assert SECRET not in result.stdout + result.stderr
    os.kill(escapes.kernel_pid, 0)  # raises if the kernel is gone
    assert psutil.pid_exists(escapes.server_pid)
    escapes.kernel_untouched()
