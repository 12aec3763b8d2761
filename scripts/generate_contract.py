#!/usr/bin/env python
"""Writes the files generated from the contract's Pydantic models (agent_core/contract and each
tool's argument model):

- jupyter_ext/openapi.json: the OpenAPI 3.1 document (also served at GET cellwright/api/openapi.json)
- labextension_src/contract.gen.ts: the panel's types (events, route bodies, tool arguments, enums)
- agent_core/contract/tool_names.py: the tools' names, for the settings (a floor below the tools)
- agent_core/contract/event_fields.py: each event's fields as a TypedDict and make_event typed per event

    python scripts/generate_contract.py           # write them
    python scripts/generate_contract.py --check   # write nothing; exit 1 naming the stale ones

tests/test_contract.py runs the check, so a model changed without regenerating fails the suite."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # a checkout works without installing the package

from agent_core.contract_files.event_fields import event_fields_module  # noqa: E402
from agent_core.contract_files.openapi import openapi_json  # noqa: E402
from agent_core.contract_files.tool_names import tool_names_module  # noqa: E402
from agent_core.contract_files.typescript import typescript  # noqa: E402

OPENAPI = ROOT / "jupyter_ext" / "openapi.json"
TYPESCRIPT = ROOT / "labextension_src" / "contract.gen.ts"
TOOL_NAMES = ROOT / "agent_core" / "contract" / "tool_names.py"
EVENT_FIELDS = ROOT / "agent_core" / "contract" / "event_fields.py"


def expected() -> dict[Path, str]:
    return {
        OPENAPI: openapi_json(),
        TYPESCRIPT: typescript(),
        TOOL_NAMES: tool_names_module(),
        EVENT_FIELDS: event_fields_module(),
    }


def stale() -> list[Path]:
    return [path for path, text in expected().items() if not path.exists() or path.read_text("utf-8") != text]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; fail if a generated file is stale")
    check = parser.parse_args().check
    outdated = stale()
    if check:
        for path in outdated:
            print(f"stale: {path.relative_to(ROOT)} (run: python scripts/generate_contract.py)", file=sys.stderr)
        return 1 if outdated else 0
    for path, text in expected().items():
        if path in outdated:
            path.write_text(text, "utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
