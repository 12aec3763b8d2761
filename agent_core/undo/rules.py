"""The workspace's rules (agent_core.impact.rules, `<root>/.cellwright/rules.md`) where the agent and
the server use them: the system prompt's section, the card's warnings, a reject saved as a rule."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from agent_core.impact.rules import RULES_FILE, append_rule, load_rules, rules_path, rules_prompt_section

log = logging.getLogger(__name__)

# Asked on every model call and card of every thread: the file is parsed again only when it changed.
_parsed: dict[Path, tuple[tuple[int, int], list[Any]]] = {}
PARSED_KEPT = 64


def rules_of(root: Path) -> list[Any]:
    """The rules; none when the file cannot be read (a help, never a reason to fail a run)."""
    try:
        # Most workspaces have no rules: one stat says so. rules_path's check that the file does not
        # lead out of the root resolves every folder of the path (~0.2 ms, before each model call).
        stat = os.stat(os.path.join(root, RULES_FILE))
        path = rules_path(Path(root))
    except (OSError, ValueError):  # no rules file (or one leading out of the root): no rules
        return []
    version = (stat.st_mtime_ns, stat.st_size)
    known = _parsed.get(path)
    if known is not None and known[0] == version:
        return list(known[1])
    try:
        rules = list(load_rules(Path(root)))
    except Exception as exc:
        log.warning("workspace rules not read: %s", exc)
        return []
    if len(_parsed) >= PARSED_KEPT:
        _parsed.clear()
    _parsed[path] = (version, rules)
    return list(rules)


def prompt_section(root: Path) -> str:
    """The rules for the agent's instructions ("" without any)."""
    rules = rules_of(root)
    return rules_prompt_section(rules) if rules else ""


def save_rule(root: Path, text: str) -> str:
    """Append a rule the user wrote when rejecting a call; ValueError (with the reason) when refused."""
    return append_rule(Path(root), text).text
