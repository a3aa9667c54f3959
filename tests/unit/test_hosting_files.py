"""The container and hosting files, checked without running them: the Dockerfile's steps, the pins, the scripts,
the nginx and HAProxy recipes and the compose file.

tests/hosting/test_container.py builds and runs the image; tests/browser/test_hosting.py, test_nginx.py and
test_lecture_hall.py run the start command, nginx and HAProxy.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seqviz.smoke import PageResult, normalize_base, page_paths, parse_resolve, resolver_rules

ROOT = Path(__file__).resolve().parents[2]


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip() if " " in line.strip() else "")
            for line in joined.splitlines() if line.strip()]


def _pins(path: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_dockerfile_slim_python_cpu_torch_non_root_and_one_start_command():
    steps = _dockerfile()
    kinds = [kind for kind, _ in steps]
    args = dict(steps)  # the last of each kind
    assert steps[:2] == [("ARG", "BASE_IMAGE=python:3.11-slim"), ("FROM", "${BASE_IMAGE}")]
    assert ("RUN", "pip install -r hosting/requirements.txt") in steps
    user = args["USER"]
    assert user not in ("root", "0") and kinds.index("USER") > max(i for i, k in enumerate(kinds) if k == "RUN")
    assert args["WORKDIR"] == "/app"
    assert args["CMD"] == '["/app/scripts/serve"]'
    env = " ".join(a for k, a in steps if k == "ENV")
    assert "PORT=8501" in env and 'SEQVIZ_BASE_PATH=""' in env
    assert "_stcore/health" in args["HEALTHCHECK"] and "SEQVIZ_BASE_PATH" in args["HEALTHCHECK"]
    assert args["EXPOSE"] == "8501"


def test_dockerfile_keeps_the_lab_store_on_a_volume_the_app_user_owns():
    steps = _dockerfile()
    env = " ".join(a for k, a in steps if k == "ENV")
    assert "SEQVIZ_DATA_DIR=/data" in env
    assert ("VOLUME", "/data") in steps
    assert any(k == "RUN" and "chown seqviz:seqviz /data" in a for k, a in steps)  # uid 1000 writes the store
    assert steps.index(("VOLUME", "/data")) > next(i for i, (k, _) in enumerate(steps) if k == "USER")


def test_hosting_requirements_are_the_readme_install_with_cpu_torch():
    local, hosted = _pins("requirements.txt"), _pins("hosting/requirements.txt")
    assert hosted.pop("torch") == local.pop("torch") + "+cpu"
    assert hosted == local
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in (ROOT / "hosting/requirements.txt").read_text()


def test_dockerignore_keeps_what_the_app_needs():
    patterns = {line.strip().strip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    for needed in ("app.py", "app_pages", "seqviz", "assets", "assets/models", ".streamlit", "scripts",
                   "scripts/serve", "hosting", "hosting/requirements.txt", "*", "**"):
        assert needed not in patterns
    assert {".git", ".venv", "tests", "test-output"} <= patterns


@pytest.mark.parametrize("script", ["scripts/serve", "scripts/smoke", "scripts/ensure-packages",
                                    "scripts/check-container"])
def test_scripts_are_executable_and_parse(script):
    path = ROOT / script
    assert os.access(path, os.X_OK)
    first = path.read_text().splitlines()[0]
    if first == "#!/usr/bin/env python3":
        compile(path.read_text(), str(path), "exec")
        return
    shell = "bash" if first == "#!/usr/bin/env bash" else "sh"
    assert subprocess.run([shell, "-n", str(path)], capture_output=True).returncode == 0


def _nginx_directives() -> dict[str, list[str]]:
    """hosting/nginx.conf's directives, name -> every value given (comments dropped)."""
    text = "\n".join(line.split("#", 1)[0] for line in (ROOT / "hosting" / "nginx.conf").read_text().splitlines())
    found: dict[str, list[str]] = {}
    for statement in re.split(r"[;{}]", text):
        words = statement.split()
        if words:
            found.setdefault(words[0], []).append(" ".join(words[1:]))
    return found


def _megabytes(size: str) -> float:
    units = {"k": 1 / 1024, "m": 1, "g": 1024}
    return float(size[:-1]) * units[size[-1].lower()] if size[-1].isalpha() else float(size) / 2**20


def test_nginx_recipe_keeps_the_port_and_takes_the_largest_upload():
    import tomllib

    nginx = _nginx_directives()
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert set(nginx["proxy_set_header"]) >= {"Host $http_host", "Upgrade $http_upgrade"}
    assert "Host $host" not in nginx["proxy_set_header"]
    from seqviz.limits import MAX_UPLOAD_MB

    body = _megabytes(nginx["client_max_body_size"][0])
    assert body > config["server"]["maxUploadSize"] and body > MAX_UPLOAD_MB
    assert all(_seconds(v) >= 3600 for v in nginx["proxy_read_timeout"])
    assert "application/javascript" in nginx["gzip_types"][0] and nginx["gzip"] == ["on"]
    assert nginx["proxy_cache"] == ["seqviz_static"] and "location" in nginx
    assert any(v.startswith("/seqviz/") for v in nginx["location"])


def _seconds(value: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return float(value[:-1]) * units[value[-1]] if value[-1] in units else float(value)


def test_streamlit_never_looks_up_an_external_address():
    """browser.serverAddress set: a headless start on 0.0.0.0 asks no web service for this host's address
    (tests/browser/test_hosting.py checks it in a network namespace)."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["browser"]["serverAddress"] == "localhost"
    assert config["browser"]["gatherUsageStats"] is False


def _serve_with_stub(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """Run a copy of scripts/serve with a python3 that prints the command it was given."""
    (tmp_path / "scripts").mkdir(exist_ok=True)
    shutil.copy2(ROOT / "scripts" / "serve", tmp_path / "scripts" / "serve")
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text('#!/bin/sh\nfor arg in "$@"; do echo "$arg"; done\n')  # one argument a line
    stub.chmod(0o755)
    clean = {k: v for k, v in os.environ.items() if k not in ("PORT", "SEQVIZ_BASE_PATH")}
    return subprocess.run([str(tmp_path / "scripts" / "serve")], capture_output=True, text=True, timeout=30,
                          env={**clean, "PATH": f"{stub.parent}{os.pathsep}/usr/bin:/bin", **env})


@pytest.mark.parametrize(("env", "port", "base"), [
    ({}, "8501", ""),
    ({"PORT": "8080"}, "8080", ""),
    ({"SEQVIZ_BASE_PATH": "seqviz"}, "8501", "seqviz"),
    ({"SEQVIZ_BASE_PATH": "/courses/seqviz/", "PORT": "7860"}, "7860", "courses/seqviz"),
])
def test_serve_reads_port_and_base_path(tmp_path, env, port, base):
    done = _serve_with_stub(tmp_path, **env)
    assert done.returncode == 0, done.stderr
    words = done.stdout.split("\n")
    assert words[:4] == ["-m", "streamlit", "run", "app.py"]
    assert words[words.index("--server.port") + 1] == port
    assert words[words.index("--server.address") + 1] == "0.0.0.0"
    assert words[words.index("--server.headless") + 1] == "true"
    assert words[words.index("--server.baseUrlPath") + 1] == base  # "" when served at the root


def test_serve_refuses_a_port_that_is_not_a_number(tmp_path):
    done = _serve_with_stub(tmp_path, PORT="85o1")
    assert done.returncode == 2 and "PORT must be a number" in done.stderr


def test_smoke_check_never_imports_streamlit():
    code = "import sys, seqviz.smoke as s; s.page_paths(); sys.exit('streamlit' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_smoke_checks_every_page_address():
    assert {"", "order", "rnn-memory", "vanishing-gradients", "lstm-gates", "encoder-decoder", "attention",
            "transformer"} <= set(page_paths())


@pytest.mark.parametrize(("given", "base"), [
    ("http://localhost:8501", "http://localhost:8501"),
    ("http://localhost:8501/", "http://localhost:8501"),
    ("localhost:8501", "http://localhost:8501"),
    ("https://host.example/seqviz/", "https://host.example/seqviz"),
    ("https://host.example/seqviz/attention?s=x#top", "https://host.example/seqviz/attention"),
    ("  http://127.0.0.1:9/a/b  ", "http://127.0.0.1:9/a/b"),
])
def test_smoke_base_url(given, base):
    assert normalize_base(given) == base


def test_smoke_line_has_page_status_seconds_and_reason():
    line = PageResult("attention", False, 3.21, "exception shown after typing a sentence").line()
    assert line.split()[:4] == ["/attention", "FAIL", "3.2", "s"]
    assert line.endswith("exception shown after typing a sentence")


def test_lecture_hall_compose_and_balancer_agree():
    """hosting/compose.yaml's app servers are hosting/haproxy.cfg's servers; a visitor is pinned by a cookie the
    balancer inserts (not by address: a class behind one NAT shares one); every server trains on the one cluster.
    (tests/browser/test_lecture_hall.py runs the compose file with podman-compose.)"""
    import yaml

    compose = yaml.safe_load((ROOT / "hosting" / "compose.yaml").read_text())["services"]
    haproxy = [line.split() for line in (ROOT / "hosting" / "haproxy.cfg").read_text().splitlines()
               if line.strip() and not line.lstrip().startswith("#")]
    servers = {words[1]: words[2] for words in haproxy if words[0] == "server"}
    apps = {name for name, service in compose.items() if "SEQVIZ_DASK_SCHEDULER" in service.get("environment", {})}
    assert apps and set(servers) == apps
    assert all(address == f"{name}:8501" for name, address in servers.items())
    assert ["cookie", "SEQVIZ_SERVER", "insert", "indirect", "nocache", "httponly"] in haproxy
    moved = next(words for words in haproxy if words[:2] == ["http-response", "add-header"])
    assert moved[3].startswith('"SEQVIZ_MOVED_FROM=') and "srv_name,strcmp(txn.pinned)" in moved  # seqviz.share
    assert {compose[app]["environment"]["SEQVIZ_SERVER_NAME"] for app in apps} == {
        words[4] for words in haproxy if words[0] == "server"}  # each knows its cookie value
    assert not any(words[:2] == ["balance", "source"] for words in haproxy)
    assert all(compose[app]["environment"]["SEQVIZ_DASK_SCHEDULER"] == "tcp://scheduler:8786" for app in apps)
    assert compose["scheduler"]["command"][:4] == ["dask", "scheduler", "--port", "8786"]
    worker = compose["worker"]["command"]
    assert worker[:3] == ["dask", "worker", "tcp://scheduler:8786"] and "seqviz.worker" in worker
    assert worker[worker.index("--nthreads") + 1] == "1"
    assert compose["balancer"]["build"]["dockerfile"] == "hosting/haproxy.Dockerfile"
    assert all(compose[name]["build"]["dockerfile"] == "Dockerfile" for name in [*apps, "scheduler", "worker"])


def test_smoke_resolve_maps_a_host_name_for_chromium_and_the_health_check():
    mapping = parse_resolve(["seqviz.test:127.0.0.1", "Other.Example:::1"])
    assert mapping == {"seqviz.test": "127.0.0.1", "other.example": "::1"}
    assert resolver_rules(mapping) == ["--host-resolver-rules=MAP seqviz.test 127.0.0.1, MAP other.example ::1"]
    assert resolver_rules({}) == []
    for bad in ("seqviz.test", ":127.0.0.1", "seqviz.test:"):
        with pytest.raises(ValueError):
            parse_resolve([bad])
