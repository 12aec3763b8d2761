"""Prompt texts, kept as Markdown files beside this module."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def prompt_text(name: str) -> str:
    return files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
