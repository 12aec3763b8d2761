"""Skills: Markdown playbooks with a front matter `name` and `description`.

Built-in skills live in agent_core/skills/; a user folder, <jupyter_config_dir>/cellwright/skills/,
adds skills or overrides built-in ones by name. The system prompt lists names and descriptions
only (`skills_prompt_section`); `load_skill` returns a skill's body when the agent needs it.
Files are read on each call, so a new user skill works without a restart."""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from agent_core.json_types import JsonObject
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec

log = logging.getLogger(__name__)

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "skills"
MAX_SKILL_BYTES = 64 * 1024


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    path: Path


def normalize(name: str) -> str:
    """'Data Analysis', 'data_analysis' and 'data-analysis' name the same skill."""
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def user_skills_dir() -> Path:
    try:
        from jupyter_core.paths import jupyter_config_dir

        base = Path(jupyter_config_dir())
    except ImportError:  # pragma: no cover - jupyter_core comes with ipykernel and the server
        base = Path.home() / ".jupyter"
    return base / "cellwright" / "skills"


def parse_skill(text: str, path: Path) -> Skill:
    """YAML front matter between `---` lines (`name`, `description`), then the body."""
    # yaml loads with the first skill read: %load_ext agent_core does not load it
    import yaml

    meta: JsonObject = {}
    body = text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        closing = next((i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---"), None)
        if closing is None:
            raise ValueError("the front matter has no closing '---' line")
        try:
            loaded = yaml.safe_load("\n".join(lines[1:closing])) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"the front matter is not valid YAML: {exc}") from None
        if not isinstance(loaded, dict):
            raise ValueError("the front matter must be `key: value` lines")
        meta = {str(key).lower(): value for key, value in loaded.items()}
        body = "\n".join(lines[closing + 1 :])
    name = normalize(str(meta.get("name") or path.stem))
    description = " ".join(str(meta.get("description") or "").split())
    if not description:
        first = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
        description = first[:200]
    return Skill(name, description, body.strip() + "\n", path)


# Parsed skill files by (path, mtime, size): every model call lists the skills, and parsing their
# YAML front matter each time cost more than the rest of the prompt.
_parsed: dict[tuple[Path, int, int], Skill] = {}


def _read_skill(path: Path) -> Skill:
    stat = path.stat()
    if stat.st_size > MAX_SKILL_BYTES:
        raise ValueError(f"larger than {MAX_SKILL_BYTES} bytes")
    key = (path, stat.st_mtime_ns, stat.st_size)
    skill = _parsed.get(key)
    if skill is None:
        skill = parse_skill(path.read_text(encoding="utf-8"), path)
        if len(_parsed) > 1000:
            _parsed.clear()
        _parsed[key] = skill
    return skill


def _read_folder(folder: Path) -> dict[str, Skill]:
    skills: dict[str, Skill] = {}
    if not folder.is_dir():
        return skills
    for path in sorted(folder.glob("*.md")):
        try:
            skill = _read_skill(path)
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            log.warning("skill file %s skipped: %s", path, exc)
            continue
        skills[skill.name] = skill
    return skills


def load_skills(builtin_dir: Path = BUILTIN_DIR, user_dir: Path | None = None) -> dict[str, Skill]:
    """Built-in skills, then the user's (which win on the same name), sorted by name."""
    skills = _read_folder(builtin_dir)
    skills.update(_read_folder(user_dir if user_dir is not None else user_skills_dir()))
    return dict(sorted(skills.items()))


# The prompt section is asked for on every model call, by every thread at once on a busy server:
# the folders are listed again at most once per this many seconds (a new skill shows up by then).
SECTION_FRESH_SECONDS = 1.0
_section: tuple[float, Path, str] | None = None


def skills_prompt_section() -> str:
    """One `name: description` line per skill, for the system prompt."""
    global _section
    user_dir, now = user_skills_dir(), time.monotonic()
    if _section is None or now - _section[0] > SECTION_FRESH_SECONDS or _section[1] != user_dir:
        text = "\n".join(f"{skill.name}: {skill.description}" for skill in load_skills(user_dir=user_dir).values())
        _section = (now, user_dir, text)
    return _section[2]


class LoadSkillArgs(ToolArgs):
    name: str = Field(description="The skill's name, as listed.")


async def load_skill(args: LoadSkillArgs, ctx: ToolContext) -> ToolOutcome:
    skills = load_skills()
    wanted = normalize(args.name)
    skill = skills.get(wanted)
    if skill is None:
        available = ", ".join(skills) or "(none)"
        raise ToolInputError(f"there is no skill named {args.name!r}; available skills: {available}")
    return ToolOutcome("ok", f"# Skill: {skill.name}\n\n{skill.body}", summary=f"Loaded the {skill.name} skill")


LOAD_SKILL = ToolSpec(
    name="load_skill",
    description=(
        "Load a skill: a playbook with concrete steps, pitfalls and code idioms for a kind of task (the "
        "available skills are listed in the system prompt). Load the matching one before starting such a task."
    ),
    args=LoadSkillArgs,
    action=load_skill,
    touches="nothing",
    read_only=True,
)
