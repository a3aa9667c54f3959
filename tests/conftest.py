"""Shared test settings: every test runs from the repository root with torch on one thread."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _repository_root():
    os.chdir(ROOT)
    yield


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread for a module of small-tensor tests: fastest, and kind to a shared machine."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def playwright():
    """The one Playwright of the whole test run, shared by the browser and the load tests' Chromiums.

    Playwright's sync API runs one instance per thread: a second ``sync_playwright()`` started while the first is
    alive fails, so every folder that drives a browser launches its Chromium from this one.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p
