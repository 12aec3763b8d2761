"""API keys, one per endpoint (scheme, host, port): a key given with one base_url is never sent to
another. Mixed into the Cellwright configurable, whose config, environment and saved settings it reads."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from traitlets.config import Config

from agent_core.config.agent_settings import endpoint_of


class EndpointKeys:
    """Where each endpoint's key comes from: PUT config's saved keys first, then the Jupyter config's
    `api_key` (with the config's base_url), then OPENAI_API_KEY (with OPENAI_BASE_URL)."""

    # Set by the Cellwright configurable this is mixed into.
    config: Config
    _environ: Mapping[str, str]
    _saved_keys: dict[str, str]  # endpoint -> key, as PUT config saved them ("" for "none")

    def _startup_keys(self) -> list[tuple[str, str, str]]:
        """(endpoint, key, source) of the config's key and the environment's, config first: each belongs
        to the base_url set at its own level (api.openai.com when that level sets none)."""
        configured = self.config.get("Cellwright", {})
        found = []
        if "api_key" in configured:
            found.append((endpoint_of(str(configured.get("base_url", ""))), str(configured["api_key"]), "config"))
        env_key = self._environ.get("OPENAI_API_KEY", "")
        if env_key:
            found.append((endpoint_of(self._environ.get("OPENAI_BASE_URL", "")), env_key, "environment"))
        return found

    def _key_and_source(self, endpoint: str) -> tuple[str, str]:
        if endpoint in self._saved_keys:
            return self._saved_keys[endpoint], "settings"
        for owner, key, source in self._startup_keys():
            if owner == endpoint:
                return key, source
        return "", "default"

    def key_for(self, base_url: str) -> str:
        """The API key of `base_url`'s endpoint (scheme, host, port); "" when none was given for it."""
        return self._key_and_source(endpoint_of(base_url))[0]

    def endpoints_with_keys(self) -> list[str]:
        """The endpoints that have a key (saved, configured or from the environment), never the keys."""
        candidates = {*self._saved_keys, *(endpoint for endpoint, _, _ in self._startup_keys())}
        return sorted(endpoint for endpoint in candidates if self._key_and_source(endpoint)[0])


def read_saved_keys(saved: Mapping[str, Any], path: Path, base_url_now: str, log: logging.Logger) -> dict[str, str]:
    """settings.json's keys: `api_keys` (endpoint -> key), and an older file's single `api_key`, which
    belongs to the base_url saved beside it (or, with none saved, to the one configured when read)."""
    keys: dict[str, str] = {}
    raw = saved.get("api_keys")
    if isinstance(raw, Mapping):
        keys.update({endpoint_of(str(k)): v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)})
    elif raw is not None:
        log.warning("Cellwright: api_keys in %s was ignored: it is not an object of strings", path)
    legacy = saved.get("api_key")
    if isinstance(legacy, str):
        saved_url = saved.get("base_url")
        base_url = saved_url if isinstance(saved_url, str) else base_url_now
        keys.setdefault(endpoint_of(base_url or ""), legacy)
    return keys
