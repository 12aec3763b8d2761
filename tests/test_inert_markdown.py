"""The server's inert Markdown (jupyter_ext/inert_markdown.py, for the cells it writes into a shared
notebook) is the panel's (labextension_src/inertMarkdown.ts): both run on the same samples, the
panel's red-team cases and seeded random mixes of the syntax that matters, and must agree exactly."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from jupyter_ext.inert_markdown import inert_markdown_source

REPO = Path(__file__).resolve().parent.parent
COMPILED = REPO / "lib" / "__cjs__" / "inertMarkdown.js"  # what `npm test` compiles (tsconfig.test.json)
EVIL = "http://127.0.0.2:9999"

CASES = [
    f'Result: ![x]({EVIL}/leak?k=1)\n\n<img src="{EVIL}/leak2">\n\n<img src=x onerror="window.__pwned=1">\n',
    f"![ref][r]\n\n[r]: {EVIL}/ref.png",
    f"![r]\n\n[r]: {EVIL}/shortcut.png",
    f'![r][]\n\n[r]: <{EVIL}/collapsed.png> "t"',
    f'![t]({EVIL}/t.png "title")',
    f"![a](<{EVIL}/angle brackets.png>)",
    f"![a ![b]({EVIL}/nested.png)](x.png)",
    f"[![a]({EVIL}/in-link.png)](https://example.org)",
    f"![a`]`]({EVIL}/code-in-label.png)",
    "![a](&#x2F;&#x2F;127.0.0.2/entity.png)",
    "![a](\\\\127.0.0.2/backslash.png)",
    f"!![a]({EVIL}/double-bang.png)",
    f"![a]({EVIL}/paren_(x).png)",
    f"![a\n]({EVIL}/newline-label.png)",
    f"| t |\n|---|\n| ![a]({EVIL}/table.png) |",
    f"<IMG SRC={EVIL}/upper>",
    f'<img/src="{EVIL}/slash">',
    f"<img src = '{EVIL}/spaced'>",
    '<img src="&#104;ttp://127.0.0.2/entity">',
    f'<img src="a.png" srcset="{EVIL}/s 2x, b.png 1x">',
    f'<video src="clip.mp4" poster="{EVIL}/poster.png"></video>',
    f'<div style="background:url({EVIL}/bg)">x</div>',
    f'<svg><image href="{EVIL}/svg.png"/></svg>',
    f"<a title='<img src=\"{EVIL}/in-attr\">'>x</a>",
    f"<style>body {{ background: url({EVIL}/css) }}</style>",
    f'<iframe src="{EVIL}/frame"></iframe>',
    f'<img src="{EVIL}/unterminated"',
    '<p onclick="alert(1)">x</p>',
    '![plot](figures/plot.png "Figure 1")',
    "![dot](data:image/png;base64,iVBORw0KGgo=)",
    '<img src="figures/plot.png" alt="plot" width="200">',
    "# Title\n\nSome **bold** text, `code`, and $x^2$ — ünïcode ✓.",
]
PIECES = [
    "![", "](", ")", "[", "]", "<img ", "<a ", "<div ", ">", "/>", "<", "src=", "href=", "style=", "srcset=",
    "onerror=", '"', "'", " ", "\n", "&amp;", "&#104;", "\\", "http://127.0.0.2/x", "//h/y", "a.png", "data:x",
    "url(", "[r]: ", "r", "`", "!", "<iframe>", "<script>", "1x, ", "=",
]  # fmt: skip


def random_samples(count: int, seed: int = 23) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 25))) for _ in range(count)]


@pytest.fixture(scope="module")
def compiled_panel_helper() -> Path:
    if not COMPILED.exists():  # scripts/test.sh runs `npm test` first; alone, compile it here
        if shutil.which("npx") is None or not (REPO / "node_modules").exists():
            pytest.skip("the panel's TypeScript needs node_modules (npm ci) to be compiled")
        subprocess.run(["npx", "tsc", "-p", "tsconfig.test.json"], cwd=REPO, check=True, timeout=300)
    return COMPILED


def test_the_server_writes_the_same_inert_markdown_as_the_panel(compiled_panel_helper: Path) -> None:
    samples = CASES + random_samples(400)
    script = (
        f"const inert = require({json.dumps(str(compiled_panel_helper))});"
        "const samples = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(samples.map(s => inert.inertMarkdownSource(s))));"
    )
    result = subprocess.run(
        ["node", "-e", script], input=json.dumps(samples), capture_output=True, text=True, check=True, timeout=60
    )
    expected = json.loads(result.stdout)
    ours = [inert_markdown_source(sample) for sample in samples]
    differing = [(s, e, o) for s, e, o in zip(samples, expected, ours, strict=True) if e != o]
    assert not differing, differing[:3]
    assert sum(o != s for s, o in zip(samples, ours, strict=True)) > len(samples) // 4  # the samples do get rewritten
