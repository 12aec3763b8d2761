"""The tables `calls` matches a call against: which functions and methods write files, reach the
network, run shell commands or install packages, and where their path or URL argument is."""

from __future__ import annotations

# Usual aliases: imports normally happen in an earlier cell, not in the one being approved.
DEFAULT_ALIASES = {"np": "numpy", "pd": "pandas", "plt": "matplotlib.pyplot", "sns": "seaborn", "tf": "tensorflow"}

# Functions whose argument at the given index is a path they write, delete or create.
FILE_FUNCTIONS = {
    **{
        f"os.{name}": 0
        for name in (
            "remove",
            "unlink",
            "rmdir",
            "removedirs",
            "makedirs",
            "mkdir",
            "truncate",
            "chmod",
            "chown",
            "utime",
            "mkfifo",
            "lchown",
        )
    },
    **{
        name: 1
        for name in (
            "pickle.dump",
            "joblib.dump",
            "json.dump",
            "dill.dump",
            "cloudpickle.dump",
            "yaml.dump",
            "yaml.safe_dump",
            "torch.save",
            "marshal.dump",
        )
    },
    **{
        name: 0
        for name in (
            "numpy.save",
            "numpy.savez",
            "numpy.savez_compressed",
            "numpy.savetxt",
            "matplotlib.pyplot.savefig",
            "matplotlib.pyplot.imsave",
            "scipy.io.savemat",
            "imageio.imwrite",
            "cv2.imwrite",
            "sklearn.externals.joblib.dump",
            "shutil.rmtree",
            "shutil.make_archive",
            "shutil.chown",
        )
    },
}
TWO_PATH_FUNCTIONS = frozenset(
    {
        "os.rename",
        "os.renames",
        "os.replace",
        "os.link",
        "os.symlink",
        "shutil.copy",
        "shutil.copy2",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.move",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.unpack_archive",
    }
)
SHUTIL_READ_ONLY = frozenset(
    {"which", "disk_usage", "get_terminal_size", "get_archive_formats", "get_unpack_formats", "Error", "SameFileError"}
)
# Functions taking (path, mode): a write when the mode writes.
OPEN_FUNCTIONS = frozenset(
    {
        "open",
        "io.open",
        "codecs.open",
        "gzip.open",
        "bz2.open",
        "lzma.open",
        "tarfile.open",
        "zipfile.ZipFile",
        "h5py.File",
        "os.open",
    }
)
# Methods that write the file named by their first argument (or a path keyword); with no path
# most of them return text instead (`df.to_csv()`), which touches nothing.
WRITER_METHODS = frozenset(
    {
        "to_csv",
        "to_parquet",
        "to_excel",
        "to_json",
        "to_pickle",
        "to_feather",
        "to_hdf",
        "to_sql",
        "to_stata",
        "to_orc",
        "to_html",
        "to_latex",
        "to_markdown",
        "to_string",
        "to_xml",
        "to_netcdf",
        "to_zarr",
        "to_file",
        "tofile",
        "savefig",
        "save",
        "save_pretrained",
        "save_model",
        "save_weights",
        "saveAsTable",
        "saveAsTextFile",
        "insertInto",
        "dump",
        "write_image",
        "write_html",
        "export",
    }
)
PATH_KEYWORDS = (
    "path",
    "path_or_buf",
    "buf",
    "excel_writer",
    "fname",
    "filepath",
    "file",
    "filename",
    "name",
    "dst",
    "save_directory",
    "filepath_or_buffer",
)
# pathlib methods: unambiguous names count on any object; `rename`/`replace`/`chmod` only on
# something that is visibly a Path (`str.replace` and `df.rename` are everywhere).
PATH_METHODS = frozenset(
    {"write_text", "write_bytes", "unlink", "mkdir", "rmdir", "touch", "symlink_to", "hardlink_to", "rmtree"}
)
PATH_ONLY_METHODS = frozenset({"rename", "replace", "chmod"})
PATH_CONSTRUCTORS = frozenset({"Path", "pathlib.Path", "PurePath", "pathlib.PurePath", "PosixPath", "WindowsPath"})
SPARK_WRITERS = frozenset({"parquet", "csv", "json", "orc", "text", "save", "jdbc", "saveAsTable", "insertInto"})

NETWORK_MODULES = frozenset(
    {
        "requests",
        "httpx",
        "urllib.request",
        "urllib3",
        "aiohttp",
        "socket",
        "http.client",
        "ftplib",
        "smtplib",
        "poplib",
        "imaplib",
        "telnetlib",
        "paramiko",
        "websocket",
        "websockets",
        "xmlrpc.client",
        "http.server",
        "socketserver",
        "boto3",
        "botocore",
        "google.cloud",
        "openai",
        "anthropic",
        "huggingface_hub",
        "wget",
        "pycurl",
        "grpc",
        "kaggle",
        "yfinance",
        "asyncio.open_connection",
        "asyncio.start_server",
        "ssl.create_connection",
        "urllib.urlopen",
        "urllib2",
    }
)
NETWORK_METHODS = frozenset(
    {
        "from_pretrained",
        "load_dataset",
        "hf_hub_download",
        "snapshot_download",
        "urlretrieve",
        "urlopen",
        "get_file",
        "download",
    }
)
URL_SCHEMES = (
    "http://",
    "https://",
    "ftp://",
    "ftps://",
    "s3://",
    "s3a://",
    "gs://",
    "gcs://",
    "az://",
    "abfs://",
    "abfss://",
    "hdfs://",
    "ws://",
    "wss://",
    "hf://",
    "sftp://",
)

# Calls that only format, compare or show a URL: a URL literal in them is not network access.
URL_TEXT_CALLS = frozenset(
    {
        "print",
        "display",
        "repr",
        "str",
        "len",
        "startswith",
        "endswith",
        "replace",
        "split",
        "rsplit",
        "format",
        "join",
        "strip",
        "lstrip",
        "rstrip",
        "find",
        "rfind",
        "index",
        "count",
        "encode",
        "lower",
        "upper",
        "partition",
        "match",
        "search",
        "sub",
        "subn",
        "findall",
        "finditer",
        "fullmatch",
        "compile",
        "urlparse",
        "urljoin",
        "urlsplit",
        "urlunparse",
        "quote",
        "quote_plus",
        "unquote",
        "Markdown",
        "HTML",
        "Latex",
        "IFrame",
        "Javascript",
        "info",
        "debug",
        "warning",
        "error",
        "exception",
        "critical",
        "warn",
        "log",
        "append",
        "add",
        "extend",
        "insert",
        "write",
        "contains",
        "isin",
        "eq",
        "set",
        "setdefault",
        "update",
    }
)
# File-object writers: `json.dump(data, fh)` writes through a handle whose open() is reported
# itself when the cell opened it; only a handle from elsewhere is named.
HANDLE_FUNCTIONS = frozenset(
    {"pickle.dump", "json.dump", "dill.dump", "cloudpickle.dump", "yaml.dump", "yaml.safe_dump", "marshal.dump"}
)
CHDIR_FUNCTIONS = frozenset({"os.chdir", "os.fchdir"})

SHELL_FUNCTIONS = frozenset(
    {
        "os.system",
        "os.popen",
        "os.startfile",
        "os.posix_spawn",
        "os.posix_spawnp",
        "pty.spawn",
        "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell",
        "commands.getoutput",
        *(
            f"subprocess.{name}"
            for name in ("run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput")
        ),
        *(
            f"os.{name}"
            for name in (
                "execl",
                "execle",
                "execlp",
                "execlpe",
                "execv",
                "execve",
                "execvp",
                "execvpe",
                "spawnl",
                "spawnle",
                "spawnlp",
                "spawnlpe",
                "spawnv",
                "spawnve",
                "spawnvp",
                "spawnvpe",
            )
        ),
    }
)
# Module functions that change their first argument in place.
MUTATING_FUNCTIONS = frozenset(
    {
        "random.shuffle",
        "numpy.random.shuffle",
        "numpy.copyto",
        "numpy.put",
        "numpy.place",
        "numpy.putmask",
        "numpy.fill_diagonal",
        "heapq.heappush",
        "heapq.heappop",
        "heapq.heapify",
        "heapq.heapreplace",
        "heapq.heappushpop",
        "bisect.insort",
        "bisect.insort_left",
        "bisect.insort_right",
    }
)
