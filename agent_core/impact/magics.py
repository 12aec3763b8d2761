"""What IPython magics and shell commands touch, by table: `%pip install` installs, `!rm x`
writes files, `%%bash` is a shell, `%time <code>` runs Python in the kernel (analysed as such),
an unknown magic is unknown. Shell text is read word by word, never executed or globbed."""

from __future__ import annotations

from dataclasses import dataclass

# (category, name, line offset from the magic's own line)
Effect = tuple[str, str, int]

PACKAGE_MANAGERS = frozenset(
    {
        "pip",
        "pip3",
        "conda",
        "mamba",
        "micromamba",
        "uv",
        "poetry",
        "pipenv",
        "pipx",
        "apt",
        "apt-get",
        "yum",
        "dnf",
        "apk",
        "brew",
        "npm",
        "yarn",
        "pnpm",
        "easy_install",
    }
)
INSTALL_SUBCOMMANDS = frozenset(
    {
        "install",
        "uninstall",
        "remove",
        "add",
        "update",
        "upgrade",
        "sync",
        "create",
        "i",
    }
)
NETWORK_COMMANDS = frozenset(
    {
        "curl",
        "wget",
        "ssh",
        "scp",
        "sftp",
        "ftp",
        "nc",
        "netcat",
        "telnet",
        "aws",
        "gsutil",
        "gcloud",
        "az",
        "kaggle",
        "huggingface-cli",
        "rsync",
        "ping",
    }
)
NETWORK_GIT = frozenset({"clone", "pull", "fetch", "push", "ls-remote", "submodule"})
FILE_COMMANDS = frozenset(
    {
        "rm",
        "mv",
        "cp",
        "mkdir",
        "rmdir",
        "touch",
        "ln",
        "tee",
        "truncate",
        "chmod",
        "chown",
        "dd",
        "unzip",
        "tar",
        "gunzip",
        "gzip",
        "zip",
        "shred",
    }
)
SEPARATORS = ("&&", "||", ";", "|", "\n")

# Line magics that change nothing the card reports (display, introspection, settings).
QUIET_LINE_MAGICS = frozenset(
    {
        "who",
        "whos",
        "who_ls",
        "pwd",
        "matplotlib",
        "config",
        "history",
        "hist",
        "lsmagic",
        "magic",
        "page",
        "pinfo",
        "pinfo2",
        "pdoc",
        "pdef",
        "psource",
        "pfile",
        "precision",
        "xmode",
        "autoreload",
        "aimport",
        "doctest_mode",
        "colors",
        "automagic",
        "autocall",
        "autosave",
        "tb",
        "pdb",
        "dirs",
        "dhist",
        "pycat",
        "less",
        "more",
        "quickref",
        "psearch",
        "alias_magic",
        "clear",
        "bookmark",
        "ls",
        "ll",
        "lf",
        "lk",
        "lx",
        "ldir",
        "cat",
        "man",
        "pprint",
        "logstate",
        "logstop",
        "logoff",
        "logon",
        "watermark",
    }
)
# Extensions that only add profiling, reloading or display magics.
QUIET_EXTENSIONS = frozenset(
    {
        "autoreload",
        "memory_profiler",
        "line_profiler",
        "snakeviz",
        "watermark",
        "tensorboard",
        "google.colab.data_table",
    }
)
# Line and cell magics whose argument (or body) is Python run in the kernel's namespace.
PYTHON_MAGICS = frozenset({"time", "timeit", "prun", "capture", "debug", "memit", "mprun", "lprun"})
SHELL_LINE_MAGICS = frozenset({"sx", "system", "sc", "cd", "pushd", "popd", "killbgscripts", "set_env"})
SHELL_CELL_MAGICS = frozenset(
    {
        "bash",
        "sh",
        "script",
        "system",
        "sx",
        "!",
        "perl",
        "ruby",
        "python",
        "python2",
        "python3",
        "pypy",
        "cmd",
        "powershell",
        "zsh",
    }
)
FILE_LINE_MAGICS = frozenset({"save", "store", "logstart", "notebook", "writefile", "mkdir", "rm", "rmdir", "mv", "cp"})
DISPLAY_CELL_MAGICS = frozenset({"html", "HTML", "markdown", "latex", "svg"})
INSTALL_MAGICS = frozenset({"pip", "conda", "mamba", "micromamba", "uv"})
UNKNOWN_REASONS = {
    "run": "runs another file in the kernel",
    "load": "loads code from elsewhere",
    "load_ext": "loads an extension, which runs its code",
    "reload_ext": "reloads an extension, which runs its code",
    "unload_ext": "unloads an extension",
    "recall": "re-runs earlier input",
    "rerun": "re-runs earlier input",
    "macro": "defines a macro from history",
    "edit": "runs edited code",
    "paste": "runs pasted code",
    "cpaste": "runs pasted code",
    "alias": "defines a shell alias",
    "sql": "runs SQL on a connection",
    "javascript": "runs JavaScript in the browser",
    "js": "runs JavaScript in the browser",
    "agent": "runs the agent",
}


def shorten(text: str, limit: int = 100) -> str:
    """One line, at most `limit` characters: findings are chips on a card."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _segments(command: str) -> list[str]:
    parts = [command[:20_000]]
    for separator in SEPARATORS:
        parts = [piece for part in parts for piece in part.split(separator)]
    return [part.strip() for part in parts if part.strip()]


def _program(word: str) -> str:
    name = word.strip("'\"").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    for manager in ("pip", "python"):  # pip3.11, python3.12
        if name.startswith(manager) and name[len(manager) :].replace(".", "").isdigit():
            return manager
    return name


def _is_install(words: list[str]) -> bool:
    programs = [_program(word) for word in words]
    for index, program in enumerate(programs):
        if program not in PACKAGE_MANAGERS:
            continue
        rest = [word for word in words[index + 1 :] if not word.startswith("-")]
        for word in rest[:2]:  # `uv pip install`, `conda env create`
            if word in INSTALL_SUBCOMMANDS:
                return True
            if _program(word) not in PACKAGE_MANAGERS and word != "env":
                break
    return False


def command_effects(command: str, label: str, *, shell: bool = True) -> list[tuple[str, str]]:
    """What a shell command touches: `shell` (under `label`, e.g. "!pip install x") unless it is a
    package magic, `installs` for package managers, `network` and `files_written` by program."""
    effects: list[tuple[str, str]] = [("shell", shorten(label))] if shell else []
    for segment in _segments(command):
        words = segment.split()
        first = _program(words[0])
        if _is_install(words):
            effects.append(("installs", shorten(label if len(_segments(command)) == 1 else segment)))
        elif first in NETWORK_COMMANDS or (first == "git" and len(words) > 1 and words[1] in NETWORK_GIT):
            effects.append(("network", shorten(segment)))
        if first in FILE_COMMANDS:
            operands = [word for word in words[1:] if not word.startswith("-")]
            effects.append(("files_written", shorten(" ".join(operands) or segment)))
        for index, word in enumerate(words):
            target = words[index + 1] if index + 1 < len(words) else ""
            if word in (">", ">>") and target and target != "/dev/null":
                effects.append(("files_written", shorten(target)))
            elif word[:1] == ">" and word not in (">", ">>") and word.lstrip(">") not in ("", "/dev/null", "&1", "&2"):
                effects.append(("files_written", shorten(word.lstrip(">"))))
    return effects


@dataclass(frozen=True)
class MagicEffect:
    effects: tuple[Effect, ...] = ()
    python: str | None = None  # code the magic runs in the kernel's namespace
    python_line_offset: int = 0  # where that code starts, relative to the magic's line
    assigns: tuple[str, ...] = ()  # names the magic binds (`%%capture out`)
    deletes: tuple[str, ...] = ()  # names it deletes (`%xdel x`)


def _strip_options(args: str, with_values: str = "nrp") -> str:
    """`-n 10 -r 3 f(x)` -> `f(x)` (the options of %timeit and friends)."""
    words = args.split(" ")
    while words and words[0].startswith("-") and len(words[0]) > 1:
        option = words.pop(0)
        if option[1:] in tuple(with_values) and words:
            words.pop(0)
        while words and words[0] == "":
            words.pop(0)
    return " ".join(words)


def line_magic(name: str, args: str) -> MagicEffect:
    label = shorten(f"%{name} {args}".strip())
    if name in INSTALL_MAGICS:
        effects = command_effects(f"{name} {args}", label, shell=False)
        return MagicEffect(tuple((cat, text, 0) for cat, text in effects) or (("shell", label, 0),))
    if name in PYTHON_MAGICS:
        return MagicEffect(python=_strip_options(args))
    if name in ("sx", "system", "sc"):
        return MagicEffect(tuple((cat, text, 0) for cat, text in command_effects(args, label)))
    if name in SHELL_LINE_MAGICS:
        return MagicEffect((("shell", label, 0),))
    if name == "env":
        settles = "=" in args or len(args.split()) > 1
        return MagicEffect((("shell", label, 0),) if settles else ())
    if name == "xdel":
        return MagicEffect(deletes=tuple(word for word in args.split() if word.isidentifier()))
    if name in ("reset", "reset_selective"):
        return MagicEffect((("deletes", label, 0),))
    if name in FILE_LINE_MAGICS:
        target = _strip_options(args, "").split(" ")[0] or label
        if name == "store" and ("-r" in args.split() or not args.strip()):
            return MagicEffect()  # reading the store back, or listing it
        return MagicEffect((("files_written", shorten(target if name != "store" else label), 0),))
    if name in QUIET_LINE_MAGICS or (name in ("load_ext", "reload_ext") and args.strip() in QUIET_EXTENSIONS):
        return MagicEffect()
    reason = UNKNOWN_REASONS.get(name, "unknown magic")
    return MagicEffect((("unknown", f"{label} ({reason})", 0),))


def cell_magic(name: str, args: str, body: str) -> MagicEffect:
    label = shorten(f"%%{name} {args}".strip())
    if name in PYTHON_MAGICS:
        assigns = tuple(word for word in args.split() if word.isidentifier())[:1] if name == "capture" else ()
        return MagicEffect(python=body, python_line_offset=1, assigns=assigns)
    if name in ("writefile", "file"):
        target = _strip_options(args, "").strip() or label
        return MagicEffect((("files_written", shorten(target.strip("'\"")), 0),))
    if name in SHELL_CELL_MAGICS:
        effects: list[Effect] = [("shell", label, 0)]
        for offset, line in enumerate(body.splitlines()[:2_000], start=1):
            if line.strip() and not line.lstrip().startswith("#"):
                effects.extend((cat, text, offset) for cat, text in command_effects(line, line.strip(), shell=False))
        return MagicEffect(tuple(effects))
    if name in DISPLAY_CELL_MAGICS:
        return MagicEffect()
    reason = UNKNOWN_REASONS.get(name, "unknown cell magic")
    return MagicEffect((("unknown", f"{label} ({reason})", 0),))
