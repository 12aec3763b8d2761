"""The static impact analysis of a proposed cell (agent_core/impact), table-driven: each sample's
expected findings per category. Categories a sample does not name must come out EMPTY (reads are
only compared when named), so a finding that appears where it should not fails the test too."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from agent_core.impact import CATEGORIES, CodeImpact, Finding, analyze_code
from tests.impact_samples import SAMPLES

CHECKED_WHEN_ABSENT = tuple(category for category in CATEGORIES if category != "reads")


def _names(impact: CodeImpact, category: str) -> set[str]:
    return {finding.name for finding in getattr(impact, category)}


@pytest.mark.parametrize("code, expected", [pytest.param(code, expected, id=name) for name, code, expected in SAMPLES])
def test_sample(code: str, expected: dict[str, set[str]]) -> None:
    impact = analyze_code(code)
    for category in CATEGORIES:
        if category in expected:
            assert _names(impact, category) == expected[category], category
        elif category in CHECKED_WHEN_ABSENT:
            assert _names(impact, category) == set(), category


def test_the_table_is_big_enough() -> None:
    assert len(SAMPLES) >= 45
    assert len({name for name, _, _ in SAMPLES}) == len(SAMPLES)


def test_findings_carry_their_line() -> None:
    code = textwrap.dedent("""\
        import os
        df['a'] = 1

        %pip install seaborn
        !ls
        with open('out.txt', 'w') as fh:
            fh.write('x')
        del tmp
        %pip install \\
            polars
        requests.get('https://x.org')
        """)
    impact = analyze_code(code)
    assert impact.assigns == (Finding("os", 1), Finding("fh", 6))
    assert impact.mutates == (Finding("df", 2),)
    assert impact.installs == (Finding("%pip install seaborn", 4), Finding("%pip install polars", 9))
    assert impact.shell == (Finding("!ls", 5),)
    assert impact.files_written == (Finding("out.txt", 6),)
    assert impact.deletes == (Finding("tmp", 8),)
    assert impact.network == (Finding("https://x.org", 11),)


def test_cell_magic_body_lines() -> None:
    impact = analyze_code("\n%%bash\necho hi\npip install polars\n")
    assert impact.shell == (Finding("%%bash", 2),)
    assert impact.installs == (Finding("pip install polars", 4),)
    impact = analyze_code("%%time\nx = 1\ndf.drop(columns='a', inplace=True)")
    assert impact.assigns == (Finding("x", 2),) and impact.mutates == (Finding("df", 3),)


def test_duplicates_keep_the_first_line() -> None:
    impact = analyze_code("df['a'] = 1\ndf['b'] = 2\n!ls\n!ls")
    assert impact.mutates == (Finding("df", 1),)
    assert impact.shell == (Finding("!ls", 3),)


def test_changed_and_created_names() -> None:
    impact = analyze_code(
        "tmp = df.copy()\ndf.drop(columns='a', inplace=True)\ndel old\nx = 1\nx += 1\n%reset_selective -f y"
    )
    assert impact.changed_names() == ("tmp", "df", "old", "x")
    assert impact.created_names() == ("tmp", "x")
    assert not impact.touches_outside_kernel()
    assert any("deletes variables by magic" in reason for reason in impact.undo_blockers())


def test_calls_whose_effect_only_the_type_tells_are_touched() -> None:
    """A method the analysis does not know, an iteration or a builtin that consumes its argument may
    change a value in place (`gen.send(None)` advances a generator; `df.head()` changes nothing): the
    name is `touched`, and the kernel tells by its type whether a snapshot can undo it."""
    impact = analyze_code("gen.send(None)")
    assert impact.touched == (Finding("gen", 1),)
    assert impact.touched_names() == ("gen",) and impact.changed_names() == () and impact.mutated_names() == ()
    assert impact.names("reads") == ("gen",) and not impact.mutates  # the card's categories are as before
    code = "for v in it:\n    break\nfirst = [x for x in stream]\nrest = list(source)\nfor i, r in enumerate(rows):\n    pass"
    assert set(analyze_code(code).touched_names()) == {"it", "stream", "source", "rows"}
    for harmless in ("df.head()", "s.upper()", "lst.copy()"):
        impact = analyze_code(harmless)
        assert impact.touched_names() and not impact.changed_names(), harmless  # the kernel's type check decides
    for untouched in (
        "print(x)",
        "len(x)",
        "np.random.seed(0)",
        "import os\nos.getcwd()",
        "acc = []\nacc.copy()",
        "def f(g):\n    return g.send(None)",
    ):
        assert analyze_code(untouched).touched_names() == (), untouched
    # A name the cell changes anyway is not touched as well; `next()` certainly changes it.
    assert analyze_code("lst.append(1)\nlst.copy()").touched_names() == ()
    impact = analyze_code("next(gen)")
    assert impact.mutated_names() == ("gen",) and impact.touched_names() == ()
    # Through a view: `row` is an element of `rows`.
    assert analyze_code("for row in rows:\n    row.send(None)").touched_names() == ("rows",)


def test_touches_outside_kernel_and_blockers() -> None:
    assert not analyze_code("df['a'] = 1").touches_outside_kernel()
    assert analyze_code("df['a'] = 1").undo_blockers() == ()
    for code in ("!ls", "%pip install x", "df.to_csv('a.csv')", "requests.get(u)", "exec(s)"):
        impact = analyze_code(code)
        assert impact.touches_outside_kernel(), code
        assert impact.undo_blockers(), code


def test_as_dict_matches_the_contract_shape() -> None:
    shape = analyze_code("x = 1\n!ls").as_dict()
    for key in ("reads", "assigns", "mutates", "deletes", "files_written", "network", "installs", "shell"):
        assert isinstance(shape[key], list)
    assert shape["assigns"] == [{"name": "x", "line": 1}]
    assert shape["shell"] == [{"name": "!ls", "line": 2}]


def test_syntax_error_sets_parse_error() -> None:
    impact = analyze_code("x = (1,\ny = 2")
    assert impact.parse_error and impact.unknown
    assert impact.touches_outside_kernel()  # unknown is never taken as safe


def test_too_large_and_too_deep_are_unknown_not_errors() -> None:
    cases = [
        "x = 1\n" * 40_000,  # over 200 000 characters
        "x = " + "-" * 60_000 + "1",  # the parser or the walk runs out of stack
        "x = " + "1+" * 90_000 + "1",
        "!ls\n" * 1_500,  # too many shell lines to translate
        "[" * 5_000 + "]" * 5_000,
    ]
    for code in cases:
        impact = analyze_code(code)
        assert impact.unknown, code[:20]
        assert impact.touches_outside_kernel()
    assert "too large" in analyze_code("x = 1\n" * 40_000).unknown[0].name


def test_never_raises_on_garbage() -> None:
    garbage = [
        "",
        "\x00\x01",
        "\ufeff%%",
        "%%",
        "%",
        "!",
        "?",
        "??",
        "%%%",
        "x = !",
        "\\\n",
        "'''",
        "%pip install \\",
        "def f(:",
        "\r\n!ls\r\n",
        "%%time",
        "%time",
        "%%capture",
        "get_ipython().system(cmd)",
        "get_ipython().run_line_magic('pip', 'install x')",
        "lambda: (yield)",
        "async def f(): await x",
        "match x:\n    case {'k': v, **rest}: pass",
        "del (a, [b, c.d])",
        "x: int",
        "a.b: int = 1",
        "global g\ng = 1",
        "nonlocal q",
        "print(*a, **k)",
        "[*a] = b",
        "f(**{'inplace': True})",
    ]
    for code in garbage:
        assert isinstance(analyze_code(code), CodeImpact), repr(code)
    assert analyze_code(None).unknown  # type: ignore[arg-type]


def test_literal_get_ipython_calls_are_classified() -> None:
    impact = analyze_code("get_ipython().run_line_magic('pip', 'install x')\nget_ipython().system(cmd)")
    assert _names(impact, "installs") == {"%pip install x"}
    assert _names(impact, "unknown") == {"get_ipython().system(cmd)"}


def test_importing_the_package_stays_light() -> None:
    """The server imports this per approval card: IPython only loads when a cell has magics."""
    script = "import sys, agent_core.impact as i; i.analyze_code('x = 1'); print('IPython' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
