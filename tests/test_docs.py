"""The documentation site (docs/, issue 43): it builds with warnings as errors and every cross-reference
resolved (Sphinx's -W -n), every internal link and anchor of the built pages leads somewhere (checked
here, offline: Sphinx's linkcheck builder would go to the network), and the generated reference pages
hold every `Cellwright` trait and every OpenAPI route, as read from the code, not from a list here."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from agent_core.config.configurable import Cellwright

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
from cellwright_docs import route_anchor, trait_anchor  # noqa: E402  (the anchors the generator writes)

README_MAX_LINES = 150  # the "fits on two screens"


class _Page(HTMLParser):
    """The ids a page defines and the relative links it makes (href and src)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if values.get(name):
                self.ids.add(str(values[name]))
        for name in ("href", "src"):
            link = values.get(name)
            if link and not urlsplit(link).scheme and not link.startswith("//"):
                self.links.append(link)


def broken_links(site: Path) -> list[str]:
    """Every relative link of the built site whose file or anchor does not exist, as 'page -> link'."""
    pages: dict[Path, _Page] = {}
    for html in site.rglob("*.html"):
        if html.relative_to(site).parts[0] == "_static":  # the theme's template fragments, not pages
            continue
        page = _Page()
        page.feed(html.read_text(encoding="utf-8"))
        pages[html.resolve()] = page
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(site)} -> {link}")
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in pages[target].ids:
                    broken.append(f"{path.relative_to(site)} -> {link} (no such anchor)")
    return broken


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs")
    # -W: a warning fails the build; -n: every cross-reference must resolve; --keep-going lists them all.
    command = [sys.executable, "-m", "sphinx", "-W", "-n", "--keep-going", "-q", "-b", "html"]
    result = subprocess.run(
        [*command, "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, f"the docs build failed:\n{result.stdout}\n{result.stderr}"
    return out / "html"


def _ids(page: Path) -> set[str]:
    parsed = _Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    return parsed.ids


def test_every_internal_link_and_anchor_resolves(site: Path) -> None:
    assert (site / "index.html").exists()
    assert broken_links(site) == []


def test_every_trait_is_in_the_reference(site: Path) -> None:
    page = site / "configuration" / "reference.html"
    ids, text = _ids(page), page.read_text(encoding="utf-8")
    traits = Cellwright.class_traits(config=True)
    assert len(traits) > 30  # the reading itself works: Cellwright has dozens of settings
    missing = sorted(name for name in traits if trait_anchor(name) not in ids or f"c.Cellwright.{name}" not in text)
    assert missing == []


def test_every_route_is_in_the_api_page(site: Path) -> None:
    document = json.loads((REPO / "jupyter_ext" / "openapi.json").read_text(encoding="utf-8"))
    routes = [
        (method, path)
        for path, item in document["paths"].items()
        for method in item
        if method in ("get", "put", "post", "patch", "delete")
    ]
    assert len(routes) > 20
    ids = _ids(site / "http-api.html")
    assert sorted(f"{m.upper()} {p}" for m, p in routes if route_anchor(m, p) not in ids) == []


def test_the_link_check_finds_a_broken_link_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text('<a id="top" href="b.html#nowhere">x</a><a href="gone.html">y</a>')
    (tmp_path / "b.html").write_text('<h1 id="here">b</h1><a href="a.html#top">back</a><img src="_static/i.png">')
    assert sorted(broken_links(tmp_path)) == [
        "a.html -> b.html#nowhere (no such anchor)",
        "a.html -> gone.html",
        "b.html -> _static/i.png",
    ]


def test_the_readme_is_a_front_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    assert "./scripts/test.sh" in readme and "docs/" in readme
