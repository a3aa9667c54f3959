"""Waiting in tests for something to happen, by looking again and again: never a timing assertion."""

import time


def wait_until(condition, timeout_s: float, every_s: float = 0.2):
    """condition()'s first truthy value, or None after ``timeout_s`` (it sleeps between looks: a browser's or a
    cluster's events go on meanwhile)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every_s)
    return None
