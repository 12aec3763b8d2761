"""The settings of inline completion (agent_core.completion), part of `c.Cellwright`: whether the
`completions` route answers, which model and endpoint it asks, and whether it uses fill-in-the-middle."""

from __future__ import annotations

from dataclasses import dataclass

from traitlets import Bool, Enum, Float, HasTraits, Unicode

FIM_CHOICES = ("auto", "on", "off")


@dataclass(frozen=True)
class CompletionEndpoint:
    """Where one completion goes: the model, the endpoint, that endpoint's own key (never another's)."""

    model: str
    base_url: str
    api_key: str
    fim: str  # auto | on | off
    connect_timeout: float
    request_timeout: float
    cache_seconds: float = 60.0
    data_policy: str = "full"  # the server's (agent_core.privacy): what of the text may leave, as for the agent
    redaction_patterns: tuple[str, ...] = ()


class CompletionSettings(HasTraits):
    inline_completion = Bool(
        True,
        help="Answer the panel's inline completion requests (POST cellwright/api/completions); off: the route "
        "answers 409 completion_off and the panel shows no ghost text.",
    ).tag(config=True)
    completion_model = Unicode(
        help="Model for inline completion; empty: the chat model (`model`). A small code model is faster.",
    ).tag(config=True)
    completion_base_url = Unicode(
        help="OpenAI-compatible endpoint for inline completion; empty: `base_url`. It gets its own endpoint's key "
        "(as for base_url, keys stay with their endpoint), none when that endpoint has none.",
    ).tag(config=True)
    completion_fim = Enum(
        list(FIM_CHOICES),
        "auto",
        help="Fill-in-the-middle through /v1/completions with `suffix`: auto (tried once per endpoint and model, "
        "remembered; a chat prompt asking for the middle where it is refused), on (always), off (chat only).",
    ).tag(config=True)
    completion_cache_seconds = Float(
        60.0,
        min=0.0,
        help="Seconds a suggestion is kept for the same prefix and suffix (and for a prefix typed ahead into it); "
        "0 turns the cache off.",
    ).tag(config=True)

    def key_for(self, base_url: str) -> str:  # Cellwright's: the key of that endpoint only
        raise NotImplementedError

    def completion_endpoint(self) -> CompletionEndpoint:
        """The completion model and endpoint, with the key of that endpoint: a completion_base_url of another
        host never gets the chat endpoint's key. Time-outs are short: a late suggestion is a useless one."""
        model = self.completion_model or str(getattr(self, "model", ""))
        base_url = self.completion_base_url or str(getattr(self, "base_url", ""))
        connect = min(float(getattr(self, "connect_timeout", 10.0)), 5.0)
        return CompletionEndpoint(
            model,
            base_url,
            self.key_for(base_url),
            self.completion_fim,
            connect,
            30.0,
            self.completion_cache_seconds,
            str(getattr(self, "data_policy", "full")),
            tuple(getattr(self, "redaction_patterns", ())),
        )
