"""Read-only shell commands without approval (issue 37): a command that only reads (by a
conservative allow-list) runs under bubblewrap with the explore sandbox's rules: no network, the
whole tree read-only, hidden paths under the root, the home folder's dotfiles and the folders of
secrets masked, a private /tmp, new PID/IPC/UTS namespaces, no capabilities. Anything else, or a
host without bwrap, goes to the approval card as before.

The allow-list is the first gate (what looks read-only is not asked); the sandbox is the guarantee
(what passes it still cannot write, connect or read what is hidden). Refused outright for the
unasked path: any shell syntax but pipes (`;`, `&&`, redirections other than `2>/dev/null`,
substitutions `$(...)`, backticks, variables), commands outside the list, and the writing or
executing options of listed ones (find -exec/-delete/-fprint..., sort -o, rg --pre)."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from agent_core.kernel_probes.fork_sandbox import hidden_paths
from agent_core.kernel_probes.sandbox_status import OFF_REASON, SandboxStatus
from agent_core.tools.base import ToolContext
from agent_core.tools.spawn import start_process
from agent_core.workspace import workspace_of

READ_ONLY_COMMANDS = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "du", "df", "file", "stat", "grep", "egrep", "fgrep", "rg", "find",
        "tree", "sort", "uniq", "cut", "nl", "diff", "cmp", "md5sum", "sha1sum", "sha256sum", "basename",
        "dirname", "realpath", "readlink", "pwd", "echo", "printf", "date", "whoami", "id", "uname", "which",
        "column", "od", "xxd", "hexdump", "strings", "zcat", "bzcat", "xzcat", "tr", "true", "false",
    }
)  # fmt: skip
# Options that make a listed command write, delete or run something.
_FORBIDDEN_OPTIONS = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "sort": ("-o", "--output"),
    "rg": ("--pre", "--pre-glob"),
    "tree": ("-o",),
}
_NOT_SHELL = re.compile(r"[`$;&<>(){}\n\r\\!*?\[\]~]")  # anything bash would expand or chain
_QUIET_ERRORS = re.compile(r"\s+2>\s*/dev/null\b")
BWRAP = "bwrap"
CHECK_SECONDS = 10.0
NOT_READ_ONLY = "not a read-only command on the sandbox's list"


def read_only_problem(command: str) -> str | None:
    """None when `command` is a pipeline of read-only commands, else what makes it not one."""
    text = _QUIET_ERRORS.sub(" ", command)
    unquoted = re.sub(r"'[^']*'", "''", text)  # single quotes keep their content literal
    match = _NOT_SHELL.search(unquoted.replace("*", "").replace("?", "").replace("[", "").replace("]", ""))
    if match:
        return f"shell syntax {match.group()!r}"
    try:
        words = shlex.split(text)
    except ValueError as exc:
        return f"unparsable ({exc})"
    if not words:
        return "empty"
    segments: list[list[str]] = [[]]
    for word in words:
        if word == "|":
            segments.append([])
        else:
            segments[-1].append(word)
    for segment in segments:
        if not segment:
            return "an empty pipeline step"
        name = segment[0]
        if name not in READ_ONLY_COMMANDS:
            return f"{name!r} is {NOT_READ_ONLY}"
        for option in segment[1:]:
            flag = option.split("=", 1)[0]
            if flag in _FORBIDDEN_OPTIONS.get(name, ()) or (name == "sort" and flag.startswith("-o")):
                return f"{name} {flag} writes or runs something"
        if name == "uniq" and len([w for w in segment[1:] if not w.startswith("-")]) > 1:
            return "uniq with an output file"
    return None


_bwrap: SandboxStatus | None = None
_bwrap_lock = asyncio.Lock()


async def bwrap_status() -> SandboxStatus:
    """Whether bubblewrap is installed and can make its namespaces here (tried once)."""
    global _bwrap
    async with _bwrap_lock:
        if _bwrap is None:
            _bwrap = await _try_bwrap()
        return _bwrap


async def _try_bwrap() -> SandboxStatus:
    path = shutil.which(BWRAP)
    if path is None:
        return SandboxStatus(False, reason="bubblewrap (bwrap) is not installed: shell commands are approved")
    try:
        proc = await start_process(
            path, *_base_args(), "--", "true", stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(proc.communicate(), CHECK_SECONDS)
    except (OSError, asyncio.TimeoutError) as exc:
        return SandboxStatus(False, reason=f"bwrap could not run ({type(exc).__name__})")
    if proc.returncode != 0:
        return SandboxStatus(False, reason=f"bwrap cannot make its namespaces here: {err.decode()[:200].strip()}")
    return SandboxStatus(True, mechanism="bubblewrap: user/mount/pid/net/ipc/uts namespaces, read-only root")


def _base_args() -> list[str]:
    return [
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup: no network at all, no process outside is named
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/dev/shm",
    ]


def sandbox_env() -> dict[str, str]:
    """The whole environment of bwrap and the command: the server's holds its secrets (OPENAI_API_KEY),
    and bwrap, PID 1 of the sandbox, shows its own in /proc/1/environ."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.path.expanduser("~"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TMPDIR": "/tmp",
        "PAGER": "cat",
    }


@dataclass(frozen=True)
class Wrapper:
    argv: list[str]  # what goes before `bash -c <command>`


def bwrap_wrapper(root: Path, denied: list[str], cwd: Path) -> Wrapper:
    """bwrap's argv for a command in `cwd`: the base namespaces and mounts, then the masks."""
    args = [shutil.which(BWRAP) or BWRAP, *_base_args()]
    masked, _ = hidden_paths(str(root), denied)
    for path in masked:
        if Path(path).is_dir():
            args += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", "/dev/null", path]
    args += ["--clearenv", *(part for name, value in sandbox_env().items() for part in ("--setenv", name, value))]
    args += ["--chdir", str(cwd), "--"]
    return Wrapper(args)


async def command_reason(command: str, ctx: ToolContext) -> str | None:
    """None when this command runs sandboxed without approval, else why it is asked."""
    if ctx.settings.sandbox == "off":
        return OFF_REASON
    problem = read_only_problem(command)
    if problem is not None:
        return problem
    status = await bwrap_status()
    return None if status.available else status.reason


def shell_wrapper(ctx: ToolContext, cwd: Path) -> Wrapper:
    workspace = workspace_of(ctx.env)
    return bwrap_wrapper(workspace.root, [str(folder) for folder in workspace.denied], cwd)
