"""The cells tests/test_impact_analysis.py analyses, with the findings each must give."""

from __future__ import annotations

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
