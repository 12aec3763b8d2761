"""Scripted fake OpenAI-compatible chat-completions server for tests."""

from .server import EXHAUSTED_MESSAGE, MODEL_ID, FakeLLM, Reply, error, text, tool_call

__all__ = ["FakeLLM", "Reply", "text", "tool_call", "error", "EXHAUSTED_MESSAGE", "MODEL_ID"]
