"""A throwaway PostgreSQL cluster for the tests and benches: Debian's binaries (scripts/test.sh installs the
`postgresql` package), initdb in a temporary folder, a free port on 127.0.0.1, stopped at the end.
As root the cluster runs as the `postgres` user (the server refuses to run as root)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from devtools.jupyter_process import free_port

PASSWORD = "pg-secret-password"  # in every URL the tests use: it must never show up in a log or a response


def binaries() -> Path | None:
    """The folder with initdb and pg_ctl (the newest installed version), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path and shutil.which("initdb") else None


def unavailable() -> str | None:
    """Why the Postgres tests cannot run here, or None."""
    if binaries() is None:
        return (
            "PostgreSQL is not installed (scripts/test.sh installs Debian's postgresql): the Postgres tests are skipped"
        )
    if os.geteuid() == 0 and not _has_user("postgres"):
        return "running as root and there is no 'postgres' user to run PostgreSQL as"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install .[test])"
    return None


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


class PostgresCluster:
    def __init__(self, max_connections: int = 300) -> None:
        # 300 by default: the suite's servers never wait for a slot; a bench sets PostgreSQL's default of 100.
        self.max_connections = max_connections
        bin_dir = binaries()
        assert bin_dir is not None
        self._bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="cellwright-pg-"))
        self.data = self.dir / "data"
        self.logfile = self.dir / "postgres.log"
        self.port = free_port()
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")

    def _run(self, *args: str) -> None:
        command = [str(self._bin / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        # pg_ctl always writes to the log file (-l): without it the server keeps our pipe open.
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    def _options(self) -> str:
        return f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections={self.max_connections} -c fsync=off"

    def start(self) -> PostgresCluster:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.logfile), "-o", self._options(), "-w", "start")
        return self

    def pause(self) -> None:
        """Stop the server, keeping its data (start it again with resume)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.logfile), "-o", self._options(), "-w", "start")

    def restart(self) -> None:
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.logfile),
            "-o",
            self._options(),
            "-m",
            "fast",
            "-w",
            "restart",
        )

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        # Trust authentication ignores the password; it is there to prove it is never shown.
        return f"postgresql://postgres:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self._admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)
