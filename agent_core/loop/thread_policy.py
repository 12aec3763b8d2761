"""A thread's data policy: the server's, or a narrower one a run asked for (kept in the thread's
state); a run may never widen it."""

from __future__ import annotations

from agent_core.config.agent_settings import AgentSettings
from agent_core.loop.refusals import PolicyWider
from agent_core.privacy.outgoing import WIDTH, allowed_under


def narrowed(settings: AgentSettings, thread_policy: object) -> AgentSettings:
    """The settings of a thread's run: the narrower of the server's data policy and the thread's."""
    if not isinstance(thread_policy, str) or WIDTH.get(thread_policy, -1) <= WIDTH[settings.data_policy]:
        return settings
    return settings.with_overrides(data_policy=thread_policy)


def run_settings(settings: AgentSettings, asked: str | None, kept: object) -> AgentSettings:
    """A new run's settings, narrowed to what it `asked` for (else what the thread `kept`); a policy
    wider than the server's is refused."""
    if asked is not None and WIDTH[asked] < WIDTH[settings.data_policy]:
        allowed = " or ".join(repr(p) for p in allowed_under(settings.data_policy))
        raise PolicyWider(
            f"data_policy {asked!r} is wider than this server's ({settings.data_policy!r}): a thread may only "
            f"narrow it. Send {allowed}, or leave data_policy out."
        )
    return narrowed(settings, asked or kept)
