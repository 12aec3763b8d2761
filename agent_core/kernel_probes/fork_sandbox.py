"""Explore in a sandboxed copy-on-write fork of the kernel (issue 37). Shipped to the kernel as a
probe (agent_core.kernel_probes.probe): this file's source is exec'd into a private module there,
so it imports nothing but the standard library and works in any kernel, a gateway's too.

The kernel (parent) forks A and waits on a pipe, at most the wall time; then kills A. A closes every
inherited fd but the pipe, unshares user, mount, network, PID and IPC namespaces, makes the mount
tree read-only, masks hidden paths (an empty read-only tmpfs over folders, /dev/null over files),
puts private tmpfs scratch at /tmp and /dev/shm, and forks B: PID 1 of the new PID namespace, so no
process outside has a PID it could name. B mounts its own /proc, sets rlimits, drops every
capability (bounding set too: a subprocess cannot regain them), installs seccomp (no AF_UNIX
sockets, ptrace, process_vm_*, foreign architectures) and Landlock where the kernel has it (writes
only under the scratch, no TCP, signals and abstract sockets scoped), then runs the code against
its copy of the user's namespace. The result travels back as JSON over the pipe; B os._exit()s,
which kills whatever it started (the namespace's init is gone). Nothing here runs in the parent but
the fork, the wait and the read: its variables, execution count and history stay as they were.

Audit hooks in B turn what the sandbox would stop into ordinary Python errors that name it ("write
blocked: data/out.csv", "network blocked: ..."): a message layer for the model; the namespaces,
mounts, rlimits, seccomp and Landlock are the guarantee (ctypes passes the hooks, not the kernel)."""

# mypy: disable-error-code="no-untyped-def,no-untyped-call,type-arg,var-annotated,attr-defined"
# No `from __future__ import`: the probe prepends its helpers to this source, and it would no longer come first.
import base64
import ctypes
import errno
import io
import json
import os
import platform
import select
import signal
import struct
import sys
import time

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 1, 2
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (new syscalls are unified)
SYS_LANDLOCK_CREATE, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT = 444, 445, 446
PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 22, 24, 38, 47
NOBODY = 65534
SCRATCH = "/tmp"
MAX_RESULT_BYTES = 4_000_000  # what the parent reads back at most; outputs are cut to fit well below it
MAX_STREAM_CHARS = 100_000
MAX_IMAGES = 6
MAX_DISPLAY_CHARS = 200_000
MAX_SCAN_ENTRIES = 20_000  # the root walked for hidden paths; beyond, the whole root is hidden (fail closed)
SCAN_SECONDS = 1.0

# x86_64 and aarch64: (audit arch, socket, ptrace, process_vm_readv, process_vm_writev)
_SECCOMP_ARCH = {
    "x86_64": (0xC000003E, 41, 101, 310, 311),
    "aarch64": (0xC00000B7, 198, 117, 270, 271),
}
_SECRET_ENV = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "SESSION", "COOKIE")

_STATUS = {}  # per kernel process: the namespace check is made once (a fork of a large kernel is not free)


# -- what the kernel answers before anything runs


def sandbox_status(ns, payload):
    """{"available", "mechanism"?, "reason"?} for this kernel now (JSON)."""
    return json.dumps(_status())


def _status():
    if not sys.platform.startswith("linux"):
        return {
            "available": False,
            "reason": f"the sandbox needs Linux namespaces; this kernel runs on {sys.platform}",
        }
    if platform.machine() not in _SECCOMP_ARCH:
        return {"available": False, "reason": f"no seccomp filter for the {platform.machine()} architecture"}
    cuda = _cuda_in_use()
    if cuda:
        return {"available": False, "reason": f"the kernel has {cuda} open: a fork of it is not safe"}
    pid = os.getpid()
    if pid not in _STATUS:
        _STATUS.clear()
        _STATUS[pid] = _probe_namespaces()
    return dict(_STATUS[pid])


def _cuda_in_use():
    """A GPU driver's device file among the kernel's open fds (CUDA initialised), else ""."""
    try:
        for name in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink("/proc/self/fd/" + name)
            except OSError:
                continue
            if target.startswith(("/dev/nvidia", "/dev/dri/", "/dev/kfd")):
                return target
    except OSError:
        pass
    return ""


def _probe_namespaces():
    """Fork a child that sets the sandbox's namespaces up and exits: whether this host allows them."""
    read_end, write_end = os.pipe()
    pid = _fork()
    if pid == 0:
        try:
            os.close(read_end)
            _close_fds(write_end)
            _enter_namespaces()
            _mount_setattr("/", MOUNT_ATTR_RDONLY)
            os.write(write_end, json.dumps({"ok": True, "landlock": _landlock_abi()}).encode())
        except BaseException as exc:
            os.write(write_end, json.dumps({"ok": False, "reason": _error_text(exc)}).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        answer = json.loads(_read_all(read_end, time.monotonic() + 10, 65536)[0] or b"{}")
    finally:
        os.close(read_end)
        _reap(pid)
    if not answer.get("ok"):
        return {
            "available": False,
            "reason": "cannot make the sandbox here: {}".format(answer.get("reason", "no answer")),
        }
    layers = "fork + user/mount/pid/net/ipc namespaces, read-only mounts, rlimits, seccomp"
    if answer.get("landlock"):
        layers += f", landlock v{answer['landlock']}"
    return {"available": True, "mechanism": layers}


# -- the parent's side


def explore(ns, payload):
    """Run the payload's code in a sandboxed fork; the result as JSON: outputs (nbformat), status,
    blocked (what the sandbox stopped), notes, timings."""
    request = json.loads(payload)
    limits = request["limits"]
    if request.get("sandbox", True):
        status = _status()
        if not status["available"]:
            return json.dumps({"status": "unavailable", "reason": status["reason"], "outputs": [], "blocked": []})
    started = time.monotonic()
    read_end, write_end = os.pipe()
    pid = _fork()
    if pid == 0:  # A
        try:
            os.close(read_end)
            _child(ns, request, write_end)
        except BaseException as exc:
            _send(write_end, {"status": "error", "outputs": [], "blocked": [], "notes": [_setup_failed(exc)]})
        os._exit(0)
    forked = time.monotonic()
    os.close(write_end)
    deadline = started + float(limits["wall_s"])
    try:
        data, timed_out = _read_all(read_end, deadline, MAX_RESULT_BYTES)
    finally:
        os.close(read_end)
    if timed_out:
        os.kill(pid, signal.SIGKILL)  # B dies with A (PR_SET_PDEATHSIG), and everything it started with B
    code = _reap(pid)
    result = _decoded(data, timed_out, code, limits)
    result["fork_ms"] = round((forked - started) * 1000, 2)
    result["duration_ms"] = round((time.monotonic() - started) * 1000, 2)
    return json.dumps(result)


def _fork():
    import warnings

    with warnings.catch_warnings():  # Python 3.12+ warns of forking a threaded process: the child runs no threads
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _read_all(fd, deadline, limit):
    """What the child writes until it closes the pipe; (data, True) when the deadline or `limit` came first."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), True


def _reap(pid):
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0


def _decoded(data, timed_out, code, limits):
    try:
        result = json.loads(data) if data and not timed_out else None
    except ValueError:
        result = None
    if isinstance(result, dict):
        return result
    if timed_out and len(data) > MAX_RESULT_BYTES:
        why = f"output limit reached: the exploration printed more than {MAX_RESULT_BYTES} bytes"
    elif timed_out:
        why = "wall time limit reached: stopped after {:g} s".format(float(limits["wall_s"]))
    elif os.WIFSIGNALED(code) or os.WEXITSTATUS(code) == 128 + signal.SIGKILL:
        why = "CPU time limit reached ({:g} s) or the sandbox was killed".format(float(limits["cpu_s"]))
    else:
        why = f"the sandbox ended without a result (exit status {code})"
    error = {"output_type": "error", "ename": "SandboxLimit", "evalue": why, "traceback": ["SandboxLimit: " + why]}
    return {"status": "error", "outputs": [error], "blocked": [why.split(":")[0]], "notes": []}


def _setup_failed(exc):
    return f"the sandbox could not be set up, so nothing ran: {_error_text(exc)}"


def _error_text(exc):
    return f"{type(exc).__name__}: {exc}"


# -- A: the namespaces and the mounts


def _child(ns, request, write_end):
    import gc

    gc.freeze()  # the kernel's objects are never collected here: no finalizer of theirs runs, no page is copied
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _close_fds(write_end)
    sandboxed = request.get("sandbox", True)
    masked, notes = _hidden_paths(request) if sandboxed else ([], [])
    fonts = _font_cache() if sandboxed else {}
    if sandboxed:
        if os.geteuid() == 0:
            # The real uid counts processes (RLIMIT_NPROC is not enforced for a real uid 0); files
            # are still read as the effective uid, the kernel's.
            os.setresuid(NOBODY, 0, 0)
        _enter_namespaces()
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        masked = _mask(masked)
        _mount_setattr("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID)
        _scratch(request, int(request["limits"]["memory_mb"]) // 4)
        _restore_font_cache(fonts)
        alive_read, alive_write = os.pipe()  # A holds its write end: its end is B's EOF
        pid = _fork()
        if pid:  # A waits for B, then ends with it
            os.close(write_end)
            os.close(alive_read)
            code = _reap(pid)
            os._exit(os.WEXITSTATUS(code) if os.WIFEXITED(code) else 128 + os.WTERMSIG(code))
        # B: PID 1 of the new PID namespace, killed when A is (the parent's wall-time kill)
        os.close(alive_write)
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if select.select([alive_read], [], [], 0)[0]:  # A died before the line above: no one would kill B
            os._exit(0)
        os.close(alive_read)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _limit(request["limits"], sandboxed)
    if sandboxed:
        _lock_down()
    _scrub_environment()
    runner = os.getpid()
    result = _run(ns, request, masked)
    if os.getpid() != runner:  # a process the code forked got here: only the runner answers
        os._exit(0)
    result["notes"] = notes + result.get("notes", [])
    _send(write_end, result)
    os._exit(0)


def _font_cache():
    """matplotlib's font list, read before its folder is masked (it lies among the home's dotfiles):
    without it, a first `import matplotlib` in the sandbox rebuilds it for seconds. Not a secret."""
    folder = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "matplotlib"
    )
    found = {}
    try:
        for name in os.listdir(folder):
            if name.startswith("fontlist") and name.endswith(".json"):
                with open(os.path.join(folder, name), "rb") as handle:
                    found[name] = handle.read(4_000_000)
    except OSError:
        pass
    return found


def _restore_font_cache(fonts):
    folder = SCRATCH + "/matplotlib"
    os.makedirs(folder, exist_ok=True)
    for name, data in fonts.items():
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(data)


def _kept_in_scratch(request):
    """The root and the kernel's folder where they lie under the scratch's place (a root in /tmp):
    they stay visible, read-only and masked as they are, inside the private tmpfs."""
    places = {os.path.realpath(request["root"]), os.path.realpath(os.getcwd())}
    return sorted(p for p in places if (p + "/").startswith(SCRATCH + "/") and p != SCRATCH)


def _scratch(request, size_mb):
    """Private tmpfs at /tmp and /dev/shm: the only places the code may write, gone with the sandbox."""
    kept = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in _kept_in_scratch(request)]
    for place in (SCRATCH, "/dev/shm"):
        if os.path.isdir(place):
            _mount("tmpfs", place, "tmpfs", MS_NOSUID | MS_NODEV, f"size={max(16, size_mb)}m,mode=1777")
    for path, fd in kept:
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)  # the read-only original, masks and all
        os.close(fd)
    request["kept"] = [path for path, _ in kept]


def _close_fds(keep):
    """Every inherited fd closed but `keep` (the kernel's ZMQ sockets, connection file, databases);
    0, 1 and 2 on /dev/null (ipykernel may have pointed them at a pipe its own thread reads)."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    low, high = sorted((keep, null))
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, 1 << 20)
    if null > 2 and null != keep:
        os.close(null)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _enter_namespaces():
    uid, gid = os.geteuid(), os.getegid()
    _check(
        _libc().unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC),
        "unshare (user namespaces)",
    )
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open("/proc/self/" + name, "w") as handle:
            handle.write(text)


def _mount(source, target, kind, flags, data=None):
    libc = _libc()
    enc = lambda value: value.encode() if value is not None else None  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(kind), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _mount_setattr(path, attrs):
    attr = struct.pack("QQQQ", attrs, 0, 0, 0)
    rc = _libc().syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE, attr, len(attr))
    _check(rc, "mount_setattr (read-only mounts, Linux 5.12+)")


def hidden_paths(root, hide):
    """(paths, notes): what a sandbox over `root` hides, beside the folders `hide` names (the shell's too)."""
    return _hidden_paths({"root": root, "hide": hide})


def _hidden_paths(request):
    """What the sandbox hides: Jupyter's runtime folder, Cellwright's data folder, the home folder's
    dotfiles and every hidden path under the root; never a folder Python imports from."""
    keep = [os.path.realpath(p) for p in [sys.prefix, sys.base_prefix, sys.exec_prefix] + sys.path if p]
    keep.append(os.path.realpath(request["root"]))
    notes, whole = [], []
    paths = [p for p in request.get("hide", []) if p] + _kernel_secrets()
    home = os.path.expanduser("~")
    if os.path.isdir(home):
        try:
            paths += [os.path.join(home, n) for n in os.listdir(home) if n.startswith(".")]
        except OSError:
            pass
    folders = [request["root"]]
    cwd = os.getcwd()
    if not (cwd + "/").startswith(request["root"].rstrip("/") + "/"):
        folders.append(cwd)  # a kernel on another host (a gateway's) works where the server's root is not
    for folder in folders:
        found, complete = _walk_hidden(folder)
        paths += found
        if not complete:
            whole.append(os.path.realpath(folder))
            notes.append(
                f"{folder} holds more than {MAX_SCAN_ENTRIES} entries: it was not searched for hidden files, so none "
                "of it is visible in the sandbox"
            )
    chosen = list(whole)
    kept_in_scratch = _kept_in_scratch(request)
    for path in paths:
        real = os.path.realpath(path)
        if not os.path.lexists(real):
            continue
        if any(k == real or k.startswith(real.rstrip("/") + "/") for k in keep + [SCRATCH, "/dev/shm"]):
            continue  # hiding it would hide the interpreter, its libraries, the root or the scratch itself
        under_scratch = real.startswith((SCRATCH + "/", "/dev/shm/"))
        if under_scratch and not any(real.startswith(k + "/") for k in kept_in_scratch):
            continue  # the private tmpfs hides it anyway (a connection file in /tmp)
        chosen.append(real)
    return sorted(set(chosen), key=len), notes


def _kernel_secrets():
    """What the kernel itself knows holds keys: its connection file, Jupyter's runtime folder and
    Cellwright's data folder as this kernel's environment names them."""
    found = []
    try:
        from jupyter_core.paths import jupyter_data_dir, jupyter_runtime_dir

        found += [jupyter_runtime_dir(), os.path.join(jupyter_data_dir(), "cellwright")]
    except Exception:  # a kernel without jupyter_core: the server's list still holds them
        pass
    app = sys.modules.get("ipykernel.kernelapp")
    if app is not None and app.IPKernelApp.initialized():
        connection = app.IPKernelApp.instance().connection_file
        if connection:
            path = os.path.abspath(connection)
            found += [path, os.path.dirname(path)]
    return found


def _walk_hidden(root):
    """Hidden entries under `root` (not followed into: they are hidden whole); whether the walk ended."""
    found, stack, seen = [], [root], 0
    deadline = time.monotonic() + SCAN_SECONDS
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_SCAN_ENTRIES or time.monotonic() > deadline:
                return found, False
            if entry.name.startswith("."):
                found.append(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return found, True


def _mask(paths):
    """An empty, unreadable tmpfs over each folder, /dev/null over each file; the paths masked."""
    done = []
    for path in paths:
        try:
            if any(path.startswith(d.rstrip("/") + "/") for d in done):
                continue  # inside a folder already hidden
            if os.path.isdir(path):
                _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,mode=000")
            else:
                _mount("/dev/null", path, None, MS_BIND)
            done.append(path)
        except OSError:
            if os.path.lexists(path):
                raise  # a path that exists but could not be hidden: nothing runs
    return done


# -- B: limits, privileges, seccomp, Landlock


def _limit(limits, sandboxed):
    import resource

    cpu = max(1, int(limits["cpu_s"]))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with open("/proc/self/statm") as handle:
        size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")  # the kernel's own mappings count
    memory = size + int(limits["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if sandboxed:  # counts the tasks of this user namespace only: A, B and what B starts
        count = int(limits["processes"]) + 2
        resource.setrlimit(resource.RLIMIT_NPROC, (count, count))


def _lock_down():
    libc = _libc()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0), "ambient capabilities")  # PR_CAP_AMBIENT_CLEAR_ALL
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            _check(-1, "capability bounding set")
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    _check(libc.capset(header, bytes(24)), "capset")
    _seccomp(libc)
    return _landlock(libc)


def _seccomp(libc):
    arch, sys_socket, sys_ptrace, vm_read, vm_write = _SECCOMP_ARCH[platform.machine()]
    allow, kill = 0x7FFF0000, 0x80000000  # SECCOMP_RET_ALLOW, SECCOMP_RET_KILL_PROCESS
    denied = 0x00050000  # SECCOMP_RET_ERRNO
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    program = [
        (ld, 0, 0, 4),  # arch
        (jeq, 1, 0, arch),
        (ret, 0, 0, kill),  # a foreign ABI (i386 via int 0x80) would not be checked by the rest
        (ld, 0, 0, 0),  # syscall number
        (jge, 0, 1, 0x40000000),
        (ret, 0, 0, kill),  # x32
        (jeq, 0, 1, sys_ptrace),
        (ret, 0, 0, denied | errno.EPERM),
        (jeq, 0, 1, vm_read),
        (ret, 0, 0, denied | errno.EPERM),
        (jeq, 0, 1, vm_write),
        (ret, 0, 0, denied | errno.EPERM),
        (jeq, 0, 3, sys_socket),
        (ld, 0, 0, 16),  # socket's domain (low 32 bits of args[0])
        (jeq, 0, 1, 1),  # AF_UNIX: a named socket outside (a server's, D-Bus) is not behind the network namespace
        (ret, 0, 0, denied | errno.EACCES),
        (ret, 0, 0, allow),
    ]
    code = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buf = ctypes.create_string_buffer(code)
    prog = struct.pack("HxxxxxxQ", len(program), ctypes.addressof(buf))
    _check(libc.prctl(PR_SET_SECCOMP, 2, ctypes.c_char_p(prog), 0, 0), "seccomp")


def _landlock_abi():
    rc = _libc().syscall(SYS_LANDLOCK_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    return rc if rc > 0 else 0


def _landlock(libc):
    """Writes only under the scratch folders (and to /dev/null), no TCP, no signals or abstract
    sockets out of the sandbox, as far as this kernel's Landlock ABI goes; 0 when it has none."""
    abi = _landlock_abi()
    if abi < 1:
        return 0
    writes = 2 | 16 | 32 | 64 | 128 | 256 | 512 | 1024 | 2048 | 4096  # write, remove, make_*
    writes |= (8192 if abi >= 2 else 0) | (16384 if abi >= 3 else 0)  # refer, truncate
    net = 3 if abi >= 4 else 0  # bind and connect TCP
    scoped = 3 if abi >= 6 else 0  # abstract unix sockets, signals
    attr = struct.pack("QQQ", writes, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE, attr, len(attr), 0)
    if ruleset < 0:
        _check(-1, "landlock ruleset")
    try:
        for path, access in ((SCRATCH, writes), ("/dev/shm", writes), ("/dev/null", 2 | (16384 if abi >= 3 else 0))):
            if not os.path.exists(path):
                continue
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = struct.pack("=Qi", access, fd)
                _check(libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, 1, rule, 0), "landlock rule")
            finally:
                os.close(fd)
        _check(libc.syscall(SYS_LANDLOCK_RESTRICT, ruleset, 0), "landlock")
    finally:
        os.close(ruleset)
    return abi


def _scrub_environment():
    """Secrets the kernel's environment holds (API keys, tokens) are not the code's to read: out of
    os.environ, and the process's initial environment block (/proc/self/environ) zeroed."""
    for name in list(os.environ):
        if any(word in name.upper() for word in _SECRET_ENV):
            del os.environ[name]
    try:
        with open("/proc/self/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50 and 51)
        if 0 < start < end and end - start < 1 << 24:
            ctypes.memset(start, 0, end - start)
    except (OSError, ValueError, IndexError):
        pass


# -- B: running the code


class _Stream(io.TextIOBase):
    """sys.stdout or sys.stderr of the fork: nbformat stream outputs, bounded."""

    def __init__(self, name, outputs):
        self.name, self.outputs, self.size = name, outputs, 0

    def writable(self):
        return True

    def write(self, text):
        text = str(text)
        if self.size >= MAX_STREAM_CHARS:
            return len(text)
        kept = text[: MAX_STREAM_CHARS - self.size]
        self.size += len(kept)
        if len(kept) < len(text):
            kept += "\n[... more output cut ...]\n"
        last = self.outputs[-1] if self.outputs else None
        if last and last.get("output_type") == "stream" and last.get("name") == self.name:
            last["text"] += kept
        else:
            self.outputs.append({"output_type": "stream", "name": self.name, "text": kept})
        return len(text)

    def isatty(self):
        return False


class _Blocked:
    """What the sandbox stopped, said in the words the model reads."""

    def __init__(self, masked, root):
        self.items, self.masked, self.root = [], masked, root

    def add(self, text):
        if text not in self.items and len(self.items) < 50:
            self.items.append(text)

    def shown(self, path):
        try:
            path = os.fsdecode(path)
        except TypeError:
            return str(path)
        rel = os.path.relpath(path, self.root) if path.startswith(self.root.rstrip("/") + "/") else path
        return rel[:200]

    def is_masked(self, path):
        for form in {os.path.abspath(path), os.path.realpath(path)}:
            if any(form == m or form.startswith(m.rstrip("/") + "/") for m in self.masked):
                return True
        return False


_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {
    "os.mkdir", "os.remove", "os.rename", "os.rmdir", "os.symlink", "os.link", "os.truncate", "os.chmod",
    "os.chown", "os.utime", "os.mkfifo", "os.mknod", "shutil.copyfile", "shutil.move", "shutil.rmtree",
}  # fmt: skip


def _audit_hook(blocked, kept):
    scratch = SCRATCH.rstrip("/") + "/"

    def outside_scratch(path):
        real = os.path.realpath(os.path.abspath(path))
        if any((real + "/").startswith(k + "/") for k in kept):
            return True
        return not (real + "/").startswith(scratch) and not real.startswith("/dev/shm/") and real != "/dev/null"

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if not isinstance(path, (str, bytes)):
                return
            path = os.fsdecode(path)
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITES
            )
            if blocked.is_masked(path):
                text = f"read blocked: {blocked.shown(path)} (hidden from the sandbox)"
                blocked.add(text)
                raise PermissionError(errno.EACCES, text)
            if writing and outside_scratch(path):
                text = f"write blocked: {blocked.shown(path)}"
                blocked.add(text)
                raise PermissionError(errno.EROFS, text + " (the sandbox writes only under /tmp, its scratch)")
        elif event in _PATH_EVENTS:
            path = args[0] if args else None
            if isinstance(path, (str, bytes)) and outside_scratch(os.fsdecode(path)):
                text = f"write blocked: {blocked.shown(path)}"
                blocked.add(text)
                raise PermissionError(errno.EROFS, text + " (the sandbox writes only under /tmp, its scratch)")
        elif event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto"):
            target = args[1] if event in ("socket.connect", "socket.sendto") and len(args) > 1 else args[0]
            text = f"network blocked: {str(target)[:200]}"
            blocked.add("network blocked")
            raise OSError(errno.ENETUNREACH, text + " (the sandbox has no network)")
        elif event == "os.kill" or event == "os.killpg":
            pid = args[0]
            if isinstance(pid, int) and pid > 1 and not os.path.exists(f"/proc/{pid}"):
                text = f"signal blocked: process {pid} is outside the sandbox"
                blocked.add(text)
                raise PermissionError(errno.EPERM, text)

    return hook


def _shell():
    interactive = sys.modules.get("IPython.core.interactiveshell")
    if interactive is None or not interactive.InteractiveShell.initialized():
        return None
    return interactive.InteractiveShell.instance()


def _run(ns, request, masked):
    import ast
    import traceback

    outputs = []
    blocked = _Blocked(masked, request["root"])
    shell = _shell()
    displays = [0]

    def publish(data, metadata=None, *args, **kwargs):
        if displays[0] >= 50:
            return
        displays[0] += 1
        outputs.append({"output_type": "display_data", "data": _bounded_data(data), "metadata": {}})

    pyplot = sys.modules.get("matplotlib.pyplot")
    figures_before = set(pyplot.get_fignums()) if pyplot is not None else set()
    if shell is not None:
        shell.display_pub.publish = publish
        shell.display_pub.clear_output = lambda *args, **kwargs: None
    os.environ["MPLCONFIGDIR"] = SCRATCH + "/matplotlib"
    os.environ["TMPDIR"] = SCRATCH
    sys.stdout, sys.stderr = _Stream("stdout", outputs), _Stream("stderr", outputs)
    fd_out = _capture_fds()
    if request.get("sandbox", True):
        sys.addaudithook(_audit_hook(blocked, request.get("kept", [])))
    status = "ok"
    try:
        code = request["code"]
        if shell is not None:
            code = shell.transform_cell(code)  # magics and !commands as a cell would have them
        tree = ast.parse(code)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<explore>", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<explore>", "eval"), ns)
            if value is not None:
                outputs.append({"output_type": "execute_result", "data": _formatted(shell, value), "metadata": {}})
        _figures(figures_before, publish)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt of the code end it the same way
        status = "error"
        _name_limits(exc, blocked, request["limits"])
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        lines = [line for line in lines if 'File "<explore>"' in line or not line.startswith("  File")]
        outputs.append(
            {
                "output_type": "error",
                "ename": type(exc).__name__,
                "evalue": str(exc)[:2000],
                "traceback": [line.rstrip("\n")[:2000] for line in lines[-30:]],
            }
        )
    finally:
        sys.stdout.flush()
    outputs[:0] = fd_out()
    return {"status": status, "outputs": outputs, "blocked": blocked.items}


def _capture_fds():
    """fds 1 and 2 (subprocesses, C code) into scratch files, read back as streams at the end."""
    paths = {}
    for fd, name in ((1, "stdout"), (2, "stderr")):
        path = f"{SCRATCH}/.explore-{name}"
        try:
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            continue
        os.dup2(target, fd)
        os.close(target)
        paths[name] = path

    def read():
        found = []
        for name, path in paths.items():
            try:
                with open(path, "rb") as handle:
                    text = handle.read(MAX_STREAM_CHARS).decode("utf-8", "replace")
            except OSError:
                continue
            if text:
                found.append({"output_type": "stream", "name": name, "text": text})
        return found

    return read


def _formatted(shell, value):
    if shell is not None:
        data, _ = shell.display_formatter.format(value)
        return _bounded_data(data)
    return {"text/plain": repr(value)[:MAX_DISPLAY_CHARS]}


def _bounded_data(data):
    kept = {}
    for mime, value in dict(data).items():
        if not isinstance(value, str):
            try:
                value = json.dumps(value)
            except (TypeError, ValueError):
                continue
        if len(value) > MAX_DISPLAY_CHARS * (5 if mime.startswith("image/") else 1):
            if mime == "text/plain":
                value = value[:MAX_DISPLAY_CHARS] + "\n[... cut ...]"
            else:
                continue  # a cut image or HTML document is no image or document
        kept[mime] = value
    return kept


def _figures(before, publish):
    """Figures the code made and did not show: rendered here as PNG."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    for number in [n for n in pyplot.get_fignums() if n not in before][:MAX_IMAGES]:
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        publish({"image/png": base64.b64encode(buffer.getvalue()).decode(), "text/plain": repr(figure)})


def _name_limits(exc, blocked, limits):
    if isinstance(exc, MemoryError):
        blocked.add("memory limit reached ({} MB)".format(limits["memory_mb"]))
    elif isinstance(exc, BlockingIOError) or (isinstance(exc, OSError) and exc.errno == errno.EAGAIN):
        blocked.add("process limit reached ({})".format(limits["processes"]))
    elif isinstance(exc, OSError) and exc.errno == errno.EROFS and exc.filename:  # past the hooks (a C library)
        blocked.add("write blocked: {}".format(blocked.shown(exc.filename or "?")))
    elif isinstance(exc, OSError) and exc.errno in (errno.ENETUNREACH, errno.ECONNREFUSED, errno.EADDRNOTAVAIL):
        blocked.add("network blocked")


def _send(fd, result):
    data = json.dumps(result, default=str).encode()
    if len(data) > MAX_RESULT_BYTES:
        result = {
            "status": result.get("status", "error"),
            "outputs": [o for o in result.get("outputs", []) if o.get("output_type") != "display_data"][:20],
            "blocked": result.get("blocked", []),
            "notes": result.get("notes", []) + ["displays dropped: the result was too large"],
        }
        data = json.dumps(result, default=str).encode()[:MAX_RESULT_BYTES]
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except InterruptedError:
            continue
        except OSError:
            break
    os.close(fd)
