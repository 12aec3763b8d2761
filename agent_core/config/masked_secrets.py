"""Secrets the settings form shows masked (issue 29's rule), for every setting that holds some: the
env and header values of `mcp_servers`, the env values of `acp_agents`. The form sends a masked value
back as it got it, which means "keep the value I could not see"; a secret stays with the program (or
URL) it was set for, under the same name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_core.json_types import JsonObject
from agent_core.redaction import redact_url

MASK = "********"  # what the settings form shows for a secret it may not read
SECRET_PARTS = ("env", "headers")


class MaskedSecretError(ValueError):
    """A masked value with no saved secret behind it; the message names the entry and the key, never a value."""


def masked(values: Mapping[str, str]) -> dict[str, str]:
    """The names only: every value is the mask."""
    return {key: MASK for key in values}


def _target(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """What an entry's secrets were given for: the program it starts (command and args) or its URL."""
    if entry.get("url"):
        return ("url", entry.get("url"))
    return ("command", entry.get("command"), tuple(entry.get("args") or ()))


def with_kept_secrets(new: Mapping[str, Any], old: Mapping[str, Any], setting: str, noun: str) -> JsonObject:
    """`new` (from the form) with each masked value replaced by the saved one of the same entry, when that
    entry has the same name and the same command and args (or URL). A masked value for an entry renamed
    or re-pointed, or with no saved value behind it, raises MaskedSecretError: the user types it again.
    A URL that comes back as the form showed it (credentials masked as ***) is the saved one."""
    merged: JsonObject = {}
    for name, entry in new.items():
        if not isinstance(entry, Mapping):
            merged[name] = entry  # the setting's own check says what is wrong with it
            continue
        entry = dict(entry)
        before = old.get(name) if isinstance(old.get(name), Mapping) else None
        old_url = before.get("url") if before else None
        if isinstance(old_url, str) and entry.get("url") == redact_url(old_url) != old_url:
            entry["url"] = old_url
        same = before is not None and _target(entry) == _target(before)
        for part in SECRET_PARTS:
            values = entry.get(part)
            if not isinstance(values, Mapping):
                continue
            kept = ((before or {}).get(part) or {}) if same else {}
            for key, value in values.items():
                if value == MASK and key not in kept:
                    where = f"{setting}[{name!r}].{part}[{key!r}]"
                    raise MaskedSecretError(_masked_without_value(where, name, noun, before, same))
            entry[part] = {k: (kept[k] if v == MASK else v) for k, v in values.items()}
        merged[name] = entry
    return merged


def _masked_without_value(where: str, name: str, noun: str, before: Mapping[str, Any] | None, same: bool) -> str:
    said = f"{where} is {MASK} (a secret the form could not show)"
    if before is None:
        why = f"no {noun} {name!r} was saved with it (a renamed {noun} does not take another's secrets)"
    elif not same:
        what = "URL" if before.get("url") else "program (command and args)"
        why = f"{name!r} is no longer the {what} the secret was set for"
    else:
        why = f"{name!r} has no saved value for it"
    return f"{said}, but {why}: type the value again."
