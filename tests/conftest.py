"""Shared test settings: every test runs from the repository root with torch on one thread."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _repository_root():
    os.chdir(ROOT)
    yield
