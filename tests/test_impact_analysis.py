"""The static impact analysis of a proposed cell (agent_core/impact), table-driven: each sample's
expected findings per category. Categories a sample does not name must come out EMPTY (reads are
only compared when named), so a finding that appears where it should not fails the test too."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from agent_core.impact import CATEGORIES, CodeImpact, Finding, analyze_code

CHECKED_WHEN_ABSENT = tuple(category for category in CATEGORIES if category != "reads")

# (id, code, {category: expected names}); lines are checked separately below.
SAMPLES: list[tuple[str, str, dict[str, set[str]]]] = [
    # pandas
    ("head-changes-nothing", "df.head()", {"reads": {"df"}}),
    ("drop-returns-new", "df2 = df.drop(columns='a')", {"reads": {"df"}, "assigns": {"df2"}}),
    ("drop-inplace", "df.drop(columns='a', inplace=True)", {"reads": {"df"}, "mutates": {"df"}}),
    ("inplace-false-is-not-a-change", "out = df.fillna(0, inplace=False)", {"assigns": {"out"}}),
    (
        "sort-values-inplace",
        "df.sort_values('a', inplace=True)\ndf.reset_index(drop=True, inplace=True)",
        {"mutates": {"df"}},
    ),
    ("fillna-inplace-on-column", "df['a'].fillna(0, inplace=True)", {"mutates": {"df"}}),
    ("item-assignment", "df['b'] = df['a'] * 2", {"reads": {"df"}, "mutates": {"df"}}),
    ("loc-assignment-and-columns", "df.loc[df.a > 0, 'b'] = 1\ndf.columns = ['x', 'y']", {"mutates": {"df"}}),
    (
        "insert-and-pop-on-frame",
        "df.insert(0, 'id', ids)\ncol = df.pop('b')",
        {"reads": {"df", "ids"}, "mutates": {"df"}, "assigns": {"col"}},
    ),
    ("read-csv-local", "raw = pd.read_csv('data/raw.csv')", {"reads": {"pd"}, "assigns": {"raw"}}),
    (
        "read-csv-url-is-network",
        "df = pd.read_csv('https://example.com/x.csv')",
        {"assigns": {"df"}, "network": {"https://example.com/x.csv"}},
    ),
    ("to-csv-writes", "df.to_csv('out.csv', index=False)", {"files_written": {"out.csv"}}),
    ("to-csv-without-path-returns-text", "text = df.to_csv()", {"assigns": {"text"}}),
    (
        "writers-with-variable-paths",
        "df.to_parquet(out_path)\ndf.to_excel(path_or_buf=xl)\ndf.to_pickle('a.pkl')",
        {"files_written": {"out_path", "xl", "a.pkl"}},
    ),
    (
        "groupby-chain-new-name",
        "summary = df.groupby('k').agg({'v': 'sum'}).reset_index()",
        {"reads": {"df"}, "assigns": {"summary"}},
    ),
    # numpy and matplotlib
    (
        "numpy-save",
        "np.save('a.npy', arr)\nnp.savetxt(fname, arr)",
        {"reads": {"np", "arr", "fname"}, "files_written": {"a.npy", "fname"}},
    ),
    (
        "numpy-inplace",
        "arr.sort()\nx.fill(0)\nnp.copyto(dst, src)\nnp.random.shuffle(idx)",
        {"mutates": {"arr", "x", "dst", "idx"}},
    ),
    ("ufunc-out", "np.add(a, b, out=c)", {"reads": {"np", "a", "b", "c"}, "mutates": {"c"}}),
    (
        "savefig",
        "fig, ax = plt.subplots()\nax.plot(xs)\nplt.savefig('fig.png')\nfig.savefig(path)",
        {"assigns": {"fig", "ax"}, "files_written": {"fig.png", "path"}},
    ),
    # files, Path, os, shutil, pickle
    (
        "open-write",
        "with open('out.txt', 'w') as fh:\n    fh.write('x')",
        {"assigns": {"fh"}, "files_written": {"out.txt"}},
    ),
    ("open-read-is-not-a-write", "with open('in.txt') as fh:\n    text = fh.read()", {"assigns": {"fh", "text"}}),
    (
        "open-append-and-unknown-mode",
        "f = open(log, mode='a')\ng = open(name, m)",
        {"assigns": {"f", "g"}, "files_written": {"log", "name (mode not known)"}},
    ),
    (
        "pathlib",
        "from pathlib import Path\nPath('a.txt').write_text('x')\np = Path('out')\np.mkdir()\n"
        "(p / 'x.bin').write_bytes(b'')\nPath('old').rename('new')\nwith Path('o.txt').open('w') as f:\n    pass",
        {"assigns": {"Path", "p", "f"}, "files_written": {"a.txt", "p", "p / 'x.bin'", "old", "o.txt"}},
    ),
    (
        "str-replace-is-not-a-file",
        "name = title.replace(' ', '_')\ndf = df.rename(columns=str.lower)",
        {"assigns": {"name", "df"}},
    ),
    (
        "os-and-shutil",
        "import os, shutil\nos.remove('a.txt')\nos.makedirs('out', exist_ok=True)\n"
        "os.rename('a', 'b')\nshutil.rmtree('build')\nshutil.copy(src, 'dst.txt')",
        {"assigns": {"os", "shutil"}, "files_written": {"a.txt", "out", "a -> b", "build", "src -> dst.txt"}},
    ),
    (
        "pickle-joblib",
        "import pickle, joblib\npickle.dump(model, open('m.pkl', 'wb'))\njoblib.dump(model, 'm.joblib')",
        {"assigns": {"pickle", "joblib"}, "files_written": {"m.pkl", "m.joblib"}},
    ),
    # network
    (
        "requests",
        "import requests\nr = requests.get('https://api.example.com/v1', timeout=5)",
        {"assigns": {"requests", "r"}, "network": {"https://api.example.com/v1"}},
    ),
    (
        "urllib-socket-httpx",
        "import urllib.request, socket, httpx\nurllib.request.urlopen(u)\n"
        "s = socket.create_connection((host, 80))\nhttpx.post(url, json=payload)",
        {
            "assigns": {"urllib", "socket", "httpx", "s"},
            "network": {"urllib.request.urlopen", "socket.create_connection", "httpx.post"},
        },
    ),
    (
        "from-import-alias-network",
        "from requests import get as fetch\nresp = fetch(url)",
        {"assigns": {"fetch", "resp"}, "network": {"fetch"}},
    ),
    # magics
    ("pip-magic", "%pip install seaborn", {"installs": {"%pip install seaborn"}}),
    ("pip-list-is-not-an-install", "%pip list", {"shell": {"%pip list"}}),
    ("conda-magic", "%conda install -y numpy", {"installs": {"%conda install -y numpy"}}),
    ("writefile", "%%writefile helpers.py\ndef f():\n    return 1\n", {"files_written": {"helpers.py"}}),
    (
        "bash-cell",
        "%%bash\nls -la\npip install polars\ncurl -o data.csv https://x.org/d.csv\nrm -rf tmp",
        {
            "shell": {"%%bash"},
            "installs": {"pip install polars"},
            "network": {"curl -o data.csv https://x.org/d.csv"},
            "files_written": {"tmp"},
        },
    ),
    ("run-is-unknown", "%run prepare.py", {"unknown": {"%run prepare.py (runs another file in the kernel)"}}),
    ("time-line-magic-is-python", "%time df.sort_values('a', inplace=True)", {"mutates": {"df"}}),
    (
        "time-cell-magic-is-python",
        "%%time\ntotal = 0\nfor v in values:\n    total += v\nseen.add(total)",
        {"reads": {"values", "seen"}, "assigns": {"total", "v"}, "mutates": {"seen"}},
    ),
    ("timeit-options", "%timeit -n 10 -r 3 items.sort()", {"mutates": {"items"}}),
    ("quiet-magics", "%matplotlib inline\n%config InlineBackend.figure_format = 'retina'\n%who\nx?\ndf.head??", {}),
    ("unknown-magic", "%frobnicate now", {"unknown": {"%frobnicate now (unknown magic)"}}),
    ("reset-and-xdel", "%reset -f\n%xdel big", {"deletes": {"%reset -f", "big"}}),
    ("capture-binds", "%%capture out\nmodel.fit(X, y)", {"assigns": {"out"}, "mutates": {"model"}}),
    ("javascript-cell", "%%javascript\nalert(1)", {"unknown": {"%%javascript (runs JavaScript in the browser)"}}),
    (
        "sx-and-system",
        "listing = %sx ls\n%system pip install rich\n?",
        {
            "assigns": {"listing"},
            "shell": {"%sx ls", "%system pip install rich"},
            "installs": {"%system pip install rich"},
        },
    ),
    (
        "other-network-modules",
        "import ftplib, smtplib, http.client\nftp = ftplib.FTP(host)\n"
        "smtplib.SMTP('mail').sendmail(a, b, msg)\nc = http.client.HTTPSConnection(h)",
        {
            "assigns": {"ftplib", "smtplib", "http", "ftp", "c"},
            "network": {"ftplib.FTP", "smtplib.SMTP", "http.client.HTTPSConnection"},
        },
    ),
    # ! lines and subprocess
    (
        "bang-pip",
        "!pip install -q seaborn\nimport seaborn as sns",
        {"assigns": {"sns"}, "installs": {"!pip install -q seaborn"}, "shell": {"!pip install -q seaborn"}},
    ),
    ("bang-assign", "files = !ls *.csv", {"assigns": {"files"}, "shell": {"!ls *.csv"}}),
    (
        "bang-in-block-and-continuation",
        "if fresh:\n    !wget https://x.org/a.zip\n%pip install \\\n    polars\nz = 1",
        {
            "assigns": {"z"},
            "shell": {"!wget https://x.org/a.zip"},
            "network": {"wget https://x.org/a.zip"},
            "installs": {"%pip install polars"},
        },
    ),
    ("bang-in-string-is-text", "s = '''\n!rm -rf /\n%pip install evil\n'''", {"assigns": {"s"}}),
    (
        "subprocess-pip",
        "import subprocess, sys\nsubprocess.check_call([sys.executable, '-m', 'pip', 'install', 'seaborn'])",
        {
            "assigns": {"subprocess", "sys"},
            "installs": {"sys.executable -m pip install seaborn"},
            "shell": {"sys.executable -m pip install seaborn"},
        },
    ),
    (
        "os-system-pip-and-popen",
        "import os\nos.system('pip install xgboost')\nout = os.popen('ls').read()",
        {"assigns": {"os", "out"}, "installs": {"pip install xgboost"}, "shell": {"pip install xgboost", "ls"}},
    ),
    ("subprocess-variable-command", "subprocess.run(cmd, shell=True)", {"shell": {"subprocess.run"}}),
    # scoping: comprehensions, lambdas, functions, classes, global
    (
        "comprehension-vars-are-local",
        "squares = [i * i for i in range(n)]\npairs = {k: v for k, v in d.items()}",
        {"reads": {"n", "d"}, "assigns": {"squares", "pairs"}},
    ),
    ("lambda-params-are-local", "key = lambda row: row['a'] + offset", {"reads": {"offset"}, "assigns": {"key"}}),
    (
        "function-locals",
        "def clean(frame):\n    out = frame.dropna()\n    out['x'] = 1\n    return out\nresult = clean(df)",
        {"reads": {"df"}, "assigns": {"clean", "result"}},
    ),
    (
        "function-mutates-a-global",
        "def add(v):\n    registry.append(v)\nadd(1)",
        {"reads": {"registry"}, "assigns": {"add"}, "mutates": {"registry"}},
    ),
    (
        "global-in-def",
        "def bump():\n    global counter, log\n    counter += 1\n    log = []\nbump()",
        {"assigns": {"bump", "counter", "log"}, "unknown": {"bump() sets globals: counter, log"}},
    ),
    (
        "class-body-is-not-kernel",
        "class Config:\n    rate = 0.1\n    def set(self, v):\n        self.rate = v\ncfg = Config()",
        {"assigns": {"Config", "cfg"}},
    ),
    (
        "walrus",
        "if (n := len(rows)) > 10:\n    print(n)\nfirst = [y := f(x) for x in xs]",
        {"reads": {"rows", "xs", "f"}, "assigns": {"n", "y", "first"}},
    ),
    (
        "with-and-for-targets",
        "for i, (a, b) in enumerate(pairs):\n    pass\nwith lock as held, open(p) as fh:\n    pass",
        {"assigns": {"i", "a", "b", "held", "fh"}},
    ),
    (
        "imports-assign",
        "import numpy as np\nimport os.path\nfrom collections import Counter as C",
        {"assigns": {"np", "os", "C"}},
    ),
    ("star-import-is-unknown", "from math import *", {"unknown": {"from math import * (binds names not listed)"}}),
    # del, augmented assignment, attributes, items
    ("del-name-and-item", "del tmp\ndel cache['k']\ndel obj.attr", {"deletes": {"tmp"}, "mutates": {"cache", "obj"}}),
    (
        "augmented",
        "total += 1\ncounts['a'] += 1\nself.n -= 1",
        {"assigns": {"total"}, "mutates": {"counts", "self"}, "reads": {"total", "counts", "self"}},
    ),
    ("mutation-on-root-name", "self.a.b[0] = 1\nstate['x'].append(2)", {"mutates": {"self", "state"}}),
    (
        "list-dict-set-methods",
        "lst.append(1)\nd.update(a=1)\ns.add(2)\nq.popleft()\nd.setdefault('k', [])",
        {"mutates": {"lst", "d", "s", "q"}},
    ),
    ("own-new-list-is-not-mutated", "acc = []\nfor r in rows:\n    acc.append(r)", {"assigns": {"acc", "r"}}),
    (
        "module-state-is-a-change",
        "import sys\nsys.path.append('/opt/lib')\nos.environ['A'] = '1'",
        {"assigns": {"sys"}, "mutates": {"sys", "os"}},
    ),
    (
        "imported-object-is-not-a-module",
        "from settings import registry\nregistry.update(a=1)\nimport os\nos.remove(p)",
        {"assigns": {"registry", "os"}, "mutates": {"registry"}, "files_written": {"p"}},
    ),
    (
        "torch-inplace",
        "w.add_(1)\ntorch.nn.init.zeros_(b)\nmodel.load_state_dict(sd)",
        {"mutates": {"w", "b", "model"}},
    ),
    (
        "next-advances-an-iterator",
        "next(gen)\nfirst = next(rows, None)\nit = iter(xs)\nnext(it)",
        {"reads": {"gen", "rows", "xs"}, "mutates": {"gen", "rows"}, "assigns": {"first", "it"}},
    ),
    ("unknown-method-is-not-a-mutation", "gen.send(None)\ndf.head()\nlst.copy()", {"reads": {"gen", "df", "lst"}}),
    (
        "setattr-literal-and-dynamic",
        "setattr(cfg, 'rate', 1)\nsetattr(cfg, key, 2)",
        {"mutates": {"cfg"}, "unknown": {"setattr(cfg, key, 2)"}},
    ),
    (
        "views-and-aliases",
        "part = df['a']\npart[0] = 1\nd2 = alias = d\nalias.update(x=1)\ncopy = df.copy()\ncopy['b'] = 2",
        {"assigns": {"part", "d2", "alias", "copy"}, "mutates": {"df", "d"}},
    ),
    (
        "loop-elements-are-the-container",
        "for row in rows:\n    row['flag'] = True\nfor k, v in groups.items():\n    v.sort()",
        {"assigns": {"row", "k", "v"}, "mutates": {"rows", "groups"}},
    ),
    (
        "local-alias-of-a-global",
        "def f():\n    d = registry\n    d.append(1)",
        {"assigns": {"f"}, "mutates": {"registry"}},
    ),
    ("chdir-is-shell", "import os\nos.chdir('/tmp')", {"assigns": {"os"}, "shell": {"os.chdir('/tmp')"}}),
    (
        "json-dump-through-own-handle",
        "import json\nwith open('a.json', 'w') as fh:\n    json.dump(data, fh)\njson.dump(data, handle)",
        {"assigns": {"json", "fh"}, "files_written": {"a.json", "handle"}},
    ),
    (
        "url-in-text-is-not-network",
        "print('https://example.com')\nok = url.startswith('https://')",
        {"assigns": {"ok"}},
    ),
    ("to-sql-names-the-table", "df.to_sql('sales', con, if_exists='append')", {"files_written": {"table sales"}}),
    (
        "autoreload-is-quiet",
        "%load_ext autoreload\n%autoreload 2\n%load_ext my_ext",
        {"unknown": {"%load_ext my_ext (loads an extension, which runs its code)"}},
    ),
    # what static analysis cannot see
    (
        "exec-eval",
        "exec(code)\nx = eval(expr)\ncompile(src, 'f', 'exec')",
        {"assigns": {"x"}, "unknown": {"exec(code)", "eval(expr)", "compile(src, 'f', 'exec')"}},
    ),
    (
        "globals-write",
        "globals()['x'] = 1\nglobals().update(cfg)\nv = globals()['y']",
        {"assigns": {"v"}, "unknown": {"writes through globals()"}},
    ),
    ("getattr-dynamic", "fn = getattr(module, name)", {"assigns": {"fn"}, "unknown": {"getattr(module, name)"}}),
    ("run-cell", "get_ipython().run_cell(source)", {"unknown": {"get_ipython().run_cell(source)"}}),
    ("syntax-error", "def broken(:\n    pass", {"unknown": {"syntax error (line 1): invalid syntax"}}),
    ("percent-operator-is-not-a-magic", "ratio = (a\n         % b)", {"reads": {"a", "b"}, "assigns": {"ratio"}}),
]


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
