"""Skills: built-in playbooks, the user folder overriding them, the prompt section, load_skill."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_core.tools import TOOLS, ToolInputError, skills_prompt_section
from agent_core.tools.skills import BUILTIN_DIR, load_skills, parse_skill, user_skills_dir
from devtools.fake_llm import FakeLLM, reading, text, tool_call
from tests.conftest import Api, of_type
from tests.tools_env import Ctx

BUILT_IN = ["data-analysis", "data-loading", "inference", "model-training", "pyspark"]


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "config"))
    folder = tmp_path / "config" / "cellwright" / "skills"
    assert user_skills_dir() == folder
    return folder


def test_built_in_skills_are_real_playbooks(user_dir: Path) -> None:
    skills = load_skills()
    assert list(skills) == BUILT_IN
    for skill in skills.values():
        assert skill.path.parent == BUILTIN_DIR and len(skill.description) > 40
        assert 40 <= len(skill.body.splitlines()) <= 80, (skill.name, len(skill.body.splitlines()))
        assert "## Pitfalls" in skill.body and "```python" in skill.body
    lines = skills_prompt_section().splitlines()
    assert [line.split(":")[0] for line in lines] == BUILT_IN
    assert lines[4].startswith("pyspark: Work with large data in PySpark")


async def test_user_folder_adds_and_overrides(user_dir: Path) -> None:
    user_dir.mkdir(parents=True)
    (user_dir / "mine.md").write_text(
        "---\nname: Team Reports\ndescription: 'How our team writes reports.'\n---\nUse the template.\n"
    )
    (user_dir / "pyspark.md").write_text(
        "---\nname: pyspark\ndescription: Our cluster's rules.\n---\nAlways use the yarn queue.\n"
    )
    (user_dir / "broken.md").write_text("---\nname: broken\n")  # no closing line: skipped, not fatal
    (user_dir / "latin.md").write_bytes(b"caf\xe9")
    skills = load_skills()
    assert list(skills) == [*BUILT_IN[:4], "pyspark", "team-reports"]
    assert skills["pyspark"].description == "Our cluster's rules."
    spec = TOOLS["load_skill"]
    assert spec.read_only and not spec.needs_approval
    out = await spec.run({"name": "Team_Reports"}, Ctx(user_dir)())
    assert out.content == "# Skill: team-reports\n\nUse the template.\n"
    out = await spec.run({"name": "pyspark"}, Ctx(user_dir)())
    assert "yarn queue" in out.content
    with pytest.raises(
        ToolInputError, match="no skill named 'deep-learning'; available skills: data-analysis, .*team-reports"
    ):
        await spec.run({"name": "deep-learning"}, Ctx(user_dir)())


def test_front_matter_parsing() -> None:
    skill = parse_skill("# Heading only\nbody", Path("/x/quick-notes.md"))
    assert (skill.name, skill.description) == ("quick-notes", "Heading only")
    with pytest.raises(ValueError):
        parse_skill("---\nname: x\n", Path("x.md"))


async def test_the_model_loads_a_skill_by_the_name_the_prompt_lists(api: Api, fake_llm: FakeLLM) -> None:
    folder = user_skills_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reports.md").write_text(
        "---\nname: Team Reports\ndescription: How our team writes reports.\n---\nStart from templates/report.md.\n"
    )
    # The name as the prompt's skill list gives it (normalised there), found by its description.
    fake_llm.script(
        reading(lambda seen: tool_call("load_skill", {"name": seen.find_in_prompt(LISTED, flags=re.M)})),
        reading(lambda seen: text(f"I will {seen.find(PLAYBOOK, tool='load_skill').lower()}")),
    )
    thread = await api.new_thread()
    await api.run(thread, "write this week's report the way our team does")
    events = await api.until_finished(thread)
    result = of_type(events, "tool_result")[0]
    assert result["name"] == "load_skill" and result["status"] == "ok", result
    assert fake_llm.requests[0]["messages"][0]["content"].count("team-reports: How our team writes reports.") == 1
    assert of_type(events, "final")[0]["answer"] == "I will start from templates/report.md."


LISTED, PLAYBOOK = r"^([\w-]+): How our team writes reports", r"(Start from \S+)"
