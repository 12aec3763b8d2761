"""Sphinx configuration of Cellwright's documentation (build: `python -m sphinx -W -n -b html docs docs/_build/html`)."""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE / "_ext")]  # the code the reference pages are generated from, and the extension

project = "Cellwright"
author = "Cellwright contributors"
copyright = "Cellwright contributors"
release = version = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["version"]

extensions = ["myst_parser", "cellwright_docs"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # `[text](page.md#a-heading)` links resolve, and -n checks them
smartquotes = False  # JSON and Python in the generated help text stay copyable (straight quotes)

html_theme = "pydata_sphinx_theme"
html_title = "Cellwright"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 6,  # the rest under "More": any page within two clicks
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
