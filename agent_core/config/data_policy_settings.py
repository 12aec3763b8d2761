"""The data policy settings of `c.Cellwright` (agent_core.privacy): what of the user's data may reach
the model, and the operator's extra redaction patterns. Operator settings: not changed at run time
(PUT config cannot widen them), and a run may only narrow the policy."""

from __future__ import annotations

from typing import Any

from traitlets import Enum, HasTraits, TraitError, validate

from agent_core.config.agent_settings import AgentSettings
from agent_core.config.string_list import StringList

_AGENT = AgentSettings()


class DataPolicySettings(HasTraits):
    data_policy = Enum(
        ["full", "redact", "schema_only"],
        _AGENT.data_policy,
        help="What of the data reaches the model. full: everything the tools read. redact: the same, with values "
        "that look like secrets or personal data (API keys and tokens, passwords in URLs, emails, phone numbers, "
        "card numbers with a valid checksum, IBANs, redaction_patterns) replaced before a request leaves. "
        "schema_only: no data values: DataFrames as names, dtypes, shapes and null counts; cell outputs as their "
        "shape; files other than source code as their structure; SQL results as columns and row counts (and "
        "redaction as well). A thread may ask for a narrower policy, never a wider one.",
    ).tag(config=True)
    redaction_patterns = StringList(
        help="Extra regular expressions (Python syntax) whose matches are replaced by [REDACTED:custom] under the "
        "redact and schema_only policies, e.g. r'EMP-\\d{6}' for employee ids. Each runs on pieces of at most 4096 "
        "characters.",
    ).tag(config=True)

    @validate("redaction_patterns")
    def _valid_patterns(self, proposal: Any) -> list[str]:
        # loaded on first use: this module is read at the server's start (bench/server_start.py)
        from agent_core.privacy.patterns import compile_patterns

        try:
            compile_patterns(proposal.value)
        except ValueError as exc:
            raise TraitError(f"Cellwright.{exc}") from None
        return list(proposal.value)
