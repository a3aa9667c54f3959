"""Process-wide torch settings, set once per process: one thread, deterministic algorithms.

Small models on a shared machine run fastest on one thread each (threads fighting over two cores are
slower), and deterministic algorithms make training bit-for-bit reproducible. These are settings of the
whole process, so the training loop never changes them; the command line, the training workers and the
app call :func:`configure_torch` once, at start.
"""

from __future__ import annotations

import contextlib
import threading

_configured = False
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
        # torch._inductor.config, all of torch.compile's machinery (seconds of a cold start: README,
        # "Measured figures"), only to set the compiler's own copy of the flag; seqviz never compiles.
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
