"""Workspace rules: lines the user keeps in `<root>/.cellwright/rules.md` ("Never install
packages", "don't overwrite raw_df"). Every rule goes into the agent's instructions; the ones this
module understands also turn into warnings on an approval card whose code breaks them. A reject
on a card can be saved as a rule. The file is the user's: small, readable, edited by hand, so it
is read bounded and never trusted to be well formed. Its path is fixed, never chosen by a model."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_core.impact.analysis import CodeImpact, Finding

RULES_FILE = ".cellwright/rules.md"
MAX_RULES_BYTES = 32 * 1024
MAX_RULES = 100
MAX_RULE_CHARS = 300
HEADER = (
    '<!-- Cellwright rules for this workspace: one rule per line, each starting with "- ".\n'
    "     The agent is told every rule; a proposed cell that breaks one it understands\n"
    "     (installs, network, shell commands, files, protected variables) gets a warning on\n"
    "     its approval card. Edit or delete lines freely. -->\n"
)

NEGATION_WORDS = frozenset(
    {"never", "no", "not", "dont", "avoid", "stop", "forbid", "forbidden", "without", "refrain", "nothing"}
)
# How a free-text reason that is meant as a rule starts ("no, wrong column" is not one).
RULE_OPENINGS = (
    "never ",
    "don't ",
    "dont ",
    "do not ",
    "avoid ",
    "always ",
    "only ",
    "keep ",
    "leave ",
    "use ",
    "prefer ",
    "must ",
    "must not ",
    "stop ",
)
TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("installs", ("install", "pip", "conda", "mamba", "new package", "packages", "dependencies")),
    (
        "network",
        ("network", "internet", "http", "download", "web request", "requests", "online", "api call", "url", "upload"),
    ),
    ("shell", ("shell", "terminal", "subprocess", "bash", "command line", "system command", "os.system")),
    ("files_written", ("file", "disk", "filesystem", "directory", "directories", "folder", "to_csv", "save")),
)
PROTECT_VERBS = (
    "overwrite",
    "modify",
    "change",
    "mutate",
    "touch",
    "delete",
    "drop",
    "reassign",
    "alter",
    "edit",
    "replace",
    "update",
    "rename",
    "del",
    "reset",
)
GENERIC_WORDS = frozenset(
    {
        "the",
        "a",
        "an",
        "any",
        "my",
        "our",
        "variable",
        "variables",
        "dataframe",
        "df's",
        "data",
        "anything",
        "everything",
        "it",
        "them",
        "this",
        "that",
        "or",
        "and",
        "nor",
        "original",
        "in",
        "place",
        "inplace",
        "kernel",
        "state",
        "notebook",
        "cells",
        "cell",
        "existing",
        "other",
        "others",
        "of",
        "with",
        "values",
    }
)
CATEGORY_LABELS = {
    "installs": "installs",
    "network": "network access",
    "shell": "shell commands",
    "files_written": "file writes",
}
CHANGE_VERBS = (("assigns", "assigns"), ("mutates", "changes"), ("deletes", "deletes"))


@dataclass(frozen=True)
class Rule:
    text: str  # the line as the user wrote it (without the leading "- ")
    forbids: str | None  # "installs" | "network" | "shell" | "files_written" | None (free text)
    protects: tuple[str, ...] = ()  # names the rule protects ("don't overwrite raw_df" -> ("raw_df",))


def _clean(text: str) -> str:
    """One line: control characters and runs of blanks become one space, at most MAX_RULE_CHARS."""
    printable = "".join(char if char.isprintable() else " " for char in text[: MAX_RULE_CHARS * 4])
    flat = " ".join(printable.split()).replace("<!--", "<! --")
    return flat[:MAX_RULE_CHARS].rstrip()


def _normal(text: str) -> str:
    """The rule for matching: quotes and backticks dropped, blanks collapsed, polite openings
    removed. Case is kept (protected names are case-sensitive); callers lower() what they match."""
    flat = " ".join(text.replace("\u2019", "'").replace("`", "").replace('"', "").split()).rstrip(".!")
    for prefix in ("please ", "you must ", "you should ", "the agent must ", "agent: ", "rule: "):
        if flat.lower().startswith(prefix):
            flat = flat[len(prefix) :]
    return flat


def _topic_word(word: str) -> bool:
    """ "files", "packages", "network": English words naming a rule's topic, not variables."""
    lowered = word.lower()
    return lowered.isalpha() and any(stem in lowered for _, stems in TOPICS for stem in stems)


def _identifiers(words: list[str]) -> tuple[str, ...]:
    names: list[str] = []
    for piece in " ".join(words).replace("/", " ").replace(",", " ").replace(";", " ").split():
        word = piece.strip("'\"().:")
        if word.lower() in GENERIC_WORDS:
            continue
        if not word.isidentifier() or _topic_word(word):
            break  # the list of names ended ("raw_df in place", "files in data/")
        names.append(word)
    return tuple(dict.fromkeys(names))[:10]


PROTECT_OPENINGS = ("keep", "treat")
PROTECT_OPENED_ENDINGS: tuple[tuple[str, ...], ...] = (
    ("unchanged",),
    ("intact",),
    ("as", "is"),
    ("read-only",),
    ("as", "read-only"),
    ("untouched",),
)
PROTECT_ENDINGS: tuple[tuple[str, ...], ...] = (
    ("is", "read-only"),
    ("are", "read-only"),
    ("must", "not", "change"),
    ("must", "stay", "unchanged"),
)


def _protected(normal: str, negated: bool) -> tuple[str, ...]:
    words = normal.split()
    lowered = [word.lower() for word in words]
    if len(words) > 2 and lowered[0] == "leave" and lowered[-1] == "alone":
        return _identifiers(words[1:-1])
    for ending in PROTECT_OPENED_ENDINGS:
        if len(words) > len(ending) + 1 and lowered[0] in PROTECT_OPENINGS and tuple(lowered[-len(ending) :]) == ending:
            return _identifiers(words[1 : -len(ending)])
    for ending in PROTECT_ENDINGS:
        if len(words) > len(ending) and tuple(lowered[-len(ending) :]) == ending:
            return _identifiers(words[: -len(ending)])
    if negated:
        for index, word in enumerate(lowered):
            if word.rstrip(",") in PROTECT_VERBS:
                return _identifiers(words[index + 1 :])
    return ()


def _negation_window(lowered: str) -> str | None:
    """The words a negation governs ("never install packages" -> "install packages"): the next
    one after a bare "no", the next five otherwise; None without a negation."""
    words = lowered.split()
    for index, word in enumerate(words):
        if (word in NEGATION_WORDS or word.endswith("n't")) and words[index + 1 : index + 2] != ["forget"]:
            return " ".join(words[index + 1 : index + (2 if word == "no" else 6)])
    return None


def parse_rule(text: str) -> Rule:
    """A rule from one line of the file; what is not understood stays free text (prompt only)."""
    text = _clean(text)
    normal = _normal(text)
    window = _negation_window(normal.lower())
    protects = _protected(normal, window is not None)
    if protects:
        return Rule(text=text, forbids=None, protects=protects)
    if window:
        for category, words in TOPICS:
            if any(word in window for word in words):
                return Rule(text=text, forbids=category)
    return Rule(text=text, forbids=None)


def _list_item(line: str) -> str | None:
    stripped = line.strip()
    if stripped[:2] in ("- ", "* ", "+ "):
        return stripped[2:]
    digits = len(stripped) - len(stripped.lstrip("0123456789"))
    if 0 < digits <= 3 and stripped[digits : digits + 2] in (". ", ") "):
        return stripped[digits + 2 :]
    return None


def rules_path(root: Path) -> Path:
    """The rules file of a workspace; refuses a `.cellwright` that leads out of the root."""
    root = Path(root).resolve()
    path = root / RULES_FILE
    resolved = path.resolve()
    if resolved != path and root not in resolved.parents:
        raise ValueError(f"{RULES_FILE} leads outside the workspace (a symlink); not used")
    return path


def _read_bounded(path: Path) -> str:
    with open(path, "rb") as handle:
        data = handle.read(MAX_RULES_BYTES)
    return data.decode("utf-8", errors="replace")


def load_rules(root: Path) -> list[Rule]:
    """The workspace's rules, in file order: [] without a file; at most MAX_RULES of the first
    MAX_RULES_BYTES; never raises on bad content (binary, huge, unreadable)."""
    try:
        path = rules_path(root)
        if not path.is_file():
            return []
        text = _read_bounded(path)
    except (OSError, ValueError):
        return []
    rules: list[Rule] = []
    in_comment = False
    for line in text.splitlines():
        if in_comment or line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            continue
        item = _list_item(line)
        if item is not None and _clean(item):
            rules.append(parse_rule(item))
            if len(rules) >= MAX_RULES:
                break
    return rules


def append_rule(root: Path, text: str) -> Rule:
    """Add one rule at the end of the file (created with a short header when missing). A rule
    already there is not added twice. ValueError when the text is empty or the file is full."""
    rule = parse_rule(text[2:] if text.lstrip().startswith("- ") else text)
    if not rule.text:
        raise ValueError('A rule needs some text, e.g. "Never install packages".')
    path = rules_path(root)
    existing = load_rules(root)
    if any(item.text.casefold() == rule.text.casefold() for item in existing):
        return rule
    if len(existing) >= MAX_RULES:
        raise ValueError(f"{RULES_FILE} already holds {MAX_RULES} rules: remove some before adding more.")
    line = f"- {rule.text}\n".encode()
    size = path.stat().st_size if path.is_file() else len(HEADER.encode("utf-8"))
    if size + len(line) + 1 > MAX_RULES_BYTES:
        raise ValueError(f"{RULES_FILE} is full ({MAX_RULES_BYTES // 1024} KB): remove some rules before adding more.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(HEADER, encoding="utf-8")
        with open(path, "rb+") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell():
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
            handle.write(line)
    except OSError as exc:  # a folder named rules.md, a read-only workspace: one error kind for callers
        raise ValueError(f"Cannot write {RULES_FILE}: {exc.strerror or exc}.") from exc
    return rule


def _reads_like_rule(reason: str) -> bool:
    normal = _normal(reason).lower()
    parsed = parse_rule(reason)
    return bool(parsed.forbids or parsed.protects) or normal.startswith(RULE_OPENINGS)


def rule_from_rejection(impact: CodeImpact, reason: str) -> str:
    """The rule a rejection suggests ("save as rule"): the reason itself when it reads like a rule,
    else one derived from what the rejected code does; "" when there is nothing to suggest."""
    reason = _clean(reason or "")
    if reason and _reads_like_rule(reason):
        return reason
    derived = (
        ("installs", "Never install packages"),
        ("network", "No network access"),
        ("shell", "No shell commands"),
        ("files_written", "Don't write or delete files"),
    )
    for category, suggestion in derived:
        if getattr(impact, category):
            return suggestion
    changed = [item.name for item in (*impact.mutates, *impact.deletes) if item.name.isidentifier()]
    if changed:
        return f"Don't modify {changed[0]}"
    return reason


def _shown(findings: Sequence[Finding], verb: str = "") -> str:
    parts = [f"{verb}{item.name} (line {item.line})" for item in findings[:3]]
    more = len(findings) - 3
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def rule_warnings(rules: Sequence[Rule], impact: CodeImpact) -> list[str]:
    """One warning per rule the analysis shows the code breaking (and per checkable rule that
    the analysis cannot vouch for, when part of the code is unknown to it)."""
    warnings: list[str] = []
    for rule in rules:
        if rule.forbids:
            found = getattr(impact, rule.forbids, ())
            if found:
                warnings.append(f'Breaks the rule "{rule.text}": {_shown(found)}')
                continue
        if rule.protects:
            hits = [
                Finding(f"{label} {item.name}", item.line)
                for category, label in CHANGE_VERBS
                for item in getattr(impact, category)
                if item.name in rule.protects
            ]
            if hits:
                warnings.append(f'Breaks the rule "{rule.text}": {_shown(sorted(hits, key=lambda hit: hit.line))}')
                continue
        if (rule.forbids or rule.protects) and impact.unknown:
            warnings.append(f'Cannot check the rule "{rule.text}": {_shown(impact.unknown)} is beyond static analysis')
    return warnings


def rules_prompt_section(rules: Sequence[Rule]) -> str:
    """The text added to the agent's instructions ("" without rules)."""
    if not rules:
        return ""
    lines = "\n".join(f"- {rule.text}" for rule in rules[:MAX_RULES])
    return (
        "## Workspace rules\n"
        f"The user keeps these rules for this workspace ({RULES_FILE}). Follow them. A proposed step "
        "that breaks one is flagged on its approval card and is likely to be rejected; when a task "
        "seems to need breaking a rule, say so and ask instead.\n"
        f"{lines}\n"
    )
