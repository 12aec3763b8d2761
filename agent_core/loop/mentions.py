"""`@name` in a message: a kernel variable or a workspace path, resolved when a run starts, and
the context message the model gets with it (apart from the user's own message, marked as data).
Without mentions, a short snapshot of the kernel's namespace goes in its place."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import TypedDict

from agent_core.config.agent_settings import AgentSettings
from agent_core.kernel_probes.introspection import (
    BUSY_NOTE,
    format_snapshot,
    format_summary,
    namespace_snapshot,
    variable_summaries,
)
from agent_core.kernel_probes.probe import is_variable_name
from agent_core.messages import CONTEXT_KEY, PREAMBLE, Message
from agent_core.output_digest import bounded
from agent_core.tools.base import ToolEnvironment, ToolInputError
from agent_core.tools.notebook_reader import cells_text, load_notebook
from agent_core.workspace import WorkspaceError, relative_to_root, workspace_of

log = logging.getLogger(__name__)

MAX_MENTIONS = 10
FILE_HEAD_BYTES = 6000
NOTEBOOK_CHARS = 6000
CONTEXT_CHARS = 20_000
_MENTION = re.compile(r"(?<![\w@])@([^\s@]+)")


class MentionView(TypedDict):
    """A mention as `run_started` names it."""

    name: str
    kind: str
    ok: bool


class RunNotesState(TypedDict, total=False):
    kernel_identity: str  # the kernel the model was told about (AgentState.kernel_identity)


@dataclass(frozen=True)
class Mention:
    name: str
    kind: str  # "variable" | "file"
    ok: bool
    text: str  # what the model is told

    def public(self) -> MentionView:
        return {"name": self.name, "kind": self.kind, "ok": self.ok}


def parse_mentions(message: str) -> list[str]:
    names = []
    for match in _MENTION.finditer(message):
        name = match.group(1).rstrip(".,;:!?)]}'\"")
        if name and name not in names:
            names.append(name)
    return names[:MAX_MENTIONS]


def _file_text(env: ToolEnvironment, name: str, contents: bool = True) -> tuple[bool, str]:
    workspace = workspace_of(env)
    try:
        path = workspace.resolve(name)
    except WorkspaceError as exc:
        return False, f"@{name}: refused: {exc.message}"
    rel = relative_to_root(workspace.root, path)
    if path.is_dir():
        return False, f"@{name}: {rel} is a folder; mention a file in it"
    if not path.is_file():
        return False, f"@{name}: there is no file {rel}"
    if not contents:  # data_policy schema_only: the file's size, not its head (agent_core.privacy)
        return True, f"@{name}: file {rel} ({path.stat().st_size} bytes); contents not sent (data_policy schema_only)"
    if path.suffix == ".ipynb":
        try:
            return (
                True,
                f"@{name}: notebook {rel}\n{cells_text(load_notebook(path), total=NOTEBOOK_CHARS, output_chars=600)}",
            )
        except ToolInputError as exc:
            return False, f"@{name}: {exc}"
    try:
        with path.open("rb") as handle:
            head = handle.read(FILE_HEAD_BYTES + 1)
        size = path.stat().st_size
    except OSError as exc:
        return False, f"@{name}: {rel} could not be read: {exc.strerror}"
    if b"\x00" in head:
        return True, f"@{name}: {rel} is a binary file of {size} bytes (not shown)"
    text = head[:FILE_HEAD_BYTES].decode("utf-8", errors="replace")
    more = f"\n[... the file has {size} bytes; only its head is shown]" if size > FILE_HEAD_BYTES else ""
    return True, f"@{name}: file {rel} ({size} bytes), head:\n{text}{more}"


def _exists_in_workspace(env: ToolEnvironment, name: str) -> bool:
    try:
        return workspace_of(env).resolve(name).exists()
    except WorkspaceError:
        return False


async def resolve_mentions(names: list[str], env: ToolEnvironment, values: bool = True) -> list[Mention]:
    """`values` False (schema_only): names, types, shapes and columns only, no rows, reprs or file heads."""
    variables = [n for n in names if is_variable_name(n)]
    summaries = await variable_summaries(env, variables) if variables else {}
    resolved = []
    for name in names:
        entry = summaries.get(name)
        missing = entry is not None and "no variable named" in str(entry.get("error", ""))
        if entry is not None and not (missing and await asyncio.to_thread(_exists_in_workspace, env, name)):
            shown = entry if values else {k: v for k, v in entry.items() if k not in ("head", "repr", "min", "max")}
            resolved.append(Mention(name, "variable", "error" not in entry, format_summary(name, shown)))
        else:
            ok, text = await asyncio.to_thread(_file_text, env, name, values)
            resolved.append(Mention(name, "file", ok, text))
    return resolved


async def context_for(
    message: str, env: ToolEnvironment, settings: AgentSettings
) -> tuple[Message | None, list[Mention]]:
    """The context message for a run that starts with `message` (None when there is nothing to add),
    and the mentions it resolved."""
    names = parse_mentions(message)
    if names:
        mentions = await resolve_mentions(names, env, settings.data_policy != "schema_only")
        body = "\n\n".join(m.text for m in mentions)
    else:
        mentions = []
        if not settings.namespace_snapshot:
            return None, []
        snapshot = await namespace_snapshot(env)
        if not snapshot.variables and snapshot.note != BUSY_NOTE:
            return None, []  # no kernel, or nothing in it: nothing worth the tokens
        body = "The user's kernel namespace: " + format_snapshot(snapshot)
    text = f"{PREAMBLE}\n{bounded(body, CONTEXT_CHARS)}"
    return {"role": "user", "content": text, CONTEXT_KEY: True}, mentions


__all__ = ["Mention", "parse_mentions", "resolve_mentions", "context_for"]


async def run_context_notes(
    message: str,
    env: ToolEnvironment,
    settings: AgentSettings,
    kernel_seen: str | None,
    notes_before: list[Message],
) -> tuple[list[Message], list[MentionView], RunNotesState]:
    """The context messages a new run's message gets: `notes_before` (e.g. the steps the user
    undid), what its @mentions (or the namespace snapshot) resolve to, and a note when the kernel
    restarted since the thread's last cell (`kernel_seen`); the mentions for `run_started`; and the
    state to keep (the kernel told about, said once). Never fails the run: context is a help."""
    notes: list[Message] = list(notes_before)
    mentions: list[Mention] = []
    kernel_now = None
    try:
        context, mentions = await context_for(message, env, settings)
        notes += [context] if context is not None else []
        kernel_now = await env.kernel_identity() if kernel_seen else None
        notes += restart_note(kernel_seen, kernel_now)
    except Exception:
        log.exception("the context of a run could not be resolved")
    told: RunNotesState = {"kernel_identity": kernel_now} if kernel_now and notes else {}
    return notes, [m.public() for m in mentions], told


def restart_note(kernel_seen: str | None, kernel_now: str | None) -> list[Message]:
    """A context message when the kernel that ran the thread's last cell is not the one running now
    (the user restarted it, or the server came back with a new one): its variables are gone."""
    if not kernel_seen or kernel_now is None or kernel_now == kernel_seen:
        return []
    text = (
        "[The notebook's kernel restarted since your last cell ran: every variable, import and loaded dataset from "
        "before is gone. Re-run the cells you need before you use them.]"
    )
    return [{"role": "user", "content": text, CONTEXT_KEY: True}]
