"""Know before you approve: the static impact of a proposed cell (`analysis`) and the workspace's
rules that the user keeps in `.cellwright/rules.md` (`rules`). Pure Python, no Jupyter imports."""

from agent_core.impact.analysis import CATEGORIES, CodeImpact, Finding, analyze_code
from agent_core.impact.rules import (
    RULES_FILE,
    Rule,
    append_rule,
    load_rules,
    rule_from_rejection,
    rule_warnings,
    rules_prompt_section,
)

__all__ = [
    "CATEGORIES",
    "CodeImpact",
    "Finding",
    "RULES_FILE",
    "Rule",
    "analyze_code",
    "append_rule",
    "load_rules",
    "rule_from_rejection",
    "rule_warnings",
    "rules_prompt_section",
]
