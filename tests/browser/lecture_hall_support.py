"""tests/browser/test_lecture_hall.py's helpers: the hall's names (compose project, services, images, database
roles), commands run beside it (Podman, psql in its database's container: :class:`Hall`), the images it builds,
and what a visitor's browser holds and shows (the pinning and lab cookies, the run's step on /train)."""

from __future__ import annotations

import re
import subprocess
import time

from browsing import ROOT

HOST = "hall.test"
LOGS = ROOT / "test-output"
COMPOSE = ROOT / "hosting" / "compose.yaml"
PROJECT = "seqvizhall"
APP_IMAGE = "localhost/seqviz:lecture-hall"  # compose.yaml's seqviz:lecture-hall
BALANCER_IMAGE = "localhost/seqviz-balancer:lecture-hall"
DATABASE_IMAGE = "localhost/seqviz-postgres:lecture-hall"
COOKIE = "SEQVIZ_SERVER"
LAB_COOKIE = "seqviz_lab"  # seqviz.ui.lab.COOKIE
SERVERS = {"app1", "app2"}
SERVICES = ("balancer", "app1", "app2", "scheduler", "worker", "postgres")
APP_ROLE, ADMIN_ROLE = "seqviz_app", "postgres"  # hosting/postgres-entrypoint.sh
PASSWORDS = {ADMIN_ROLE: "SEQVIZ_DB_ADMIN_PASSWORD", APP_ROLE: "SEQVIZ_DB_APP_PASSWORD"}  # hosting/.env's names
CANNOT_RUN_CONTAINERS = 3  # scripts/check-container's exit status when no container can run here
STEP_TEXT = re.compile(r"Step (\d+) of (\d+)")
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile={files}:{files}", "nproc=4096:4096"]
[engine]
runtime = "runc"
"""


def _run(command: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kwargs)


def _env_file_values(path) -> dict[str, str]:
    """KEY=VALUE lines (comments and blank lines skipped), as compose reads an env file."""
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


class Hall:
    def __init__(self, url: str, env: dict[str, str], passwords: dict[str, str]):
        self.url = url
        self.env = env
        self.passwords = passwords  # role -> its password

    def container(self, service: str) -> str:
        return f"{PROJECT}_{service}_1"

    def log(self, service: str) -> str:
        done = _run(["podman", "logs", self.container(service)], 60, env=self.env)
        return done.stdout + done.stderr

    def answered_by(self, pattern: str) -> list[str]:
        """The server names that answered the balancer's logged requests matching ``pattern``."""
        found = []
        for line in self.log("balancer").splitlines():
            if re.search(pattern, line):
                server = re.search(r" seqviz_servers/(\S+) ", line)
                found.append(server.group(1) if server else "?")
        return found

    def psql(self, role: str, sql: str, database: str = "seqviz") -> subprocess.CompletedProcess:
        """psql in the postgres container as ``role``, with its password (over the unix socket: SCRAM too)."""
        return _run(["podman", "exec", "--env", "PGPASSWORD", self.container("postgres"), "psql", "--no-psqlrc",
                     "--quiet", "--tuples-only", "--no-align", "--set=ON_ERROR_STOP=1", "--username", role,
                     "--dbname", database, "--command", sql], 60,
                    env={**self.env, "PGPASSWORD": self.passwords[role]})

    def database_ready(self) -> bool:
        ready = _run(["podman", "exec", self.container("postgres"), "pg_isready", "--quiet", "--host", "127.0.0.1",
                      "--username", APP_ROLE, "--dbname", "seqviz"], 30, env=self.env)
        return ready.returncode == 0


def _build(env: dict[str, str], base_image: str, dockerfile: str, tag: str) -> None:
    built = _run(["podman", "build", "--format", "docker", "--network", "host", "--build-arg",
                  f"BASE_IMAGE={base_image}", "--file", dockerfile, "--tag", tag, "."], 600, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-2000:]


def _server_of(context) -> str | None:
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    return cookies.get(COOKIE)


def _lab_of(context) -> str | None:
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    return cookies.get(LAB_COOKIE)


def _read_step(page) -> int | None:
    """The step in the run's progress text on /train, or None when it is not on the page (redrawn, or ended)."""
    progress = page.get_by_test_id("stMain").get_by_test_id("stProgress").filter(has_text=STEP_TEXT)
    try:
        text = progress.first.text_content(timeout=2_000) or ""
    except Exception:  # the fragment replaced the element while we read it
        return None
    found = STEP_TEXT.search(text)
    return int(found.group(1)) if found else None


def _wait_for_step(page, above: int, seconds: float) -> int | None:
    """Wait, on the page's own clock, for the run's step to pass ``above``; the step, or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        step = _read_step(page)
        if step is not None and step > above:
            return step
        page.wait_for_timeout(250)
    return None
