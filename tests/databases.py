"""A real PostgreSQL 15 server for the tests, from Debian's archive, started and stopped by them.

``postgres_server(root)`` installs Debian's postgresql-15 when it is missing (``scripts/ensure-packages``, as root),
makes a cluster in a temporary folder (``initdb`` as the ``postgres`` user: initdb refuses root), starts
``postgres`` on 127.0.0.1 and a free port, and yields a `PostgresServer`:

- ``url``: ``postgresql+psycopg://seqviz_app:...@127.0.0.1:PORT/seqviz``, the app's role: it may connect to the
  database ``seqviz`` and use (create tables in) its public schema, and nothing else (not a superuser, cannot create
  databases or roles, cannot connect to the other databases);
- ``admin_url``: the superuser ``postgres`` on the database ``postgres``; ``admin_url_for(database)`` for another;
- ``pid`` (the postmaster's), ``port``, ``folder``, ``log_tail()``;
- ``stop()`` (fast shutdown: SIGINT to its PID, then waits) and ``start()`` (again, on the same port and data).

Passwords only: SCRAM-SHA-256 over TCP from 127.0.0.1 and on the unix socket, which lies in the folder (no other
socket directory). fsync is off: the data is the test's, and a fast shutdown still writes it all out.

The server cannot outlive the tests' process: beside each start runs a watchdog (this file run as a script, in a
session of its own) that holds the read end of a pipe whose only writer is the tests' process. When that process
ends, however it ends, the pipe reads end-of-file and the watchdog stops the server by its PID (immediate shutdown,
after checking that the PID is still that server's by its start time), waits for it to go, and removes the folder.
On the way out of the context manager the server is stopped by its PID, even when the test failed, and the folder
removed. No process is ever killed by name.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

BIN = Path("/usr/lib/postgresql/15/bin")
PACKAGE = "postgresql-15"
HOST = "127.0.0.1"
DATABASE = "seqviz"
APP_ROLE = "seqviz_app"
ADMIN_ROLE = "postgres"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
HBA = f"local all all scram-sha-256\nhost all all {HOST}/32 scram-sha-256\n"


class PostgresError(RuntimeError):
    """The server could not be installed, made, started or stopped; the message says why (with its log)."""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with the PID, who it is."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _running(pid: int) -> bool:
    """Alive and not a zombie (a server orphaned to init is reaped by init, not by us)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _ensure_installed(root: Path) -> None:
    result = subprocess.run([str(root / "scripts" / "ensure-packages"), PACKAGE], capture_output=True, text=True,
                            check=False, timeout=1200)
    if result.returncode != 0:
        raise PostgresError(f"scripts/ensure-packages {PACKAGE} exited {result.returncode}: "
                            f"{(result.stderr + result.stdout).strip()}")
    for program in ("initdb", "postgres", "pg_isready"):
        if not (BIN / program).exists():
            raise PostgresError(f"{PACKAGE} is installed but {BIN / program} is missing")


class PostgresServer:
    """One cluster in ``folder``: ``folder/data`` (the data directory), its unix socket in ``folder``, its log
    ``folder/postgres.log``. Made by `postgres_server`; use that."""

    def __init__(self, folder: Path, as_postgres: bool):
        self.folder = folder
        self.data = folder / "data"
        self.log = folder / "postgres.log"
        self.host = HOST
        self.port = _free_port()
        self.admin_password = secrets.token_urlsafe(24)
        self.app_password = secrets.token_urlsafe(24)
        self._as_postgres = as_postgres  # tests run as root: the server runs as the postgres user
        self._process: subprocess.Popen | None = None
        self._watchdog: subprocess.Popen | None = None
        self._watch_fd: int | None = None

    @property
    def url(self) -> str:
        return self._url(APP_ROLE, self.app_password, DATABASE)

    @property
    def admin_url(self) -> str:
        return self.admin_url_for("postgres")

    def admin_url_for(self, database: str) -> str:
        return self._url(ADMIN_ROLE, self.admin_password, database)

    def _url(self, role: str, password: str, database: str) -> str:
        return f"postgresql+psycopg://{role}:{quote(password, safe='')}@{self.host}:{self.port}/{database}"

    @property
    def pid(self) -> int | None:
        """The postmaster's PID while it runs; None once stopped."""
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def _user(self) -> dict:
        return {"user": "postgres", "group": "postgres", "extra_groups": []} if self._as_postgres else {}

    def init(self) -> None:
        """initdb with the superuser's password (--pwfile, removed after) and passwords only in pg_hba.conf."""
        pwfile = self.folder / "pwfile"
        pwfile.write_text(self.admin_password + "\n", encoding="utf-8")
        pwfile.chmod(0o600)
        if self._as_postgres:
            shutil.chown(pwfile, "postgres", "postgres")
        runuser = ["runuser", "-u", "postgres", "--"] if self._as_postgres else []
        command = [*runuser, str(BIN / "initdb"), "--pgdata", str(self.data), "--username", ADMIN_ROLE,
                   "--pwfile", str(pwfile), "--auth", "scram-sha-256", "--encoding", "UTF8", "--locale", "C",
                   "--no-sync"]
        try:
            result = subprocess.run(command, cwd=self.folder, capture_output=True, text=True, check=False,
                                    timeout=120)
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            raise PostgresError(f"initdb exited {result.returncode}:\n{result.stdout}{result.stderr}")
        (self.data / "pg_hba.conf").write_text(HBA, encoding="utf-8")  # initdb made it the postgres user's

    def start(self) -> None:
        """Start the server (on the same port and data as before) and wait until it accepts connections."""
        if self.pid is not None:
            raise PostgresError(f"the server is already running (PID {self.pid})")
        settings = {"listen_addresses": self.host, "port": str(self.port), "unix_socket_directories": str(self.folder),
                    "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
                    "shared_buffers": "32MB", "max_connections": "50"}
        command = [str(BIN / "postgres"), "-D", str(self.data)]
        for name, value in settings.items():
            command += ["-c", f"{name}={value}"]
        with open(self.log, "a", encoding="utf-8") as log:
            # A session of its own: a Ctrl-C at the terminal reaches the tests, whose teardown stops the server.
            self._process = subprocess.Popen(command, cwd=self.folder, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True, **self._user())
        self._watch(self._process.pid)
        deadline = time.monotonic() + START_TIMEOUT_S
        while self._process.poll() is None and time.monotonic() < deadline:
            ready = subprocess.run([str(BIN / "pg_isready"), "--quiet", "--host", self.host, "--port",
                                    str(self.port), "--timeout", "2"], check=False, timeout=10)
            if ready.returncode == 0:
                return
            time.sleep(0.05)
        status = self._process.poll()
        self.stop()
        raise PostgresError(f"postgres {'exited ' + str(status) if status is not None else 'did not accept'} "
                            f"connections on {self.host}:{self.port} within {START_TIMEOUT_S:.0f} s; "
                            f"its log, {self.log}:\n{self.log_tail()}")

    def _watch(self, pid: int) -> None:
        """A watchdog that stops the server (and removes the folder) when the tests' process is gone."""
        read, write = os.pipe()  # neither end inherited by other children: only the watchdog gets ``read``
        try:
            self._watchdog = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "watch", str(pid), _start_time(pid) or "",
                 str(self.folder)], stdin=read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self._watch_fd = write

    def _unwatch(self) -> None:
        if self._watchdog is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._watchdog.pid, signal.SIGKILL)  # our own child, by its PID: not yet reaped
            self._watchdog.wait()
            self._watchdog = None
        if self._watch_fd is not None:
            os.close(self._watch_fd)
            self._watch_fd = None

    def stop(self) -> None:
        """Fast shutdown (SIGINT to the postmaster's PID: sessions are ended, their transactions rolled back, the
        data written out) and wait for it; immediate shutdown (SIGQUIT), then SIGKILL, if it takes too long."""
        self._unwatch()
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig, grace in ((signal.SIGINT, STOP_TIMEOUT_S), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, sig)
            try:
                process.wait(grace)
                return
            except subprocess.TimeoutExpired:
                continue
        raise PostgresError(f"postgres (PID {process.pid}) did not stop")

    def create_app_database(self) -> None:
        """The database ``seqviz`` and the role ``seqviz_app``, which may connect to it and use (create tables in)
        its public schema, and nothing else. The other databases lose PUBLIC's CONNECT (the superuser keeps it)."""
        import psycopg
        from psycopg import sql

        conninfo = dict(host=self.host, port=self.port, user=ADMIN_ROLE, password=self.admin_password,
                        connect_timeout=10)
        role, database = sql.Identifier(APP_ROLE), sql.Identifier(DATABASE)
        with psycopg.connect(dbname="postgres", autocommit=True, **conninfo) as admin:
            admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOCREATEDB NOCREATEROLE "
                                  "NOREPLICATION NOBYPASSRLS").format(role, sql.Literal(self.app_password)))
            admin.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(database, sql.Identifier(ADMIN_ROLE)))
            for name in ("postgres", "template1", DATABASE):
                admin.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name)))
            admin.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, role))
        with psycopg.connect(dbname=DATABASE, autocommit=True, **conninfo) as admin:
            admin.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
            admin.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA public TO {}").format(role))


@contextlib.contextmanager
def postgres_server(root: Path) -> Iterator[PostgresServer]:
    """A running PostgreSQL 15 server with the app's database and role (see the module's docstring). ``root``:
    the repository (for scripts/ensure-packages). Raises `PostgresError` when it cannot be installed or started."""
    _ensure_installed(Path(root))
    as_postgres = os.geteuid() == 0
    # /tmp when root: the postgres user must reach the folder (a TMPDIR under /root would not do).
    folder = Path(tempfile.mkdtemp(prefix="seqviz-postgres-", dir="/tmp" if as_postgres else None))
    server = None
    try:
        if as_postgres:
            shutil.chown(folder, "postgres", "postgres")
        server = PostgresServer(folder, as_postgres)
        server.init()
        for attempt in range(3):
            try:
                server.start()
                break
            except PostgresError:  # another process took the free port between the probe and the bind
                if attempt == 2 or "could not bind" not in server.log_tail():
                    raise
                server.port = _free_port()
        server.create_app_database()
        yield server
    finally:
        try:
            if server is not None:
                server.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _watch_main(pid: int, start_time: str, folder: str) -> None:
    """The watchdog: block until stdin (the pipe from the tests' process) ends, then stop the server by its PID
    (if it is still the same process), wait for it to go and remove its folder."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(4096):
            pass
    if start_time and _start_time(pid) == start_time:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGQUIT)  # immediate shutdown: the postmaster ends its backends, then itself
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _running(pid) and _start_time(pid) == start_time:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "watch":
    _watch_main(int(sys.argv[2]), sys.argv[3], sys.argv[4])
