"""Sphinx directives that render reference pages from the code at build time, so they cannot drift.

- ``cellwright-traits``: every configurable trait of ``agent_core.config.configurable.Cellwright``,
  with its type, default, environment variable, whether PUT config may change it, and its own help.
- ``cellwright-openapi``: every route of ``jupyter_ext/openapi.json`` (generated from the contract by
  scripts/generate_contract.py): method, path, summary, parameters, request and response schema names.
- ``cellwright-screenshot``: a PNG the browser tests wrote to ``.output/ui/``, copied at build time;
  where the browser tests have not run, a note naming the test that takes it (never an invented image).

Each trait and route gets a stable anchor (``trait-<name>``, ``api-<method>-<path>``) that
tests/test_docs.py looks for in the built pages."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles
from traitlets import Enum, TraitType

REPO = Path(__file__).resolve().parents[2]
OPENAPI = REPO / "jupyter_ext" / "openapi.json"
SCREENSHOTS = REPO / ".output" / "ui"
METHODS = ("get", "put", "post", "patch", "delete")


def trait_anchor(name: str) -> str:
    return f"trait-{name}".replace("_", "-")


def route_anchor(method: str, path: str) -> str:
    return "api-" + re.sub(r"[^a-z0-9]+", "-", f"{method} {path}".lower()).strip("-")


def cellwright_traits() -> dict[str, TraitType[Any, Any]]:
    """The configurable traits, by name, from the class itself (its mixins included)."""
    from agent_core.config.configurable import Cellwright

    return dict(sorted(Cellwright.class_traits(config=True).items()))


def openapi_routes() -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) for every operation of the OpenAPI document, in its order."""
    document = json.loads(OPENAPI.read_text(encoding="utf-8"))
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


def _literal(text: str) -> str:
    """Inline literal in reST; a value with backquotes is shown as it is (rare: regexes)."""
    return f"``{text}``" if "`" not in text else text


def _plain(text: str) -> str:
    """Help or summary text shown as written: reST's inline markup characters escaped, one line."""
    return re.sub(r"([\\*`_|])", r"\\\1", " ".join(text.split()))


def _trait_rst(name: str, trait: TraitType[Any, Any], owner: str, dynamic: bool) -> list[str]:
    kind = type(trait).__name__
    if isinstance(trait, Enum):
        kind += " of " + ", ".join(_literal(repr(v)) for v in trait.values or ())
    default = trait.default_value_repr()
    default_text = "computed when unset (see the description)" if dynamic else _literal(default)
    env = trait.metadata.get("env")
    rows = [
        f"- **Type**: {kind}",
        f"- **Default**: {default_text}",
        f"- **Environment variable**: {_literal(env) if env else 'none'}",
        "- **Changed at run time** by the settings form and ``PUT config``: "
        + ("yes" if trait.metadata.get("runtime") else "no (read when the server starts)"),
        f"- **Defined in**: ``{owner}``",
    ]
    help_text = _plain(trait.help)
    return [
        f".. _{trait_anchor(name)}:",
        "",
        f"``{name}``",
        "-" * (len(name) + 4),
        "",
        f"``c.Cellwright.{name}``",
        "",
        *rows,
        "",
        help_text,
        "",
    ]


class TraitsDirective(SphinxDirective):
    """The trait reference, one section per trait."""

    def run(self) -> list[nodes.Node]:
        from agent_core.config.configurable import Cellwright

        dynamic: set[str] = set()
        for klass in Cellwright.__mro__:
            dynamic |= set(getattr(klass, "_trait_default_generators", {}))
        lines: list[str] = []
        for name, trait in cellwright_traits().items():
            owner = next(k for k in Cellwright.__mro__ if name in vars(k))
            lines += _trait_rst(name, trait, f"{owner.__module__}.{owner.__name__}", name in dynamic)
        self.env.note_dependency(str(REPO / "agent_core" / "config" / "configurable.py"))
        return self._parse(lines)

    def _parse(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.section()  # a throwaway parent: its children are the new sections
        nested_parse_with_titles(self.state, StringList(lines, source="<cellwright-traits>"), container)
        return list(container.children)


def _schema_name(content: dict[str, Any]) -> str:
    for media, body in content.items():
        schema = body.get("schema", {})
        ref = schema.get("$ref") or schema.get("items", {}).get("$ref")
        name = ref.rsplit("/", 1)[-1] if ref else schema.get("type", "")
        return f"``{name}`` ({media})" if name else f"({media})"
    return "none"


def _route_rst(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    title = f"{method.upper()} {path}"
    summary = _plain(operation.get("summary", ""))
    lines = [f".. _{route_anchor(method, path)}:", "", title, "-" * len(title), "", summary, ""]
    lines += [f"- **Operation id**: ``{operation.get('operationId', '')}``"]
    for parameter in operation.get("parameters", []):
        kind = parameter.get("schema", {}).get("type", "")
        required = "required" if parameter.get("required") else "optional"
        lines.append(f"- **Parameter** ``{parameter['name']}`` ({parameter['in']}, {kind}, {required})")
    if "requestBody" in operation:
        lines.append(f"- **Request body**: {_schema_name(operation['requestBody'].get('content', {}))}")
    for status, response in operation.get("responses", {}).items():
        body = _schema_name(response.get("content", {})) if response.get("content") else "no body"
        lines.append(f"- **{status}** {response.get('description', '')}: {body}")
    return [*lines, ""]


class OpenApiDirective(SphinxDirective):
    """The HTTP API, one section per route and method."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(OPENAPI))
        document = json.loads(OPENAPI.read_text(encoding="utf-8"))
        server = document["servers"][0]["url"]
        lines = [
            f"Every path below is under ``{server}`` (``base_url`` is the Jupyter server's, ``/`` by default).",
            "",
        ]
        for method, path, operation in openapi_routes():
            lines += _route_rst(method, path, operation)
        container = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source="<cellwright-openapi>"), container)
        return list(container.children)


class ScreenshotDirective(SphinxDirective):
    """``.. cellwright-screenshot:: <file name> <test that writes it>`` then a caption line."""

    required_arguments = 2
    final_argument_whitespace = True
    has_content = True

    def run(self) -> list[nodes.Node]:
        name, test = self.arguments[0], self.arguments[1]
        caption = " ".join(self.content) or name
        shot = SCREENSHOTS / name
        target = Path(self.env.srcdir) / "_static" / "screenshots"
        if shot.is_file() and _copied(shot, target / name):
            # absolute to the source dir, whatever the page's folder
            figure = nodes.figure()
            figure += nodes.image(uri=f"/_static/screenshots/{name}", alt=caption)
            figure += nodes.caption(text=caption)
            return [figure]
        note = nodes.note()
        note += nodes.paragraph(
            text=f"Screenshot: {caption}. It is taken by {test} and written to .output/ui/{name}; "
            "run the browser tests, then build the docs again, to see it here."
        )
        return [note]


def _copied(source: Path, target: Path) -> bool:
    """Copied into the docs' static files; False when it cannot be (a browser test rewriting it right now)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    except OSError:
        return False
    return True


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("cellwright-traits", TraitsDirective)
    app.add_directive("cellwright-openapi", OpenApiDirective)
    app.add_directive("cellwright-screenshot", ScreenshotDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
