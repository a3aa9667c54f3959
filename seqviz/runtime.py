"""Process-wide settings, set once per process: torch on one thread with deterministic algorithms; a training
worker's CPU priority and its training thread's name.

Small models on a shared machine run fastest on one thread each (threads fighting over two cores are
slower), and deterministic algorithms make training bit-for-bit reproducible. These are settings of the
whole process, so the training loop never changes them; the command line, the training workers and the
app call :func:`configure_torch` once, at start.
"""

from __future__ import annotations

import contextlib
import os
import threading

_configured = False
_niced = False
_lock = threading.Lock()


def configure_torch(threads: int = 1) -> None:
    """Set torch to ``threads`` threads and deterministic algorithms; only the first call in a process acts."""
    global _configured
    with _lock:
        if _configured:
            return
        import torch

        torch.set_num_threads(threads)
        # The flag torch.use_deterministic_algorithms(True) sets. The public wrapper also imports
        # torch._inductor.config, all of torch.compile's machinery (seconds of a cold start:
        # docs/measured.md), only to set the compiler's own copy of the flag; seqviz never compiles.
        torch._C._set_deterministic_algorithms(True)
        # Deterministic mode also fills all new memory with NaN, to catch reads of it: a tenth of an LSTM
        # translator's training step (its LSTM workspaces), for no change in any result.
        torch._C._set_deterministic_fill_uninitialized_memory(False)
        _configured = True


def is_configured() -> bool:
    """Whether :func:`configure_torch` has run in this process."""
    return _configured


def give_memory_back() -> None:
    """Hand the heap memory that a large computation freed back to the OS (glibc only; elsewhere it does nothing).
    glibc keeps freed memory in the thread's malloc arena otherwise: a training run's on a worker, a held-out
    study's in the web server (seqviz.ui.models)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)


def lower_priority(nice: int) -> None:
    """Lower this process's CPU priority to Unix ``nice``, once (where the OS allows it): a training worker's, so
    that on a host it shares with the web server the pages get the CPU first and training takes what is left."""
    global _niced
    with _lock:
        if _niced:
            return
        _niced = True
    with contextlib.suppress(OSError, AttributeError):
        os.nice(max(0, nice - os.nice(0)))


def name_os_thread(name: str) -> str | None:
    """Name the calling thread for the OS too (Linux: ``top -H``, /proc/<pid>/task/<tid>/comm), so the CPU that
    training takes can be told from the rest of the worker's (tests/load reads it); returns the name it had (None
    where the OS does not say, and then it does nothing)."""
    path = f"/proc/self/task/{threading.get_native_id()}/comm"
    try:
        with open(path) as comm:
            before = comm.read().strip()
        with open(path, "w") as comm:
            comm.write(name[:15])
    except OSError:
        return None
    return before
