"""The container, built and run here: `scripts/check-container` (Podman, a stand-in base image made from Debian's
archive and kept in Podman's storage, the project's Dockerfile, two runs with --network none, the smoke check).

The script says what it checks; this test runs it, bounded in time, and keeps its figures (never asserted) in
test-output/hosting-figures.json for docs/hosting.md. A first run on a machine makes the base image (about a minute
and a half) and installs the image's packages; later runs reuse both.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "test-output"
FIGURES = LOGS / "hosting-figures.json"
CANNOT_RUN_CONTAINERS = 3  # the script's exit status when this machine cannot run a container at all


@pytest.mark.container
@pytest.mark.timeout(960)
def test_image_builds_runs_offline_and_passes_the_smoke_check():
    if os.geteuid() != 0:
        pytest.fail("scripts/check-container needs root (debootstrap, rootful Podman): run the tests as root")
    LOGS.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    done = subprocess.run([str(ROOT / "scripts" / "check-container")], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    (LOGS / "check-container.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode == CANNOT_RUN_CONTAINERS:
        pytest.skip(f"this machine cannot run containers: {done.stdout.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    figures = json.loads(next(line for line in lines if line.startswith("figures: ")).removeprefix("figures: "))
    assert figures["image"]["layers"] > 1
    assert figures["run_default"]["summary"].startswith(f"{len(_pages())}/{len(_pages())} pages OK")
    assert figures["run_base_path"]["summary"].startswith("2/2 pages OK")
    assert figures["run_base_path"]["summary"].endswith("/seqviz")
    data = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    data["container"] = {**figures, "test_s": round(time.monotonic() - start, 1), "date": time.strftime("%Y-%m-%d")}
    FIGURES.write_text(json.dumps(data, indent=2))


def _pages() -> list[str]:
    from seqviz.smoke import page_paths

    return page_paths()
